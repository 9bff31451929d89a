// Schedule rows in ticks (tick::side_rows): written in the tick's batch or
// not at all, alone when the tick names no thread, and only under the two key
// shapes of the schedules column family.
#include <catch2/catch.hpp>

#include "persistence/event_log.hpp"
#include "persistence/keys.hpp"
#include "tests/support/log_fixtures.hpp"
#include "tests/support/temp_dir.hpp"

using namespace skein;
using namespace skein::test;

TEST_CASE("schedule rows ride a thread's tick, all or nothing", "[scheduler]") {
  temp_dir dir;
  auto log = open_log(dir.str());
  schedule s = hourly_schedule("s1");
  s.history_seq = 1;
  s.fire_count = 1;
  schedule_firing f;
  f.schedule_id = "s1";
  f.seq = 1;
  f.thread_id = "t1";
  tick t;
  t.thread_id = "t1";
  t.create = true;
  t.manifest.id = "t1";
  t.manifest.agent_id = "a";
  REQUIRE(schedule_rows_of(s, &f, &t.side_rows).is_ok());
  tick again = t;
  REQUIRE(log->commit(t).is_ok());
  schedule back;
  REQUIRE(log->read_schedule("s1", &back).is_ok());
  CHECK(back == s);
  // The same creation again is refused (the thread exists): its rows are not written.
  again.side_rows.clear();
  s.fire_count = 2;
  s.history_seq = 2;
  f.seq = 2;
  REQUIRE(schedule_rows_of(s, &f, &again.side_rows).is_ok());
  CHECK(log->commit(again).code() == errc::conflict);
  REQUIRE(log->read_schedule("s1", &back).is_ok());
  CHECK(back.fire_count == 1);
  std::vector<schedule_firing> rows;
  uint64_t next = 0;
  REQUIRE(log->schedule_history("s1", 0, 10, &rows, &next).is_ok());
  CHECK(rows.size() == 1);
}

TEST_CASE("schedule rows alone, their erasure and their key shapes", "[scheduler]") {
  temp_dir dir;
  auto log = open_log(dir.str());
  tick t;  // no thread: the rows alone
  REQUIRE(schedule_rows_of(hourly_schedule("s2"), nullptr, &t.side_rows).is_ok());
  REQUIRE(log->commit(t).is_ok());
  std::vector<schedule> all;
  std::string next;
  REQUIRE(log->list_schedules("", 10, &all, &next).is_ok());
  REQUIRE(all.size() == 1);
  tick erase;
  erase.side_rows = schedule_erase_rows("s2");
  REQUIRE(log->commit(erase).is_ok());
  schedule gone;
  CHECK(log->read_schedule("s2", &gone).code() == errc::not_found);
  tick stray;
  stray.side_rows.push_back({schedule_row::op::put, "x/elsewhere", "{}"});
  CHECK(log->commit(stray).code() == errc::invalid_input);
}
