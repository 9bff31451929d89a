// /v1/schedules: one test per route, each with another agent's token (which
// gets the answer an unknown id gets) and malformed bodies naming the field.
#include <catch2/catch.hpp>

#include "tests/support/server_fixture.hpp"

using namespace skein;
using namespace skein::test;

namespace {

using namespace scoped;
constexpr const char* rules = R"({"default":{"reply":"ok"}})";

runtime_options no_wake() {
  runtime_options o;
  o.schedule_wake_ms = 0;  // nothing fires behind the test's back
  o.effects.titles = o.effects.embeddings = o.effects.compaction = false;
  return o;
}

struct sched_server : server_fixture {
  sched_server() : server_fixture(no_wake(), {}, tokens) {
    agent("alpha", rules, admin);
    agent("beta", rules, admin);
  }
  std::string create(const std::string& body, const std::string& token = alpha) {
    auto r = call("POST", "/v1/schedules", body, token);
    INFO(r.body);
    REQUIRE(r.status == 201);
    return field(r.body, "id");
  }
};

const std::string hourly = R"({"agent_id":"alpha","kind":"cron","cron":"0 * * * *","input":{"text":"hi"}})";

}  // namespace

TEST_CASE("POST /v1/schedules creates, other agents, bad and deep bodies are refused", "[scheduler][http]") {
  sched_server f;
  std::string id = f.create(hourly);
  CHECK(id.rfind("sc_", 0) == 0);
  CHECK(f.call("POST", "/v1/schedules", hourly, beta).status == 403);
  auto bad = f.call("POST", "/v1/schedules", R"({"agent_id":"alpha","kind":"cron","cron":"99 * * * *","input":{"text":"x"}})", alpha);
  CHECK(bad.status == 400);
  CHECK(error_field(bad.body) == "cron");
  bad = f.call("POST", "/v1/schedules", R"({"agent_id":"alpha","kind":"weekly","input":{"text":"x"}})", alpha);
  CHECK(bad.status == 400);
  CHECK(error_field(bad.body) == "kind");
  bad = f.call("POST", "/v1/schedules", R"({"agent_id":"alpha","kind":"interval","interval_ms":1,"input":{"text":"x"}})", alpha);
  CHECK(bad.status == 400);
  CHECK(error_field(bad.body) == "interval_ms");
  CHECK(error_limit(bad.body) == "schedule_interval_ms_min");
  CHECK(f.call("POST", "/v1/schedules", "{\"agent_id\":", alpha).status == 400);
  auto deep = f.call("POST", "/v1/schedules", std::string(5000, '[') + std::string(5000, ']'), alpha);
  CHECK(deep.status == 400);
  CHECK(error_limit(deep.body) == "json_depth_max");
  // A bound thread of another agent answers as a missing thread.
  std::string b_thread = f.thread("beta", beta);
  auto other = f.call("POST", "/v1/schedules",
                      R"({"agent_id":"alpha","kind":"interval","interval_ms":60000,"input":{"text":"x"},"thread_id":")" +
                          b_thread + R"("})",
                      alpha);
  CHECK(other.status == 404);
  CHECK(error_field(other.body) == "thread_id");
}

TEST_CASE("GET /v1/schedules lists what the token may see", "[scheduler][http]") {
  sched_server f;
  std::string a = f.create(hourly);
  std::string b = f.create(R"({"agent_id":"beta","kind":"cron","cron":"0 * * * *","input":{"text":"hi"}})", beta);
  auto mine = f.call("GET", "/v1/schedules", "", alpha);
  REQUIRE(mine.status == 200);
  CHECK(mine.body.find(a) != std::string::npos);
  CHECK(mine.body.find(b) == std::string::npos);
  auto all = f.call("GET", "/v1/schedules", "", admin);
  CHECK(all.body.find(b) != std::string::npos);
  CHECK(f.call("GET", "/v1/schedules?agent=beta", "", alpha).status == 403);
  CHECK(f.call("GET", "/v1/schedules?limit=0", "", alpha).status == 400);
}

TEST_CASE("GET and DELETE /v1/schedules/{id}: another agent's is a missing one", "[scheduler][http]") {
  sched_server f;
  std::string id = f.create(hourly);
  CHECK(f.call("GET", "/v1/schedules/" + id, "", alpha).status == 200);
  auto theirs = f.call("GET", "/v1/schedules/" + id, "", beta);
  auto missing = f.call("GET", "/v1/schedules/sc_nope", "", beta);
  CHECK(theirs.status == 404);
  CHECK(theirs.body == std::string(missing.body).replace(missing.body.find("sc_nope"), 7, id));
  CHECK(f.call("DELETE", "/v1/schedules/" + id, "", beta).status == 204);  // as if missing: nothing deleted
  CHECK(f.call("GET", "/v1/schedules/" + id, "", alpha).status == 200);
  CHECK(f.call("DELETE", "/v1/schedules/" + id, "", alpha).status == 204);
  CHECK(f.call("GET", "/v1/schedules/" + id, "", alpha).status == 404);
  CHECK(f.call("DELETE", "/v1/schedules/" + id, "", alpha).status == 204);  // idempotent
}

TEST_CASE("POST /v1/schedules/{id}/pause and /resume", "[scheduler][http]") {
  sched_server f;
  std::string id = f.create(hourly);
  CHECK(f.call("POST", "/v1/schedules/" + id + "/pause", "", beta).status == 404);
  auto p = f.call("POST", "/v1/schedules/" + id + "/pause", "", alpha);
  REQUIRE(p.status == 200);
  CHECK(p.body.find(R"("paused":true)") != std::string::npos);
  CHECK(f.call("POST", "/v1/schedules/" + id + "/resume", "", beta).status == 404);
  auto r = f.call("POST", "/v1/schedules/" + id + "/resume", "", alpha);
  REQUIRE(r.status == 200);
  CHECK(r.body.find(R"("paused":false)") != std::string::npos);
  CHECK(f.call("GET", "/v1/schedules/" + id + "/pause", "", alpha).status == 405);
}

TEST_CASE("GET /v1/schedules/{id}/history and /preview", "[scheduler][http]") {
  sched_server f;
  std::string id = f.create(hourly);
  size_t fired = 0;
  schedule s;
  REQUIRE(f.rt->get_schedule(id, &s).is_ok());
  // No firing yet: an empty history.
  auto h = f.call("GET", "/v1/schedules/" + id + "/history", "", alpha);
  REQUIRE(h.status == 200);
  CHECK(h.body == R"({"firings":[],"next_before":0})");
  CHECK(f.call("GET", "/v1/schedules/" + id + "/history", "", beta).status == 404);
  CHECK(f.call("GET", "/v1/schedules/" + id + "/history?limit=x", "", alpha).status == 400);
  (void)fired;
  auto p = f.call("GET", "/v1/schedules/" + id + "/preview?n=3", "", alpha);
  REQUIRE(p.status == 200);
  CHECK(p.body.find(std::to_string(s.next_fire_at_ms)) != std::string::npos);
  CHECK(f.call("GET", "/v1/schedules/" + id + "/preview?n=3", "", beta).status == 404);
  auto big = f.call("GET", "/v1/schedules/" + id + "/preview?n=101", "", alpha);
  CHECK(big.status == 400);
  CHECK(error_limit(big.body) == "schedule_preview_max");
}
