#include <catch2/catch.hpp>
#include <tuple>
#include <filesystem>
#include <set>

#include "persistence/event_log.hpp"
#include "persistence/keys.hpp"
#include "runtime/model/json_codec.hpp"
#include "tests/support/log_fixtures.hpp"
#include "tests/support/raw_db.hpp"
#include "tests/support/temp_dir.hpp"

using namespace skein;
using namespace skein::test;

namespace {

std::vector<event> read_all(event_log& log, const std::string& thread) {
  std::vector<event> out;
  auto s = log.read_events(thread, 1, 0, &out);
  INFO(s.to_string());
  REQUIRE(s.is_ok());
  return out;
}

std::vector<std::string> ids_of(const thread_page& page) {
  std::vector<std::string> out;
  for (const auto& m : page.threads) out.push_back(m.id);
  return out;
}

// Every thread id of a query, page by page.
std::vector<std::string> list_all(event_log& log, thread_query q, size_t* pages = nullptr) {
  std::vector<std::string> out;
  thread_page page;
  size_t n = 0;
  do {
    auto s = log.list_threads(q, &page);
    INFO(s.to_string());
    REQUIRE(s.is_ok());
    for (auto& id : ids_of(page)) out.push_back(id);
    q.cursor = page.next_cursor;
    ++n;
  } while (!q.cursor.empty());
  if (pages) *pages = n;
  return out;
}

}  // namespace

TEST_CASE("events iterate in numeric seq order and never cross threads") {
  temp_dir dir;
  auto log = open_log(dir.str());
  for (uint64_t seq = 1; seq <= 300; ++seq) {
    auto t = make_tick("t1", seq, 1);
    REQUIRE(log->commit(t).is_ok());
  }
  auto t10 = make_tick("t10", 1, 5);
  REQUIRE(log->commit(t10).is_ok());
  auto t0 = make_tick("t", 1, 2);
  REQUIRE(log->commit(t0).is_ok());

  auto events = read_all(*log, "t1");
  REQUIRE(events.size() == 300);
  for (size_t i = 0; i < events.size(); ++i) {
    CHECK(events[i].seq == i + 1);
    CHECK(events[i].text == "m" + std::to_string(i + 1));
  }
  CHECK(read_all(*log, "t10").size() == 5);
  CHECK(read_all(*log, "t").size() == 2);

  std::vector<event> page;
  REQUIRE(log->read_events("t1", 255, 10, &page).is_ok());
  CHECK(seqs_of(page) == std::vector<uint64_t>{255, 256, 257, 258, 259, 260, 261, 262, 263, 264});
  REQUIRE(log->read_events("t1", 299, 10, &page).is_ok());
  CHECK(seqs_of(page) == std::vector<uint64_t>{299, 300});
  REQUIRE(log->read_events("nope", 1, 0, &page).is_ok());
  CHECK(page.empty());

  manifest m;
  REQUIRE(log->read_manifest("t1", &m).is_ok());
  CHECK(m.last_seq == 300);
}

TEST_CASE("a commit that does not continue the log exactly is rejected and writes nothing") {
  temp_dir dir;
  auto log = open_log(dir.str());
  auto first = make_tick("t", 1, 3);
  REQUIRE(log->commit(first).is_ok());
  manifest before;
  REQUIRE(log->read_manifest("t", &before).is_ok());

  SECTION("gap") {
    auto t = make_tick("t", 5, 1);
    auto s = log->commit(t);
    CHECK(s.code() == errc::conflict);
    CHECK_THAT(s.message(), Catch::Contains("expected 4"));
  }
  SECTION("duplicate") {
    auto t = make_tick("t", 3, 2);
    CHECK(log->commit(t).code() == errc::conflict);
  }
  SECTION("seqs out of order inside the tick") {
    auto t = make_tick("t", 4, 2);
    std::swap(t.events[0].seq, t.events[1].seq);
    CHECK(log->commit(t).code() == errc::conflict);
  }
  SECTION("wrong thread in the manifest") {
    auto t = make_tick("t", 4, 1);
    t.manifest.id = "other";
    auto s = log->commit(t);
    CHECK(s.code() == errc::invalid_input);
    CHECK_THAT(s.message(), Catch::Contains("tick.manifest.id"));
  }
  SECTION("create of an existing thread") {
    auto t = make_tick("t", 1, 1);
    CHECK(log->commit(t).code() == errc::conflict);
  }
  SECTION("append to a thread that does not exist") {
    auto t = make_tick("ghost", 2, 1);
    t.create = false;
    CHECK(log->commit(t).code() == errc::not_found);
  }
  SECTION("invalid event content") {
    auto t = make_tick("t", 4, 2);
    t.events[1].text = "\xff";
    auto s = log->commit(t);
    CHECK(s.code() == errc::invalid_input);
    CHECK_THAT(s.message(), Catch::Contains("UTF-8"));
  }
  SECTION("too many events in one tick") {
    log_options o;
    o.path = dir.str("small");
    o.tick_events_max = 4;
    std::unique_ptr<event_log> small;
    REQUIRE(event_log::open(o, &small).is_ok());
    auto t = make_tick("t", 1, 5);
    auto s = small->commit(t);
    CHECK(s.code() == errc::invalid_input);
    CHECK_THAT(s.message(), Catch::Contains("tick_events_max (4)"));
  }

  CHECK(seqs_of(read_all(*log, "t")) == std::vector<uint64_t>{1, 2, 3});
  manifest after;
  REQUIRE(log->read_manifest("t", &after).is_ok());
  CHECK(after == before);
  CHECK(log->writable());
  auto next = make_tick("t", 4, 1);
  CHECK(log->commit(next).is_ok());
}

TEST_CASE("a group commit writes the valid ticks in one write and refuses the others alone") {
  temp_dir dir;
  auto log = open_log(dir.str());
  auto a1 = make_tick("a", 1, 2), a2 = make_tick("a", 3, 1), bad = make_tick("b", 2, 1),
       c1 = make_tick("c", 1, 1);
  bad.create = false;
  tick* ticks[] = {&a1, &a2, &bad, &c1};
  status results[4];
  log->commit_group(ticks, results);
  CHECK(results[0].is_ok());
  CHECK(results[1].is_ok());
  CHECK(results[2].code() == errc::not_found);
  CHECK(results[3].is_ok());
  CHECK(a2.manifest.last_seq == 3);
  auto c = log->counters();
  CHECK(c.writes == 1);
  CHECK(c.commits == 3);
  CHECK(c.events == 4);
  CHECK(c.rejected == 1);
  CHECK(seqs_of(read_all(*log, "a")) == std::vector<uint64_t>{1, 2, 3});
  manifest m;
  CHECK(log->read_manifest("b", &m).code() == errc::not_found);
}

TEST_CASE("threads are listed through the index in a total order, page by page") {
  temp_dir dir;
  auto log = open_log(dir.str());
  std::set<std::string> agent_x;
  for (int i = 0; i < 25; ++i) {
    std::string id = "th" + std::to_string(i);
    auto t = make_tick(id, 1, 1, i % 2 == 0 ? "x" : "y");
    t.manifest.updated_at_ms = 1000 * (1 + (i * 7919) % 25) + i;  // distinct seconds, shuffled
    if (i % 5 == 0) t.manifest.tags = {"five"};
    if (i > 0 && i % 3 == 0) {
      t.manifest.parent = parent_kind::thread;
      t.manifest.parent_id = "th0";
    }
    REQUIRE(log->commit(t).is_ok());
    if (i % 2 == 0) agent_x.insert(id);
  }

  thread_query q;
  q.index = thread_query::by::agent;
  q.value = "x";
  q.limit = 4;
  size_t pages = 0;
  auto xs = list_all(*log, q, &pages);
  CHECK(xs.size() == 13);
  CHECK(pages == 4);
  CHECK(std::set<std::string>(xs.begin(), xs.end()) == agent_x);
  CHECK(std::is_sorted(xs.begin(), xs.end()));

  q.index = thread_query::by::tag;
  q.value = "five";
  CHECK(list_all(*log, q) == std::vector<std::string>{"th0", "th10", "th15", "th20", "th5"});

  q.index = thread_query::by::parent;
  q.value = "th0";
  CHECK(list_all(*log, q).size() == 8);

  q.index = thread_query::by::updated;
  q.value.clear();
  q.limit = 7;
  auto by_time = list_all(*log, q);
  REQUIRE(by_time.size() == 25);
  std::vector<int64_t> times;
  for (const auto& id : by_time) {
    manifest m;
    REQUIRE(log->read_manifest(id, &m).is_ok());
    times.push_back(m.updated_at_ms);
  }
  CHECK(std::is_sorted(times.rbegin(), times.rend()));  // newest first

  q.index = thread_query::by::status;
  q.value = "open";
  q.limit = 1000;
  CHECK(list_all(*log, q).size() == 25);

  // A status change moves the thread between status indexes in the same batch.
  auto run = make_tick("th3", 2, 1, "y");
  run.manifest.status = thread_status::running;
  run.manifest.parent = parent_kind::thread;
  run.manifest.parent_id = "th0";
  REQUIRE(log->commit(run).is_ok());
  CHECK(list_all(*log, q).size() == 24);
  std::vector<std::string> running;
  REQUIRE(log->list_running(&running).is_ok());
  CHECK(running == std::vector<std::string>{"th3"});
}

TEST_CASE("listing refuses bad queries with errors naming the field") {
  temp_dir dir;
  auto log = open_log(dir.str());
  thread_page page;
  thread_query q;
  q.value = "a";
  q.limit = 0;
  CHECK_THAT(log->list_threads(q, &page).message(), Catch::Contains("limit"));
  q.limit = thread_query::limit_max + 1;
  CHECK(log->list_threads(q, &page).code() == errc::invalid_input);
  q.limit = 10;
  q.cursor = "zz";
  CHECK_THAT(log->list_threads(q, &page).message(), Catch::Contains("cursor"));
  q.cursor.clear();
  q.index = thread_query::by::status;
  q.value = "zombie";
  CHECK_THAT(log->list_threads(q, &page).message(), Catch::Contains("status"));
  q.index = thread_query::by::agent;
  q.value = "a/b";
  CHECK_THAT(log->list_threads(q, &page).message(), Catch::Contains("agent"));
}

TEST_CASE("a result event writes a usage row in the same batch") {
  temp_dir dir;
  {
    auto log = open_log(dir.str());
    auto t = make_tick("t", 1, 1);
    event r = make_result({5, 6, 0, 0}, 0.5, 10, 1, "completed");
    r.seq = 2;
    r.ts_ms = 4242;
    t.events.push_back(r);
    REQUIRE(log->commit(t).is_ok());
  }
  raw_db raw{dir.str()};
  std::string value;
  REQUIRE(raw.get("usage", keys::usage_key("t", 2), &value));
  CHECK_THAT(value, Catch::StartsWith(R"({"ts":4242,"thread":"t","seq":2,)"));
  CHECK_THAT(value, Catch::Contains(R"("input_tokens":5)"));
  CHECK_THAT(value, Catch::Contains(R"("agent_id":"agent")"));
}

TEST_CASE("erasing a thread leaves no key of it in any column family, and is idempotent") {
  temp_dir dir;
  {
    auto log = open_log(dir.str());
    auto t = make_tick("gone", 1, 3);
    t.manifest.tags = {"x"};
    t.manifest.parent = parent_kind::task;
    t.manifest.parent_id = "task1";
    event r = make_result({1, 1, 0, 0}, 0.1, 1, 1, "completed");
    r.seq = 4;
    r.ts_ms = 77;
    t.events.push_back(r);
    REQUIRE(log->commit(t).is_ok());
    auto keep = make_tick("gone.1", 1, 2);  // shares a prefix with the erased thread
    REQUIRE(log->commit(keep).is_ok());
  }
  {
    // Keys that effect actors and the embedder write.
    raw_db raw{dir.str()};
    raw.put("effects", keys::effect_key("title", "gone"), "x");
    raw.put("effects", keys::effect_key("usage", "gone"), "x");
    raw.put("effects", keys::effect_key("usage", "gone.1"), "x");
    raw.put("embeddings", keys::event_key("gone", 2), "v");
  }
  auto log = open_log(dir.str());
  size_t n = 0;
  REQUIRE(log->count_thread_keys("gone", &n).is_ok());
  CHECK(n == 1 + 4 + 5 + 1 + 2 + 1);  // manifest, events, index, usage, effects, embedding
  size_t kept_before = 0;
  REQUIRE(log->count_thread_keys("gone.1", &kept_before).is_ok());

  REQUIRE(log->erase_thread("gone").is_ok());
  REQUIRE(log->count_thread_keys("gone", &n).is_ok());
  CHECK(n == 0);
  manifest m;
  CHECK(log->read_manifest("gone", &m).code() == errc::not_found);
  CHECK(log->erase_thread("gone").is_ok());
  CHECK(log->erase_thread("never-was").is_ok());

  size_t kept_after = 0;
  REQUIRE(log->count_thread_keys("gone.1", &kept_after).is_ok());
  CHECK(kept_after == kept_before);
  CHECK(read_all(*log, "gone.1").size() == 2);

  // The id can be used again from seq 1.
  auto again = make_tick("gone", 1, 1);
  CHECK(log->commit(again).is_ok());
}

TEST_CASE("erasing a thread whose keys are still in the memtable, then writing it again") {
  // The memtable's insert hints (one per thread) must never reach the range
  // deletion that erases the thread: RocksDB 7.8 shares them between the point
  // and range-deletion memtables, and a hint into the wrong one fails an assertion.
  temp_dir dir;
  auto log = open_log(dir.str());
  for (int round = 0; round < 3; ++round) {
    INFO("round " << round);
    auto t = make_tick("hot", 1, 4);
    REQUIRE(log->commit(t).is_ok());
    auto next = make_tick("hot", 5, 2);
    REQUIRE(log->commit(next).is_ok());
    CHECK(read_all(*log, "hot").size() == 6);
    REQUIRE(log->erase_thread("hot").is_ok());
    CHECK(thread_keys(*log, "hot") == 0);
    CHECK(read_all(*log, "hot").empty());
  }
}

TEST_CASE("a stored value that fails to parse is reported as corruption with its key") {
  temp_dir dir;
  {
    auto log = open_log(dir.str());
    auto t = make_tick("t", 1, 3);
    REQUIRE(log->commit(t).is_ok());
  }
  {
    raw_db raw{dir.str()};
    raw.put("events", keys::event_key("t", 2), "{not json");
    raw.put("threads", "u", "{\"id\":\"u\"}");
  }
  auto log = open_log(dir.str());
  std::vector<event> events;
  auto s = log->read_events("t", 1, 0, &events);
  CHECK(s.code() == errc::corruption);
  CHECK_THAT(s.message(), Catch::Contains("t#2"));
  manifest m;
  s = log->read_manifest("u", &m);
  CHECK(s.code() == errc::corruption);
  CHECK_THAT(s.message(), Catch::Contains("threads key u"));
  auto next = make_tick("u", 1, 1);
  next.create = false;
  CHECK(log->commit(next).code() == errc::corruption);
}

TEST_CASE("a long read is sized by its last key within a cap, and a value naming another seq is its key's error") {
  temp_dir dir;
  {
    auto log = open_log(dir.str());
    auto t = make_tick("t", 1, 150);
    REQUIRE(log->commit(t).is_ok());
  }
  const uint64_t far = uint64_t{1} << 60;  // a vector of that many events cannot exist
  {
    raw_db raw{dir.str()};
    event e = make_message(message_role::user, "far");
    e.seq = far;
    std::string json;
    REQUIRE(encode_event(e, &json).is_ok());
    raw.put("events", keys::event_key("t", far), json);
    e.seq = 7;  // stored under seq 151
    REQUIRE(encode_event(e, &json).is_ok());
    raw.put("events", keys::event_key("t", 151), json);
  }
  auto log = open_log(dir.str());
  std::vector<event> events;
  std::vector<unreadable_record> bad;
  REQUIRE(log->read_events_lenient("t", 1, 0, &events, &bad).is_ok());
  REQUIRE(events.size() == 151);
  CHECK(events[149].seq == 150);
  CHECK(events[149].text == "m150");
  CHECK(events[150].seq == far);
  CHECK(events[150].text == "far");
  REQUIRE(bad.size() == 1);
  CHECK(bad[0].key == "events key t#151");
  CHECK(bad[0].seq == 151);
  CHECK_THAT(bad[0].reason, Catch::Contains("t#151: value holds seq 7"));

  auto s = log->read_events("t", 1, 0, &events);
  CHECK(s.code() == errc::corruption);
  CHECK_THAT(s.message(), Catch::Contains("events key t#151: value holds seq 7"));
  // Limits past and below the sizing threshold, and a start after the last key.
  REQUIRE(log->read_events("t", 1, 100, &events).is_ok());
  CHECK(events.size() == 100);
  CHECK(events.back().seq == 100);
  REQUIRE(log->read_events("t", 141, 10, &events).is_ok());
  CHECK(seqs_of(events).front() == 141);
  CHECK(seqs_of(events).back() == 150);
  REQUIRE(log->read_events("t", far, 0, &events).is_ok());
  CHECK(seqs_of(events) == std::vector<uint64_t>{far});
  REQUIRE(log->read_events("t", far + 1, 0, &events).is_ok());
  CHECK(events.empty());
}

TEST_CASE("a database written by a newer schema is refused") {
  temp_dir dir;
  { open_log(dir.str()); }
  {
    raw_db raw{dir.str()};
    std::string v;
    REQUIRE(raw.get("meta", "schema_version", &v));
    CHECK(v == std::to_string(schema_version));
    raw.put("meta", "schema_version", std::to_string(schema_version + 1));
  }
  log_options o;
  o.path = dir.str();
  std::unique_ptr<event_log> log;
  auto s = event_log::open(o, &log);
  CHECK(s.code() == errc::conflict);
  CHECK_THAT(s.message(), Catch::Contains("newer"));
  CHECK(log == nullptr);
}

TEST_CASE("durability modes: memory touches no disk, flush and sync persist across reopen") {
  temp_dir dir;
  SECTION("memory") {
    auto log = open_log(dir.str("mem"), durability::memory);
    auto t = make_tick("t", 1, 2);
    REQUIRE(log->commit(t).is_ok());
    CHECK(read_all(*log, "t").size() == 2);
    CHECK_FALSE(std::filesystem::exists(dir.path() / "mem"));
  }
  SECTION("memory with a relative name") {
    // A name only (log_options.path): RocksDB's memory env refuses relative paths,
    // which made `skein serve --durability memory --data ./x` fail to open.
    auto log = open_log("skein-memory-name", durability::memory);
    auto t = make_tick("t", 1, 2);
    REQUIRE(log->commit(t).is_ok());
    CHECK(read_all(*log, "t").size() == 2);
    CHECK_FALSE(std::filesystem::exists("skein-memory-name"));
  }
  for (auto mode : {durability::flush, durability::sync}) {
    DYNAMIC_SECTION("mode " << to_string(mode)) {
      {
        auto log = open_log(dir.str(), mode);
        CHECK(log->mode() == mode);
        auto t = make_tick("t", 1, 2);
        REQUIRE(log->commit(t).is_ok());
      }
      auto log = open_log(dir.str(), mode);
      CHECK(read_all(*log, "t").size() == 2);
    }
  }
  SECTION("names") {
    durability d;
    CHECK(parse_durability("flush", &d));
    CHECK(d == durability::flush);
    CHECK_FALSE(parse_durability("fast", &d));
  }
}

TEST_CASE("opening without create_if_missing reports a missing database") {
  temp_dir dir;
  log_options o;
  o.path = dir.str("absent");
  o.create_if_missing = false;
  std::unique_ptr<event_log> log;
  CHECK(event_log::open(o, &log).code() == errc::not_found);
}

TEST_CASE("agents are stored and listed, idempotency keys map to their run") {
  temp_dir dir;
  {
    auto log = open_log(dir.str());
    agent_config a;
    a.id = "b-agent";
    a.system_prompt = "p";
    REQUIRE(log->put_agent(a).is_ok());
    a.id = "a-agent";
    REQUIRE(log->put_agent(a).is_ok());
    auto t = make_tick("t", 1, 2);
    t.idempotency_key = "key-1";
    t.run_id = "run_9";
    REQUIRE(log->commit(t).is_ok());
    auto bad = make_tick("t", 3, 1);
    bad.idempotency_key = "bad key";
    CHECK_THAT(log->commit(bad).message(), Catch::Contains("idempotency_key"));
  }
  auto log = open_log(dir.str());
  std::vector<agent_config> agents;
  REQUIRE(log->list_agents(&agents).is_ok());
  REQUIRE(agents.size() == 2);
  CHECK(agents[0].id == "a-agent");
  agent_config one;
  REQUIRE(log->read_agent("b-agent", &one).is_ok());
  CHECK(one.system_prompt == "p");
  CHECK(log->read_agent("nobody", &one).code() == errc::not_found);

  idempotent_run run;
  REQUIRE(log->find_idempotent("t", "key-1", &run).is_ok());
  CHECK(run.run_id == "run_9");
  CHECK(run.first_seq == 1);
  CHECK(log->find_idempotent("t", "key-2", &run).code() == errc::not_found);
  size_t n = 0;
  REQUIRE(log->count_thread_keys("t", &n).is_ok());
  CHECK(n == 1 + 2 + 3 + 1);  // manifest, events, index (a, s, u), idempotency key
  REQUIRE(log->erase_thread("t").is_ok());
  REQUIRE(log->count_thread_keys("t", &n).is_ok());
  CHECK(n == 0);
}

TEST_CASE("a tick that breaks the storable rule is refused before anything is written") {
  temp_dir dir;
  auto log = open_log(dir.str());
  auto first = make_tick("t", 1, 2);
  REQUIRE(log->commit(first).is_ok());
  auto healthy = make_tick("u", 1, 1);

  auto poison = make_tick("t", 3, 2);
  poison.events[1] = make_tool_result("c1", "shell", std::string(5 << 20, 'x'), false);
  poison.events[1].seq = 4;
  tick* group[] = {&poison, &healthy};
  status results[2];
  log->commit_group(group, results);
  REQUIRE(results[0].code() == errc::invalid_input);
  CHECK_THAT(results[0].message(), Catch::StartsWith("thread t: event seq 4 (tool_result): ") &&
                                       Catch::Contains("json_bytes_max (4194304)") &&
                                       Catch::Contains("event.payload.output"));
  CHECK(results[1].is_ok());  // refused alone

  auto deep = make_tick("t", 3, 1);
  deep.events[0] = make_tool_call("c1", "t", std::string(63, '[') + "1" + std::string(63, ']'));
  deep.events[0].seq = 3;
  status s = log->commit(deep);
  CHECK(s.code() == errc::invalid_input);
  CHECK_THAT(s.message(), Catch::Contains("event seq 3") && Catch::Contains("event.payload.arguments") &&
                              Catch::Contains("json_depth_max (64)"));

  auto big_manifest = make_tick("t", 3, 1);
  big_manifest.manifest.title = std::string((4 << 20) - 512, '"');
  s = log->commit(big_manifest);
  CHECK(s.code() == errc::invalid_input);
  CHECK_THAT(s.message(), Catch::StartsWith("thread t: manifest: ") && Catch::Contains("manifest.title"));

  // Nothing of the refused ticks is stored, and the thread still reads and takes seq 3.
  CHECK(read_all(*log, "t").size() == 2);
  manifest m;
  REQUIRE(log->read_manifest("t", &m).is_ok());
  CHECK(m.last_seq == 2);
  CHECK(m.title.empty());
  auto next = make_tick("t", 3, 1);
  CHECK(log->commit(next).is_ok());
}

namespace {

// Rewrites a usage row of the current schema the way schema 1 stored it: the
// time leads the key and is absent from the value.
void plant_v1_usage_row(raw_db& raw, const std::string& thread, uint64_t seq, int64_t ts_ms) {
  std::string value;
  REQUIRE(raw.get("usage", keys::usage_key(thread, seq), &value));
  std::string ts_field = "\"ts\":" + std::to_string(ts_ms) + ",";
  REQUIRE(value.substr(1, ts_field.size()) == ts_field);
  raw.del("usage", keys::usage_key(thread, seq));
  raw.put("usage", keys::usage_key_v1(ts_ms, thread, seq), "{" + value.substr(1 + ts_field.size()));
}

tick tick_with_results(const std::string& thread, std::vector<std::pair<uint64_t, int64_t>> results) {
  auto t = make_tick(thread, 1, 1);
  for (auto [seq, ts] : results) {
    while (t.events.back().seq + 1 < seq) {
      event m = make_message(message_role::user, "x");
      m.seq = t.events.back().seq + 1;
      t.events.push_back(m);
    }
    event r = make_result({1, 2, 0, 0}, 0.25, 3, 1, "completed");
    r.seq = seq;
    r.ts_ms = ts;
    t.events.push_back(r);
  }
  return t;
}

}  // namespace

TEST_CASE("a version-1 database is migrated at open: usage rows move to thread-and-seq keys") {
  temp_dir dir;
  {
    auto log = open_log(dir.str());
    auto a = tick_with_results("t", {{2, 4242}, {4, 900000}});
    auto b = tick_with_results("t.1", {{3, 17}});
    REQUIRE(log->commit(a).is_ok());
    REQUIRE(log->commit(b).is_ok());
  }
  {
    // Written the old way: version 1, time-led usage keys. One row was already
    // moved by a migration that a crash interrupted.
    raw_db raw{dir.str()};
    plant_v1_usage_row(raw, "t", 2, 4242);
    plant_v1_usage_row(raw, "t.1", 3, 17);
    raw.put("meta", "schema_version", "1");
    CHECK(raw.keys("usage").size() == 3);
  }
  {
    auto log = open_log(dir.str());
    size_t n = 0;
    REQUIRE(log->count_thread_keys("t", &n).is_ok());
    CHECK(n == 1 + 4 + 3 + 2);  // manifest, events, index (a, s, u), usage rows
  }
  {
    raw_db raw{dir.str()};
    std::string v;
    REQUIRE(raw.get("meta", "schema_version", &v));
    CHECK(v == std::to_string(schema_version));
    std::vector<std::string> want = {keys::usage_key("t", 2), keys::usage_key("t", 4),
                                     keys::usage_key("t.1", 3)};
    std::sort(want.begin(), want.end());
    CHECK(raw.keys("usage") == want);
    REQUIRE(raw.get("usage", keys::usage_key("t", 2), &v));
    CHECK_THAT(v, Catch::StartsWith(R"({"ts":4242,"thread":"t","seq":2,"run":"",)"));
    REQUIRE(raw.get("usage", keys::usage_key("t.1", 3), &v));
    CHECK_THAT(v, Catch::StartsWith(R"({"ts":17,"thread":"t.1","seq":3,)"));
  }
  // Erase now deletes the rows by range, and leaves the neighbour's alone.
  auto log = open_log(dir.str());
  REQUIRE(log->erase_thread("t").is_ok());
  size_t n = 0;
  REQUIRE(log->count_thread_keys("t", &n).is_ok());
  CHECK(n == 0);
  REQUIRE(log->count_thread_keys("t.1", &n).is_ok());
  CHECK(n == 1 + 3 + 3 + 1);
}

TEST_CASE("erasing a thread reads none of its events, so a poison thread can be deleted") {
  temp_dir dir;
  {
    auto log = open_log(dir.str());
    auto a = tick_with_results("bad-event", {{2, 10}});
    auto b = tick_with_results("bad-manifest", {{2, 10}});
    b.manifest.tags = {"x"};
    REQUIRE(log->commit(a).is_ok());
    REQUIRE(log->commit(b).is_ok());
  }
  {
    raw_db raw{dir.str()};
    raw.put("events", keys::event_key("bad-event", 1), "{\"seq\":1," + std::string(100, '['));
    raw.put("threads", "bad-manifest", "{\"id\":");
  }
  auto log = open_log(dir.str());
  std::vector<event> events;
  REQUIRE(log->read_events("bad-event", 1, 0, &events).code() == errc::corruption);
  for (const char* id : {"bad-event", "bad-manifest"}) {
    INFO(id);
    status s = log->erase_thread(id);
    INFO(s.to_string());
    CHECK(s.is_ok());
    CHECK(thread_keys(*log, id) == 0);
  }
}

TEST_CASE("a tick's effect cursors land in its batch and are refused past its last seq") {
  temp_dir dir;
  auto log = open_log(dir.str());
  auto first = make_tick("t", 1, 3);
  first.effect_cursors = {{"titles", 3}, {"embeddings", 2}};
  REQUIRE(log->commit(first).is_ok());
  uint64_t c = 99;
  REQUIRE(log->read_effect_cursor("titles", "t", &c).is_ok());
  CHECK(c == 3);
  REQUIRE(log->read_effect_cursor("embeddings", "t", &c).is_ok());
  CHECK(c == 2);
  REQUIRE(log->read_effect_cursor("compaction", "t", &c).is_ok());
  CHECK(c == 0);  // never written: nothing processed yet

  auto past = make_tick("t", 4, 1);
  past.effect_cursors = {{"titles", 5}};
  auto s = log->commit(past);
  CHECK(s.code() == errc::invalid_input);
  CHECK_THAT(s.message(), Catch::Contains("past the thread's last seq"));
  CHECK(read_all(*log, "t").size() == 3);  // the refused tick wrote nothing
  REQUIRE(log->read_effect_cursor("titles", "t", &c).is_ok());
  CHECK(c == 3);

  REQUIRE(log->erase_thread("t").is_ok());
  CHECK(thread_keys(*log, "t") == 0);
}

TEST_CASE("scan_embeddings decodes every stored row and skips, counting, what does not decode") {
  temp_dir dir;
  { auto log = open_log(dir.str()); }
  {
    raw_db raw{dir.str()};
    std::string v;
    REQUIRE(encode_embedding({"agent", false, {0.6f, 0.8f}}, &v).is_ok());
    raw.put("embeddings", keys::event_key("t1", 1), v);
    REQUIRE(encode_embedding({"agent", true, {0.8f, 0.6f}}, &v).is_ok());
    raw.put("embeddings", keys::event_key("t1", 2), v);
    raw.put("embeddings", keys::event_key("t2", 5), v);
    raw.put("embeddings", keys::event_key("t2", 6), "not a vector");  // a bad value
    raw.put("embeddings", "no-separator", v);                          // a bad key
  }
  auto log = open_log(dir.str());
  std::vector<std::tuple<std::string, uint64_t, bool, size_t>> seen;
  size_t skipped = 0;
  REQUIRE(log->scan_embeddings(
                 [&](std::string_view thread, uint64_t seq, const embedding_record& r) {
                   CHECK(r.agent_id == "agent");
                   seen.emplace_back(std::string{thread}, seq, r.assistant, r.vector.size());
                 },
                 &skipped)
              .is_ok());
  CHECK(skipped == 2);
  REQUIRE(seen.size() == 3);
  CHECK(seen[0] == std::make_tuple(std::string("t1"), uint64_t{1}, false, size_t{2}));
  CHECK(seen[1] == std::make_tuple(std::string("t1"), uint64_t{2}, true, size_t{2}));
  CHECK(seen[2] == std::make_tuple(std::string("t2"), uint64_t{5}, true, size_t{2}));
}
