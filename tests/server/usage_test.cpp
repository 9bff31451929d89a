// GET /v1/usage, daily budgets over HTTP, and the archived listing flag.
#include <atomic>
#include <catch2/catch.hpp>

#include "tests/support/server_fixture.hpp"

using namespace skein;
using namespace skein::test;

namespace {

constexpr int64_t day0_ms = 1795392000000;  // 2026-11-23T00:00:00Z
constexpr int64_t day_ms = 86400000;
const char* metered = R"({"default":{"reply":"ok","usage":{"input_tokens":100,"output_tokens":10},"cost_usd":0.5}})";

std::string run(server_fixture& f, const std::string& thread, const std::string& token = "") {
  auto r = f.call("POST", "/v1/threads/" + thread + "/entries", R"({"text":"hi","wait":true})", token);
  INFO(r.body);
  REQUIRE(r.status == 200);
  return r.body;
}

// The "runs" of the group `key` of a GET /v1/usage body; -1 if absent.
long runs_of(const std::string& body, const std::string& key) {
  auto p = body.find(R"("key":")" + key + R"(")");
  if (p == std::string::npos) return -1;
  p = body.find(R"("runs":)", p);
  return std::stol(body.substr(p + 7));
}

// Runtime options whose clock reads `now`, which the test moves.
runtime_options clocked(const std::atomic<int64_t>& now) {
  runtime_options ro;
  ro.clock = [&now] { return now.load(); };
  return ro;
}

}  // namespace

TEST_CASE("GET /v1/usage: groups, filters, time forms, bad values name the field, tokens see their agents only") {
  std::atomic<int64_t> now{day0_ms + 10 * 3600000};  // 10:00 UTC
  const std::string tokens = "admin-token-0123456789 admin\nalpha-token-0123456789 alpha\n";
  const std::string admin = "admin-token-0123456789", alpha = "alpha-token-0123456789";
  server_fixture f{clocked(now), {}, tokens};
  f.agent("alpha", metered, admin);
  f.agent("beta", metered, admin);
  std::string a1 = f.thread("alpha", admin), b1 = f.thread("beta", admin);
  run(f, a1, admin);
  run(f, a1, admin);
  run(f, b1, admin);
  now += day_ms;
  run(f, b1, admin);

  auto all = f.call("GET", "/v1/usage", "", admin);
  REQUIRE(all.status == 200);
  CHECK(runs_of(all.body, "") == 4);
  CHECK(all.body.find(R"("input_tokens":400)") != std::string::npos);
  CHECK(all.body.find(R"("cost_usd":2)") != std::string::npos);

  auto by_agent = f.call("GET", "/v1/usage?group_by=agent", "", admin);
  CHECK(runs_of(by_agent.body, "alpha") == 2);
  CHECK(runs_of(by_agent.body, "beta") == 2);
  auto by_day = f.call("GET", "/v1/usage?group_by=day", "", admin);
  CHECK(runs_of(by_day.body, "2026-11-23") == 3);
  CHECK(runs_of(by_day.body, "2026-11-24") == 1);
  auto by_thread = f.call("GET", "/v1/usage?agent=beta&group_by=thread", "", admin);
  CHECK(runs_of(by_thread.body, b1) == 2);

  // since/until: ms, a date, a date-time; half-open.
  CHECK(runs_of(f.call("GET", "/v1/usage?since=2026-11-24", "", admin).body, "") == 1);
  CHECK(runs_of(f.call("GET", "/v1/usage?until=2026-11-24", "", admin).body, "") == 3);
  CHECK(runs_of(f.call("GET", "/v1/usage?until=2026-11-23T10:00:00Z", "", admin).body, "") == 0);
  CHECK(runs_of(f.call("GET", "/v1/usage?since=2026-11-23T10:00:00.000Z&until=2026-11-23T10:00:00.001Z", "", admin).body, "") == 3);
  CHECK(runs_of(f.call("GET", "/v1/usage?since=" + std::to_string(day0_ms + day_ms), "", admin).body, "") == 1);

  for (const auto& [target, field] : std::vector<std::pair<std::string, std::string>>{
           {"/v1/usage?since=yesterday", "since"},
           {"/v1/usage?until=2026-13-01", "until"},
           {"/v1/usage?until=2026-02-30", "until"},
           {"/v1/usage?since=2026-11-23T10:00:00%2B02:00", "since"},
           {"/v1/usage?group_by=week", "group_by"},
           {"/v1/usage?since=2026-11-24&until=2026-11-23", "since"}}) {
    INFO(target);
    auto r = f.call("GET", target, "", admin);
    CHECK(r.status == 400);
    CHECK(r.body.find(R"("field":")" + field + R"(")") != std::string::npos);
  }

  // A token scoped to alpha: its agent by default, never beta's.
  auto mine = f.call("GET", "/v1/usage", "", alpha);
  REQUIRE(mine.status == 200);
  CHECK(runs_of(mine.body, "") == 2);
  CHECK(f.call("GET", "/v1/usage?agent=beta", "", alpha).status == 403);
  auto foreign = f.call("GET", "/v1/usage?thread=" + b1, "", alpha);
  CHECK(foreign.status == 404);
  CHECK(error_code(foreign.body) == "not_found");
  CHECK(f.call("GET", "/v1/usage?thread=" + a1, "", alpha).status == 200);
  CHECK(f.call("POST", "/v1/usage", "", admin).status == 405);
}

TEST_CASE("HTTP: a run past the agent's daily budget is 402 budget_exceeded naming the limit, nothing written") {
  std::atomic<int64_t> now{day0_ms + 1000};
  server_fixture f{clocked(now)};
  f.agent("a", metered, "", R"(,"budgets":{"tokens_per_day_max":200})");
  std::string t = f.thread("a");
  run(f, t);
  run(f, t);  // 220 tokens: the budget is spent
  check_entries_refused(f, t, 402, "budget_exceeded", "tokens_per_day_max");
  now += day_ms;
  run(f, t);
}

TEST_CASE("GET /v1/threads?archived=include|only: archived threads leave default listings") {
  std::atomic<int64_t> now{day0_ms};
  server_fixture f{clocked(now)};
  f.agent("a", metered, "", R"(,"retention":{"archive_after_days":2})");
  std::string old_thread = f.thread("a");
  run(f, old_thread);
  now += 3 * day_ms;
  std::string fresh = f.thread("a");
  retention_result r;
  REQUIRE(f.rt->apply_retention(&r).is_ok());
  REQUIRE(r.archived == std::vector<std::string>{old_thread});
  auto def = f.call("GET", "/v1/threads?agent=a").body;
  CHECK(def.find(old_thread) == std::string::npos);
  CHECK(def.find(fresh) != std::string::npos);
  auto only = f.call("GET", "/v1/threads?agent=a&archived=only").body;
  CHECK(only.find(old_thread) != std::string::npos);
  CHECK(only.find(fresh) == std::string::npos);
  auto inc = f.call("GET", "/v1/threads?agent=a&archived=include").body;
  CHECK(inc.find(old_thread) != std::string::npos);
  CHECK(inc.find(fresh) != std::string::npos);
  auto bad = f.call("GET", "/v1/threads?archived=maybe");
  CHECK(bad.status == 400);
  CHECK(bad.body.find(R"("field":"archived")") != std::string::npos);
  // Still readable.
  CHECK(f.call("GET", "/v1/threads/" + old_thread).status == 200);
  CHECK(f.call("GET", "/v1/threads/" + old_thread + "/entries").status == 200);
  CHECK(f.call("GET", "/v1/threads/" + old_thread + "/export").status == 200);
}
