// Work-item rows (persistence/work_rows.hpp): the codec, side rows in a thread's
// tick, erase_thread leaving none of an item's keys, and the v2 -> v3 migration.
#include <catch2/catch.hpp>
#include <rocksdb/db.h>

#include "persistence/event_log.hpp"
#include "persistence/work_rows.hpp"
#include "tests/support/log_fixtures.hpp"
#include "tests/support/raw_db.hpp"
#include "tests/support/temp_dir.hpp"

using namespace skein;
using namespace skein::test;

namespace {

tick item_tick(const std::string& id, const std::string& agent) {
  tick t;
  t.thread_id = id;
  t.create = true;
  t.manifest.id = id;
  t.manifest.agent_id = agent;
  work_item w;
  w.text = "fix the login";
  w.created_at_ms = w.last_touched_at_ms = 1000;
  t.manifest.work = w;
  event e = make_signal("work.created", R"({"text":"fix the login"})");
  e.seq = 1;
  t.events.push_back(e);
  work_row row{agent, id, w, {0.6f, 0.8f}};
  t.side_rows.push_back(work_row_put(row));
  work_triple tr{"agent:" + agent, "created_thread", "thread:" + id, agent, id, 1, 1000};
  for (auto& r : triple_rows(tr)) t.side_rows.push_back(r);
  work_triple rel{"thread:" + id, "relates_to_thread", "issue:GH-7", agent, id, 1, 1000};
  for (auto& r : triple_rows(rel)) t.side_rows.push_back(r);
  return t;
}

}  // namespace

TEST_CASE("work rows round-trip through their codec", "[work]") {
  work_row row{"a", "t1", {}, {0.25f, -1.5f, 3.0f}};
  row.item.text = "x";
  row.item.touch_count = 3;
  work_row back;
  REQUIRE(decode_work_row(work_row_put(row).value, &back).is_ok());
  CHECK(back.agent_id == "a");
  CHECK(back.thread_id == "t1");
  CHECK(back.item == row.item);
  CHECK(back.vector == row.vector);
  row.vector.clear();
  REQUIRE(decode_work_row(work_row_put(row).value, &back).is_ok());
  CHECK(back.vector.empty());

  work_session_row s{"a", "s1", 10, 20, {"one", "two"}, {{1, 0}, {0, 1}}};
  work_session_row sb;
  REQUIRE(decode_session_row(session_row_put(s).value, &sb).is_ok());
  CHECK(sb.texts == s.texts);
  CHECK(sb.vectors == s.vectors);
  CHECK(sb.closed_at_ms == 20);

  work_suggestion g;
  g.id = "sg_1";
  g.agent_id = "a";
  g.text = "flaky ci";
  g.status = suggestion_status::dismissed;
  g.sessions = {"s1", "s2", "s3"};
  g.dismissals = 2;
  work_suggestion gb;
  REQUIRE(decode_suggestion(suggestion_row_put(g).value, &gb).is_ok());
  CHECK(gb == g);
}

TEST_CASE("work rows: project round-trips, and a row written before projects reads as project default", "[work]") {
  // Rows as version 1 wrote them before issue 29: no project anywhere.
  work_row item;
  REQUIRE(decode_work_row(R"({"v":1,"agent":"a","thread":"t1","work":{"text":"x","status":"open","created_at":5}})",
                          &item)
              .is_ok());
  CHECK(item.item.project == "default");
  CHECK(item.item.linear_issue.empty());
  work_triple t;
  REQUIRE(decode_triple(R"({"v":1,"s":"agent:a","p":"created_thread","o":"thread:t1","agent":"a","thread":"t1","seq":1,"at":5})",
                        &t)
              .is_ok());
  CHECK(t.project == "default");
  work_session_row ses;
  REQUIRE(decode_session_row(R"({"v":1,"agent":"a","id":"s1","started_at":1,"closed_at":2,"texts":[],"dims":0})", &ses)
              .is_ok());
  CHECK(ses.project == "default");
  work_suggestion sug;
  REQUIRE(decode_suggestion(R"({"v":1,"id":"sg","agent":"a","text":"x","status":"pending"})", &sug).is_ok());
  CHECK(sug.project == "default");

  // The default project is not written (older readers see the rows they knew);
  // another is, and reads back.
  CHECK(work_row_put({"a", "t1", item.item, {}}).value.find("project") == std::string::npos);
  CHECK(triple_rows(t)[0].value.find("project") == std::string::npos);
  item.item.project = "billing";
  item.item.linear_issue = "PROJ-1";
  work_row back;
  REQUIRE(decode_work_row(work_row_put({"a", "t1", item.item, {}}).value, &back).is_ok());
  CHECK(back.item.project == "billing");
  CHECK(back.item.linear_issue == "PROJ-1");
  t.project = "billing";
  work_triple tb;
  for (const auto& row : triple_rows(t)) {
    REQUIRE(decode_triple(row.value, &tb).is_ok());
    CHECK(tb == t);
  }
  ses.project = "billing";
  work_session_row sb;
  REQUIRE(decode_session_row(session_row_put(ses).value, &sb).is_ok());
  CHECK(sb.project == "billing");
  sug.project = "billing";
  work_suggestion gb;
  REQUIRE(decode_suggestion(suggestion_row_put(sug).value, &gb).is_ok());
  CHECK(gb == sug);
}

TEST_CASE("an item's rows ride its creation tick and erase_thread leaves none of them", "[work]") {
  temp_dir dir;
  auto log = open_log(dir.str());
  auto t = item_tick("t1", "a");
  REQUIRE(log->commit(t).is_ok());
  auto other = item_tick("t2", "a");
  REQUIRE(log->commit(other).is_ok());
  std::string value;
  REQUIRE(log->read_side(side_cf::work, keys::work_key("a", "t1"), &value).is_ok());
  size_t triples = 0;
  REQUIRE(log->scan_side(side_cf::graph, keys::graph_subject_prefix("agent:a"), [&](auto, auto) {
    ++triples;
    return true;
  }).is_ok());
  CHECK(triples == 2);
  size_t n = 0;
  REQUIRE(log->count_thread_keys("t1", &n).is_ok());
  CHECK(n == 1 + 1 + 3 + 1 + 6);  // manifest, event, index (a, s, u), work row, 2 triples x 3 keys
  REQUIRE(log->erase_thread("t1").is_ok());
  REQUIRE(log->count_thread_keys("t1", &n).is_ok());
  CHECK(n == 0);
  CHECK(log->read_side(side_cf::work, keys::work_key("a", "t1"), &value).code() == errc::not_found);
  // The neighbour keeps its rows.
  REQUIRE(log->count_thread_keys("t2", &n).is_ok());
  CHECK(n == 12);
}

TEST_CASE("a side row under a foreign key shape is refused with its tick", "[work]") {
  temp_dir dir;
  auto log = open_log(dir.str());
  auto t = item_tick("t1", "a");
  t.side_rows.push_back({side_row::op::put, "x", "{}", side_cf::graph});
  auto s = log->commit(t);
  CHECK(s.code() == errc::invalid_input);
  manifest m;
  CHECK(log->read_manifest("t1", &m).code() == errc::not_found);
}

TEST_CASE("a version-2 database gains the work families at open (schema 3)", "[work]") {
  temp_dir dir;
  {
    auto log = open_log(dir.str());
    tick t;
    t.thread_id = "old";
    t.create = true;
    t.manifest.id = "old";
    t.manifest.agent_id = "a";
    REQUIRE(log->commit(t).is_ok());
  }
  {
    // Made into what version 2 wrote: no work families, version "2".
    std::vector<std::string> names;
    REQUIRE(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), dir.str(), &names).ok());
    std::vector<rocksdb::ColumnFamilyDescriptor> descriptors;
    for (const auto& n : names) descriptors.emplace_back(n, rocksdb::ColumnFamilyOptions());
    std::vector<rocksdb::ColumnFamilyHandle*> handles;
    rocksdb::DB* db = nullptr;
    REQUIRE(rocksdb::DB::Open(rocksdb::DBOptions(), dir.str(), descriptors, &handles, &db).ok());
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] == "work" || names[i] == "graph" || names[i] == "sessions" || names[i] == "suggestions")
        REQUIRE(db->DropColumnFamily(handles[i]).ok());
      if (names[i] == "meta") REQUIRE(db->Put(rocksdb::WriteOptions(), handles[i], "schema_version", "2").ok());
    }
    for (auto* h : handles) REQUIRE(db->DestroyColumnFamilyHandle(h).ok());
    REQUIRE(db->Close().ok());
    delete db;
    names.clear();
    REQUIRE(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), dir.str(), &names).ok());
    CHECK(std::find(names.begin(), names.end(), "work") == names.end());
  }
  {
    auto log = open_log(dir.str());
    manifest m;
    REQUIRE(log->read_manifest("old", &m).is_ok());
    CHECK_FALSE(m.work.has_value());
    auto t = item_tick("t1", "a");
    REQUIRE(log->commit(t).is_ok());
  }
  raw_db raw{dir.str()};
  std::string v;
  REQUIRE(raw.get("meta", "schema_version", &v));
  CHECK(v == std::to_string(schema_version));  // 3, then 4 (the quota rows)
  CHECK(raw.keys("work").size() == 1);
  CHECK(raw.keys("graph").size() == 6);
}
