// A multi-thread import (lace, gitmem) is one batch: all of its threads or none.
#include <caf/all.hpp>
#include <catch2/catch.hpp>
#include <rocksdb/env.h>

#include "actors/journal.hpp"
#include "runtime/runtime.hpp"
#include "tests/support/fault_fs.hpp"
#include "tests/support/runtime_fixture.hpp"
#include "tests/support/temp_dir.hpp"
#include "tools/io/import_export.hpp"

using namespace skein;
using namespace skein::test;

namespace {

std::string lace_line(const std::string& thread, const std::string& text) {
  return R"({"type":"USER_MESSAGE","data":")" + text + R"(","threadId":")" + thread + "\"}\n";
}

std::vector<thread_import> parse_lace(const std::string& body, const std::string& agent) {
  import_result r;
  status s = parse_import(body, import_format::lace, agent, &r);
  INFO(s.to_string());
  REQUIRE(s.is_ok());
  std::vector<thread_import> out;
  for (auto& t : r.threads) out.push_back({std::move(t.manifest), std::move(t.events)});
  return out;
}


// Keys of the thread in every column family, read from the database itself.
size_t keys_of(event_log& log, const std::string& thread) {
  size_t n = 0;
  REQUIRE(log.count_thread_keys(thread, &n).is_ok());
  return n;
}

}  // namespace

TEST_CASE("a multi-thread import is written in one batch") {
  runtime_fixture f{without_effects()};  // the test counts the log's writes
  f.agent("importer", R"({"default": {"reply": "ok"}})");
  auto threads = parse_lace(lace_line("lace_a", "one") + lace_line("lace_b", "two") +
                                lace_line("lace_c", "three") + lace_line("lace_a", "four"),
                            "importer");
  REQUIRE(threads.size() == 3);
  const log_counters before = f.stats().log;
  std::vector<manifest> stored;
  status s = f.rt->import_threads(std::move(threads), &stored);
  INFO(s.to_string());
  REQUIRE(s.is_ok());
  const log_counters after = f.stats().log;
  CHECK(after.writes - before.writes == 1);  // one WriteBatch for all three threads
  CHECK(after.commits - before.commits == 3);
  REQUIRE(stored.size() == 3);
  CHECK(stored[0].id == "lace_a");
  CHECK(stored[0].last_seq == 2);
  CHECK(stored[2].id == "lace_c");
  CHECK(f.events("lace_a").size() == 2);
  CHECK(f.events("lace_c").at(0).text == "three");
}

TEST_CASE("an import whose second thread is refused leaves no trace of the first") {
  temp_dir dir;
  std::string path;
  {
    runtime_options o = without_effects();  // the test counts the log's writes
    o.data_dir = dir.str();
    runtime_fixture f{o, false};
    f.agent("importer", R"({"default": {"reply": "ok"}})");
    path = o.data_dir;
    // lace_taken exists already: the import's second thread is a conflict.
    std::vector<manifest> stored;
    REQUIRE(f.rt->import_threads(parse_lace(lace_line("lace_taken", "earlier"), "importer"), &stored).is_ok());

    auto threads = parse_lace(lace_line("lace_new", "fresh") + lace_line("lace_taken", "again") +
                                  lace_line("lace_other", "more"),
                              "importer");
    const log_counters before = f.stats().log;
    stored.clear();
    status s = f.rt->import_threads(std::move(threads), &stored);
    CHECK(s.code() == errc::conflict);
    CHECK_THAT(s.message(), Catch::Contains("2 of 3") && Catch::Contains("lace_taken already exists"));
    CHECK(stored.empty());
    CHECK(f.stats().log.writes == before.writes);
    manifest m;
    CHECK(f.rt->get_thread("lace_new", &m).code() == errc::not_found);
    CHECK(f.rt->get_thread("lace_other", &m).code() == errc::not_found);
    REQUIRE(f.rt->get_thread("lace_taken", &m).is_ok());
    CHECK(m.last_seq == 1);
    CHECK(f.events("lace_taken").at(0).text == "earlier");

    // An unknown agent among them, or mixed agents, refuse the whole import too.
    auto mixed = parse_lace(lace_line("lace_x", "x") + lace_line("lace_y", "y"), "importer");
    mixed[1].manifest.agent_id = "ghost";
    s = f.rt->import_threads(std::move(mixed), &stored);
    CHECK(s.code() == errc::invalid_input);
    CHECK_THAT(s.message(), Catch::Contains("thread 2 of 2: manifest.agent_id"));
    CHECK(f.rt->get_thread("lace_x", &m).code() == errc::not_found);
  }
  // Read the database itself: not a key of the refused threads anywhere.
  auto log = open_log(path);
  CHECK(keys_of(*log, "lace_new") == 0);
  CHECK(keys_of(*log, "lace_other") == 0);
  CHECK(keys_of(*log, "lace_x") == 0);
  CHECK(keys_of(*log, "lace_taken") > 0);
}

TEST_CASE("a storage failure fails the whole import, before and after reopening") {
  auto mode = GENERATE(fault_fs::fail::wal_append, fault_fs::fail::wal_sync);
  auto detached = GENERATE(true, false);  // the group-committing journal and the inline one
  INFO((mode == fault_fs::fail::wal_append ? "WAL append fails" : "WAL sync fails"));
  INFO((detached ? "detached journal" : "inline journal"));
  temp_dir dir;
  auto fs = std::make_shared<fault_fs>();
  auto env = rocksdb::NewCompositeEnv(fs);
  const std::vector<std::string> ids = {"lace_a", "lace_b", "lace_c"};
  {
    auto log = open_log(dir.str(), env.get());
    caf::actor_system_config cfg;
    caf::actor_system sys{cfg};
    journal_options jo;
    jo.detached = detached;
    auto journal = spawn_journal(sys, *log, jo);
    std::vector<tick> ticks;
    for (auto& t : parse_lace(lace_line("lace_a", "1") + lace_line("lace_b", "2") + lace_line("lace_c", "3"),
                              "importer")) {
      tick& k = ticks.emplace_back();
      k.thread_id = t.manifest.id;
      k.create = true;
      k.bulk = true;
      k.manifest = std::move(t.manifest);
      k.events = std::move(t.events);
    }
    fs->set(mode);
    status s = journal_commit_all(sys, journal, ticks);
    CHECK(s.code() == errc::io_error);
    CHECK_THAT(s.message(), Catch::Contains("injected"));
    CHECK(fs->failures() > 0);
    for (const auto& id : ids) {
      manifest m;
      CHECK(log->read_manifest(id, &m).code() == errc::not_found);
    }
    fs->set(fault_fs::fail::none);
    REQUIRE(journal_close(sys, journal).is_ok());
  }
  auto log = open_log(dir.str(), env.get());
  for (const auto& id : ids) {
    INFO(id);
    CHECK(keys_of(*log, id) == 0);
  }
}
