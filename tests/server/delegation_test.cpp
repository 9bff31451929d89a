// Delegation through HTTP: the agent's delegation object on create and read, a
// delegated run visible through entries, and a child another agent's token may
// not see.
#include <catch2/catch.hpp>

#include "tests/support/server_fixture.hpp"

using namespace skein;
using namespace skein::test;

TEST_CASE("HTTP delegation: the agent object carries it, the child runs, scoped tokens see only their own") {
  using namespace scoped;
  server_fixture f{{}, {}, tokens};
  f.agent("beta", R"({"default":{"reply":"beta says hi"}})", admin);
  f.agent("alpha",
          R"({"rules":[{"turn":1,"tool_calls":[{"name":"ask_agent","arguments":{"agent":"beta","question":"hello beta"}}]}],)"
          R"("default":{"reply":"alpha heard: {tool_result}"}})",
          admin, R"(,"delegation":{"agents":["beta"],"depth_max":2})");
  auto read = f.call("GET", "/v1/agents/alpha", "", admin);
  REQUIRE(read.status == 200);
  CHECK(read.body.find(R"("delegation":{"agents":["beta"],"depth_max":2,"self_allowed":false})") != std::string::npos);

  auto bad = f.call("POST", "/v1/agents", R"({"id":"gamma","delegation":{"depth_max":"deep"}})", admin);
  CHECK(bad.status == 400);
  CHECK(bad.body.find("agent.delegation.depth_max") != std::string::npos);

  std::string parent = f.thread("alpha", alpha);
  auto run = f.call("POST", "/v1/threads/" + parent + "/entries", R"({"text":"go","wait":true})", alpha);
  REQUIRE(run.status == 200);
  CHECK(run.body.find("alpha heard: beta says hi") != std::string::npos);

  std::string child = parent + ".1";
  auto entries = f.call("GET", "/v1/threads/" + child + "/entries", "", beta);
  REQUIRE(entries.status == 200);
  CHECK(entries.body.find("hello beta") != std::string::npos);
  auto shown = f.call("GET", "/v1/threads/" + child, "", beta);
  REQUIRE(shown.status == 200);
  CHECK(shown.body.find(R"("depth":1)") != std::string::npos);
  CHECK(shown.body.find(R"("parent_id":")" + parent + "\"") != std::string::npos);
  // The child belongs to beta: alpha's token finds it missing, as any foreign thread.
  auto foreign = f.call("GET", "/v1/threads/" + child, "", alpha);
  CHECK(foreign.status == 404);
  CHECK(error_code(foreign.body) == "not_found");
  CHECK(f.call("GET", "/v1/threads/" + child + "/entries", "", alpha).status == 404);
  // The parent's entries show the call and the child's answer.
  auto parent_entries = f.call("GET", "/v1/threads/" + parent + "/entries?limit=100", "", alpha);
  REQUIRE(parent_entries.status == 200);
  CHECK(parent_entries.body.find(R"("name":"ask_agent")") != std::string::npos);
}
