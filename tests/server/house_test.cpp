// Task threads, DM threads, houses, engine overrides and payload groups over
// HTTP, with scoped tokens: another agent's token learns nothing.
#include <catch2/catch.hpp>

#include <cstdlib>

#include "tests/support/server_fixture.hpp"

using namespace skein;
using namespace skein::test;

namespace {

const std::string admin = "admin-token-0123456789", alpha = "alpha-token-0123456789", beta = "beta-token-01234567890";
const std::string tokens_file = admin + " admin\n" + alpha + " alpha\n" + beta + " beta\n";
const std::string rules = R"({"default":{"reply":"ok","thinking":"hmm"}})";

manifest decoded(const http::response& r) {
  manifest m;
  INFO(r.body);
  REQUIRE(decode_manifest(r.body, &m).is_ok());
  return m;
}

}  // namespace

TEST_CASE("HTTP tasks: a second create answers 200 with the first thread, lookup is scoped") {
  server_fixture f{{}, {}, tokens_file};
  f.agent("alpha", rules, admin);
  f.agent("beta", rules, admin);
  auto first = f.call("POST", "/v1/threads", R"({"agent_id":"alpha","task_id":"T-1"})", alpha);
  REQUIRE(first.status == 201);
  CHECK(first.body.find("\"existing\"") == std::string::npos);
  auto second = f.call("POST", "/v1/threads", R"({"agent_id":"alpha","task_id":"T-1"})", alpha);
  REQUIRE(second.status == 200);
  CHECK(second.body.find(R"("existing":true)") != std::string::npos);
  CHECK(decoded(second).id == decoded(first).id);
  auto found = f.call("GET", "/v1/tasks/T-1", "", alpha);
  REQUIRE(found.status == 200);
  CHECK(decoded(found).id == decoded(first).id);
  // Beta: the task answers as a missing one, byte for byte; a create learns only "taken".
  auto hidden = f.call("GET", "/v1/tasks/T-1", "", beta);
  auto missing = f.call("GET", "/v1/tasks/T-2", "", beta);
  CHECK(hidden.status == 404);
  CHECK(hidden.body == std::string(missing.body).replace(missing.body.find("T-2"), 3, "T-1"));
  auto taken = f.call("POST", "/v1/threads", R"({"agent_id":"beta","task_id":"T-1"})", beta);
  CHECK(taken.status == 409);
  CHECK(taken.body.find(decoded(first).id) == std::string::npos);
  CHECK(error_code(taken.body) == "conflict");
  CHECK(f.call("GET", "/v1/tasks/" + std::string(300, 'x'), "", alpha).status == 400);
}

// Without tokens every request is the admin's: the request's agent_id, not the
// token's scope, decides. Before, asking for a task's thread as another agent
// answered 200 with that agent's thread, and its inputs then ran under it.
TEST_CASE("HTTP tasks: the task's thread of one agent is a conflict for another, whatever the token") {
  server_fixture f;
  f.agent("helper", rules);
  f.agent("other", rules);
  auto first = f.call("POST", "/v1/threads", R"({"agent_id":"helper","task_id":"TICKET-9"})");
  REQUIRE(first.status == 201);
  auto taken = f.call("POST", "/v1/threads", R"({"agent_id":"other","task_id":"TICKET-9"})");
  INFO(taken.body);
  CHECK(taken.status == 409);
  CHECK(error_code(taken.body) == "conflict");
  CHECK(taken.body.find(R"("field":"task_id")") != std::string::npos);
  CHECK(taken.body.find(decoded(first).id) == std::string::npos);
  // The task's own agent still gets its thread, and nothing was created for the other.
  auto again = f.call("POST", "/v1/threads", R"({"agent_id":"helper","task_id":"TICKET-9"})");
  REQUIRE(again.status == 200);
  CHECK(decoded(again).id == decoded(first).id);
  auto listed = f.call("GET", "/v1/threads?agent=other");
  REQUIRE(listed.status == 200);
  CHECK(listed.body.find(R"("agent_id":"other")") == std::string::npos);
}

TEST_CASE("HTTP DM: POST /v1/agents/{id}/dm creates the DM thread once, then reuses it") {
  server_fixture f{{}, {}, tokens_file};
  f.agent("alpha", rules, admin);
  auto one = f.call("POST", "/v1/agents/alpha/dm", R"({"text":"hi","wait":true})", alpha);
  REQUIRE(one.status == 200);
  auto two = f.call("POST", "/v1/agents/alpha/dm", R"({"text":"again"})", alpha);
  REQUIRE(two.status == 202);
  std::string thread = field(two.body, "thread_id");
  CHECK(one.body.find(thread) != std::string::npos);
  manifest m = decoded(f.call("GET", "/v1/threads/" + thread, "", alpha));
  CHECK(m.parent == parent_kind::agent);
  CHECK(m.parent_id == "alpha");
  CHECK(f.call("POST", "/v1/agents/alpha/dm", R"({"text":"x"})", beta).status == 403);
  CHECK(f.call("POST", "/v1/agents/nobody/dm", R"({"text":"x"})", admin).status == 404);
  auto bad = f.call("POST", "/v1/agents/alpha/dm", R"({"text":)", alpha);
  CHECK(bad.status == 400);
  CHECK(f.call("POST", "/v1/agents/alpha/dm", std::string(2 << 20, 'x'), alpha).status == 413);
}

TEST_CASE("HTTP groups, engine overrides and house members") {
  server_fixture f{{}, {}, tokens_file};
  f.agent("alpha", rules, admin);
  f.agent("beta", rules, admin);
  auto created = f.call("POST", "/v1/threads",
                        R"({"agent_id":"alpha","engine_config":{"default":{"reply":"patched"}}})", alpha);
  REQUIRE(created.status == 201);
  std::string t = decoded(created).id;
  auto run = f.call("POST", "/v1/threads/" + t + "/entries", R"({"text":"go","wait":true})", alpha);
  CHECK(run.body.find(R"("text":"patched")") != std::string::npos);
  CHECK(f.call("POST", "/v1/threads", R"({"agent_id":"alpha","engine_config":[1]})", alpha).status == 400);
  auto chat = f.call("GET", "/v1/threads/" + t + "/entries?group=chat", "", alpha);
  REQUIRE(chat.status == 200);
  CHECK(chat.body.find(R"("type":"signal")") == std::string::npos);
  CHECK(chat.body.find(R"("type":"thinking")") == std::string::npos);
  CHECK(chat.body.find(R"("type":"message")") != std::string::npos);
  auto bad = f.call("GET", "/v1/threads/" + t + "/entries?group=chat,bogus", "", alpha);
  CHECK(bad.status == 400);
  CHECK(bad.body.find(R"("field":"group")") != std::string::npos);
  CHECK(f.call("GET", "/v1/threads/" + t + "/stream?group=nope", "", alpha).status == 400);

  // Members: the token must speak for the member's agent too.
  CHECK(f.call("POST", "/v1/threads/" + t + "/members", R"({"agent":"beta"})", alpha).status == 403);
  CHECK(f.call("POST", "/v1/threads/" + t + "/members", R"({"agent":"alpha","trigger":"sometimes"})", alpha).status == 400);
  CHECK(f.call("POST", "/v1/threads/" + t + "/members", R"({"agent":"beta"})", beta).status == 404);
  auto added = f.call("POST", "/v1/threads/" + t + "/members", R"({"agent":"beta","trigger":"on_mention"})", admin);
  REQUIRE(added.status == 200);
  CHECK(decoded(added).members.size() == 1);
  auto removed = f.call("DELETE", "/v1/threads/" + t + "/members/beta", "", admin);
  REQUIRE(removed.status == 200);
  CHECK(decoded(removed).members.empty());
  CHECK(f.call("DELETE", "/v1/threads/" + t + "/members/beta", "", admin).status == 404);
  auto house = f.call("POST", "/v1/threads",
                      R"({"agent_id":"alpha","members":[{"agent":"alpha"},{"agent":"beta","trigger":"on_mention"}]})", alpha);
  CHECK(house.status == 403);  // alpha's token cannot seat beta
}

// A thread's engine_config patch comes from whoever may create the agent's
// threads, not from the admin who configured the agent: it must not send the
// server's key elsewhere (openai) or choose the program the server runs (process).
TEST_CASE("HTTP engine overrides: a thread may not redirect openai or choose what process runs") {
  ::setenv("SKEIN_TEST_EMPTY_KEY", "", 1);  // set and empty: no Authorization header
  server_fixture f{{}, {}, tokens_file};
  f.agent("alpha", R"({"base_url":"http://127.0.0.1:9/v1","model":"m","api_key_env":"SKEIN_TEST_EMPTY_KEY"})", admin,
          R"(,"engine":"openai")");
  f.agent("beta", R"({"command":["/bin/cat"]})", admin, R"(,"engine":"process")");
  auto threads_of = [&](const std::string& agent, const std::string& token) {
    auto r = f.call("GET", "/v1/threads?agent=" + agent, "", token);
    REQUIRE(r.status == 200);
    size_t n = 0;
    for (size_t at = r.body.find("\"agent_id\":\"" + agent + "\""); at != std::string::npos;
         at = r.body.find("\"agent_id\":\"" + agent + "\"", at + 1))
      ++n;
    return n;
  };
  auto create = [&](const std::string& agent, const std::string& patch, const std::string& token) {
    return f.call("POST", "/v1/threads", R"({"agent_id":")" + agent + R"(","engine_config":)" + patch + "}", token);
  };
  for (const char* patch : {R"({"base_url":"http://attacker.example/v1"})", R"({"api_key_env":"HOME"})",
                            R"({"ca_file":"/etc/shadow"})", R"({"model":"m2","base_url":null})",
                            R"({"retries":100})", R"({"prices":{}})"}) {
    INFO(patch);
    auto r = create("alpha", patch, alpha);
    CHECK(r.status == 400);
    CHECK(error_code(r.body) == "invalid_input");
    CHECK(r.body.find(R"("field":"engine_config.)") != std::string::npos);
    CHECK(r.body.find("a thread may not set it for engine openai") != std::string::npos);
  }
  CHECK(threads_of("alpha", alpha) == 0);
  auto ok = create("alpha", R"({"model":"m2","temperature":0.5,"max_tokens":10})", alpha);
  REQUIRE(ok.status == 201);
  CHECK(decoded(ok).config.find(R"("temperature":0.5)") != std::string::npos);
  CHECK(threads_of("alpha", alpha) == 1);

  for (const char* patch : {R"({"command":["/bin/sh","-c","id"]})", R"({"env":{"LD_PRELOAD":"/tmp/x.so"}})",
                            R"({"cwd":"/"})", R"({"line_bytes_max":1})"}) {
    INFO(patch);
    auto r = create("beta", patch, beta);
    CHECK(r.status == 400);
    CHECK(r.body.find("a thread may not set it for engine process") != std::string::npos);
  }
  auto r = create("beta", R"({"command":["/bin/sh"]})", beta);
  CHECK(r.body.find(R"("field":"engine_config.command")") != std::string::npos);
  CHECK(threads_of("beta", beta) == 0);
  CHECK(create("beta", "{}", beta).status == 201);
}
