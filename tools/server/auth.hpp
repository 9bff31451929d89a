// Bearer tokens for skein serve, each scoped to one namespace (tenant): all of
// it (its admin) or some of its agents; or the server's admin, who manages
// namespaces and may act in any of them.
//
// Tokens file: one token a line —
//   <token> admin                           the server's admin
//   <token> @<namespace> admin              the admin of one namespace
//   <token> @<namespace> <agent> [...]      some agents of one namespace
//   <token> <agent> [<agent> ...]           some agents of the default namespace
// Blank lines and lines starting with '#' are skipped. Tokens are at least
// token_bytes_min characters of [A-Za-z0-9_.~+/=-]. Thread-safe after load.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>

#include "runtime/model/status.hpp"

namespace skein::server {

inline constexpr size_t token_bytes_min = 16;

struct token_scope {
  bool server_admin = false;  // manages namespaces; acts in any namespace
  bool admin = false;         // every agent of `ns` (true for the server's admin too)
  std::set<std::string> agents;
  std::string ns{"default"};  // the namespace the token acts in (the server's admin: any)

  bool allows(const std::string& agent) const { return admin || agents.count(agent) > 0; }
};

class token_store {
 public:
  // No file: auth disabled (every request is admin).
  token_store() = default;
  static status load(const std::string& path, token_store* out);
  static status parse(const std::string& text, token_store* out);

  bool enabled() const { return enabled_; }
  // The scope of an "Authorization: Bearer <token>" header value; nullopt when it
  // is missing or unknown. With auth disabled, admin.
  std::optional<token_scope> authenticate(const std::string& authorization) const;
  // One admin token of the file, for the server's own calls as a client
  // (`serve --demo`); "" with auth disabled or no admin token.
  std::string admin_token() const;

 private:
  bool enabled_ = false;
  std::map<std::string, token_scope> tokens_;
};

}  // namespace skein::server
