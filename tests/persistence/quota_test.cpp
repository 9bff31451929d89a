// The event log's quotas (log_quota): the thread count and the events per UTC
// day the writer keeps and persists, the refusals of creating ticks and new
// inputs, and the approximate storage figure.
#include <catch2/catch.hpp>

#include "persistence/event_log.hpp"
#include "tests/support/log_fixtures.hpp"
#include "tests/support/raw_db.hpp"
#include "tests/support/temp_dir.hpp"

using namespace skein;
using namespace skein::test;

namespace {

constexpr int64_t day_ms = 86400000;
constexpr int64_t day0_ms = 1795392000000;  // 2026-11-23T00:00:00Z

std::unique_ptr<event_log> open_quota_log(const std::string& path, log_quota q = {}) {
  log_options o;
  o.path = path;
  o.mode = durability::flush;
  o.quota = q;
  return open_log(o);
}

// A creating tick with `events` messages at ts_ms.
tick create_tick(const std::string& id, size_t events = 0, int64_t ts_ms = day0_ms) {
  tick t = make_tick(id, 1, events);
  t.create = true;
  for (auto& e : t.events) e.ts_ms = ts_ms;
  return t;
}

// A tick appending `events` messages at ts_ms to a thread whose last seq is `last`.
tick append_tick(const std::string& id, uint64_t last, size_t events, int64_t ts_ms) {
  tick t = make_tick(id, last + 1, events);
  t.create = false;
  for (auto& e : t.events) e.ts_ms = ts_ms;
  return t;
}

log_usage usage_of(const event_log& log, int64_t now_ms = day0_ms) {
  log_usage u;
  auto s = log.usage(now_ms, &u);
  INFO(s.to_string());
  REQUIRE(s.is_ok());
  return u;
}

bool exists(const event_log& log, const std::string& id) {
  manifest m;
  return log.read_manifest(id, &m).is_ok();
}

}  // namespace

TEST_CASE("quota threads_max: a creating tick past it is refused alone, naming the limit and the figures",
          "[quota]") {
  temp_dir dir;
  log_quota q;
  q.threads_max = 2;
  auto log = open_quota_log(dir.str(), q);
  tick a = create_tick("a"), b = create_tick("b", 1), c = create_tick("c", 2);
  tick a2 = append_tick("a", 0, 1, day0_ms);  // not a creation: never refused by threads_max
  tick* group[] = {&a, &b, &c};
  status results[3];
  log->commit_group(group, results);
  CHECK(results[0].is_ok());
  CHECK(results[1].is_ok());  // the second create of the same group still fits
  REQUIRE(results[2].code() == errc::quota_exceeded);
  CHECK(results[2].limit() == "threads_max");
  CHECK(results[2].message().find("2 threads stored, limit 2") != std::string::npos);
  CHECK(!exists(*log, "c"));
  CHECK(usage_of(*log).threads == 2);
  CHECK(log->commit(a2).is_ok());

  // Erasing frees a place; the count is exact again after it.
  REQUIRE(log->erase_thread("b").is_ok());
  REQUIRE(log->erase_thread("b").is_ok());  // idempotent: counts once
  CHECK(usage_of(*log).threads == 1);
  tick d = create_tick("d");
  CHECK(log->commit(d).is_ok());
  tick e = create_tick("e");
  CHECK(log->commit(e).code() == errc::quota_exceeded);

  // Raised while open: the next tick sees it.
  q.threads_max = 3;
  log->set_quota(q);
  CHECK(log->quota().threads_max == 3);
  tick e2 = create_tick("e");
  CHECK(log->commit(e2).is_ok());
  CHECK(usage_of(*log).threads == 3);
  // An invalid creation keeps its own error: the quota is checked after validity.
  tick dup = create_tick("a");
  CHECK(log->commit(dup).code() == errc::conflict);
}

TEST_CASE("quota threads_max: commit_all refuses the whole import, nothing written", "[quota]") {
  temp_dir dir;
  log_quota q;
  q.threads_max = 3;
  auto log = open_quota_log(dir.str(), q);
  tick first = create_tick("first", 1);
  REQUIRE(log->commit(first).is_ok());
  tick x = create_tick("x", 2), y = create_tick("y", 2), z = create_tick("z", 2);
  x.bulk = y.bulk = z.bulk = true;
  tick* all[] = {&x, &y, &z};
  status s = log->commit_all(all);
  REQUIRE(s.code() == errc::quota_exceeded);
  CHECK(s.limit() == "threads_max");
  CHECK(s.message().find("tick 3 of 3") != std::string::npos);
  CHECK(!exists(*log, "x"));
  CHECK(!exists(*log, "y"));
  CHECK(!exists(*log, "z"));
  CHECK(usage_of(*log).threads == 1);
  CHECK(usage_of(*log).events_today == 1);  // the refused import's events are not counted
  tick* two[] = {&x, &y};
  CHECK(log->commit_all(two).is_ok());
  CHECK(usage_of(*log).threads == 3);
}

TEST_CASE("quota rows: the thread count and the day's events survive a reopen, and are counted when absent",
          "[quota]") {
  temp_dir dir;
  {
    auto log = open_quota_log(dir.str());
    for (const char* id : {"a", "b", "c"}) {
      tick t = create_tick(id, 2);
      REQUIRE(log->commit(t).is_ok());
    }
    REQUIRE(log->erase_thread("c").is_ok());
    CHECK(usage_of(*log).threads == 2);
    CHECK(usage_of(*log).events_today == 6);  // erasing a thread does not give a day's events back
  }
  log_quota q;
  q.threads_max = 2;
  q.events_per_day_max = 6;
  {
    auto log = open_quota_log(dir.str(), q);
    log_usage u = usage_of(*log);
    CHECK(u.threads == 2);
    CHECK(u.events_today == 6);
    tick d = create_tick("d");
    CHECK(log->commit(d).code() == errc::quota_exceeded);
    status in = log->admit_input(day0_ms + 1000);
    CHECK(in.code() == errc::quota_exceeded);
    CHECK(in.limit() == "events_per_day_max");
    CHECK(in.message().find("6 events committed on 2026-11-23 (UTC), limit 6") != std::string::npos);
  }
  {
    raw_db raw{dir.str()};
    std::string v;
    REQUIRE(raw.get("meta", "threads", &v));
    CHECK(v == "2");
    REQUIRE(raw.get("meta", "events/2026-11-23", &v));
    CHECK(v == "6");
    // A database of schema 3 has no count (or one nothing kept): the open counts the threads.
    raw.put("meta", "threads", "99");
    raw.put("meta", "schema_version", "3");
  }
  {
    auto log = open_quota_log(dir.str(), q);
    CHECK(usage_of(*log).threads == 2);
  }
  raw_db raw{dir.str()};
  std::string v;
  REQUIRE(raw.get("meta", "threads", &v));
  CHECK(v == "2");
  REQUIRE(raw.get("meta", "schema_version", &v));
  CHECK(v == std::to_string(schema_version));
}

TEST_CASE("quota events_per_day_max: inputs of a day refused once its events reach it, by event ts, old days dropped",
          "[quota]") {
  temp_dir dir;
  log_quota q;
  q.events_per_day_max = 5;
  auto log = open_quota_log(dir.str(), q);
  tick t = create_tick("t", 3, day0_ms + 10);
  REQUIRE(log->commit(t).is_ok());
  CHECK(log->admit_input(day0_ms + 20).is_ok());
  // A run admitted before the figure was reached completes: its ticks pass it.
  tick more = append_tick("t", 3, 4, day0_ms + 30);
  REQUIRE(log->commit(more).is_ok());
  CHECK(usage_of(*log, day0_ms).events_today == 7);
  status s = log->admit_input(day0_ms + 40);
  CHECK(s.code() == errc::quota_exceeded);
  CHECK(s.limit() == "events_per_day_max");
  // A thread born with its input (a firing, a delegated question) is an input too.
  tick fired = create_tick("fired");
  fired.manifest.updated_at_ms = day0_ms + 50;
  run_input scheduled;
  scheduled.text = "scheduled";
  scheduled.run_id = "r1";
  fired.inbox_put.emplace_back(1, scheduled);
  CHECK(log->commit(fired).code() == errc::quota_exceeded);
  CHECK(!exists(*log, "fired"));
  CHECK(usage_of(*log).threads == 1);

  // The next UTC day starts from 0; the day before is kept, older ones are dropped.
  CHECK(log->admit_input(day0_ms + day_ms).is_ok());
  tick next = append_tick("t", 7, 1, day0_ms + day_ms + 5);
  REQUIRE(log->commit(next).is_ok());
  CHECK(usage_of(*log, day0_ms + day_ms).events_today == 1);
  CHECK(usage_of(*log, day0_ms).events_today == 7);
  tick later = append_tick("t", 8, 1, day0_ms + 2 * day_ms);
  REQUIRE(log->commit(later).is_ok());
  CHECK(usage_of(*log, day0_ms).events_today == 0);
  log.reset();
  raw_db raw{dir.str()};
  std::string v;
  CHECK(!raw.get("meta", "events/2026-11-23", &v));
  REQUIRE(raw.get("meta", "events/2026-11-24", &v));
  CHECK(v == "1");
  REQUIRE(raw.get("meta", "events/2026-11-25", &v));
  CHECK(v == "1");
}

TEST_CASE("quota storage_bytes_max: an approximate figure, refusing inputs and creations past it", "[quota]") {
  temp_dir dir;
  auto log = open_quota_log(dir.str());
  tick t = create_tick("t", 50);
  REQUIRE(log->commit(t).is_ok());
  log_usage u = usage_of(*log);
  CHECK(u.storage_bytes > 0);
  log_quota q;
  q.storage_bytes_max = 1;  // below any database
  log->set_quota(q);
  status in = log->admit_input(day0_ms);
  CHECK(in.code() == errc::quota_exceeded);
  CHECK(in.limit() == "storage_bytes_max");
  CHECK(in.message().find("bytes stored, limit 1") != std::string::npos);
  tick c = create_tick("c");
  CHECK(log->commit(c).code() == errc::quota_exceeded);
  CHECK(!exists(*log, "c"));
  // A run's ticks are never refused by a quota.
  tick more = append_tick("t", 50, 1, day0_ms);
  CHECK(log->commit(more).is_ok());
  q.storage_bytes_max = uint64_t{1} << 40;
  log->set_quota(q);
  CHECK(log->admit_input(day0_ms).is_ok());
  CHECK(log->commit(c).is_ok());
}
