// Deterministic tests of runs: CAF's test coordinator runs the actors and the
// test advances time; RocksDB is real.
#include <catch2/catch.hpp>

#include "actors/published_event.hpp"
#include "tests/support/det_runtime.hpp"

using namespace skein;
using namespace skein::test;
using namespace std::chrono_literals;

namespace {

constexpr const char* slow_reply = R"({"latency_ms": 1000, "default": {"reply": "done"}})";

size_t count_signal(const std::vector<event>& log, const std::string& name) {
  size_t n = 0;
  for (const auto& e : log)
    if (e.type == event_type::signal && e.name == name) ++n;
  return n;
}

const event* last_of(const std::vector<event>& log, event_type type) {
  for (auto it = log.rbegin(); it != log.rend(); ++it)
    if (it->type == type) return &*it;
  return nullptr;
}

}  // namespace

TEST_CASE("a run appends input, start, engine reply, result and stop in order") {
  det_runtime rt;
  auto t = rt.start_run(
      scripted_agent("a", R"({"default": {"reply": "hello", "usage": {"input_tokens": 7, "output_tokens": 2}, "cost_usd": 0.5}})"), "hi");
  run_result r = only_result(rt);
  CHECK(r.outcome == run_outcome::completed);
  CHECK(r.text == "hello");
  CHECK(r.turns == 1);
  CHECK(r.usage.input_tokens == 7);

  auto log = rt.events(t.id);
  std::vector<std::string> shape;
  for (const auto& e : log) shape.push_back(std::string{to_string(e.type)} + (e.type == event_type::signal ? ":" + e.name : ""));
  CHECK(shape == std::vector<std::string>{"system_prompt", "message", "signal:thread.start", "message", "result",
                                          "signal:thread.stop"});
  CHECK(r.first_seq == 1);
  CHECK(r.last_seq == 6);
  auto m = rt.read_manifest(t.id);
  CHECK(m.status == thread_status::open);  // a chat thread rests at open
  CHECK(m.session_id == "scripted-" + t.id);
  CHECK(m.usage.input_tokens == 7);
  CHECK(m.cost_usd == 0.5);
  CHECK(m.last_seq == 6);
}

TEST_CASE("queued inputs run one after the other, never interleaved") {
  det_runtime rt;
  rt.add_agent(scripted_agent("a", slow_reply));
  auto t = rt.add_thread("a");
  rt.send(t.id, "one");
  rt.send(t.id, "two");
  rt.run();
  CHECK(rt.drain().empty());  // the first run waits on its engine
  rt.advance(1000ms);
  auto first = rt.drain();
  REQUIRE(first.size() == 1);
  CHECK(as_result(first[0]).outcome == run_outcome::completed);
  rt.advance(1000ms);
  auto second = rt.drain();
  REQUIRE(second.size() == 1);
  auto log = rt.events(t.id);
  auto sig = signals(log);
  REQUIRE(sig.size() == 4);
  CHECK(sig[0] == "thread.start@" + as_result(first[0]).run_id);
  CHECK(sig[1] == "thread.stop@" + as_result(first[0]).run_id);
  CHECK(sig[2] == "thread.start@" + as_result(second[0]).run_id);
  CHECK(sig[3] == "thread.stop@" + as_result(second[0]).run_id);
}

TEST_CASE("mid-run policy reject refuses a second input with conflict at once") {
  det_runtime rt;
  rt.add_agent(scripted_agent("a", slow_reply));
  auto t = rt.add_thread("a", mid_run_policy::reject);
  rt.send(t.id, "one");
  rt.send(t.id, "two");
  rt.run();
  auto replies = rt.drain();
  REQUIRE(replies.size() == 1);
  CHECK(as_error(replies[0]).code() == errc::conflict);
  CHECK_THAT(as_error(replies[0]).message(), Catch::Contains("reject"));
  rt.advance(1000ms);
  CHECK(only_result(rt).outcome == run_outcome::completed);
  CHECK(count_signal(rt.events(t.id), "thread.start") == 1);
}

TEST_CASE("mid-run policy interrupt cancels the current run, then runs the new input") {
  det_runtime rt;
  rt.add_agent(scripted_agent("a", slow_reply));
  auto t = rt.add_thread("a", mid_run_policy::interrupt);
  rt.send(t.id, "one");
  rt.run();
  rt.send(t.id, "two");
  rt.run();
  run_result interrupted = only_result(rt);
  CHECK(interrupted.outcome == run_outcome::cancelled);
  CHECK(interrupted.text == "(stopped by user)");
  rt.advance(1000ms);
  CHECK(only_result(rt).outcome == run_outcome::completed);
  auto log = rt.events(t.id);
  CHECK(count_signal(log, "thread.start") == 2);
  CHECK(count_signal(log, "thread.stop") == 2);
}

TEST_CASE("cancel during the engine call stops the run as cancelled") {
  det_runtime rt;
  auto t = rt.start_run(scripted_agent("a", R"({"latency_ms": 10000})"), "hi");
  rt.cancel(t.id);
  rt.run();
  CHECK(only_result(rt).outcome == run_outcome::cancelled);
  rt.advance(20000ms);  // the engine's late answer changes nothing
  auto log = rt.events(t.id);
  auto* stop = last_of(log, event_type::signal);
  REQUIRE(stop != nullptr);
  CHECK(stop->name == "thread.stop");
  CHECK_THAT(stop->json, Catch::Contains(R"("outcome":"cancelled")"));
  auto* msg = last_of(log, event_type::message);
  CHECK(msg->text == "(stopped by user)");
  CHECK(count_signal(log, "thread.stop") == 1);
  CHECK(rt.read_manifest(t.id).status == thread_status::open);
}

TEST_CASE("cancel during a tool cancels the tool and closes its call with an error result") {
  det_runtime rt;
  rt.add_agent(scripted_agent("a", R"({"default": {"tool_calls": [{"name": "slow", "arguments": {"n": 1}}]}})", {"slow"}));
  auto t = rt.add_thread("a");
  rt.send(t.id, "go");
  rt.run();
  REQUIRE(rt.slow->calls().size() == 1);
  rt.cancel(t.id);
  rt.run();
  CHECK(*rt.slow->calls()[0].cancelled);
  rt.slow->calls()[0].done({"too late", false});  // a late answer is ignored
  rt.run();
  auto log = rt.events(t.id);
  auto* result = last_of(log, event_type::tool_result);
  REQUIRE(result != nullptr);
  CHECK(result->is_error);
  CHECK(result->text == "(cancelled)");
  CHECK(last_of(log, event_type::message)->text == "(stopped by user)");
  CHECK(count_signal(log, "thread.stop") == 1);
}

TEST_CASE("tools run in parallel within a tick, errors and unknown tools become error results") {
  det_runtime rt;
  rt.add_agent(scripted_agent("a", R"({"rules": [
      {"turn": 1, "tool_calls": [{"name": "slow", "id": "s1"}, {"name": "slow", "id": "s2"},
                                 {"name": "echo", "id": "e", "arguments": {"x": 1}},
                                 {"name": "broken", "id": "b"}, {"name": "nope", "id": "n"}]},
      {"turn": 2, "reply": "all done"}]})", {"slow", "echo", "broken"}));
  auto t = rt.add_thread("a");
  rt.send(t.id, "go");
  rt.run();
  auto calls = rt.slow->calls();
  REQUIRE(calls.size() == 2);  // both slow calls started before either finished
  calls[1].done({"second", false});
  rt.run();
  CHECK(rt.drain().empty());
  calls[0].done({"first", false});
  rt.run();
  CHECK(only_result(rt).text == "all done");
  std::map<std::string, event> results;
  for (const auto& e : rt.events(t.id))
    if (e.type == event_type::tool_result) results[e.call_id] = e;
  REQUIRE(results.size() == 5);
  CHECK(results["s1"].text == "first");
  CHECK(results["s2"].text == "second");
  CHECK(results["e"].text == R"(echo {"x":1})");
  CHECK(results["b"].is_error);
  CHECK(results["n"].is_error);
  CHECK_THAT(results["n"].text, Catch::Contains("unknown tool 'nope'"));
  // The second engine call saw every result.
  std::lock_guard<std::mutex> lock{rt.requests->mu};
  REQUIRE(rt.requests->requests.size() == 2);
  size_t seen = 0;
  for (const auto& e : rt.requests->requests[1].conversation)
    if (e.type == event_type::tool_result) ++seen;
  CHECK(seen == 5);
}

TEST_CASE("a tool that outlives its timeout gets an error result and the run goes on") {
  det_runtime rt;
  auto a = scripted_agent("a", R"({"rules": [{"turn": 1, "tool_calls": [{"name": "slow"}]}, {"turn": 2, "reply": "ok"}]})", {"slow"});
  a.budgets.tool_timeout_ms = 500;
  auto t = rt.start_run(a, "go");
  rt.advance(499ms);
  CHECK(rt.drain().empty());
  rt.advance(1ms);
  CHECK(only_result(rt).outcome == run_outcome::completed);
  CHECK(*rt.slow->calls()[0].cancelled);
  auto log = rt.events(t.id);  // last_of points into it: it must outlive `result`
  auto* result = last_of(log, event_type::tool_result);
  REQUIRE(result != nullptr);
  CHECK(result->is_error);
  CHECK_THAT(result->text, Catch::Contains("tool_timeout_ms"));
}

TEST_CASE("the tick budget ends a runaway run as failed") {
  det_runtime rt;
  auto a = scripted_agent("a", R"({"default": {"tool_calls": [{"name": "echo"}]}})", {"echo"});
  a.budgets.ticks_max = 3;
  rt.start_run(a, "loop forever");
  run_result r = only_result(rt);
  CHECK(r.outcome == run_outcome::failed);
  CHECK(r.turns == 3);
  CHECK_THAT(r.error, Catch::Contains("ticks_max (3)"));
  CHECK(rt.requests->requests.size() == 3);
}

TEST_CASE("the run time budget ends a long run as failed") {
  det_runtime rt;
  auto a = scripted_agent("a", R"({"default": {"tool_calls": [{"name": "slow"}]}})", {"slow"});
  a.budgets.run_time_ms_max = 2000;
  rt.start_run(a, "go");
  rt.advance(2000ms);
  run_result r = only_result(rt);
  CHECK(r.outcome == run_outcome::failed);
  CHECK_THAT(r.error, Catch::Contains("run_time_ms_max"));
}

TEST_CASE("the engine idle watchdog fails a stalled call instead of wedging the thread") {
  det_runtime rt;
  auto a = scripted_agent("a", R"({"rules": [{"match": "stall", "stall": true}], "default": {"reply": "fine"}})");
  a.budgets.engine_idle_ms = 1000;
  rt.add_agent(a);
  auto t = rt.add_thread("a");
  rt.send(t.id, "please stall");
  rt.send(t.id, "then this");
  rt.run();
  rt.advance(999ms);
  CHECK(rt.drain().empty());
  rt.advance(1ms);
  auto replies = rt.drain();
  REQUIRE(replies.size() == 2);  // the stalled run failed; the queued one ran
  CHECK(as_result(replies[0]).outcome == run_outcome::failed);
  CHECK_THAT(as_result(replies[0]).error, Catch::Contains("engine_idle_ms"));
  CHECK(as_result(replies[1]).text == "fine");
}

TEST_CASE("deltas keep the watchdog quiet and reach subscribers without a seq") {
  det_runtime rt;
  auto a = scripted_agent("a", R"({"default": {"reply": "abc", "latency_ms": 3000, "deltas": ["a", "b"]}})");
  a.budgets.engine_idle_ms = 1500;
  rt.add_agent(a);
  auto t = rt.add_thread("a");
  auto target = rt.thread(t.id);
  std::vector<std::string> deltas;
  std::vector<uint64_t> seqs;
  auto sink = rt.sys->spawn([&](caf::event_based_actor*) -> caf::behavior {
    return {[&](delta_atom, std::string&, std::string&, std::string& d) { deltas.push_back(d); },
            [&](event_atom, std::string&, published_ptr& e) { seqs.push_back(e->seq()); }};
  });
  CHECK(rt.ask<uint64_t>(target, subscribe_atom::value, uint64_t{1}, caf::actor_cast<event_sink_actor>(sink)) == 1);
  rt.send(t.id, "go");
  rt.run();
  for (int i = 0; i < 30; ++i) rt.advance(100ms);  // silences never reach 1500 ms
  CHECK(only_result(rt).outcome == run_outcome::completed);
  CHECK(deltas == std::vector<std::string>{"a", "b"});
  CHECK(seqs.size() == rt.events(t.id).size());
  caf::anon_send_exit(sink, caf::exit_reason::user_shutdown);
  rt.run();
}

TEST_CASE("an engine error fails the run and keeps the previous session id") {
  det_runtime rt;
  rt.add_agent(scripted_agent("a", R"({"rules": [{"match": "break", "error": "model overloaded"}], "default": {"reply": "ok"}})"));
  auto t = rt.add_thread("a");
  rt.send(t.id, "hello");
  rt.run();
  rt.drain();
  auto session = rt.read_manifest(t.id).session_id;
  REQUIRE_FALSE(session.empty());
  rt.send(t.id, "break it");
  rt.run();
  run_result r = only_result(rt);
  CHECK(r.outcome == run_outcome::failed);
  CHECK(r.text == "(error: model overloaded)");
  auto log = rt.events(t.id);
  CHECK(last_of(log, event_type::message)->text == "(error: model overloaded)");
  CHECK_THAT(last_of(log, event_type::signal)->json, Catch::Contains(R"("error":"model overloaded")"));
  CHECK(rt.read_manifest(t.id).session_id == session);
}

TEST_CASE("a failed resume is retried once with the context rebuilt from the log") {
  det_runtime rt;
  rt.add_agent(scripted_agent("a", R"({"rules": [{"match": "second", "resume_fails": true, "reply": "recovered"}], "default": {"reply": "first answer"}})"));
  auto t = rt.add_thread("a");
  rt.send(t.id, "first question");
  rt.run();
  rt.drain();
  rt.send(t.id, "second question");
  rt.run();
  run_result r = only_result(rt);
  CHECK(r.text == "recovered");
  CHECK(r.turns == 1);
  std::lock_guard<std::mutex> lock{rt.requests->mu};
  auto& reqs = rt.requests->requests;
  REQUIRE(reqs.size() == 3);
  CHECK_FALSE(reqs[1].session_id.empty());  // the resume attempt
  CHECK(reqs[2].session_id.empty());        // the retry, without the session...
  std::vector<std::string> texts;
  for (const auto& e : reqs[2].conversation) texts.push_back(e.text);
  // ...and with the whole working conversation, never an empty one.
  CHECK(texts == std::vector<std::string>{"You are a test agent.", "first question", "first answer",
                                          "second question"});
}

TEST_CASE("an idempotent send returns the first send's run instead of starting another") {
  det_runtime rt;
  rt.add_agent(scripted_agent("a", slow_reply));
  auto t = rt.add_thread("a");
  rt.send(t.id, "charge the card", "key-1");
  rt.run();
  rt.send(t.id, "charge the card", "key-1");  // a retry while the run is going
  rt.run();
  rt.advance(1000ms);
  auto replies = rt.drain();
  REQUIRE(replies.size() == 2);
  CHECK(as_result(replies[0]).run_id == as_result(replies[1]).run_id);
  rt.send(t.id, "charge the card", "key-1");  // a retry after it ended
  rt.run();
  run_result r = only_result(rt);
  auto first_run = r.run_id;
  CHECK(r.text == "done");
  CHECK(count_signal(rt.events(t.id), "thread.start") == 1);

  // Across passivation the key is found in the log.
  rt.advance(std::chrono::milliseconds(core_options{}.idle_passivate) + 1ms);
  rt.send(t.id, "charge the card", "key-1");
  rt.run();
  CHECK(only_result(rt).run_id == first_run);
  CHECK(count_signal(rt.events(t.id), "thread.start") == 1);
}

TEST_CASE("a child thread's id is minted from its parent's counter") {
  det_runtime rt;
  rt.add_agent(scripted_agent("a", "{}"));
  auto parent = rt.add_thread("a");
  thread_options o;
  o.agent_id = "a";
  o.parent_thread_id = parent.id;
  auto c1 = rt.ask<manifest>(rt.actors.directory, create_atom::value, o);
  auto c2 = rt.ask<manifest>(rt.actors.directory, create_atom::value, o);
  CHECK(c1.id == parent.id + ".1");
  CHECK(c2.id == parent.id + ".2");
  CHECK(c1.parent == parent_kind::thread);
  CHECK(rt.read_manifest(parent.id).children_count == 2);
  // A bound thread ends completed, not open.
  rt.send(c1.id, "work");
  rt.run();
  rt.drain();
  CHECK(rt.read_manifest(c1.id).status == thread_status::completed);
}
