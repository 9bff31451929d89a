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
