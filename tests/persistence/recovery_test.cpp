// Recovery at open with unreadable records: a running thread whose manifest or
// events do not decode is quarantined; every other thread is repaired or left
// alone, and nothing stops the open.
#include <catch2/catch.hpp>

#include "persistence/event_log.hpp"
#include "persistence/keys.hpp"
#include "persistence/recovery.hpp"
#include "tests/support/log_fixtures.hpp"
#include "tests/support/raw_db.hpp"
#include "tests/support/temp_dir.hpp"

using namespace skein;
using namespace skein::test;

namespace {

// A thread in the middle of a run: input, thread.start, an unanswered tool call.
tick running_thread(const std::string& id, const std::string& agent = "agent") {
  tick t;
  t.thread_id = id;
  t.create = true;
  t.manifest = make_manifest(id, agent);
  t.manifest.status = thread_status::running;
  t.manifest.tags = {"blue"};
  t.events.push_back(make_message(message_role::user, "go"));
  t.events.push_back(make_signal("thread.start", "{}"));
  t.events.push_back(make_tool_call("c1", "shell", R"({"cmd":"ls"})"));
  uint64_t seq = 0;
  for (auto& e : t.events) {
    e.seq = ++seq;
    e.ts_ms = 5000 + static_cast<int64_t>(seq);
    e.run_id = "r1";
  }
  t.events[0].run_id = "";
  return t;
}

std::string too_deep(size_t levels) { return std::string(levels, '[') + "1" + std::string(levels, ']'); }

// A value valid as JSON that no read accepts: nested past json_depth_max.
std::string poison_event(uint64_t seq) {
  return "{\"seq\":" + std::to_string(seq) +
         ",\"ts\":1,\"run\":\"r1\",\"type\":\"tool_call\",\"payload\":{\"call_id\":\"c1\",\"name\":\"shell\","
         "\"arguments\":" + too_deep(70) + "}}";
}

std::string poison_manifest(const std::string& id) {
  return "{\"v\":1,\"id\":\"" + id + "\",\"agent_id\":\"agent\",\"status\":\"running\",\"created_at\":1,"
         "\"updated_at\":2,\"last_seq\":3,\"config\":{\"x\":" + too_deep(70) + "}}";
}

std::vector<std::string> ids_of(const thread_page& page) {
  std::vector<std::string> out;
  for (const auto& m : page.threads) out.push_back(m.id);
  return out;
}

// healthy (running), idle (not running), bad-event and bad-manifest (running).
void write_database(const std::string& path) {
  {
    auto log = open_log(path);
    for (const char* id : {"bad-event", "bad-manifest", "healthy"}) {
      auto t = running_thread(id);
      REQUIRE(log->commit(t).is_ok());
    }
    auto idle = make_tick("idle", 1, 2);
    REQUIRE(log->commit(idle).is_ok());
  }
  raw_db raw{path};
  raw.put("events", keys::event_key("bad-event", 3), poison_event(3));
  raw.put("threads", "bad-manifest", poison_manifest("bad-manifest"));
}

}  // namespace

TEST_CASE("listing skips a manifest that does not decode and reports it") {
  temp_dir dir;
  write_database(dir.str());
  auto log = open_log(dir.str());
  thread_query q;
  q.index = thread_query::by::agent;
  q.value = "agent";
  q.limit = 2;
  std::vector<std::string> listed, skipped;
  thread_page page;
  do {
    status s = log->list_threads(q, &page);
    INFO(s.to_string());
    REQUIRE(s.is_ok());
    for (auto& id : ids_of(page)) listed.push_back(id);
    for (auto& u : page.unreadable) {
      skipped.push_back(u.thread_id);
      CHECK(u.key == "threads key bad-manifest");
      CHECK_THAT(u.reason, Catch::Contains("json_depth_max"));
    }
    q.cursor = page.next_cursor;
  } while (!q.cursor.empty());
  CHECK(listed == std::vector<std::string>{"bad-event", "healthy", "idle"});
  CHECK(skipped == std::vector<std::string>{"bad-manifest"});

  std::vector<std::string> running;
  REQUIRE(log->list_running(&running).is_ok());
  CHECK(running == std::vector<std::string>{"bad-event", "bad-manifest", "healthy"});
}

TEST_CASE("recovery quarantines running threads it cannot read and repairs the rest") {
  temp_dir dir;
  write_database(dir.str());
  auto log = open_log(dir.str());
  std::vector<std::string> repaired;
  std::vector<quarantined_thread> quarantined;
  status s = repair_interrupted(*log, &repaired, &quarantined);
  INFO(s.to_string());
  REQUIRE(s.is_ok());
  CHECK(repaired == std::vector<std::string>{"healthy"});
  REQUIRE(quarantined.size() == 2);
  CHECK(quarantined[0].thread_id == "bad-event");
  CHECK(quarantined[0].key == "events key bad-event#3");
  CHECK_THAT(quarantined[0].reason, Catch::Contains("json_depth_max (64)"));
  CHECK(quarantined[0].written);
  CHECK(quarantined[1].thread_id == "bad-manifest");
  CHECK(quarantined[1].key == "threads key bad-manifest");
  CHECK(quarantined[1].written);

  // bad-event: failed, the quarantine signal and a stop after the last key.
  manifest m;
  REQUIRE(log->read_manifest("bad-event", &m).is_ok());
  CHECK(m.status == thread_status::failed);
  CHECK(m.last_seq == 5);
  CHECK(m.tags == std::vector<std::string>{"blue"});
  std::vector<event> events;
  std::vector<unreadable_record> bad;
  REQUIRE(log->read_events_lenient("bad-event", 1, 0, &events, &bad).is_ok());
  REQUIRE(bad.size() == 1);
  CHECK(bad[0].seq == 3);
  REQUIRE(events.size() == 4);
  CHECK(events[2].name == "thread.quarantined");
  CHECK_THAT(events[2].json, Catch::Contains(R"("key":"events key bad-event#3")"));
  CHECK(events[3].name == "thread.stop");
  CHECK(events[3].run_id == "r1");
  CHECK_THAT(events[3].json, Catch::Contains(R"("outcome":"failed")") && Catch::Contains("quarantined: "));

  // bad-manifest: a fresh manifest from the index, its log appended after seq 3.
  REQUIRE(log->read_manifest("bad-manifest", &m).is_ok());
  CHECK(m.status == thread_status::failed);
  CHECK(m.agent_id == "agent");
  CHECK(m.tags == std::vector<std::string>{"blue"});
  CHECK(m.last_seq == 5);
  CHECK(m.created_at_ms == 5001);
  REQUIRE(log->read_events("bad-manifest", 1, 0, &events).is_ok());
  REQUIRE(events.size() == 5);
  CHECK(events[3].name == "thread.quarantined");
  CHECK(events[4].name == "thread.stop");

  // The stale index entries went with the old manifest: nothing is still running.
  std::vector<std::string> running;
  REQUIRE(log->list_running(&running).is_ok());
  CHECK(running.empty());
  thread_query q;
  q.index = thread_query::by::status;
  q.value = "failed";
  thread_page page;
  REQUIRE(log->list_threads(q, &page).is_ok());
  CHECK(ids_of(page) == std::vector<std::string>{"bad-event", "bad-manifest", "healthy"});
  CHECK(page.unreadable.empty());

  // The idle thread is untouched, and a second recovery finds nothing to do.
  REQUIRE(log->read_manifest("idle", &m).is_ok());
  CHECK(m.last_seq == 2);
  REQUIRE(repair_interrupted(*log, &repaired, &quarantined).is_ok());
  CHECK(repaired.empty());
  CHECK(quarantined.empty());

  // Both quarantined threads can be deleted.
  for (const char* id : {"bad-event", "bad-manifest"}) {
    REQUIRE(log->erase_thread(id).is_ok());
    CHECK(thread_keys(*log, id) == 0);
  }
}

TEST_CASE("a running thread with no agent entry is reported, not written, and the open goes on") {
  temp_dir dir;
  {
    auto log = open_log(dir.str());
    auto t = running_thread("orphan");
    REQUIRE(log->commit(t).is_ok());
    auto h = running_thread("healthy");
    REQUIRE(log->commit(h).is_ok());
  }
  {
    raw_db raw{dir.str()};
    raw.put("threads", "orphan", "not json");
    raw.del("index", keys::index_key('a', "agent", "orphan"));
  }
  auto log = open_log(dir.str());
  std::vector<std::string> repaired;
  std::vector<quarantined_thread> quarantined;
  REQUIRE(repair_interrupted(*log, &repaired, &quarantined).is_ok());
  CHECK(repaired == std::vector<std::string>{"healthy"});
  REQUIRE(quarantined.size() == 1);
  CHECK_FALSE(quarantined[0].written);
  CHECK_THAT(quarantined[0].reason, Catch::Contains("no index entry names its agent"));
}
