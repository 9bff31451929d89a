// api: the dispatcher of the HTTP API. A request is matched to one row of the
// route table (routes/routes.hpp, routes/router.hpp), and that row decides
// both its admission — from its head, before any body byte is read: the
// token, the method, the row's scope, the body's size class and, for a write
// to a thread, whether the token sees that thread — and the handler that
// answers it. The handlers live beside their rows in routes/<resource>.cpp.
#include "tools/server/api.hpp"

#include "runtime/model/ids.hpp"
#include "runtime/model/json_reader.hpp"
#include "runtime/model/json_writer.hpp"
#include "runtime/model/text.hpp"
#include "runtime/namespaces/namespaces.hpp"
#include "tools/server/routes/router.hpp"
#include "tools/server/ui.hpp"

namespace skein::server {
namespace {

// Bytes of an error message that reach a client; the rest is cut (messages
// quote input through quote_input, this is the last guard).
constexpr size_t error_message_bytes_max = 512;

}  // namespace

int http_status(errc code) {
  switch (code) {
    case errc::ok: return 200;
    case errc::not_found: return 404;
    case errc::invalid_input: return 400;
    case errc::conflict: return 409;
    case errc::corruption: return 500;
    case errc::io_error: return 503;
    case errc::no_space: return 507;
    case errc::overloaded: return 429;
    // Not 429: a spent daily budget is no overload, and clients that retry 429
    // would retry this until midnight. 402 is never retried automatically.
    case errc::budget_exceeded: return 402;
    // A namespace's quota: 429 with the limit named, so that clients back off;
    // the events of a day pass at midnight UTC, threads and bytes when freed.
    case errc::quota_exceeded: return 429;
    // The owner node of the thread is down or unreachable: retry later, elsewhere nothing helps.
    case errc::unavailable: return 503;
  }
  return 500;
}

http::response error_response(const status& s, int http_status_override) {
  std::string body;
  json_writer w{&body};
  w.begin_object();
  w.key("error");
  w.begin_object();
  std::string_view code = to_string(s.code());
  if (http_status_override == 401) code = "unauthorized";
  if (http_status_override == 403) code = "forbidden";
  if (http_status_override == 405) code = "method_not_allowed";
  w.field("code", code);
  w.field("message", quote_input(to_valid_utf8(s.message()), error_message_bytes_max));
  if (!s.limit().empty()) w.field("limit", s.limit());
  if (!s.field().empty()) w.field("field", s.field());
  w.end_object();
  w.end_object();
  return json_response(http_status_override != 0 ? http_status_override : http_status(s.code()), std::move(body));
}

namespace {

http::response unauthorized_response() {
  auto r = error_response(status::invalid_input("unauthorized: a valid bearer token is required"), 401);
  r.headers.emplace_back("WWW-Authenticate", "Bearer");
  return r;
}

// 405, and the methods the path has in Allow.
http::response method_not_allowed(const http::request& req, const std::string& allow) {
  auto r = error_response(
      status::invalid_input("method " + quote_input(req.method) + " is not allowed on " + quote_input(req.path)), 405);
  r.headers.emplace_back("Allow", allow);
  return r;
}

http::response no_route(const http::request& req) {
  return error_response(status::not_found("no route " + quote_input(req.path)));
}

// Whether the row acts in a namespace: its handler gets the namespace's runtime.
bool in_namespace(route_scope s) {
  return s != route_scope::open && s != route_scope::server && s != route_scope::server_admin;
}

// Methods whose request carries a body: admission checks a thread route's
// thread for these before the body is read.
bool carries_body(std::string_view method) { return method == "POST" || method == "PATCH"; }

// What the row's path scope (route.hpp) refuses; nullopt when it passes. The
// resource scopes are the handlers'.
std::optional<http::response> refuse_by_scope(const route& row, const route_match& m, const token_scope& s,
                                              const http::request& req) {
  auto denied = [&](const std::string& agent) {
    return forbidden_response(std::string{row.denied} + " " + quote_input(agent));
  };
  switch (row.scope) {
    case route_scope::server_admin:
      if (!s.server_admin) return forbidden_response(std::string{row.denied});
      break;
    case route_scope::admin:
      if (!s.admin) return forbidden_response(std::string{row.denied});
      break;
    case route_scope::agent:
      if (!s.allows(m.param("agent"))) return denied(m.param("agent"));
      break;
    case route_scope::agent_hidden:
      // An agent id that is no id is the handler's 400, for every token.
      if (!s.allows(m.param("agent")) && validate_id(m.param("agent"), "agent"))
        return error_response(missing_agent(m.param("agent")));
      break;
    case route_scope::agent_query: {
      auto it = req.query.find("agent");
      if (it != req.query.end() && !it->second.empty() && !s.allows(it->second)) return denied(it->second);
      break;
    }
    default:
      break;
  }
  return std::nullopt;
}

}  // namespace

api::api(runtime& rt, token_store tokens, api_options options, std::function<http::server_counters()> counters)
    : single_(&rt), tokens_(std::move(tokens)), options_(options), counters_(std::move(counters)) {}

api::api(namespace_set& namespaces, token_store tokens, api_options options,
         std::function<http::server_counters()> counters)
    : namespaces_(&namespaces), tokens_(std::move(tokens)), options_(options), counters_(std::move(counters)) {}

std::optional<http::response> api::lease(const http::request& req, const token_scope& scope,
                                         std::shared_ptr<runtime>* out) {
  std::string ns = scope.ns;
  std::string named = req.header("skein-namespace");
  if (!named.empty()) {
    if (status s = validate_namespace(named, "Skein-Namespace"); !s) return error_response(s);
    if (!scope.server_admin && named != scope.ns)
      return forbidden_response("act in namespace " + quote_input(named) + " (this token acts in " + scope.ns + ")");
    ns = named;
  }
  if (single_ != nullptr) {
    if (ns != default_namespace) return error_response(status::not_found("namespace " + quote_input(ns) + " not found"));
    *out = std::shared_ptr<runtime>(single_, [](runtime*) {});  // borrowed: the host closes it
    return std::nullopt;
  }
  if (status s = namespaces_->runtime_of(ns, out); !s) {
    if (s.code() == errc::not_found) s = status::not_found("namespace " + quote_input(ns) + " not found");
    return error_response(s);
  }
  return std::nullopt;
}

std::optional<http::response> api::gate(const http::request& req, const route_match& m,
                                        std::optional<token_scope>* scope) {
  if (m.malformed) return error_response(status::invalid_input("malformed request target"));
  if (m.row && m.row->scope == route_scope::open) return std::nullopt;
  if (!m.row && m.open) return method_not_allowed(req, m.allow);
  // Anything else under /ui is a missing file: no token needed to hear so.
  if (!m.row && m.allow.empty() && is_ui_path(req.path)) return no_route(req);
  *scope = tokens_.authenticate(req.header("authorization"));
  if (!*scope) return unauthorized_response();
  const token_scope& s = **scope;
  std::string named = req.header("skein-namespace");
  if (!named.empty() && !s.server_admin && named != s.ns)
    return forbidden_response("act in namespace " + quote_input(named) + " (this token acts in " + s.ns + ")");
  if (!m.row) return m.allow.empty() ? std::nullopt : std::optional{method_not_allowed(req, m.allow)};
  return refuse_by_scope(*m.row, m, s, req);
}

// Decided from the head alone, so that a client refused here never makes the
// server read (or buffer) its body. A path no row has is admitted with a
// standard body and answered 404 by handle(). The handler checks all of it
// again (a request without a body runs its admission and its handler at once).
http::admission api::admit(const http::request& head) {
  http::admission a;
  route_match m = match_route(head);
  if (m.row) a.body = m.row->body;
  std::optional<token_scope> scope;
  if (auto refuse = gate(head, m, &scope)) {
    a.refuse = std::move(refuse);
    return a;
  }
  if (!m.row || m.row->scope != route_scope::thread || !carries_body(m.row->method)) return a;
  // A write to a thread: whether the token sees it, before its body is read.
  std::shared_ptr<runtime> rt;
  if (auto refuse = lease(head, *scope, &rt)) {
    a.refuse = std::move(refuse);
    return a;
  }
  const std::string& id = m.param("thread");
  if (!head.may_wait && !rt->serves_here(id)) {
    a.defer = true;  // the thread is another node's: read it where waiting is allowed
    return a;
  }
  manifest mf;
  if (status s = visible_thread(*rt, *scope, id, "", &mf); !s) a.refuse = error_response(s);
  else a.visible_thread = id;
  return a;
}

void api::handle(http::request& req, std::shared_ptr<http::exchange> ex) {
  route_match m = match_route(req);
  std::optional<token_scope> scope;
  if (auto refuse = gate(req, m, &scope)) return ex->reply(std::move(*refuse));
  if (!m.row) return ex->reply(no_route(req));
  route_env env{options_, namespaces_, counters_};
  route_call c{req, std::move(ex), scope.value_or(token_scope{}), env, m.params, nullptr};
  if (in_namespace(m.row->scope))
    if (auto refuse = lease(req, c.scope, &c.runtime_lease)) return c.reply(std::move(*refuse));
  if (m.row->scope == route_scope::agent_hidden)
    if (status s = visible_agent(c.rt(), c.scope, m.param("agent")); !s) return c.fail(s);
  m.row->handler(c);
}

// The row says whether its handler may run on the I/O thread: only the hot
// path, a waited entry to a thread served here whose admission saw it (its send
// answers later, from the run). Nothing here waits; a stream, whose subscribe
// asks the thread's actor for its backlog, runs on a handler thread.
bool api::runs_inline(const http::request& req) {
  route_match m = match_route(req);
  if (!m.row || m.row->scope != route_scope::thread || !m.row->waits) return false;
  const std::string& id = m.param("thread");
  if (req.admitted_thread != id) return false;
  auto scope = tokens_.authenticate(req.header("authorization"));
  std::shared_ptr<runtime> rt;
  if (!scope || lease(req, *scope, &rt) || !rt->serves_here(id)) return false;
  json::document body;
  json::object_reader r;
  bool wait = false;
  return open_body(req, options_.limits, &body, &r).is_ok() && r.boolean("wait", &wait, false).is_ok() && wait;
}

}  // namespace skein::server
