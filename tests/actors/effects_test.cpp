// Effect actors under CAF's test coordinator: a title committed while a run is
// in flight; the journal's committed feed; an effect write racing a delete.
#include <catch2/catch.hpp>

#include "actors/effects/effects.hpp"
#include "tests/support/det_runtime.hpp"
#include "tests/support/fault_fs.hpp"
#include "tests/support/log_fixtures.hpp"
#include "tests/support/runtime_fixture.hpp"

using namespace skein;
using namespace skein::test;

namespace {

det_runtime::setup_fn titles_on = [](core_config& cc, log_options&) { cc.effects.titles = true; };

size_t title_requests(det_runtime& rt) {
  std::lock_guard<std::mutex> lock{rt.requests->mu};
  size_t n = 0;
  for (const auto& r : rt.requests->requests) n += r.purpose == engine_purpose::title;
  return n;
}

}  // namespace

TEST_CASE("a title committed while a run is in flight is kept by the run's commits, and the run is whole") {
  det_runtime rt{{}, titles_on};
  rt.add_agent(scripted_agent("a", R"({
      "rules": [{"match": "tool", "turn": 1, "tool_calls": [{"name": "slow", "id": "s1"}]},
                {"match": "tool", "turn": 2, "reply": "tool done"}],
      "default": {"reply": "ok"},
      "title": {"reply": "Slow tools and titles"}})", {"slow"}));
  auto t = rt.add_thread("a");
  rt.send(t.id, "hello");
  rt.run();
  REQUIRE(rt.drain().size() == 1);
  CHECK(title_requests(rt) == 0);  // one user message: no title
  CHECK(rt.read_manifest(t.id).title.empty());

  rt.send(t.id, "now use the tool");
  rt.run();
  // The run waits on its tool; the effect saw the run's first commit (2 user
  // messages) and its title landed between the run's commits.
  REQUIRE(rt.slow->calls().size() == 1);
  manifest mid = rt.read_manifest(t.id);
  CHECK(mid.status == thread_status::running);
  CHECK(mid.title == "Slow tools and titles");
  CHECK(mid.title_generated);
  CHECK(title_requests(rt) == 1);
  uint64_t cursor = 0;
  REQUIRE(rt.log->read_effect_cursor("titles", t.id, &cursor).is_ok());
  CHECK(cursor >= 5);  // the second run's start: input and thread.start

  rt.slow->calls()[0].done({"slow result", false});
  rt.run();
  auto replies = rt.drain();
  REQUIRE(replies.size() == 1);
  CHECK(as_result(replies[0]).text == "tool done");
  manifest after = rt.read_manifest(t.id);
  CHECK(after.title == "Slow tools and titles");
  CHECK(after.title_generated);
  CHECK(after.status != thread_status::running);
  auto log = rt.events(t.id);
  CHECK(check_runs(log) == 2);
  CHECK(log.back().name == "thread.stop");
  CHECK(title_requests(rt) == 1);  // the run's later commits start no second title
}

TEST_CASE("the committed feed reports each durable tick and an erase, after the write") {
  det_runtime rt;
  rt.add_agent(scripted_agent("a", R"({"default": {"reply": "ok"}})"));
  std::vector<committed_tick> heard;
  auto listener = rt.sys->spawn([&](caf::event_based_actor*) -> caf::behavior {
    return {[&](committed_atom, std::vector<committed_tick>& feed) {
      for (auto& c : feed) {
        if (!c.erased) {
          // The write is durable before the feed: the log has it already.
          manifest m;
          REQUIRE(rt.log->read_manifest(c.thread_id, &m).is_ok());
          CHECK(m.last_seq >= c.last_seq);
        }
        heard.push_back(c);
      }
    }};
  });
  (*rt.self)->send(rt.actors.journal, listen_atom::value, listener);
  rt.run();
  rt.drain();
  auto t = rt.add_thread("a");
  rt.send(t.id, "hi");
  rt.run();
  REQUIRE(rt.drain().size() == 1);
  REQUIRE_FALSE(heard.empty());
  CHECK(heard.back().thread_id == t.id);
  CHECK(heard.back().agent_id == "a");
  CHECK(heard.back().last_seq == rt.read_manifest(t.id).last_seq);
  CHECK_FALSE(heard.back().erased);
  (*rt.self)->send(rt.actors.directory, delete_atom::value, t.id);
  rt.run();
  rt.drain();
  REQUIRE(heard.back().erased);
  CHECK(heard.back().thread_id == t.id);
  caf::anon_send_exit(listener, caf::exit_reason::user_shutdown);
  rt.run();
}

TEST_CASE("an effect write racing a delete leaves no key of the thread, in either order") {
  bool effect_first = GENERATE(true, false);
  INFO("effect write queued " << (effect_first ? "before" : "after") << " the erase");
  temp_dir dir;
  auto log = open_log(dir.str());
  tick t = make_tick("t1", 1, 2);
  REQUIRE(log->commit(t).is_ok());
  caf::actor_system_config cfg;
  register_skein_types(cfg);
  caf::actor_system sys{cfg};
  auto journal = spawn_journal(sys, *log);  // the detached one: both requests queue together
  embedding_record rec{"agent", false, {0.6f, 0.8f}};
  std::string value;
  REQUIRE(encode_embedding(rec, &value).is_ok());
  effect_write w{"embeddings", "t1", 2, {{1, value}, {2, value}}};
  caf::scoped_actor self{sys};
  // Both queue before the journal answers either: they may share one flush.
  if (effect_first) {
    self->send(journal, effect_atom::value, w);
    self->send(journal, erase_atom::value, std::string{"t1"});
  } else {
    self->send(journal, erase_atom::value, std::string{"t1"});
    self->send(journal, effect_atom::value, w);
  }
  std::vector<status> answers;  // in the order sent: the journal answers in order
  for (int i = 0; i < 2; ++i)
    self->receive([&](caf::unit_t) { answers.push_back(status::ok()); },
                  [&] { answers.push_back(status::ok()); },
                  [&](caf::error& e) { answers.push_back(to_status(e)); });
  REQUIRE(answers.size() == 2);
  status effect_status = effect_first ? answers[0] : answers[1];
  status erase_status = effect_first ? answers[1] : answers[0];
  if (effect_first) CHECK(effect_status.is_ok());
  else CHECK(effect_status.code() == errc::not_found);
  CHECK(erase_status.is_ok());
  REQUIRE(journal_close(sys, journal).is_ok());
  size_t keys = 99;
  REQUIRE(log->count_thread_keys("t1", &keys).is_ok());
  CHECK(keys == 0);
}

namespace {

// An effect whose jobs end when the test says: it counts the jobs in flight.
struct probe_effect final : effect_kind {
  struct state {
    std::vector<std::function<void(effect_result)>> pending;  // jobs processing, in start order
    size_t started = 0;
  };
  std::shared_ptr<state> st = std::make_shared<state>();
  std::string name() const override { return "probe"; }
  status load(const event_log&, effect_job&) const override { return status::ok(); }
  std::unique_ptr<call_handle> process(effect_job job, std::function<void(effect_result)> done) const override {
    ++st->started;
    st->pending.push_back([cursor = job.target, done](effect_result r) {
      r.write.cursor = cursor;
      done(std::move(r));
    });
    return nullptr;
  }
  // Ends the oldest job in flight.
  void finish_one() const {
    REQUIRE_FALSE(st->pending.empty());
    auto fn = std::move(st->pending.front());
    st->pending.erase(st->pending.begin());
    fn(effect_result{});
  }
};

std::vector<committed_tick> feed_of(size_t from, size_t n) {
  std::vector<committed_tick> feed;
  for (size_t i = from; i < from + n; ++i) feed.push_back(committed_tick{"t" + std::to_string(i), "agent", 1, 1000, false});
  return feed;
}

}  // namespace

TEST_CASE("while the journal's writes are saturated an effect works one thread at a time, and catches up after") {
  temp_dir dir;
  auto log = open_log(dir.str());
  constexpr size_t threads = 60;
  for (size_t i = 0; i < threads; ++i) {
    tick t = make_tick("t" + std::to_string(i), 1, 1);
    REQUIRE(log->commit(t).is_ok());
  }
  caf::actor_system_config cfg;
  register_skein_types(cfg);
  cfg.set("scheduler.policy", caf::atom("testing"));
  caf::actor_system sys{cfg};
  auto& sched = dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler());
  // A journal that only answers, and a directory that knows one agent.
  size_t writes = 0;
  auto journal = sys.spawn([&](caf::event_based_actor*) -> caf::behavior {
    return {[](listen_atom, caf::actor&) {}, [&](effect_atom, effect_write&) { ++writes; }};
  });
  auto spec = std::make_shared<agent_spec>();
  spec->config.id = "agent";
  agent_spec_ptr shared_spec = spec;
  auto directory = sys.spawn([=](caf::event_based_actor*) -> caf::behavior {
    return {[=](agent_atom, std::string&, caf::get_atom) { return shared_spec; }};
  });
  auto probe = std::make_shared<probe_effect>();
  effects_config config;
  config.detached_readers = false;
  REQUIRE(config.busy_group_ticks == 16);
  REQUIRE(config.busy_jobs_in_flight_max == 1);
  auto fx = spawn_effect(sys, probe, *log, caf::actor_cast<journal_actor>(journal), caf::actor_cast<directory_actor>(directory), config);
  sched.run();  // registered; the catch-up scan finds every thread behind its (absent) cursor
  while (!probe->st->pending.empty()) {
    probe->finish_one();
    sched.run();
  }
  size_t caught_up = probe->st->started;
  CHECK(caught_up == threads);  // the scan at start: full width, all at once
  probe->st->started = 0;
  writes = 0;

  // The journal's feed after one write of n threads' ticks (committed by the test first).
  auto bump = [&](size_t from, size_t n) {
    caf::anon_send(fx, committed_atom::value, feed_of(from, n));
    sched.run();
  };

  SECTION("a feed below busy_group_ticks starts every thread at once") {
    for (size_t i = 0; i < 15; ++i) {
      tick t = make_tick("t" + std::to_string(i), 2, 1);
      t.create = false;
      REQUIRE(log->commit(t).is_ok());
    }
    bump(0, 15);
    CHECK(probe->st->pending.size() == 15);
  }

  SECTION("a saturated write narrows the effect to one job until busy_hold passes without another") {
    for (size_t i = 0; i < 40; ++i) {
      tick t = make_tick("t" + std::to_string(i), 2, 1);
      t.create = false;
      REQUIRE(log->commit(t).is_ok());
    }
    bump(0, 20);  // one journal write of 20 threads' ticks: busy
    CHECK(probe->st->pending.size() == 1);
    probe->finish_one();
    sched.run();
    CHECK(probe->st->pending.size() == 1);  // the next thread, never two
    CHECK(writes == 1);                     // progress goes on, one thread at a time
    sched.advance_time(config.busy_hold / 2);
    sched.run();
    bump(20, 20);  // saturated again within the hold: still busy past the first hold
    sched.advance_time(config.busy_hold / 2 + std::chrono::milliseconds(1));
    sched.run();
    CHECK(probe->st->pending.size() == 1);
    probe->finish_one();
    sched.run();
    CHECK(probe->st->pending.size() == 1);
    // A whole hold with no saturated write: back to full width for the rest.
    sched.advance_time(config.busy_hold + std::chrono::milliseconds(1));
    sched.run();
    CHECK(probe->st->pending.size() == 40 - 2);
    while (!probe->st->pending.empty()) {
      probe->finish_one();
      sched.run();
    }
    CHECK(writes == 40);
    CHECK(probe->st->started == 40);
  }
  probe->st->pending.clear();  // their callbacks hold the effect actor, which holds the probe
  caf::anon_send_exit(fx, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(journal, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(directory, caf::exit_reason::user_shutdown);
  sched.run();
}
