#include <caf/all.hpp>
#include <catch2/catch.hpp>
#include <rocksdb/env.h>

#include "actors/error.hpp"
#include "actors/journal.hpp"
#include "tests/support/fault_fs.hpp"
#include "tests/support/log_fixtures.hpp"
#include "tests/support/temp_dir.hpp"

using namespace skein;
using namespace skein::test;
using namespace std::chrono_literals;

namespace {

using done_atom = caf::atom_constant<caf::atom("done")>;

struct committer_state {
  std::string thread;
  uint64_t next_seq = 1;
  int ticks_left = 0;
  std::vector<uint64_t> acked;  // last_seq of each acknowledged tick
  std::string error;
};

// Commits `ticks` ticks of 1..3 events to one thread, each after the previous ack,
// then reports (done, thread, acked last seqs, error text) to `report_to`.
caf::behavior committer(caf::event_based_actor* self, journal_actor journal, std::string thread,
                        int ticks, caf::actor report_to) {
  auto st = std::make_shared<committer_state>();
  st->thread = std::move(thread);
  st->ticks_left = ticks;
  auto step = std::make_shared<std::function<void()>>();
  // The callbacks reach `step` through a weak pointer: a strong one inside *step
  // would own itself and leak the actor handles it captured.
  std::weak_ptr<std::function<void()>> weak_step = step;
  *step = [=] {
    if (st->ticks_left-- == 0 || !st->error.empty()) {
      self->send(report_to, done_atom::value, st->thread, st->acked, st->error);
      self->quit();
      return;
    }
    size_t count = 1 + st->next_seq % 3;
    auto t = make_tick(st->thread, st->next_seq, count);
    st->next_seq += count;
    self->request(journal, caf::infinite, commit_atom::value, std::move(t))
        .then(
            [=](uint64_t last_seq) {
              st->acked.push_back(last_seq);
              if (auto next = weak_step.lock()) (*next)();
            },
            [=](caf::error& e) {
              st->error = to_status(e).to_string();
              if (auto next = weak_step.lock()) (*next)();
            });
  };
  self->send(self, caf::ok_atom::value);
  return {[=](caf::ok_atom) { (*step)(); }};
}

struct fixture {
  temp_dir dir;
  std::unique_ptr<event_log> log;
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  journal_actor journal;

  explicit fixture(rocksdb::Env* env = nullptr) {
    log_options o;
    o.path = dir.str();
    o.mode = durability::sync;
    o.env = env;
    REQUIRE(event_log::open(o, &log).is_ok());
    register_skein_types(cfg);
    cfg.set("scheduler.max-threads", 2);
    sys = std::make_unique<caf::actor_system>(cfg);
    journal = spawn_journal(*sys, *log);
  }
  ~fixture() {
    journal_close(*sys, journal).ignore();
    journal = nullptr;
    sys.reset();  // waits for every actor; the journal borrows the log
  }
};

}  // namespace

TEST_CASE("256 threads committing concurrently share writes and lose nothing") {
  fixture f;
  constexpr int threads = 256, ticks = 12;
  caf::scoped_actor self{*f.sys};
  for (int i = 0; i < threads; ++i)
    f.sys->spawn(committer, f.journal, "th" + std::to_string(i), ticks, caf::actor{self});

  int reports = 0;
  std::map<std::string, std::vector<uint64_t>> acked;
  self->receive_for(reports, threads)(
      [&](done_atom, std::string& thread, std::vector<uint64_t>& seqs, std::string& error) {
        INFO(thread << ": " << error);
        CHECK(error.empty());
        acked[thread] = std::move(seqs);
      },
      caf::after(120s) >> [&] { FAIL("committers did not finish within 120 s"); });

  uint64_t total_events = 0;
  for (auto& [thread, seqs] : acked) {
    REQUIRE(seqs.size() == ticks);
    std::vector<event> events;
    REQUIRE(f.log->read_events(thread, 1, 0, &events).is_ok());
    REQUIRE(events.size() == seqs.back());
    for (size_t i = 0; i < events.size(); ++i) REQUIRE(events[i].seq == i + 1);
    manifest m;
    REQUIRE(f.log->read_manifest(thread, &m).is_ok());
    CHECK(m.last_seq == seqs.back());
    total_events += events.size();
  }
  journal_stats stats;
  self->request(f.journal, 10s, caf::get_atom::value, stats_atom::value)
      .receive([&](journal_stats& s) { stats = s; }, [&](caf::error&) { FAIL("no stats"); });
  CHECK(stats.log.commits == threads * ticks);
  CHECK(stats.log.events == total_events);
  CHECK(stats.log.failed == 0);
  INFO("writes " << stats.log.writes << ", largest group " << stats.log.group_max);
  CHECK(stats.log.writes < stats.log.commits);  // more than one commit per write
  CHECK(stats.log.group_max > 1);
}

TEST_CASE("journal errors reach the caller with their code") {
  fixture f;
  auto t = make_tick("t", 1, 2);
  REQUIRE(journal_commit(*f.sys, f.journal, t).is_ok());
  CHECK(t.manifest.last_seq == 2);
  auto gap = make_tick("t", 5, 1);
  auto s = journal_commit(*f.sys, f.journal, gap);
  CHECK(s.code() == errc::conflict);
  CHECK_THAT(s.message(), Catch::Contains("expected 3"));
  auto bad = make_tick("x/y", 1, 1);
  CHECK(journal_commit(*f.sys, f.journal, bad).code() == errc::invalid_input);
}

TEST_CASE("erase is ordered with the commits around it") {
  fixture f;
  caf::scoped_actor self{*f.sys};
  // Fire and collect: commit, erase, re-create, in this order, without waiting in between.
  self->send(f.journal, commit_atom::value, make_tick("t", 1, 3));
  self->send(f.journal, erase_atom::value, std::string{"t"});
  self->send(f.journal, commit_atom::value, make_tick("t", 1, 1));
  REQUIRE(journal_close(*f.sys, f.journal).is_ok());
  std::vector<event> events;
  REQUIRE(f.log->read_events("t", 1, 0, &events).is_ok());
  CHECK(seqs_of(events) == std::vector<uint64_t>{1});
}

TEST_CASE("close writes everything queued before it") {
  fixture f;
  caf::scoped_actor self{*f.sys};
  for (uint64_t seq = 1; seq <= 200; ++seq) self->send(f.journal, commit_atom::value, make_tick("t", seq, 1));
  REQUIRE(journal_close(*f.sys, f.journal).is_ok());
  manifest m;
  REQUIRE(f.log->read_manifest("t", &m).is_ok());
  CHECK(m.last_seq == 200);
}

TEST_CASE("after a failed write the journal fails that batch and refuses further writes") {
  auto fs = std::make_shared<fault_fs>();
  auto env = rocksdb::NewCompositeEnv(fs);
  fixture f{env.get()};
  auto t = make_tick("t", 1, 1);
  REQUIRE(journal_commit(*f.sys, f.journal, t).is_ok());

  fs->set(fault_fs::fail::wal_sync);
  caf::scoped_actor self{*f.sys};
  constexpr int n = 16;
  // Sent without waiting, so they queue up and share batches; replies come back as messages.
  for (int i = 0; i < n; ++i)
    self->send(f.journal, commit_atom::value, make_tick("n" + std::to_string(i), 1, 1));
  int answered = 0;
  self->receive_for(answered, n)(
      [&](uint64_t) { FAIL("a commit was acknowledged while the disk failed"); },
      [&](caf::error& e) { CHECK(to_status(e).code() == errc::io_error); },
      caf::after(30s) >> [&] { FAIL("no answer within 30 s"); });

  fs->set(fault_fs::fail::none);
  auto later = make_tick("t", 2, 1);
  auto s = journal_commit(*f.sys, f.journal, later);
  CHECK(s.code() == errc::io_error);
  CHECK_THAT(s.message(), Catch::Contains("reopen"));
}

// journal_actor is one interface with two implementations: the detached
// journal is a blocking actor (CAF 0.17 has no typed ones), so nothing but this
// test checks that it answers exactly the calls the handle promises.
TEST_CASE("both journals answer every call of the journal interface") {
  for (bool detached : {true, false}) {
    INFO((detached ? "detached" : "inline") << " journal");
    temp_dir dir;
    std::unique_ptr<event_log> log;
    log_options o;
    o.path = dir.str();
    REQUIRE(event_log::open(o, &log).is_ok());
    caf::actor_system_config cfg;
    register_skein_types(cfg);
    caf::actor_system sys{cfg};
    journal_options jo;
    jo.detached = detached;
    journal_actor journal = spawn_journal(sys, *log, jo);
    caf::scoped_actor self{sys};
    auto fail = [&](caf::error& e) { FAIL(to_status(e).to_string()); };
    // listen: the committed feed reaches the listener after each write.
    auto feed = std::make_shared<std::vector<std::string>>();
    auto listener = sys.spawn([feed](caf::event_based_actor*) -> caf::behavior {
      return {[feed](committed_atom, std::vector<committed_tick>& ticks) {
                for (auto& t : ticks) feed->push_back(t.thread_id + (t.erased ? " erased" : ""));
              },
              [](caf::ok_atom) { return true; }};
    });
    bool listening = false;
    self->request(journal, 10s, listen_atom::value, listener).receive([&] { listening = true; }, fail);
    CHECK(listening);
    uint64_t last = 0;
    self->request(journal, 10s, commit_atom::value, make_tick("a", 1, 2))
        .receive([&](uint64_t seq) { last = seq; }, fail);
    CHECK(last == 2);
    std::vector<uint64_t> seqs;
    self->request(journal, 10s, commit_all_atom::value, std::vector<tick>{make_tick("b", 1, 1), make_tick("c", 1, 3)})
        .receive([&](std::vector<uint64_t>& v) { seqs = v; }, fail);
    CHECK(seqs == std::vector<uint64_t>{1, 3});
    effect_write w;
    w.effect = "titles";
    w.thread_id = "a";
    w.cursor = 2;
    bool effect_written = false;
    self->request(journal, 10s, effect_atom::value, w).receive([&] { effect_written = true; }, fail);
    CHECK(effect_written);
    agent_config agent;
    agent.id = "helper";
    agent.engine = "scripted";
    bool agent_put = false;
    self->request(journal, 10s, caf::put_atom::value, agent).receive([&] { agent_put = true; }, fail);
    CHECK(agent_put);
    bool ran = false;
    self->request(journal, 10s, write_atom::value, journal_write{[&](event_log&) {
                    ran = true;
                    return status::ok();
                  }})
        .receive([] {}, fail);
    CHECK(ran);
    bool erased = false;
    self->request(journal, 10s, erase_atom::value, std::string{"b"}).receive([&] { erased = true; }, fail);
    CHECK(erased);
    journal_stats stats;
    self->request(journal, 10s, caf::get_atom::value, stats_atom::value)
        .receive([&](journal_stats& s) { stats = s; }, fail);
    CHECK(stats.groups >= 2);  // the commit and the commit_all at least
    bool closed = false;
    self->request(journal, 10s, caf::close_atom::value).receive([&] { closed = true; }, fail);
    CHECK(closed);
    // What each call wrote is in the log.
    manifest m;
    REQUIRE(log->read_manifest("a", &m).is_ok());
    CHECK(m.last_seq == 2);
    CHECK(log->read_manifest("b", &m).code() == errc::not_found);
    REQUIRE(log->read_manifest("c", &m).is_ok());
    CHECK(m.last_seq == 3);
    std::vector<agent_config> agents;
    REQUIRE(log->list_agents(&agents).is_ok());
    REQUIRE(agents.size() == 1);
    CHECK(agents[0].id == "helper");
    uint64_t cursor = 0;
    REQUIRE(log->read_effect_cursor("titles", "a", &cursor).is_ok());
    CHECK(cursor == 2);
    // The feed went out before the close's reply; the listener has taken it
    // once it answers a message sent after.
    self->request(listener, 10s, caf::ok_atom::value).receive([](bool) {}, fail);
    CHECK(*feed == std::vector<std::string>{"a", "b", "c", "b erased"});
    self->send_exit(listener, caf::exit_reason::user_shutdown);
  }
}
