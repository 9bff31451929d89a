// The route table (tools/server/routes/routes.hpp) walked row by row through
// real HTTP: every row refuses a missing or wrong token (401), answers a token
// outside its scope as the scope says (403, or 404 as a missing resource), and
// refuses a body past its size class (413 naming the limit). A row added
// without its scope or limit fails here; so does an ns or server row without
// a probe of its own below. And a path's other methods are 405 with Allow.
#include <catch2/catch.hpp>
#include <map>
#include <set>

#include "tests/support/namespace_server.hpp"
#include "tools/server/routes/routes.hpp"

using namespace skein;
using namespace skein::test;

namespace {

const std::string root = "route-root-token-0123456789", ns_admin = "route-ns-admin-0123456789",
                  alpha = "route-alpha-token-0123456789", beta = "route-beta-token-01234567890";
const std::string tokens = root + " admin\n" + ns_admin + " @default admin\n" + alpha + " alpha\n" + beta + " beta\n";
constexpr size_t body_max = 4096, import_body_max = 8192;
constexpr const char* rules = R"({"default":{"reply":"ok"}})";

// Every row live (namespaces too), small body limits.
struct table_server : namespace_server {
  table_server() : namespace_server(tokens, limits()) {}

  static http::server_limits limits() {
    http::server_limits l;
    l.body_bytes_max = body_max;
    l.import_body_bytes_max = import_body_max;
    return l;
  }

  // The same request twice: through HTTP, and straight to the handler with no
  // admission: each must hold the line itself.
  std::vector<http::response> both(const std::string& method, const std::string& target, const std::string& body,
                                   const std::string& token) {
    return {call(method, target, body, token), handle(method, target, body, token)};
  }
};

std::string id_of(const http::response& r) {
  INFO(r.status << " " << r.body);
  REQUIRE(r.status < 300);
  std::string id = field(r.body, "id");
  REQUIRE_FALSE(id.empty());
  return id;
}

std::string header(const http::response& r, const std::string& name) {
  for (const auto& [k, v] : r.headers)
    if (k.size() == name.size() && std::equal(k.begin(), k.end(), name.begin(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
        }))
      return v;
  return "";
}

// `pattern` with each {name} replaced by values[name].
std::string fill(std::string_view pattern, const std::map<std::string, std::string>& values) {
  std::string out{pattern};
  for (size_t at; (at = out.find('{')) != std::string::npos;) {
    size_t end = out.find('}', at);
    std::string name = out.substr(at + 1, end - at - 1);
    INFO("pattern " << pattern << " names {" << name << "}");
    REQUIRE(values.count(name));
    out.replace(at, end - at + 1, http::percent_encode(values.at(name)));
  }
  return out;
}

// What an ns or server row answers a token that asks for another agent's (or
// namespace's) things: its scope is its handler's, so each says how to ask.
struct probe {
  std::string target;  // a pattern, filled with another agent's values
  std::string body;
  int status;
  std::string absent = "";  // a 200's body must not hold this
};

std::map<std::string, probe> ns_probes(const std::string& b_item) {
  const std::string schedule =
      R"({"agent_id":"beta","kind":"once","at_ms":4102444800000,"input":{"text":"later"}})";
  return {
      {"GET /v1/agents", {"/v1/agents", "", 200, R"("id":"beta")"}},
      {"POST /v1/threads", {"/v1/threads", R"({"agent_id":"beta"})", 403}},
      {"POST /v1/schedules", {"/v1/schedules", schedule, 403}},
      {"GET /v1/graph/connected_to", {"/v1/graph/connected_to?node=thread:" + b_item, "", 200, R"("agent_id":"beta")"}},
      {"GET /v1/graph/connected", {"/v1/graph/connected?node=thread:" + b_item, "", 200, R"("agent_id":"beta")"}},
      {"GET /v1/graph/produced_by", {"/v1/graph/produced_by?agent=beta", "", 404}},
      {"GET /v1/graph/provenance", {"/v1/graph/provenance?node=thread:" + b_item, "", 200, R"("agent_id":"beta")"}},
      {"GET /v1/graph/stats", {"/v1/graph/stats", "", 200, R"("created_thread")"}},
      {"GET /v1/namespaces", {"/v1/namespaces", "", 200, R"("name":"other")"}},
      {"GET /v1/namespaces/{namespace}", {"/v1/namespaces/{namespace}", "", 404}},
  };
}

}  // namespace

TEST_CASE("route table: every row checks its token, its scope and its body limit") {
  table_server s;
  REQUIRE(s.call("POST", "/v1/namespaces", R"({"name":"other"})", root).status == 201);
  for (const char* agent : {"alpha", "beta"})
    REQUIRE(s.call("POST", "/v1/agents",
                   std::string(R"({"id":")") + agent + R"(","system_prompt":"t","engine_config":)" + rules + "}", root)
                .status == 201);
  const std::string a_thread = id_of(s.call("POST", "/v1/threads", R"({"agent_id":"alpha"})", alpha));
  const std::string b_thread = id_of(s.call("POST", "/v1/threads", R"({"agent_id":"beta"})", beta));
  id_of(s.call("POST", "/v1/threads", R"({"agent_id":"alpha","task_id":"task-a"})", alpha));
  id_of(s.call("POST", "/v1/threads", R"({"agent_id":"beta","task_id":"task-b"})", beta));
  const std::string once = R"(","kind":"once","at_ms":4102444800000,"input":{"text":"later"}})";
  const std::string a_schedule = id_of(s.call("POST", "/v1/schedules", R"({"agent_id":"alpha)" + once, alpha));
  const std::string b_schedule = id_of(s.call("POST", "/v1/schedules", R"({"agent_id":"beta)" + once, beta));
  auto item = s.call("POST", "/v1/agents/beta/items", R"({"text":"beta's own item"})", beta);
  REQUIRE(item.status == 201);
  const size_t id_at = item.body.find(R"("id":")") + 6;  // the item's, first in its answer
  const std::string b_item = item.body.substr(id_at, item.body.find('"', id_at) - id_at);
  REQUIRE_FALSE(b_item.empty());

  // Alpha's values fill a pattern for its owner; beta's for another agent.
  const std::map<std::string, std::string> own = {
      {"thread", a_thread}, {"agent", "alpha"}, {"schedule", a_schedule}, {"task", "task-a"},
      {"suggestion", "sg-alpha"}, {"session", "session-1"}, {"namespace", "default"}, {"file", "app.js"},
      {"node", "n1"}};
  std::map<std::string, std::string> foreign = own;
  foreign["thread"] = b_thread;
  foreign["agent"] = "beta";
  foreign["schedule"] = b_schedule;
  foreign["task"] = "task-b";
  foreign["suggestion"] = "sg-beta";
  foreign["namespace"] = "other";
  const auto probes = ns_probes(b_item);

  std::set<std::string> seen;
  size_t checked = 0;
  for (const server::route& row : server::api_routes()) {
    const std::string name = std::string{row.method} + " " + std::string{row.pattern};
    INFO(name << " (scope " << server::to_string(row.scope) << ")");
    CHECK(seen.insert(name).second);  // one row per method and pattern
    const std::string target = fill(row.pattern, own);
    const std::string m{row.method};

    // Auth: a row that is not open wants a token the server knows. Open rows
    // hold no data: the server's health and the viewer's files.
    CHECK((row.scope == server::route_scope::open) ==
          (name == "GET /healthz" || name == "GET /ui" || name == "GET /ui/{file}"));
    if (row.scope == server::route_scope::open) {
      for (const auto& r : s.both(m, target, "", "")) CHECK(r.status == 200);
    } else {
      for (const std::string& token : {std::string{}, std::string{"wrong-token-0123456789"}})
        for (const auto& r : s.both(m, target, "", token)) {
          CHECK(r.status == 401);
          CHECK(error_code(r.body) == "unauthorized");
        }
    }

    // Scope: a token outside it, answered as the scope says.
    switch (row.scope) {
      case server::route_scope::open:
        break;
      case server::route_scope::server_admin:
      case server::route_scope::admin:
        for (const auto& r : s.both(m, target, "", row.scope == server::route_scope::admin ? alpha : ns_admin)) {
          CHECK(r.status == 403);
          CHECK(error_code(r.body) == "forbidden");
        }
        break;
      case server::route_scope::agent:
      case server::route_scope::agent_query: {
        std::string asked =
            row.scope == server::route_scope::agent ? fill(row.pattern, foreign) : target + "?agent=beta";
        for (const auto& r : s.both(m, asked, "", alpha)) {
          CHECK(r.status == 403);
          CHECK(error_code(r.body) == "forbidden");
        }
        break;
      }
      case server::route_scope::agent_hidden:
      case server::route_scope::thread:
      case server::route_scope::schedule:
      case server::route_scope::task:
      case server::route_scope::suggestion: {
        // DELETE of the resource itself is idempotent: a missing one is 204.
        bool deletes_it = m == "DELETE" && row.pattern.ends_with("}") &&
                          std::count(row.pattern.begin(), row.pattern.end(), '{') == 1;
        for (const auto& r : s.both(m, fill(row.pattern, foreign), "", alpha)) {
          if (deletes_it) {
            CHECK(r.status == 204);
          } else {
            CHECK(r.status == 404);
            CHECK(error_code(r.body) == "not_found");
          }
        }
        break;
      }
      case server::route_scope::ns:
      case server::route_scope::server: {
        auto it = probes.find(name);
        INFO("an ns or server row needs a probe in ns_probes(): how another agent's ask is answered");
        REQUIRE(it != probes.end());
        const probe& p = it->second;
        for (const auto& r : s.both(m, fill(p.target, foreign), p.body, alpha)) {
          INFO(r.body);
          CHECK(r.status == p.status);
          if (!p.absent.empty()) CHECK(r.body.find(p.absent) == std::string::npos);
        }
        break;
      }
    }

    // Body limit: one byte past the row's size class is refused from the head.
    // Imports alone have their own class.
    bool import = row.body == http::body_class::import;
    CHECK(import == (name == "POST /v1/import"));
    auto r = s.call(m, target, std::string((import ? import_body_max : body_max) + 1, 'x'), root);
    CHECK(r.status == 413);
    CHECK(error_limit(r.body) == (import ? "import_body_bytes_max" : "body_bytes_max"));
    if (import) CHECK(s.call(m, target, std::string(body_max + 1, 'x'), root).status != 413);
    ++checked;
  }
  CHECK(checked == seen.size());
  CHECK(probes.size() <= checked);

  // Nothing another agent asked for was done.
  CHECK(s.call("GET", "/v1/threads/" + b_thread, "", root).status == 200);
  CHECK(s.call("GET", "/v1/schedules/" + b_schedule, "", root).status == 200);
  CHECK(s.call("GET", "/v1/namespaces/other", "", root).status == 200);
}

TEST_CASE("route table: a path's other methods are 405 with Allow, an unknown path 404") {
  table_server s;
  std::map<std::string, std::set<std::string>> methods;
  for (const server::route& row : server::api_routes())
    methods[std::string{row.pattern}].insert(std::string{row.method});
  const std::map<std::string, std::string> values = {
      {"thread", "th-x"}, {"agent", "alpha"}, {"schedule", "sc-x"}, {"task", "task-x"}, {"suggestion", "sg-x"},
      {"session", "session-x"}, {"namespace", "default"}, {"file", "app.js"}, {"node", "n1"}};
  for (const auto& [pattern, allowed] : methods) {
    INFO(pattern);
    for (const std::string m : {"GET", "POST", "PATCH", "DELETE", "PUT"}) {
      if (allowed.count(m)) continue;
      auto r = s.call(m, fill(pattern, values), "", root);
      CHECK(r.status == 405);
      CHECK(error_code(r.body) == "method_not_allowed");
      CHECK_FALSE(error_member(r.body, "message").empty());
      std::set<std::string> listed;
      std::string allow = header(r, "Allow");
      for (size_t at = 0; at <= allow.size();) {
        size_t comma = allow.find(", ", at);
        listed.insert(allow.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
        if (comma == std::string::npos) break;
        at = comma + 2;
      }
      CHECK(listed == allowed);
    }
  }
  // 405 needs a token, but for the open rows' paths.
  CHECK(s.call("PUT", "/v1/threads/th-x", "", "").status == 401);
  CHECK(s.call("POST", "/healthz", "", "").status == 405);
  auto unknown = s.call("GET", "/v1/nothing", "", root);
  CHECK(unknown.status == 404);
  CHECK(error_code(unknown.body) == "not_found");
  CHECK(s.call("GET", "/v1/nothing", "", "").status == 401);
  // Segments are decoded one by one: an escaped '/' stays inside its segment,
  // here a thread id that is no id (400), not a path of five segments (404).
  auto escaped = s.call("GET", "/v1/threads/a%2Fb/entries", "", root);
  CHECK(escaped.status == 400);
  CHECK(error_code(escaped.body) == "invalid_input");
}
