// Threads rows behind their log (event_log_tick.cpp): a tick that only appends leaves
// the stored row as it is, and every read derives last_seq, updated_at and a
// running thread's heartbeat from the log's last event.
#include <catch2/catch.hpp>
#include <csignal>
#include <sys/wait.h>
#include <unistd.h>

#include "persistence/event_log.hpp"
#include "persistence/keys.hpp"
#include "tests/support/log_fixtures.hpp"
#include "tests/support/raw_db.hpp"
#include "tests/support/temp_dir.hpp"

using namespace skein;
using namespace skein::test;

namespace {

// A second well past 0, so that ms within it are easy to read.
constexpr int64_t second_ms = 1'700'000'000'000;

// One-event ticks as a thread actor commits them: updated_at is the event's ts.
struct thread_writer {
  std::string id;
  manifest m;
  uint64_t last = 0;

  explicit thread_writer(std::string thread) : id(std::move(thread)) {
    m = make_manifest(id, "agent", second_ms);
    m.created_at_ms = second_ms;
  }

  tick next(int64_t ts_ms, size_t count = 1) {
    tick t;
    t.thread_id = id;
    t.create = last == 0;
    m.updated_at_ms = ts_ms;
    if (m.status == thread_status::running) m.heartbeat_at_ms = ts_ms;
    t.manifest = m;
    for (size_t i = 0; i < count; ++i) {
      event e = make_message(message_role::user, "m" + std::to_string(last + i + 1));
      e.seq = last + i + 1;
      e.ts_ms = ts_ms;
      e.run_id = "run";
      t.events.push_back(std::move(e));
    }
    return t;
  }

  status commit(event_log& log, int64_t ts_ms, size_t count = 1) {
    tick t = next(ts_ms, count);
    status s = log.commit(t);
    if (s) last = m.last_seq = t.manifest.last_seq;
    return s;
  }
};

manifest stored_row(const std::string& dir, const std::string& id) {
  raw_db raw{dir};
  std::string value;
  REQUIRE(raw.get("threads", id, &value));
  manifest m;
  REQUIRE(decode_manifest(value, &m).is_ok());
  return m;
}

std::vector<std::string> updated_order(event_log& log) {
  thread_query q;
  q.index = thread_query::by::updated;
  thread_page page;
  auto s = log.list_threads(q, &page);
  INFO(s.to_string());
  REQUIRE(s.is_ok());
  std::vector<std::string> out;
  for (const auto& m : page.threads) out.push_back(m.id);
  return out;
}

}  // namespace

TEST_CASE("a tick that only appends leaves the threads row behind and every read derives it") {
  temp_dir dir;
  thread_writer w{"t"};
  {
    auto log = open_log(dir.str());
    REQUIRE(w.commit(*log, second_ms).is_ok());
    const log_counters created = log->counters();
    CHECK(created.manifests == 1);
    for (int i = 1; i <= 5; ++i) REQUIRE(w.commit(*log, second_ms + 100 * i).is_ok());
    const log_counters after = log->counters();
    CHECK(after.manifests == 1);  // no row for the five appends
    // One event and the day's event count per tick: no row, no index entry.
    CHECK(after.keys - created.keys == 5 * 2);

    manifest m;
    REQUIRE(log->read_manifest("t", &m).is_ok());
    CHECK(m.last_seq == 6);
    CHECK(m.updated_at_ms == second_ms + 500);
    CHECK(m == w.m);  // what the writer holds, field for field
    std::vector<effect_lag_entry> lag;
    REQUIRE(log->list_effect_lag("titles", &lag).is_ok());
    REQUIRE(lag.size() == 1);
    CHECK(lag[0].last_seq == 6);
    CHECK(lag[0].updated_at_ms == second_ms + 500);
    std::vector<manifest> untouched;
    REQUIRE(log->list_untouched(second_ms + 10'000, [&](const manifest& u) { untouched.push_back(u); }, nullptr)
                .is_ok());
    REQUIRE(untouched.size() == 1);
    CHECK(untouched[0].last_seq == 6);
    // An effect may move its cursor to the derived last seq, not past it.
    effect_write ew{"titles", "t", 6, {}};
    CHECK(log->commit_effect(ew).is_ok());
    effect_write past{"titles", "t", 7, {}};
    CHECK(log->commit_effect(past).code() == errc::invalid_input);
  }
  manifest row = stored_row(dir.str(), "t");
  CHECK(row.last_seq == 1);  // behind: the appends left it
  CHECK(row.updated_at_ms == second_ms);

  auto log = open_log(dir.str());
  manifest m;
  REQUIRE(log->read_manifest("t", &m).is_ok());
  CHECK(m.last_seq == 6);
  CHECK(m.updated_at_ms == second_ms + 500);
  // The writer, opened afresh, takes the log's end too: the next seq is 7.
  tick gap = w.next(second_ms + 600);
  gap.events[0].seq = 8;
  CHECK(log->commit(gap).code() == errc::conflict);
  REQUIRE(w.commit(*log, second_ms + 600).is_ok());
  CHECK(w.last == 7);
}

TEST_CASE("a tick that changes the manifest or moves to another second writes the row") {
  temp_dir dir;
  auto log = open_log(dir.str());
  thread_writer w{"t"};
  w.m.status = thread_status::running;
  REQUIRE(w.commit(*log, second_ms).is_ok());
  REQUIRE(w.commit(*log, second_ms + 10).is_ok());
  CHECK(log->counters().manifests == 1);

  // A running thread's heartbeat moves with updated_at and is derived with it.
  manifest m;
  REQUIRE(log->read_manifest("t", &m).is_ok());
  CHECK(m.heartbeat_at_ms == second_ms + 10);
  CHECK(m == w.m);

  // Another title: written, though in the same second.
  w.m.title = "renamed";
  REQUIRE(w.commit(*log, second_ms + 20).is_ok());
  CHECK(log->counters().manifests == 2);
  REQUIRE(log->read_manifest("t", &m).is_ok());
  CHECK(m.title == "renamed");

  // updated_at that is not the last event's ts cannot be derived: written.
  tick t = w.next(second_ms + 30);
  t.manifest.updated_at_ms = second_ms + 31;
  REQUIRE(log->commit(t).is_ok());
  w.last = w.m.last_seq = t.manifest.last_seq;
  w.m.updated_at_ms = second_ms + 31;
  CHECK(log->counters().manifests == 3);
  REQUIRE(log->read_manifest("t", &m).is_ok());
  CHECK(m.updated_at_ms == second_ms + 31);
  CHECK(m.last_seq == 4);

  // A heartbeat left alone while updated_at moves: written (the derivation would move it).
  t = w.next(second_ms + 40);
  t.manifest.heartbeat_at_ms = second_ms + 31;
  REQUIRE(log->commit(t).is_ok());
  w.last = w.m.last_seq = t.manifest.last_seq;
  CHECK(log->counters().manifests == 4);
  REQUIRE(log->read_manifest("t", &m).is_ok());
  CHECK(m.heartbeat_at_ms == second_ms + 31);
  CHECK(m.updated_at_ms == second_ms + 40);

  // The next second: the row and the "u" entry are rewritten together.
  size_t keys_before = 0, keys_after = 0;
  REQUIRE(log->count_thread_keys("t", &keys_before).is_ok());
  const uint64_t written = log->counters().keys;
  REQUIRE(w.commit(*log, second_ms + 1000).is_ok());
  CHECK(log->counters().manifests == 5);
  // event, row, the old "u" entry deleted and the new one put, the day's count
  CHECK(log->counters().keys - written == 5);
  REQUIRE(log->count_thread_keys("t", &keys_after).is_ok());
  CHECK(keys_after == keys_before + 1);  // one more event; still one row and one "u" entry

  // A tick with no events that changes nothing writes no row either.
  tick none = w.next(second_ms + 1000, 0);
  REQUIRE(log->commit(none).is_ok());
  CHECK(log->counters().manifests == 5);
  REQUIRE(log->read_manifest("t", &m).is_ok());
  CHECK(m == w.m);
}

TEST_CASE("listing by update puts first a thread written in a later second, rows behind or not") {
  temp_dir dir;
  auto log = open_log(dir.str());
  thread_writer a{"a"}, b{"b"};
  REQUIRE(a.commit(*log, second_ms).is_ok());
  REQUIRE(b.commit(*log, second_ms + 100).is_ok());
  REQUIRE(b.commit(*log, second_ms + 200).is_ok());  // behind: same second
  // The index keeps seconds: within one, newest first is reverse id order.
  CHECK(updated_order(*log) == std::vector<std::string>{"b", "a"});

  REQUIRE(a.commit(*log, second_ms + 1050).is_ok());
  CHECK(updated_order(*log) == std::vector<std::string>{"a", "b"});
  REQUIRE(a.commit(*log, second_ms + 1900).is_ok());  // behind again
  REQUIRE(b.commit(*log, second_ms + 2001).is_ok());
  CHECK(updated_order(*log) == std::vector<std::string>{"b", "a"});

  thread_query q;
  q.index = thread_query::by::updated;
  thread_page page;
  REQUIRE(log->list_threads(q, &page).is_ok());
  REQUIRE(page.threads.size() == 2);
  CHECK(page.threads[0].updated_at_ms == second_ms + 2001);
  CHECK(page.threads[0].last_seq == 3);
  CHECK(page.threads[1].updated_at_ms == second_ms + 1900);  // derived from its last event
  CHECK(page.threads[1].last_seq == 3);
}

TEST_CASE("ticks acknowledged with the row behind survive SIGKILL: reads and the next tick continue the log") {
  temp_dir dir;
  const int64_t last_ts = second_ms + 900;
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // No Catch2 here: the parent judges what is on disk.
    log_options o;
    o.path = dir.str();
    o.mode = durability::sync;
    std::unique_ptr<event_log> log;
    if (!event_log::open(o, &log)) std::_Exit(2);
    thread_writer w{"t"};
    if (!w.commit(*log, second_ms)) std::_Exit(3);
    for (int i = 1; i <= 9; ++i)
      if (!w.commit(*log, second_ms + 100 * i, 2)) std::_Exit(4);
    if (log->counters().manifests != 1) std::_Exit(5);  // the appends left the row behind
    ::raise(SIGKILL);  // acknowledged, never closed: the WAL alone holds them
    std::_Exit(6);
  }
  int wstatus = 0;
  REQUIRE(::waitpid(child, &wstatus, 0) == child);
  INFO("child status " << wstatus);
  REQUIRE(WIFSIGNALED(wstatus));
  CHECK(WTERMSIG(wstatus) == SIGKILL);

  auto log = open_log(dir.str());
  std::vector<event> events;
  REQUIRE(log->read_events("t", 1, 0, &events).is_ok());
  REQUIRE(events.size() == 19);
  CHECK(events.back().seq == 19);
  manifest m;
  REQUIRE(log->read_manifest("t", &m).is_ok());
  CHECK(m.last_seq == 19);
  CHECK(m.updated_at_ms == last_ts);
  CHECK(m.updated_at_ms >= events.back().ts_ms);

  thread_writer w{"t"};
  w.last = m.last_seq;
  w.m = m;
  REQUIRE(w.commit(*log, last_ts + 50).is_ok());
  CHECK(w.last == 20);
  REQUIRE(log->read_events("t", 1, 0, &events).is_ok());
  REQUIRE(events.size() == 20);
  for (size_t i = 0; i < events.size(); ++i) CHECK(events[i].seq == i + 1);
}

TEST_CASE("opening a version-4 database records version 5") {
  temp_dir dir;
  { open_log(dir.str()); }
  {
    raw_db raw{dir.str()};
    raw.put("meta", "schema_version", "4");
  }
  { open_log(dir.str()); }
  raw_db raw{dir.str()};
  std::string v;
  REQUIRE(raw.get("meta", "schema_version", &v));
  CHECK(v == "5");
  CHECK(schema_version == 5);
}

TEST_CASE("read_manifest into the manifest whose id it is given reads that thread") {
  temp_dir dir;
  auto log = open_log(dir.str());
  // Past the small-string buffer: the id's bytes live where the decode replaces them.
  thread_writer w{"a-thread-id-longer-than-a-small-string"};
  REQUIRE(w.commit(*log, second_ms).is_ok());
  REQUIRE(w.commit(*log, second_ms + 1).is_ok());
  manifest m;
  m.id = w.id;
  REQUIRE(log->read_manifest(m.id, &m).is_ok());
  CHECK(m.id == w.id);
  CHECK(m.last_seq == 2);
}
