// What a thread's engine calls are given: the working conversation of the log
// as it stands at the call (DESIGN §5, §6), now that the thread lends its view
// to each call instead of copying it. Every call of a long thread with a system
// prompt, tool calls and compactions is checked against the view built from the
// log itself, after the thread has gone on appending (the calls' snapshots must
// not see what came later).
#include <catch2/catch.hpp>

#include "actors/thread_actor.hpp"
#include "runtime/model/conversation.hpp"
#include "tests/support/det_runtime.hpp"

using namespace skein;
using namespace skein::test;

namespace {

// One engine call: what the engine was given, and the view built from the log
// at that moment.
struct checked_call {
  engine_request request;
  std::vector<event> expected;
};

struct call_log {
  event_log* log = nullptr;  // set once the runtime is up, before any call
  std::vector<checked_call> calls;
};

// The scripted engine, behind a wrapper that reads the log at every call. The
// coordinator runs the thread actor on the test's thread, so the calls come in
// on it; they are only recorded here and checked by the test afterwards.
engine_factory checking_scripted(std::shared_ptr<call_log> rec) {
  return observing_scripted([rec](const engine_request& r) {
    checked_call c;
    c.request = r;
    std::vector<event> log;
    if (rec->log->read_events(r.thread_id, 1, 0, &log).is_ok()) c.expected = working_conversation(log);
    rec->calls.push_back(std::move(c));
  });
}

// Inputs with "tool" call the echo tool at their first step (with some words),
// then answer; others answer at once with a long text for summaries to shrink.
constexpr const char* rules = R"({
  "rules": [
    {"match": "tool", "turn": 1, "reply": "let me look", "thinking": "hmm",
     "tool_calls": [{"name": "echo", "arguments": {"q": 1}}, {"name": "broken"}]},
    {"match": "tool", "turn": 2, "reply": "found it: {tool_result}"}
  ],
  "default": {"reply": "a long answer that goes on and on and on and on and on and on"}
})";

void run_one(det_runtime& rt, const std::string& thread_id, const std::string& text) {
  rt.send(thread_id, text);
  rt.run();
  REQUIRE(only_result(rt).outcome == run_outcome::completed);
}

void compact(det_runtime& rt, const std::string& thread_id) {
  (*rt.self)->send(rt.thread(thread_id), compact_atom::value, compact_request{});
  rt.run();
  bool compacted = false;
  while (!(*rt.self)->mailbox().empty())
    (*rt.self)->receive([&](compact_result& r) { compacted = r.compacted; }, [](caf::error&) {}, [] {});
  REQUIRE(compacted);
}

}  // namespace

TEST_CASE("every engine call of a long thread gets the working view of the log at that call") {
  auto rec = std::make_shared<call_log>();
  det_runtime rt{core_options{}, [rec](core_config& cc, log_options&) { cc.reg.engines["checked"] = checking_scripted(rec); }};
  rec->log = rt.log.get();
  agent_config a = scripted_agent("a", rules, {"echo", "broken"});
  a.engine = "checked";
  a.compaction.keep_turns = 1;
  rt.add_agent(a);
  auto t = rt.add_thread("a");

  constexpr int rounds = 3;
  constexpr int runs_per_round = 12;
  for (int round = 0; round < rounds; ++round) {
    for (int i = 0; i < runs_per_round; ++i)
      run_one(rt, t.id, (i % 3 == 0 ? "use a tool, question " : "question ") + std::to_string(round * 100 + i));
    if (round + 1 < rounds) compact(rt, t.id);
  }

  auto log = rt.events(t.id);
  size_t compactions = 0, tool_results = 0;
  for (const auto& e : log) {
    compactions += e.type == event_type::compaction;
    tool_results += e.type == event_type::tool_result;
  }
  CHECK(compactions == rounds - 1);
  CHECK(tool_results == 2 * rounds * ((runs_per_round + 2) / 3));

  size_t run_calls = 0, summary_calls = 0;
  for (size_t i = 0; i < rec->calls.size(); ++i) {
    const checked_call& c = rec->calls[i];
    if (c.request.purpose == engine_purpose::summary) {
      ++summary_calls;
      continue;  // a summary's input is the compaction's own selection
    }
    ++run_calls;
    INFO("engine call " << i << " (turn " << c.request.turn << ")");
    REQUIRE_FALSE(c.expected.empty());
    CHECK(c.request.conversation.size() == c.expected.size());
    CHECK(c.request.conversation == c.expected);
    CHECK(c.request.conversation.to_vector() == c.expected);
    // The system prompt leads every call's view, once.
    CHECK(c.request.conversation.front().type == event_type::system_prompt);
    CHECK(c.request.conversation.front().text == a.system_prompt);
    uint64_t bytes = 0;
    for (const auto& e : c.expected) bytes += e.text.size() + e.json.size();
    CHECK(c.request.conversation.payload_bytes() == bytes);
  }
  // One call per plain run, two per tool run.
  CHECK(run_calls == rounds * runs_per_round + rounds * ((runs_per_round + 2) / 3));
  CHECK(summary_calls == rounds - 1);
}
