// Every route that takes a JSON body names the field at fault in error.field
// (docs/api.md, Errors): a required field left out and a field of the wrong type,
// for each body route. Before, errors raised by the body reader itself
// ("body.interval_ms: expected an unsigned integer", "body.input: missing")
// named the field in the message only.
#include <catch2/catch.hpp>

#include "tests/support/server_fixture.hpp"

using namespace skein;
using namespace skein::test;

namespace {

struct body_route {
  std::string method, target;
  std::string missing_body, missing_field;  // a body without a required field, and that field
  std::string wrong_body, wrong_field;      // a body with a field of the wrong type, and that field
};

}  // namespace

TEST_CASE("HTTP errors: each body route names the missing or wrong-typed field in error.field") {
  server_fixture f;
  f.agent("a", R"({"default":{"reply":"ok"}})");
  const std::string t = f.thread("a");
  REQUIRE(f.call("POST", "/v1/threads/" + t + "/entries", R"({"text":"hi","wait":true})").status == 200);
  const std::string th = "/v1/threads/" + t;
  const std::string schedule_input = R"("input":{"text":"tick"})";
  const std::vector<body_route> routes = {
      {"POST", "/v1/agents", R"({"system_prompt":"x"})", "agent.id", R"({"id":"b","system_prompt":5})",
       "agent.system_prompt"},
      {"POST", "/v1/threads", R"({"title":"x"})", "agent_id", R"({"agent_id":"a","title":5})", "title"},
      {"POST", "/v1/threads", R"({"title":"x"})", "agent_id", R"({"agent_id":"a","policy":"sometimes"})", "policy"},
      {"PATCH", th, R"({})", "title", R"({"title":["x"]})", "title"},
      {"POST", th + "/entries", R"({"wait":true})", "text", R"({"text":"hi","wait":"yes"})", "wait"},
      {"POST", th + "/entries", R"({"role":"user"})", "text", R"({"text":"hi","role":"assistant"})", "role"},
      {"POST", "/v1/agents/a/dm", R"({"wait":true})", "text", R"({"text":7})", "text"},
      {"POST", th + "/members", R"({"trigger":"always"})", "agent", R"({"agent":"a","trigger":1})", "trigger"},
      {"POST", th + "/fork", R"({})", "at_seq", R"({"at_seq":"one"})", "at_seq"},
      {"POST", th + "/compact", R"({"keep_turns":"x"})", "keep_turns", R"({"stages":"trim"})", "stages"},
      {"POST", "/v1/schedules", R"({"agent_id":"a","kind":"interval","interval_ms":60000})", "input",
       R"({"agent_id":"a","kind":"interval","interval_ms":-5,)" + schedule_input + "}", "interval_ms"},
      {"POST", "/v1/schedules", R"({"kind":"interval","interval_ms":60000,)" + schedule_input + "}", "agent_id",
       R"({"agent_id":"a","kind":"interval","interval_ms":60000,"input":{"text":5}})", "input.text"},
      {"POST", "/v1/schedules", R"({"agent_id":"a","interval_ms":60000,)" + schedule_input + "}", "kind",
       R"({"agent_id":"a","kind":"interval","interval_ms":60000,"input":"tick"})", "input"},
      {"POST", "/v1/agents/a/items", R"({"tags":[]})", "text", R"({"text":"x","tags":"t"})", "tags"},
      {"POST", th + "/relate", R"({})", "issue_id", R"({"issue_id":9})", "issue_id"},
  };
  for (const auto& route : routes) {
    for (bool missing : {true, false}) {
      const std::string& body = missing ? route.missing_body : route.wrong_body;
      const std::string& want = missing ? route.missing_field : route.wrong_field;
      auto r = f.call(route.method, route.target, body);
      INFO(route.method << " " << route.target << " " << body << " -> " << r.status << " " << r.body);
      CHECK(r.status == 400);
      CHECK(error_code(r.body) == "invalid_input");
      CHECK(error_field(r.body) == want);
    }
  }
}
