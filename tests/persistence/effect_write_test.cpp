// Effect writes (event_log::commit_effect): rows and cursor in one batch, the
// cursor only moving forward, nothing written for a thread that is gone; and
// the catch-up listing an effect reads at open.
#include <catch2/catch.hpp>

#include "persistence/event_log.hpp"
#include "tests/support/fault_fs.hpp"
#include "tests/support/log_fixtures.hpp"
#include "tests/support/temp_dir.hpp"

using namespace skein;
using namespace skein::test;

namespace {

std::string row(const std::string& agent, float x) {
  embedding_record r{agent, false, {x, 1.0f - x}};
  std::string v;
  REQUIRE(encode_embedding(r, &v).is_ok());
  return v;
}

effect_write embeddings_write(const std::string& thread, uint64_t cursor,
                              std::vector<uint64_t> seqs) {
  effect_write w;
  w.effect = "embeddings";
  w.thread_id = thread;
  w.cursor = cursor;
  for (auto s : seqs) w.embeddings.emplace_back(s, row("agent", 0.5f));
  return w;
}

}  // namespace

TEST_CASE("an effect write stores its rows and cursor together, the cursor never moves back") {
  temp_dir dir;
  auto log = open_log(dir.str());
  tick t = make_tick("t1", 1, 4);
  REQUIRE(log->commit(t).is_ok());

  auto w = embeddings_write("t1", 2, {1, 2});
  REQUIRE(log->commit_effect(w).is_ok());
  uint64_t cursor = 0;
  REQUIRE(log->read_effect_cursor("embeddings", "t1", &cursor).is_ok());
  CHECK(cursor == 2);
  std::vector<std::pair<uint64_t, embedding_record>> rows;
  REQUIRE(log->read_embeddings("t1", &rows).is_ok());
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].first == 1);
  CHECK(rows[1].first == 2);

  auto back = embeddings_write("t1", 1, {});
  CHECK(log->commit_effect(back).code() == errc::conflict);
  // A row at or below the stored cursor would be a second embedding of that seq.
  auto again = embeddings_write("t1", 3, {2, 3});
  CHECK(log->commit_effect(again).code() == errc::conflict);
  auto past = embeddings_write("t1", 5, {});
  CHECK(log->commit_effect(past).code() == errc::invalid_input);
  REQUIRE(log->read_embeddings("t1", &rows).is_ok());
  CHECK(rows.size() == 2);  // the refused writes left nothing
  REQUIRE(log->read_effect_cursor("embeddings", "t1", &cursor).is_ok());
  CHECK(cursor == 2);

  auto next = embeddings_write("t1", 4, {3, 4});
  REQUIRE(log->commit_effect(next).is_ok());
  REQUIRE(log->read_embeddings("t1", &rows).is_ok());
  CHECK(rows.size() == 4);
}

TEST_CASE("an effect write for an erased thread is refused and leaves no key") {
  temp_dir dir;
  auto log = open_log(dir.str());
  tick t = make_tick("t1", 1, 2);
  REQUIRE(log->commit(t).is_ok());
  auto first = embeddings_write("t1", 1, {1});
  REQUIRE(log->commit_effect(first).is_ok());
  REQUIRE(log->erase_thread("t1").is_ok());
  // The write that raced the delete and lost: refused, nothing orphaned.
  auto late = embeddings_write("t1", 2, {2});
  CHECK(log->commit_effect(late).code() == errc::not_found);
  CHECK(thread_keys(*log, "t1") == 0);
}

TEST_CASE("a tick's effect cursor below the stored one is refused") {
  temp_dir dir;
  auto log = open_log(dir.str());
  tick t = make_tick("t1", 1, 3);
  REQUIRE(log->commit(t).is_ok());
  effect_write w{"titles", "t1", 3, {}};
  REQUIRE(log->commit_effect(w).is_ok());
  tick back;
  back.thread_id = "t1";
  back.manifest = make_manifest("t1");
  back.manifest.last_seq = 3;
  back.effect_cursors = {{"titles", 2}};
  CHECK(log->commit(back).code() == errc::conflict);
  back.effect_cursors = {{"titles", 3}};
  CHECK(log->commit(back).is_ok());
}

TEST_CASE("the catch-up listing names every thread past the effect's cursor") {
  temp_dir dir;
  auto log = open_log(dir.str());
  for (const char* id : {"a", "b", "c", "d"}) {
    tick t = make_tick(id, 1, 3);
    REQUIRE(log->commit(t).is_ok());
  }
  effect_write done{"titles", "b", 3, {}};
  REQUIRE(log->commit_effect(done).is_ok());
  effect_write half{"titles", "c", 1, {}};
  REQUIRE(log->commit_effect(half).is_ok());
  effect_write other{"embeddings", "d", 3, {}};  // another effect's cursor does not count
  REQUIRE(log->commit_effect(other).is_ok());
  std::vector<effect_lag_entry> lag;
  REQUIRE(log->list_effect_lag("titles", &lag).is_ok());
  REQUIRE(lag.size() == 3);
  CHECK(lag[0].thread_id == "a");
  CHECK(lag[0].cursor == 0);
  CHECK(lag[0].last_seq == 3);
  CHECK(lag[0].agent_id == "agent");
  CHECK(lag[1].thread_id == "c");
  CHECK(lag[1].cursor == 1);
  CHECK(lag[2].thread_id == "d");
  REQUIRE(log->list_effect_lag("embeddings", &lag).is_ok());
  CHECK(lag.size() == 3);  // a, b, c
}

TEST_CASE("erasing a thread deletes its cursors of every effect, whatever other threads' cursors surround them") {
  temp_dir dir;
  auto log = open_log(dir.str());
  // Cursors of several effects, some threads with only one of them: the erase
  // walks the effect names and must find each thread's key under every name.
  std::vector<std::string> ids = {"a", "b", "c", "d", "e"};
  for (const auto& id : ids) {
    tick t = make_tick(id, 1, 2);
    REQUIRE(log->commit(t).is_ok());
  }
  for (const auto& [effect, id] : std::vector<std::pair<std::string, std::string>>{
           {"embeddings", "a"}, {"titles", "b"}, {"compaction", "c"}, {"titles", "c"},
           {"embeddings", "d"}, {"titles", "d"}, {"a", "e"}, {"zz", "b"}}) {
    effect_write w{effect, id, 1, {}};
    REQUIRE(log->commit_effect(w).is_ok());
  }
  for (const auto& id : {"b", "d", "a", "e", "c"}) {
    INFO("erase " << id);
    REQUIRE(log->erase_thread(id).is_ok());
    CHECK(thread_keys(*log, id) == 0);
  }
}
