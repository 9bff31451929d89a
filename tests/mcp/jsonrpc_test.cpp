// The JSON-RPC framing and the MCP protocol of `skein mcp`, with no node: a fake
// method table for the framing, a fake transport for the protocol.
#include <catch2/catch.hpp>

#include "tools/mcp/jsonrpc.hpp"
#include "tools/mcp/server.hpp"
#include "tests/support/server_fixture.hpp"

using namespace skein;
using namespace skein::mcp;

namespace {

// Echoes its params as the result; "boom" fails, "throw" throws.
endpoint echo_endpoint(int* calls) {
  return endpoint{[calls](const rpc_request& r) {
    ++*calls;
    if (r.method == "boom") return rpc_outcome::fail(invalid_params, "invalid params: boom");
    if (r.method == "throw") throw std::runtime_error("thrown");
    return rpc_outcome{r.params_json.empty() ? "{}" : r.params_json, std::nullopt};
  }};
}

int64_t error_code_of(const std::string& line) {
  auto p = line.find(R"("code":)");
  return p == std::string::npos ? 0 : std::stoll(line.substr(p + 7));
}

// Records the request of each call and answers a canned response.
struct fake_transport : transport {
  std::vector<http_call> calls;
  http::response answer{200, "application/json", R"({"ok":true})", {}};
  status call(const http_call& c, http::response* out) override {
    calls.push_back(c);
    *out = answer;
    return status::ok();
  }
};

std::string req(const std::string& id, const std::string& method, const std::string& params = "{}") {
  return R"({"jsonrpc":"2.0","id":)" + id + R"(,"method":")" + method + R"(","params":)" + params + "}";
}

std::string initialized(endpoint& ep, const std::string& version = "2025-11-25") {
  return ep.handle_line(req("0", "initialize", R"({"protocolVersion":")" + version +
                                                   R"(","capabilities":{},"clientInfo":{"name":"t","version":"1"}})"));
}

// A session for agent "a" over a fake transport, and the endpoint that frames it;
// the fixture of the mcp test cases. `ep` refers to `s`, so it is not copied.
struct mcp_client {
  mcp_client() = default;
  mcp_client(const mcp_client&) = delete;
  mcp_client& operator=(const mcp_client&) = delete;

  // A tools/call of `name` with `args` (a JSON object), as request 9.
  std::string call(const std::string& name, const std::string& args) {
    return ep.handle_line(req("9", "tools/call", R"({"name":")" + name + R"(","arguments":)" + args + "}"));
  }

  fake_transport t;
  session s{t, "a"};
  endpoint ep{[this](const rpc_request& r) { return s.handle(r); }};
};

}  // namespace

TEST_CASE("jsonrpc: a request is answered with its id echoed exactly, whatever its type") {
  int calls = 0;
  auto ep = echo_endpoint(&calls);
  CHECK(ep.handle_line(req("7", "m", R"({"a":1})")) == R"({"jsonrpc":"2.0","id":7,"result":{"a":1}})");
  CHECK(ep.handle_line(req(R"("x-1")", "m")) == R"({"jsonrpc":"2.0","id":"x-1","result":{}})");
  CHECK(ep.handle_line(req("-9223372036854775808", "m")).find(R"("id":-9223372036854775808)") != std::string::npos);
  CHECK(ep.handle_line(req("18446744073709551615", "m")).find(R"("id":18446744073709551615)") != std::string::npos);
  CHECK(ep.handle_line(req(R"("")", "m")).find(R"("id":"")") != std::string::npos);
  // Ids MCP forbids: null, floats, objects, arrays, booleans.
  for (const char* bad : {"null", "1.5", "{}", "[1]", "true"}) {
    std::string out = ep.handle_line(req(bad, "m"));
    INFO(bad << " -> " << out);
    CHECK(error_code_of(out) == invalid_request);
    CHECK(out.find(R"("id":null)") != std::string::npos);
  }
  CHECK(calls == 5);
}

TEST_CASE("jsonrpc: parse errors, invalid requests and a blank line") {
  int calls = 0;
  auto ep = echo_endpoint(&calls);
  std::string out = ep.handle_line(R"({"jsonrpc":"2.0","id":1,"method":)");
  CHECK(error_code_of(out) == parse_error);
  CHECK(out.find(R"("id":null)") != std::string::npos);
  CHECK(error_code_of(ep.handle_line("42")) == invalid_request);
  CHECK(error_code_of(ep.handle_line(R"({"id":1,"method":"m"})")) == invalid_request);  // no jsonrpc
  out = ep.handle_line(R"({"jsonrpc":"1.0","id":3,"method":"m"})");
  CHECK(error_code_of(out) == invalid_request);
  CHECK(out.find(R"("id":3)") != std::string::npos);  // the id, when readable, is kept
  CHECK(error_code_of(ep.handle_line(R"({"jsonrpc":"2.0","id":1,"method":5})")) == invalid_request);
  CHECK(error_code_of(ep.handle_line(R"({"jsonrpc":"2.0","id":1,"method":"m","params":[1]})")) == invalid_request);
  CHECK(ep.handle_line("").empty());
  CHECK(ep.handle_line("   \r").empty());
  CHECK(calls == 0);
}

TEST_CASE("jsonrpc: notifications and responses get no answer, errors and exceptions become error answers") {
  int calls = 0;
  auto ep = echo_endpoint(&calls);
  CHECK(ep.handle_line(R"({"jsonrpc":"2.0","method":"notifications/initialized"})").empty());
  CHECK(ep.handle_line(R"({"jsonrpc":"2.0","method":"boom"})").empty());
  CHECK(ep.handle_line(R"({"jsonrpc":"2.0","id":4,"result":{}})").empty());
  CHECK(calls == 2);
  CHECK(error_code_of(ep.handle_line(req("1", "boom"))) == invalid_params);
  std::string out = ep.handle_line(req("2", "throw"));
  CHECK(error_code_of(out) == internal_error);
  CHECK(out.find("thrown") != std::string::npos);
}

TEST_CASE("jsonrpc: a line past line_bytes_max is a parse error naming the limit, and the next line is answered") {
  int calls = 0;
  auto ep = echo_endpoint(&calls);
  std::string huge = req("1", "m", R"({"x":")" + std::string(line_bytes_max, 'a') + R"("})");
  std::string input = huge + "\n" + req("2", "m") + "\n";
  std::FILE* in = ::fmemopen(input.data(), input.size(), "r");
  char* buf = nullptr;
  size_t size = 0;
  std::FILE* out = ::open_memstream(&buf, &size);
  ep.serve(in, out);
  std::fclose(in);
  std::fclose(out);
  std::string text{buf, size};
  std::free(buf);
  auto nl = text.find('\n');
  REQUIRE(nl != std::string::npos);
  CHECK(error_code_of(text.substr(0, nl)) == parse_error);
  CHECK(text.find("line_bytes_max") < nl);
  CHECK(text.substr(nl + 1) == R"({"jsonrpc":"2.0","id":2,"result":{}})" "\n");
  CHECK(calls == 1);
}

TEST_CASE("jsonrpc: a batch is refused unless allowed, then answered in one array without its notifications") {
  int calls = 0;
  auto ep = echo_endpoint(&calls);
  std::string batch = "[" + req("1", "m") + R"(,{"jsonrpc":"2.0","method":"n"},)" + req(R"("b")", "m") + "]";
  CHECK(error_code_of(ep.handle_line(batch)) == invalid_request);
  CHECK(calls == 0);
  ep.allow_batches(true);
  CHECK(ep.handle_line(batch) ==
        R"([{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":"b","result":{}}])");
  CHECK(error_code_of(ep.handle_line("[]")) == invalid_request);
  CHECK(ep.handle_line(R"([{"jsonrpc":"2.0","method":"n"}])").empty());
}

TEST_CASE_METHOD(mcp_client, "mcp: requests before initialize are refused, initialize negotiates the revision") {
  CHECK(error_code_of(ep.handle_line(req("1", "tools/list"))) == invalid_request);
  CHECK(ep.handle_line(req("2", "ping")) == R"({"jsonrpc":"2.0","id":2,"result":{}})");
  CHECK(error_code_of(ep.handle_line(req("3", "initialize", "{}"))) == invalid_params);
  CHECK(initialized(ep, "2024-11-05").find(R"("protocolVersion":"2024-11-05")") != std::string::npos);
  CHECK(initialized(ep, "1999-01-01").find(R"("protocolVersion":"2025-11-25")") != std::string::npos);
  CHECK(error_code_of(ep.handle_line(req("4", "resources/list"))) == method_not_found);
  CHECK(t.calls.empty());
}

TEST_CASE_METHOD(mcp_client, "mcp: tools/list gives every tool an object schema with its required fields") {
  initialized(ep);
  std::string out = ep.handle_line(req("1", "tools/list"));
  for (const char* name : {"create_thread", "resolve_thread", "list_threads", "cleanup_threads", "promote_suggestion",
                           "dismiss_suggestion", "graph_traverse", "session_start", "session_close", "send_entry",
                           "read_thread"}) {
    INFO(name);
    CHECK(out.find(std::string{R"("name":")"} + name + R"(")") != std::string::npos);
  }
  CHECK(tool_specs().size() == 11);
  CHECK(out.find(R"("required":["text"])") != std::string::npos);
  CHECK(out.find(R"("required":["thread_id","text"])") != std::string::npos);
}

TEST_CASE_METHOD(mcp_client, "mcp: a tool call builds its route's request, a bad argument is a tool error naming the field") {
  initialized(ep);
  std::string out = call("create_thread", R"({"text":"fix the deploy","relates_to":["GH-1"]})");
  CHECK(out.find(R"("isError":false)") != std::string::npos);
  CHECK(out.find(R"("structuredContent":{"ok":true})") != std::string::npos);
  REQUIRE(t.calls.size() == 1);
  CHECK(t.calls[0].method == "POST");
  CHECK(t.calls[0].target == "/v1/agents/a/items");
  CHECK(t.calls[0].body == R"({"text":"fix the deploy","relates_to":["GH-1"]})");
  call("list_threads", R"({"stages":["active","dormant"],"limit":5})");
  CHECK(t.calls.back().target == "/v1/agents/a/items?stage=active%2Cdormant&limit=5");
  call("graph_traverse", R"({"lens":"produced_by"})");
  CHECK(t.calls.back().target == "/v1/graph/produced_by?agent=a");
  call("session_close", R"({"session_id":"s1","open_items":["x"]})");
  CHECK(t.calls.back().target == "/v1/agents/a/sessions/s1/close");
  CHECK(t.calls.back().body == R"({"open_threads":["x"]})");  // skein's alias, sent as the seed's name
  call("read_thread", R"({"thread_id":"t1","from_seq":3})");
  CHECK(t.calls.back().target == "/v1/threads/t1/entries?from_seq=3");
  size_t made = t.calls.size();

  struct bad_case { const char* tool; const char* args; const char* field; };
  for (auto b : {bad_case{"create_thread", "{}", "arguments.text: required"},
                 bad_case{"create_thread", R"({"text":7})", "arguments.text: must be a string"},
                 bad_case{"create_thread", R"({"text":"x","colour":1})", "arguments.colour: unknown parameter"},
                 bad_case{"create_thread", R"({"text":"x","tags":["a",2]})", "arguments.tags[1]: must be a string"},
                 bad_case{"list_threads", R"({"limit":0})", "arguments.limit: must be between 1 and 1000"},
                 bad_case{"list_threads", R"({"stages":["hot"]})", "arguments.stages[0]: must be one of"},
                 bad_case{"graph_traverse", R"({"lens":"connected"})", "arguments.node: required"},
                 bad_case{"resolve_thread", R"({})", "arguments.thread_id: give exactly one"},
                 bad_case{"send_entry", R"({"thread_id":"t","text":"x","wait":"yes"})", "arguments.wait: must be true or false"}}) {
    std::string o = call(b.tool, b.args);
    INFO(b.tool << " " << b.args << " -> " << o);
    CHECK(o.find(R"("isError":true)") != std::string::npos);
    CHECK(o.find(b.field) != std::string::npos);
  }
  CHECK(t.calls.size() == made);  // no request for a bad argument
  std::string missing = call("create_thread", "{}");
  CHECK(missing.find(R"("structuredContent":{"error":{"code":"invalid_input","message":"arguments.text: required","field":"text"}})") !=
        std::string::npos);
  CHECK(error_code_of(call("nope", "{}")) == invalid_params);
  t.answer = {404, "application/json", R"({"error":{"code":"not_found","message":"thread 't1': not found"}})", {}};
  out = call("read_thread", R"({"thread_id":"t1"})");
  CHECK(out.find(R"("isError":true)") != std::string::npos);
  CHECK(out.find("not_found") != std::string::npos);
  CHECK(ep.handle_line(req("10", "ping")) == R"({"jsonrpc":"2.0","id":10,"result":{}})");  // still answering
}

TEST_CASE_METHOD(mcp_client, "mcp: structuredContent only from the 2025-06-18 revision on") {
  initialized(ep, "2025-03-26");
  std::string out = ep.handle_line(req("1", "tools/call", R"({"name":"cleanup_threads"})"));
  CHECK(out.find("structuredContent") == std::string::npos);
  CHECK(out.find(R"("text":"{\"ok\":true}")") != std::string::npos);
}

TEST_CASE_METHOD(mcp_client, "mcp: the seed's parameters build the routes' requests, and skein's names are aliases of them") {
  initialized(ep);
  auto ok = [](const std::string& o) { return o.find(R"("isError":false)") != std::string::npos; };
  CHECK(ok(call("resolve_thread", R"({"text_match":"deploy pipeline","resolution_note":"rolled back"})")));
  CHECK(t.calls.back().target == "/v1/agents/a/items/resolve");
  CHECK(t.calls.back().body == R"({"text_match":"deploy pipeline","resolution_note":"rolled back"})");
  CHECK(ok(call("resolve_thread", R"({"text":"deploy pipeline","note":"rolled back"})")));
  CHECK(t.calls.back().body == R"({"text_match":"deploy pipeline","resolution_note":"rolled back"})");
  CHECK(ok(call("create_thread", R"({"text":"x","linear_issue":"PROJ-123","project":"web"})")));
  CHECK(t.calls.back().body == R"({"text":"x","linear_issue":"PROJ-123","project":"web"})");
  CHECK(ok(call("list_threads", R"({"status":"resolved","include_resolved":true,"project":"web"})")));
  CHECK(t.calls.back().target == "/v1/agents/a/items?status=resolved&include_resolved=true&project=web");
  CHECK(ok(call("cleanup_threads", R"({"project":"web","auto_archive":true})")));
  CHECK(t.calls.back().body == R"({"project":"web","auto_archive":true})");
  CHECK(ok(call("promote_suggestion", R"({"suggestion_id":"sg1","project":"web"})")));
  CHECK(t.calls.back().target == "/v1/suggestions/sg1/promote");
  CHECK(t.calls.back().body == R"({"project":"web"})");
  CHECK(ok(call("graph_traverse", R"({"lens":"connected_to","node":"issue:X-1","predicate":"relates_to_thread"})")));
  CHECK(t.calls.back().target == "/v1/graph/connected_to?node=issue:X-1&predicate=relates_to_thread");
  CHECK(ok(call("graph_traverse", R"({"lens":"connected","node":"issue:X-1"})")));  // skein's lens name
  CHECK(t.calls.back().target == "/v1/graph/connected_to?node=issue:X-1");
  CHECK(ok(call("graph_traverse", R"({"lens":"produced_by","node":"cli"})")));
  CHECK(t.calls.back().target == "/v1/graph/produced_by?node=cli");
  CHECK(ok(call("session_close",
                R"({"session_id":"s1","close_type":"quick","open_threads":["a",{"text":"b","status":"open"}]})")));
  CHECK(t.calls.back().body == R"({"open_threads":["a",{"text":"b","status":"open"}]})");
  size_t made = t.calls.size();
  struct bad_case { const char* tool; const char* args; const char* field; };
  for (auto b : {bad_case{"resolve_thread", R"({"text_match":"a","text":"a"})", "arguments.text: the same parameter as text_match"},
                 bad_case{"resolve_thread", R"({"note":"a","resolution_note":"a","thread_id":"t"})", "arguments."},
                 bad_case{"list_threads", R"({"status":"closed"})", "arguments.status: must be one of open, resolved"},
                 bad_case{"graph_traverse", R"({"lens":"stats","predicate":"likes"})", "arguments.predicate: must be one of"},
                 bad_case{"session_close", R"({"session_id":"s","close_type":"sloppy"})", "arguments.close_type"},
                 bad_case{"session_close", R"({"session_id":"s","open_threads":"a"})", "arguments.open_threads: must be an array"},
                 bad_case{"create_thread", R"({"text":"x","project":""})", "arguments.project: must not be empty"}}) {
    std::string o = call(b.tool, b.args);
    INFO(b.tool << " " << b.args << " -> " << o);
    CHECK(o.find(R"("isError":true)") != std::string::npos);
    CHECK(o.find(b.field) != std::string::npos);
  }
  CHECK(t.calls.size() == made);
}

TEST_CASE_METHOD(mcp_client, "mcp: session_start's project is the project of the calls after it that name none, as the seed's") {
  initialized(ep);
  call("list_threads", "{}");
  CHECK(t.calls.back().target == "/v1/agents/a/items");  // none started: the route's default
  t.answer = {201, "application/json", R"({"session_id":"s1","project":"web"})", {}};
  call("session_start", R"({"project":"web"})");
  t.answer = {200, "application/json", R"({"ok":true})", {}};
  call("list_threads", "{}");
  CHECK(t.calls.back().target == "/v1/agents/a/items?project=web");
  call("create_thread", R"({"text":"x"})");
  CHECK(t.calls.back().body == R"({"text":"x","project":"web"})");
  call("resolve_thread", R"({"text_match":"x"})");
  CHECK(t.calls.back().body == R"({"text_match":"x","project":"web"})");
  call("graph_traverse", R"({"lens":"stats"})");
  CHECK(t.calls.back().target == "/v1/graph/stats?project=web");
  call("list_threads", R"({"project":"other"})");  // a named one wins
  CHECK(t.calls.back().target == "/v1/agents/a/items?project=other");
  // promote and close keep their own defaults (the suggestion's, the session's).
  call("promote_suggestion", R"({"suggestion_id":"sg1"})");
  CHECK(t.calls.back().body == "{}");
  call("session_close", R"({"session_id":"s1"})");
  CHECK(t.calls.back().body == "{}");
  // A failed session_start changes nothing.
  t.answer = {400, "application/json", R"({"error":{"code":"invalid_input","message":"x"},"project":"bad"})", {}};
  call("session_start", R"({"project":"bad"})");
  t.answer = {200, "application/json", R"({"ok":true})", {}};
  call("list_threads", "{}");
  CHECK(t.calls.back().target == "/v1/agents/a/items?project=web");
}
