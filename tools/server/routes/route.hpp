// route: one row of the HTTP API's route table — method, path pattern, scope,
// body limit, whether it streams, and its handler — and route_call, what a
// handler is given. Each resource declares its rows beside its handlers
// (routes/<resource>.cpp; routes.hpp lists the tables). api.cpp matches a
// request to one row (router.hpp), and that row decides both its admission,
// from the request's head before any body byte is read, and the handler that
// answers it: a route cannot be admitted by one rule and served by another.
//
// A pattern is a path of literal segments and named ones: "/v1/threads/{thread}/entries".
// A name says what the segment holds, and a scope that checks a path segment
// reads the one of its name ({agent}, {thread}). Rows are constant data.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/runtime.hpp"
#include "tools/server/api.hpp"
#include "tools/server/auth.hpp"
#include "tools/server/http.hpp"

namespace skein {
class namespace_set;
namespace json {
class document;
class object_reader;
}  // namespace json
}  // namespace skein

namespace skein::server {

// Who may call a route, and what answers one who may not. The dispatcher
// (api.cpp) checks server_admin, admin, agent_query, agent and agent_hidden
// from the token, the path and the query, at admission and again before the
// handler. The handler checks thread, schedule, task and suggestion, since it
// reads the resource anyway; but admission checks a thread route's thread first
// when its request carries a body (POST, PATCH), so that a token that may not
// see the thread never has its body read.
enum class route_scope : uint8_t {
  open,          // no token: /healthz and the viewer's files, which hold no data
  server,        // any token, outside a namespace: it sees its own namespace only
  server_admin,  // the server's admin, outside a namespace; anyone else: 403
  admin,         // the namespace's admin (or the server's); anyone else: 403
  ns,            // any token of the namespace; the handler keeps to the token's agents
                 // (a list leaves the others out, a body's agent_id of another is 403)
  agent_query,   // ns, and a query agent= the token does not speak for is 403
  agent,         // the path's {agent} is one the token speaks for; another: 403
  agent_hidden,  // the path's {agent} is one the token speaks for, and exists: another
                 // agent answers as a missing one (404, its bytes); the existence is
                 // read before the handler, not at admission
  thread,        // the path's {thread} is one the token sees; another agent's answers as
                 // a missing one (404 with its bytes; 204 for DELETE /v1/threads/{thread})
  schedule,      // the same for the path's {schedule}
  task,          // the same for the path's {task}
  suggestion,    // the same for the path's {suggestion}
};

std::string_view to_string(route_scope s);

// The values of a matched pattern's named segments, percent-decoded.
using route_params = std::vector<std::pair<std::string_view, std::string>>;
// The value of segment `name`; "" when the pattern has none.
const std::string& param_of(const route_params& params, std::string_view name);

struct route_call;
using route_handler = void (*)(route_call& c);

struct route {
  std::string_view method;   // "GET", "POST", "PATCH", "DELETE"
  std::string_view pattern;  // "/v1/threads/{thread}/entries"
  route_scope scope = route_scope::ns;
  // What a 403 says the token may not do: "create agents (admin only)"; for
  // the agent scopes, followed by the agent ("message agent" -> "message agent a").
  std::string_view denied = {};
  // The body's size limit: server_limits::body_bytes_max, or import_body_bytes_max.
  http::body_class body = http::body_class::standard;
  // Answers with an event stream (SSE); run on the I/O thread when the path's
  // thread is served here (http::inline_check): its frames are written there.
  bool streams = false;
  // A body's "wait":true is answered by the run's end, not by the handler: run
  // on the I/O thread when the path's thread is served here and admission saw it.
  bool waits = false;
  route_handler handler = nullptr;
};

// What every handler shares: the server's options and what the api was given.
struct route_env {
  const api_options& options;
  namespace_set* namespaces;  // null: the server has one namespace
  const std::function<http::server_counters()>& counters;  // may be empty
};

// One request on its way to a handler. The handler answers through `ex`,
// exactly once, now or later from any thread.
struct route_call {
  http::request& req;
  std::shared_ptr<http::exchange> ex;
  token_scope scope;
  const route_env& env;
  const route_params& params;
  // The namespace's runtime (a lease: it stays open while held); null for the
  // rows outside a namespace (open, server, server_admin).
  std::shared_ptr<runtime> runtime_lease;

  runtime& rt() { return *runtime_lease; }
  const json_limits& limits() const { return env.options.limits; }
  // The value of the pattern's segment `name`; the row's pattern has it.
  const std::string& param(std::string_view name) const;
  // A query parameter; "" when absent.
  std::string query(std::string_view name) const;

  void reply(http::response r) { ex->reply(std::move(r)); }
  void reply_json(int http_status, std::string body);
  void fail(const status& s, int http_status_override = 0) { ex->reply(error_response(s, http_status_override)); }
  void forbidden(const std::string& what);
  // Reads the thread and checks the token may see it; answers, and false, if
  // not — the same way whether the thread is missing or another agent's.
  bool thread_allowed(const std::string& id, manifest* m);
  // The request body as a JSON object (open_body): every body route reads its
  // body here, and names a field at fault through the reader
  // (object_reader::invalid, ::about, ::only), so that each error names it in
  // status::field as the body has it.
  status body(json::document* doc, json::object_reader* out) const;
};

// A request's body as a JSON object ("{}" when empty) within `limits`, named
// "body" in errors. *out reads from *doc.
status open_body(const http::request& req, const json_limits& limits, json::document* doc, json::object_reader* out);

// Answers shared by the dispatcher and the handlers.
http::response json_response(int http_status, std::string body);
http::response no_content();  // 204
http::response forbidden_response(const std::string& what);
// The one answer for a thread the caller may not see: a missing thread and
// another agent's are indistinguishable, byte for byte.
status missing_thread(const std::string& id, const std::string& field = "");
// The same for an agent of an agent_hidden route (field "agent").
status missing_agent(const std::string& id);
// The agent `id` if the scope may see it and it exists; another agent's answers
// as a missing one (missing_agent), byte for byte.
status visible_agent(runtime& rt, const token_scope& scope, const std::string& id);
// The thread `id` if the scope may see it; missing_thread() when it is absent
// or another agent's. `field` names the input that held the id ("" for the path).
status visible_thread(runtime& rt, const token_scope& scope, const std::string& id, const std::string& field,
                      manifest* m);

// Query parameters: an unsigned number (`fallback` when absent), errors naming it.
status parse_uint(const std::string& text, const std::string& field, uint64_t* out);
status query_uint(const http::request& req, const std::string& name, uint64_t fallback, uint64_t* out);

// The stored manifest and its derived `stage` (thread_stage, manifest.hpp):
// every manifest an answer holds, a listing's rows included.
std::string manifest_json(const manifest& m);

}  // namespace skein::server
