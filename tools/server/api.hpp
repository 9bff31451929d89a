// api: the skein HTTP API (JSON over HTTP/1.1, SSE for live events) on top of
// an embedded runtime. Routes, auth scopes and error shapes are listed in
// docs/api.md; the route table is tools/server/routes/ (routes.hpp), and each
// request's one row decides its admission, its handler and whether that runs
// inline. Thread-safe: handle() is called from many connections at once.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <vector>
#include <string>

#include "runtime/runtime.hpp"
#include "tools/server/auth.hpp"
#include "tools/server/http.hpp"
#include "tools/server/http_server.hpp"

namespace skein {
class namespace_set;
}

namespace skein::server {

struct route_match;

struct api_options {
  json_limits limits{1 << 20, 64};  // request bodies (imports have their own size limit)
  size_t list_limit_max = 1000;
  size_t entries_limit_max = 1000;
};

class api {
 public:
  // `rt` is borrowed and must outlive the api; `counters` reports the HTTP
  // server's own figures for /metrics (may be empty).
  api(runtime& rt, token_store tokens, api_options options,
      std::function<http::server_counters()> counters = {});
  // Many namespaces (runtime/namespaces/namespaces.hpp): a request acts in its token's
  // namespace, or, for the server's admin, in the one its Skein-Namespace header
  // names (default: "default"); /v1/namespaces manages them. Borrowed.
  api(namespace_set& namespaces, token_store tokens, api_options options,
      std::function<http::server_counters()> counters = {});

  // From a request's head, before its body is read: auth, the row's scope and
  // the body's size class; for a write to a thread, whether the token sees it
  // (`defer` when that thread is another node's and head.may_wait is false).
  http::admission admit(const http::request& head);
  void handle(http::request& req, std::shared_ptr<http::exchange> ex);
  http::handler handler() {
    return [this](http::request& req, std::shared_ptr<http::exchange> ex) { handle(req, std::move(ex)); };
  }
  // Whether handle() answers `req` without waiting (http::inline_check): a
  // stream of a thread this node serves, or a waited entry to one, which the
  // run's completion answers. Called on an I/O thread; reads nothing but the
  // request and this node's thread placement.
  bool runs_inline(const http::request& req);
  // The handler with its admission: what http::server::start takes.
  http::service service() {
    return {handler(), [this](const http::request& head) { return admit(head); },
            [this](const http::request& req) { return runs_inline(req); }};
  }

 private:
  // The runtime a request acts in (a lease: the namespace's runtime stays open
  // while it is held); answers an error response when there is none.
  std::optional<http::response> lease(const http::request& req, const token_scope& scope,
                                      std::shared_ptr<runtime>* out);
  // What admission and handle() both check before a row's handler, in this
  // order: the target, an open row, the token (401), the namespace header
  // (403), the method (405 with Allow), the row's path scope (403, or 404 as a
  // missing agent). *scope is the caller's (none for an open row). nullopt: go on
  // (also for a path no row has: handle() answers it 404).
  std::optional<http::response> gate(const http::request& req, const route_match& m,
                                     std::optional<token_scope>* scope);

  runtime* single_ = nullptr;
  namespace_set* namespaces_ = nullptr;
  token_store tokens_;
  api_options options_;
  std::function<http::server_counters()> counters_;
};

// The HTTP status for a skein error code.
int http_status(errc code);
// {"error":{"code":..,"message":..,"limit":..,"field":..}}: `limit` and `field`
// are the status's own (absent when empty); the message is cut to a bounded size.
http::response error_response(const status& s, int http_status_override = 0);

}  // namespace skein::server
