// Compaction in the thread actor, deterministically: between runs only, failures
// leave the thread as it was, the working view after a compaction, and the
// working view read at activation without a full scan.
#include <catch2/catch.hpp>
#include <iostream>
#include <random>

#include "actors/thread_actor.hpp"
#include "runtime/model/compaction.hpp"
#include "runtime/model/conversation.hpp"
#include "tests/support/det_runtime.hpp"
#include "tests/support/log_fixtures.hpp"

using namespace skein;
using namespace skein::test;
using namespace std::chrono_literals;

namespace {

// Replies with a long text so that a summary has something to shrink.
constexpr const char* chatty = R"({"default": {"reply": "a long answer that goes on and on and on and on and on and on and on and on"}})";

agent_config compacting_agent(const std::string& id, const std::string& rules) {
  agent_config a = scripted_agent(id, rules);
  a.compaction.keep_turns = 1;
  return a;
}

// Sends the compaction; the caller runs the actors and takes the answer.
void send_compact(det_runtime& rt, const std::string& thread_id, compact_request req = {}) {
  (*rt.self)->send(rt.thread(thread_id), compact_atom::value, std::move(req));
}

std::variant<compact_result, status> take_compact(det_runtime& rt) {
  std::variant<compact_result, status> out = status::not_found("no answer");
  bool got = false;
  while (!got && !(*rt.self)->mailbox().empty()) {
    (*rt.self)->receive([&](compact_result& r) { out = r; got = true; },
                        [&](caf::error& e) { out = to_status(e); got = true; },
                        [](run_result&) {}, [] {});
  }
  return out;
}

compact_result compact_now(det_runtime& rt, const std::string& thread_id, compact_request req = {}) {
  send_compact(rt, thread_id, std::move(req));
  rt.run();
  auto r = take_compact(rt);
  if (auto* s = std::get_if<status>(&r)) FAIL("compaction failed: " << s->to_string());
  return std::get<compact_result>(r);
}

void run_turns(det_runtime& rt, const std::string& thread_id, int n) {
  for (int i = 0; i < n; ++i) {
    rt.send(thread_id, "question number " + std::to_string(i));
    rt.run();
    auto replies = rt.drain();
    REQUIRE(replies.size() == 1);
    REQUIRE(as_result(replies[0]).outcome == run_outcome::completed);
  }
}

size_t count_signal(const std::vector<event>& log, const std::string& name) {
  size_t n = 0;
  for (const auto& e : log)
    if (e.type == event_type::signal && e.name == name) ++n;
  return n;
}

}  // namespace

TEST_CASE("a compaction starts the working view and the complete history is unchanged") {
  det_runtime rt;
  rt.add_agent(compacting_agent("a", chatty));
  auto t = rt.add_thread("a");
  run_turns(rt, t.id, 4);
  auto before = rt.events(t.id);
  auto view_before = working_conversation(before);

  auto r = compact_now(rt, t.id);
  REQUIRE(r.compacted);
  CHECK(r.reason.empty());
  CHECK(r.tokens_after < r.tokens_before);
  CHECK(r.events_after < r.events_before);

  auto after = rt.events(t.id);
  REQUIRE(after.size() == before.size() + 1);
  for (size_t i = 0; i < before.size(); ++i) CHECK(after[i] == before[i]);  // nothing rewritten
  const event& c = after.back();
  CHECK(c.type == event_type::compaction);
  CHECK(c.seq == r.seq);
  CHECK(c.name == "trim-tool-results+drop-thinking+summarize");
  CHECK(c.from_seq == 1);
  CHECK(c.to_seq == before.back().seq);
  CHECK(c.original_events == r.events_before);
  CHECK(c.tokens_before == r.tokens_before);
  CHECK(c.tokens_after == r.tokens_after);
  CHECK(c.prompt_seq == 1);
  CHECK(rt.read_manifest(t.id).compaction_seq == c.seq);

  std::vector<event> compacted;
  REQUIRE(decode_compacted(c.json, &compacted).is_ok());
  REQUIRE(compacted.size() == r.events_after);
  CHECK(compacted[0].role == message_role::system);
  CHECK(compacted[0].text.rfind(summary_prefix, 0) == 0);
  // The last turn is kept verbatim, with its seqs.
  CHECK(compacted[1].text == "question number 3");
  CHECK(compacted[1] == view_before[view_before.size() - 2]);

  auto view = working_conversation(after);
  REQUIRE(view.size() == 2);
  CHECK(view[0].type == event_type::system_prompt);
  CHECK(view[1] == c);
}

TEST_CASE("runs after a compaction see the compacted view and the cached view equals the log's") {
  det_runtime rt;
  rt.add_agent(compacting_agent("a", chatty));
  auto t = rt.add_thread("a");
  run_turns(rt, t.id, 3);
  REQUIRE(compact_now(rt, t.id).compacted);
  size_t requests = rt.requests->requests.size();
  run_turns(rt, t.id, 1);
  auto log = rt.events(t.id);
  REQUIRE(rt.requests->requests.size() == requests + 1);
  const engine_request& req = rt.requests->requests.back();
  CHECK(req.purpose == engine_purpose::run);
  // What the engine saw is the working view of the log as it stood at the call:
  // up to the run's thread.start.
  size_t start = 0;
  for (size_t i = 0; i < log.size(); ++i)
    if (log[i].type == event_type::signal && log[i].name == "thread.start") start = i;
  std::vector<event> then(log.begin(), log.begin() + static_cast<std::ptrdiff_t>(start + 1));
  CHECK(req.conversation == working_conversation(then));
  REQUIRE(req.conversation.size() == 3);  // prompt, compaction, the new input
  CHECK(req.conversation[1].type == event_type::compaction);
  CHECK(req.conversation[2].text == "question number 0");

  // And the summary call was one of purpose summary, without tools.
  bool summary = false;
  for (const auto& q : rt.requests->requests)
    if (q.purpose == engine_purpose::summary) {
      summary = true;
      CHECK(q.tools.empty());
      CHECK(q.conversation.front().type == event_type::system_prompt);
    }
  CHECK(summary);
}

TEST_CASE("a second compaction builds on the first") {
  det_runtime rt;
  rt.add_agent(compacting_agent("a", chatty));
  auto t = rt.add_thread("a");
  run_turns(rt, t.id, 3);
  auto first = compact_now(rt, t.id);
  REQUIRE(first.compacted);
  run_turns(rt, t.id, 3);
  auto second = compact_now(rt, t.id);
  REQUIRE(second.compacted);
  auto log = rt.events(t.id);
  CHECK(rt.read_manifest(t.id).compaction_seq == second.seq);
  CHECK(log.back().seq == second.seq);
  CHECK(log.back().from_seq == 1);
  CHECK(log.back().to_seq == second.seq - 1);
  // Its summary was asked over the first summary and the turns after it.
  const engine_request* last_summary = nullptr;
  for (const auto& q : rt.requests->requests)
    if (q.purpose == engine_purpose::summary) last_summary = &q;
  REQUIRE(last_summary != nullptr);
  REQUIRE(last_summary->conversation.size() > 1);
  CHECK(last_summary->conversation[1].text.rfind(summary_prefix, 0) == 0);
  auto view = working_conversation(log);
  REQUIRE(view.size() == 2);
  CHECK(view[1].seq == second.seq);
  // Nothing left to shrink: a third that only drops thinking finds nothing
  // and writes nothing.
  compact_request drop;
  drop.options.stages = {"drop-thinking"};
  auto third = compact_now(rt, t.id, drop);
  CHECK_FALSE(third.compacted);
  CHECK_FALSE(third.failed);
  CHECK(third.reason.find("nothing to compact") != std::string::npos);
  CHECK(rt.events(t.id).size() == log.size());
}

TEST_CASE("a failed summary leaves the thread as it was plus thread.compaction_failed") {
  det_runtime rt;
  rt.add_agent(compacting_agent("a", R"({"default": {"reply": "a long answer that goes on and on and on and on"}, "summary": {"error": "model overloaded"}})"));
  auto t = rt.add_thread("a");
  run_turns(rt, t.id, 3);
  auto before = rt.events(t.id);
  auto m_before = rt.read_manifest(t.id);
  auto r = compact_now(rt, t.id);
  CHECK_FALSE(r.compacted);
  CHECK(r.failed);
  CHECK(r.reason.find("model overloaded") != std::string::npos);
  auto after = rt.events(t.id);
  REQUIRE(after.size() == before.size() + 1);
  CHECK(after.back().type == event_type::signal);
  CHECK(after.back().name == "thread.compaction_failed");
  CHECK(after.back().json.find("model overloaded") != std::string::npos);
  CHECK(working_conversation(after) == working_conversation(before));
  CHECK(rt.read_manifest(t.id).compaction_seq == m_before.compaction_seq);
  // The thread goes on as before.
  run_turns(rt, t.id, 1);
}

TEST_CASE("a summary that does not shrink the view is invalid and changes nothing") {
  std::string big(20000, 'z');
  det_runtime rt;
  rt.add_agent(compacting_agent("a", R"({"default": {"reply": "ok"}, "summary": {"reply": ")" + big + R"("}})"));
  auto t = rt.add_thread("a");
  run_turns(rt, t.id, 3);
  auto before = rt.events(t.id);
  auto r = compact_now(rt, t.id);
  CHECK(r.failed);
  CHECK(r.reason.find("no reduction") != std::string::npos);
  auto after = rt.events(t.id);
  CHECK(count_signal(after, "thread.compaction_failed") == 1);
  CHECK(working_conversation(after) == working_conversation(before));
  CHECK(rt.read_manifest(t.id).compaction_seq == 0);
}

TEST_CASE("a summary call past engine_idle_ms fails the compaction") {
  det_runtime rt;
  agent_config a = compacting_agent("a", R"({"default": {"reply": "a long answer that goes on and on and on"}, "summary": {"stall": true}})");
  a.budgets.engine_idle_ms = 500;
  rt.add_agent(a);
  auto t = rt.add_thread("a");
  run_turns(rt, t.id, 3);
  auto before = rt.events(t.id);
  send_compact(rt, t.id);
  rt.run();
  CHECK((*rt.self)->mailbox().empty());  // waiting for the engine
  rt.advance(500ms);
  auto r = take_compact(rt);
  REQUIRE(std::holds_alternative<compact_result>(r));
  CHECK(std::get<compact_result>(r).failed);
  CHECK(std::get<compact_result>(r).reason.find("engine_idle_ms") != std::string::npos);
  CHECK(working_conversation(rt.events(t.id)) == working_conversation(before));
}

TEST_CASE("a compaction waits for the running run and inputs wait for the compaction") {
  det_runtime rt;
  rt.add_agent(compacting_agent("a", R"({"latency_ms": 1000, "default": {"reply": "a long answer that goes on and on and on"}, "summary": {"latency_ms": 300}})"));
  auto t = rt.add_thread("a");
  for (int i = 0; i < 3; ++i) {
    rt.send(t.id, "q" + std::to_string(i));
    rt.run();
    rt.advance(1000ms);
    REQUIRE(rt.drain().size() == 1);
  }
  rt.send(t.id, "during");  // a run under way
  rt.run();
  send_compact(rt, t.id);
  rt.run();
  auto log = rt.events(t.id);
  CHECK(log.back().name == "thread.start");  // the compaction waits
  rt.advance(1000ms);                         // the run ends; the summary call starts
  auto mid = rt.events(t.id);
  CHECK(mid.back().name == "thread.stop");
  rt.send(t.id, "after");  // arrives during the summary call: waits for it
  rt.run();
  CHECK(rt.events(t.id).size() == mid.size());
  rt.advance(300ms);  // summary done: compaction, then the waiting input runs
  auto final_log = rt.events(t.id);
  REQUIRE(final_log.size() > mid.size());
  CHECK(final_log[mid.size()].type == event_type::compaction);
  rt.advance(1000ms);
  final_log = rt.events(t.id);
  CHECK(final_log.back().name == "thread.stop");
  size_t compactions = 0;
  for (const auto& e : final_log) compactions += e.type == event_type::compaction;
  CHECK(compactions == 1);
  // The compaction sits between two runs, never inside one.
  bool in_run = false;
  for (const auto& e : final_log) {
    if (e.type == event_type::signal && e.name == "thread.start") in_run = true;
    if (e.type == event_type::signal && e.name == "thread.stop") in_run = false;
    if (e.type == event_type::compaction) CHECK_FALSE(in_run);
  }
  auto answer = take_compact(rt);
  REQUIRE(std::holds_alternative<compact_result>(answer));
  CHECK(std::get<compact_result>(answer).compacted);
}

TEST_CASE("an effect's cursor lands in the compaction's tick") {
  det_runtime rt;
  rt.add_agent(compacting_agent("a", chatty));
  auto t = rt.add_thread("a");
  run_turns(rt, t.id, 3);
  compact_request req;
  req.effect = "compaction";
  req.effect_seq = rt.read_manifest(t.id).last_seq;
  auto r = compact_now(rt, t.id, req);
  REQUIRE(r.compacted);
  uint64_t cursor = 0;
  REQUIRE(rt.log->read_effect_cursor("compaction", t.id, &cursor).is_ok());
  CHECK(cursor == req.effect_seq);
}

TEST_CASE("an automatic compaction whose view is under the threshold by its turn writes nothing") {
  det_runtime rt;
  auto agent = compacting_agent("a", chatty);
  agent.compaction.auto_tokens = 1000000;  // far above this thread's view
  rt.add_agent(agent);
  auto t = rt.add_thread("a");
  run_turns(rt, t.id, 3);
  uint64_t last = rt.read_manifest(t.id).last_seq;
  compact_request req;
  req.automatic = true;  // as the compaction effect asks: a repeated or late request
  req.effect = "compaction";
  req.effect_seq = last;
  auto r = compact_now(rt, t.id, req);
  CHECK_FALSE(r.compacted);
  CHECK_FALSE(r.failed);
  CHECK_THAT(r.reason, Catch::Contains("auto_tokens"));
  CHECK(rt.read_manifest(t.id).last_seq == last);  // no event, no signal
  uint64_t cursor = 0;
  REQUIRE(rt.log->read_effect_cursor("compaction", t.id, &cursor).is_ok());
  CHECK(cursor == 0);  // the effect writes its own cursor then
}

TEST_CASE("compaction options override the agent's and bad ones are refused") {
  det_runtime rt;
  rt.add_agent(compacting_agent("a", R"({"default": {"thinking": "long thoughts long thoughts long thoughts", "reply": "ok"}})"));
  auto t = rt.add_thread("a");
  run_turns(rt, t.id, 2);
  compact_request req;
  req.options.stages = {"drop-thinking"};
  auto r = compact_now(rt, t.id, req);
  REQUIRE(r.compacted);
  CHECK(rt.events(t.id).back().name == "drop-thinking");
  for (const auto& q : rt.requests->requests) CHECK(q.purpose == engine_purpose::run);  // no summary asked

  compact_request bad;
  bad.options.stages = {"shred"};
  send_compact(rt, t.id, bad);
  rt.run();
  auto b = take_compact(rt);
  REQUIRE(std::holds_alternative<status>(b));
  CHECK(std::get<status>(b).code() == errc::invalid_input);
  CHECK(std::get<status>(b).message().find("stages") != std::string::npos);
}

TEST_CASE("randomized: the working view read from the compaction on equals the full read") {
  auto seed = std::random_device{}();
  std::cout << "working view seed " << seed << "\n";
  INFO("seed " << seed);
  std::mt19937 rng(seed);
  temp_dir dir;
  auto log = open_log(dir.str(), durability::memory);
  for (int round = 0; round < 40; ++round) {
    std::string id = "t" + std::to_string(round);
    std::vector<event> events;
    uint64_t prompt_seq = 0, compaction_seq = 0;
    size_t n = 1 + rng() % 300;
    for (uint64_t seq = 1; seq <= n; ++seq) {
      event e;
      switch (rng() % 8) {
        case 0: e = make_system_prompt("prompt " + std::to_string(seq)); break;
        case 1: e = make_compaction("summarize", 1, seq - 1, R"([])"); break;
        case 2: e = make_signal("thread.start"); break;
        case 3: e = make_tool_call("c" + std::to_string(seq), "t", "{}"); break;
        default: e = make_message(message_role::user, "m" + std::to_string(seq));
      }
      e.seq = seq;
      // Some compactions are v1 (no counts, no prompt_seq): read in full.
      bool v1 = e.type == event_type::compaction && rng() % 4 == 0;
      if (e.type == event_type::compaction && !v1) {
        e.prompt_seq = prompt_seq;
        e.original_events = seq;
      }
      if (e.type == event_type::compaction) compaction_seq = v1 ? 0 : seq;
      if (e.type == event_type::system_prompt) prompt_seq = seq;
      events.push_back(e);
    }
    tick t;
    t.thread_id = id;
    t.create = true;
    t.bulk = true;
    t.events = events;
    t.manifest.id = id;
    t.manifest.agent_id = "a";
    t.manifest.compaction_seq = latest_compaction_seq(events);
    REQUIRE(log->commit(t).is_ok());
    manifest m;
    REQUIRE(log->read_manifest(id, &m).is_ok());
    std::vector<event> view;
    size_t read = 0;
    REQUIRE(read_working_view(*log, m, &view, &read).is_ok());
    INFO("round " << round << " events " << n << " compaction at " << compaction_seq);
    CHECK(view == working_conversation(events));
    // From a v2 compaction on: the tail and at most the prompt, never the whole log.
    bool v2 = compaction_seq != 0 && compaction_seq == m.compaction_seq;
    size_t tail = v2 ? n - compaction_seq + 1 : n;
    CHECK(read <= tail + 1);
    if (!v2) CHECK(read == n);
  }
}

TEST_CASE("activation reads O(working view) events of a long compacted thread") {
  temp_dir dir;
  auto log = open_log(dir.str(), durability::memory);
  std::vector<event> events;
  events.push_back(make_system_prompt("p"));
  for (int i = 0; i < 5000; ++i) events.push_back(make_message(message_role::user, "m" + std::to_string(i)));
  event c = make_compaction("summarize", 1, events.size(), "[]");
  c.prompt_seq = 1;
  c.original_events = 5001;
  events.push_back(c);
  for (int i = 0; i < 10; ++i) events.push_back(make_message(message_role::user, "tail"));
  for (size_t i = 0; i < events.size(); ++i) events[i].seq = i + 1;
  tick t;
  t.thread_id = "long";
  t.create = true;
  t.bulk = true;
  t.events = events;
  t.manifest.id = "long";
  t.manifest.agent_id = "a";
  t.manifest.compaction_seq = 5002;
  REQUIRE(log->commit(t).is_ok());
  manifest m;
  REQUIRE(log->read_manifest("long", &m).is_ok());
  std::vector<event> view;
  size_t read = 0;
  REQUIRE(read_working_view(*log, m, &view, &read).is_ok());
  CHECK(read == 12);  // the prompt, the compaction, the tail of 10
  CHECK(view == working_conversation(events));
  // A manifest naming something that is not a compaction falls back to a full read.
  m.compaction_seq = 3;
  REQUIRE(read_working_view(*log, m, &view, &read).is_ok());
  CHECK(read == events.size());
  CHECK(view == working_conversation(events));
}
