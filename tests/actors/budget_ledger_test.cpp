// The budget ledger: built from the day's usage rows at the first check, kept
// up by add(), never counting a row twice, rolled over at midnight UTC.
#include <catch2/catch.hpp>

#include "actors/budget_ledger.hpp"
#include "persistence/keys.hpp"
#include "tests/support/log_fixtures.hpp"
#include "tests/support/temp_dir.hpp"

using namespace skein;
using namespace skein::test;

namespace {

constexpr int64_t day0_ms = 1795392000000;  // 2026-11-23T00:00:00Z

// Appends one run's result event (100 + 10 tokens, 0.25 USD) at ts_ms: a usage
// row keyed by (thread, seq). Returns the row's key.
std::string commit_result(event_log& log, const std::string& thread, uint64_t seq, int64_t ts_ms) {
  tick t = make_tick(thread, seq, 0, "a");
  event e = make_result({100, 10, 0, 0}, 0.25, 5, 1, "completed");
  e.seq = seq;
  e.ts_ms = ts_ms;
  e.run_id = "run";
  t.events.push_back(e);
  REQUIRE(log.commit(t).is_ok());
  return keys::usage_key(thread, seq);
}

agent_config budgeted(uint64_t tokens_max) {
  agent_config a;
  a.id = "a";
  a.budgets.tokens_per_day_max = tokens_max;
  return a;
}

}  // namespace

TEST_CASE("budget ledger: a row the build read is not counted again by add, other days do not count") {
  temp_dir dir;
  std::unique_ptr<event_log> log;
  log_options o;
  o.path = dir.str();
  REQUIRE(event_log::open(o, &log).is_ok());
  commit_result(*log, "t1", 1, day0_ms - 1000);                // yesterday: not today's
  std::string key = commit_result(*log, "t1", 2, day0_ms + 10);  // today
  budget_ledger ledger{log.get()};
  REQUIRE(ledger.check(budgeted(1000), day0_ms + 20).is_ok());  // builds: one row of today
  budget_ledger::spent s;
  REQUIRE(ledger.spending("a", &s));
  CHECK(s.tokens == 110);
  CHECK(s.cost_usd == Approx(0.25));
  // The closing commit of that row is acknowledged after the build read it.
  ledger.add("a", key, day0_ms + 10, {100, 10, 0, 0}, 0.25);
  REQUIRE(ledger.spending("a", &s));
  CHECK(s.tokens == 110);
  // A new row counts once.
  std::string next = commit_result(*log, "t1", 3, day0_ms + 30);
  ledger.add("a", next, day0_ms + 30, {100, 10, 0, 0}, 0.25);
  REQUIRE(ledger.spending("a", &s));
  CHECK(s.tokens == 220);
  // A run closed yesterday, acknowledged today, is yesterday's.
  ledger.add("a", keys::usage_key("t1", 99), day0_ms - 5, {100, 10, 0, 0}, 0.25);
  REQUIRE(ledger.spending("a", &s));
  CHECK(s.tokens == 220);
  status refused = ledger.check(budgeted(220), day0_ms + 40);
  CHECK(refused.code() == errc::budget_exceeded);
  CHECK(refused.limit() == "tokens_per_day_max");
  CHECK(ledger.check(budgeted(221), day0_ms + 40).is_ok());
  // Midnight: the next day starts from its own rows (none yet).
  CHECK(ledger.check(budgeted(220), day0_ms + 86400000).is_ok());
  REQUIRE(ledger.spending("a", &s));
  CHECK(s.tokens == 0);
  // An agent without a budget gets no entry and no read.
  agent_config free;
  free.id = "free";
  CHECK(ledger.check(free, day0_ms).is_ok());
  CHECK(!ledger.spending("free", &s));
}
