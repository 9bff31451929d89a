#include <catch2/catch.hpp>
#include <rocksdb/env.h>

#include "persistence/event_log.hpp"
#include "tests/support/fault_fs.hpp"
#include "tests/support/log_fixtures.hpp"
#include "tests/support/temp_dir.hpp"

using namespace skein;
using namespace skein::test;

namespace {

// What a reader sees of threads t and u; equal before and after a failed tick.
struct view {
  std::vector<uint64_t> t_seqs, u_seqs;
  manifest t_manifest, u_manifest;
  std::vector<std::string> running, tagged;

  bool operator==(const view&) const = default;
};

view look(event_log& log) {
  view v;
  std::vector<event> events;
  REQUIRE(log.read_events("t", 1, 0, &events).is_ok());
  v.t_seqs = seqs_of(events);
  REQUIRE(log.read_events("u", 1, 0, &events).is_ok());
  v.u_seqs = seqs_of(events);
  REQUIRE(log.read_manifest("t", &v.t_manifest).is_ok());
  REQUIRE(log.read_manifest("u", &v.u_manifest).is_ok());
  REQUIRE(log.list_running(&v.running).is_ok());
  thread_query q;
  q.index = thread_query::by::tag;
  q.value = "hot";
  thread_page page;
  REQUIRE(log.list_threads(q, &page).is_ok());
  for (auto& m : page.threads) v.tagged.push_back(m.id);
  return v;
}


}  // namespace

TEST_CASE("a tick whose write fails leaves nothing visible, before and after reopening") {
  auto mode = GENERATE(fault_fs::fail::wal_append, fault_fs::fail::wal_sync);
  INFO((mode == fault_fs::fail::wal_append ? "WAL append fails" : "WAL sync fails"));
  temp_dir dir;
  auto fs = std::make_shared<fault_fs>();
  auto env = rocksdb::NewCompositeEnv(fs);
  view before;
  {
    auto log = open_log(dir.str(), env.get());
    auto t = make_tick("t", 1, 2), u = make_tick("u", 1, 1);
    REQUIRE(log->commit(t).is_ok());
    REQUIRE(log->commit(u).is_ok());
    before = look(*log);

    // The failing group: new events for both threads, status and tag changes.
    auto t2 = make_tick("t", 3, 3), u2 = make_tick("u", 2, 1), v1 = make_tick("v", 1, 1);
    t2.manifest.status = thread_status::running;
    t2.manifest.tags = {"hot"};
    t2.manifest.title = "changed";
    u2.manifest.status = thread_status::running;
    tick* group[] = {&t2, &u2, &v1};
    status results[3];
    fs->set(mode);
    log->commit_group(group, results);
    for (const auto& r : results) {
      CHECK(r.code() == errc::io_error);
      CHECK_THAT(r.message(), Catch::Contains("injected"));
    }
    CHECK(fs->failures() > 0);
    CHECK_FALSE(log->writable());
    CHECK(look(*log) == before);
    manifest m;
    CHECK(log->read_manifest("v", &m).code() == errc::not_found);

    // No retry: the log refuses writes until it is reopened, even once the disk is back.
    fs->set(fault_fs::fail::none);
    auto again = make_tick("t", 3, 1);
    auto s = log->commit(again);
    CHECK(s.code() == errc::io_error);
    CHECK_THAT(s.message(), Catch::Contains("reopen"));
    CHECK(log->erase_thread("t").code() == errc::io_error);
  }
  auto log = open_log(dir.str(), env.get());
  CHECK(look(*log) == before);
  manifest m;
  CHECK(log->read_manifest("v", &m).code() == errc::not_found);
  CHECK(log->writable());
  auto next = make_tick("t", 3, 1);
  CHECK(log->commit(next).is_ok());
}
