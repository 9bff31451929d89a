// Claims (keys.cpp, "c/"): a task's thread and an agent's DM thread are unique,
// checked by the writer, within one group batch as across batches; erasing the
// thread frees the claim; threads written before claims existed keep working.
#include <catch2/catch.hpp>

#include "persistence/event_log.hpp"
#include "persistence/keys.hpp"
#include "tests/support/log_fixtures.hpp"
#include "tests/support/temp_dir.hpp"

using namespace skein;
using namespace skein::test;

namespace {

tick task_tick(const std::string& thread, const std::string& task) {
  tick t = make_tick(thread, 1, 1);
  t.manifest.task_id = task;
  t.manifest.parent = parent_kind::task;
  t.manifest.parent_id = task;
  return t;
}

tick dm_tick(const std::string& thread, const std::string& agent) {
  tick t = make_tick(thread, 1, 1, agent);
  t.manifest.parent = parent_kind::agent;
  t.manifest.parent_id = agent;
  return t;
}

}  // namespace

TEST_CASE("claims: the second claim of a task or a DM is refused, also within one group") {
  temp_dir dir;
  auto log = open_log(dir.str(), durability::flush);
  tick a = task_tick("t1", "task-1"), b = task_tick("t2", "task-1"), c = dm_tick("t3", "agent"),
       d = dm_tick("t4", "agent"), e = task_tick("t5", "task-2");
  tick* group[] = {&a, &b, &c, &d, &e};
  status results[5];
  log->commit_group(group, results);
  CHECK(results[0].is_ok());
  CHECK(results[1].code() == errc::conflict);
  CHECK(results[1].field() == "task_id");
  CHECK(results[1].message().find("t1") != std::string::npos);
  CHECK(results[2].is_ok());
  CHECK(results[3].code() == errc::conflict);
  CHECK(results[3].field() == "dm");
  CHECK(results[4].is_ok());
  std::string holder;
  REQUIRE(log->find_claim("task", "task-1", &holder).is_ok());
  CHECK(holder == "t1");
  REQUIRE(log->find_claim("dm", "agent", &holder).is_ok());
  CHECK(holder == "t3");
  manifest m;
  CHECK(log->read_manifest("t2", &m).code() == errc::not_found);  // refused alone: nothing of it written

  tick later = task_tick("t6", "task-1");
  CHECK(log->commit(later).code() == errc::conflict);
}

TEST_CASE("claims: erasing the thread frees the claim, a claim naming no thread is taken over") {
  temp_dir dir;
  auto log = open_log(dir.str(), durability::flush);
  tick a = task_tick("t1", "task-1");
  REQUIRE(log->commit(a).is_ok());
  REQUIRE(log->erase_thread("t1").is_ok());
  std::string holder;
  CHECK(log->find_claim("task", "task-1", &holder).code() == errc::not_found);
  CHECK(thread_keys(*log, "t1") == 0);
  tick b = task_tick("t2", "task-1");
  REQUIRE(log->commit(b).is_ok());
  REQUIRE(log->find_claim("task", "task-1", &holder).is_ok());
  CHECK(holder == "t2");
}

TEST_CASE("claims: a thread with a task written without a claim (an older database) still reads and erases") {
  temp_dir dir;
  auto log = open_log(dir.str(), durability::flush);
  // What an older writer left: the manifest names the task, no claim key exists.
  tick old = make_tick("t0", 1, 1);
  REQUIRE(log->commit(old).is_ok());
  tick later = make_tick("t0", 2, 1);
  later.manifest.task_id = "legacy";  // no claim: only creating ticks claim
  REQUIRE(log->commit(later).is_ok());
  manifest m;
  REQUIRE(log->read_manifest("t0", &m).is_ok());
  CHECK(m.task_id == "legacy");
  std::string holder;
  CHECK(log->find_claim("task", "legacy", &holder).code() == errc::not_found);
  tick fresh = task_tick("t1", "legacy");  // the first claim wins from now on
  REQUIRE(log->commit(fresh).is_ok());
  REQUIRE(log->erase_thread("t0").is_ok());  // its (absent) claim is not the holder's: it stays
  REQUIRE(log->find_claim("task", "legacy", &holder).is_ok());
  CHECK(holder == "t1");
}
