#include "tools/server/auth.hpp"

#include <fstream>
#include <sstream>

#include "runtime/model/ids.hpp"

namespace skein::server {
namespace {

bool token_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
         c == '~' || c == '+' || c == '/' || c == '=' || c == '-';
}

// Compares without an early exit, so timing does not tell how much matched.
bool same(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i % (b.empty() ? 1 : b.size())]);
  return diff == 0 && !b.empty();
}

}  // namespace

status token_store::load(const std::string& path, token_store* out) {
  std::ifstream in{path};
  if (!in) return status::not_found("tokens file " + path + ": cannot open");
  std::stringstream text;
  text << in.rdbuf();
  status s = parse(text.str(), out);
  if (!s) return status::invalid_input("tokens file " + path + ": " + s.message());
  return s;
}

status token_store::parse(const std::string& text, token_store* out) {
  token_store store;
  store.enabled_ = true;
  std::istringstream lines{text};
  std::string line;
  for (int n = 1; std::getline(lines, line); ++n) {
    std::istringstream words{line};
    std::string token, word;
    if (!(words >> token) || token[0] == '#') continue;
    std::string where = "line " + std::to_string(n);
    if (token.size() < token_bytes_min)
      return status::invalid_input(where + ": token shorter than token_bytes_min (" + std::to_string(token_bytes_min) + ")");
    for (char c : token)
      if (!token_char(c)) return status::invalid_input(where + ": token has a character outside [A-Za-z0-9_.~+/=-]");
    token_scope scope;
    bool first = true, named = false;
    while (words >> word) {
      if (first && word.size() > 1 && word[0] == '@') {
        first = false;
        named = true;
        scope.ns = word.substr(1);
        SKEIN_TRY(validate_namespace(scope.ns, where + ": namespace"));
        continue;
      }
      first = false;
      if (word[0] == '@') return status::invalid_input(where + ": the namespace (@name) comes first, once");
      if (word == "admin") {
        scope.admin = true;
        continue;
      }
      SKEIN_TRY(validate_id(word, where + ": agent"));
      scope.agents.insert(word);
    }
    if (!scope.admin && scope.agents.empty()) return status::invalid_input(where + ": token has no scope (admin or agents)");
    scope.server_admin = scope.admin && !named;
    if (store.tokens_.count(token)) return status::invalid_input(where + ": token listed twice");
    store.tokens_[token] = std::move(scope);
  }
  if (store.tokens_.empty()) return status::invalid_input("no tokens");
  *out = std::move(store);
  return status::ok();
}

std::optional<token_scope> token_store::authenticate(const std::string& authorization) const {
  if (!enabled_) {
    token_scope all;
    all.server_admin = all.admin = true;
    return all;
  }
  const std::string prefix = "Bearer ";
  if (authorization.size() <= prefix.size() || authorization.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  std::string presented = authorization.substr(prefix.size());
  std::optional<token_scope> found;
  for (const auto& [token, scope] : tokens_)
    if (same(presented, token)) found = scope;  // no early exit: every token is compared
  return found;
}

std::string token_store::admin_token() const {
  for (const auto& [token, scope] : tokens_)
    if (scope.server_admin) return token;
  return "";
}

}  // namespace skein::server
