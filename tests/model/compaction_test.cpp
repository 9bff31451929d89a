// Compaction strategies: pure stages, boundaries, the stored form of compacted
// events and of the compaction event.
#include <catch2/catch.hpp>
#include <iostream>
#include <random>

#include "runtime/model/compaction.hpp"
#include "runtime/model/conversation.hpp"
#include "runtime/model/json_codec.hpp"

using namespace skein;

namespace {

event with_seq(event e, uint64_t seq) {
  e.seq = seq;
  e.ts_ms = 1000 + static_cast<int64_t>(seq);
  return e;
}

// user, [thinking], (call, result)*, assistant — `turns` times.
std::vector<event> turns_log(int turns, size_t output_bytes) {
  std::vector<event> out;
  uint64_t seq = 0;
  for (int t = 0; t < turns; ++t) {
    out.push_back(with_seq(make_message(message_role::user, "question " + std::to_string(t)), ++seq));
    out.push_back(with_seq(make_thinking("hmm " + std::to_string(t)), ++seq));
    std::string id = "c" + std::to_string(t);
    out.push_back(with_seq(make_tool_call(id, "echo", "{}"), ++seq));
    out.push_back(with_seq(make_tool_result(id, "echo", std::string(output_bytes, 'x'), false), ++seq));
    out.push_back(with_seq(make_message(message_role::assistant, "answer " + std::to_string(t)), ++seq));
  }
  return out;
}

}  // namespace

TEST_CASE("trim-tool-results cuts long outputs with a marker and keeps the pairing") {
  auto events = turns_log(2, 10000);
  compaction_options o;
  o.tool_result_bytes_max = 100;
  REQUIRE(apply_pure_stage(stage_trim_tool_results, o, &events));
  const event& r = events[3];
  REQUIRE(r.type == event_type::tool_result);
  CHECK(r.call_id == "c0");
  CHECK(r.name == "echo");
  CHECK(r.text == std::string(100, 'x') + trim_marker(10000));
  CHECK(r.text.find("original 10000 bytes") != std::string::npos);
  CHECK(check_compacted(events).is_ok());  // the result still follows its call

  // A cut never splits a UTF-8 character.
  std::vector<event> utf{make_tool_call("u", "t", "{}"), make_tool_result("u", "t", std::string(70, 'a') + "\xC3\xA9\xC3\xA9", false)};
  o.tool_result_bytes_max = 71;
  apply_pure_stage(stage_trim_tool_results, o, &utf);
  CHECK(utf[1].text.substr(0, 71) == std::string(70, 'a') + "\n");
  CHECK(valid_utf8(utf[1].text));
}

TEST_CASE("drop-thinking removes thinking events only") {
  auto events = turns_log(3, 10);
  size_t before = events.size();
  REQUIRE(apply_pure_stage(stage_drop_thinking, {}, &events));
  CHECK(events.size() == before - 3);
  for (const auto& e : events) CHECK(e.type != event_type::thinking);
  CHECK_FALSE(apply_pure_stage(stage_summarize, {}, &events));  // not a pure stage
}

TEST_CASE("token estimates follow the documented heuristic") {
  event e = make_message(message_role::user, std::string(400, 'a'));
  CHECK(estimate_tokens(e) == 400 / token_estimate_bytes + token_estimate_event_overhead);
  CHECK(estimate_tokens(std::vector<event>{e, e}) == 2 * estimate_tokens(e));
  CHECK(estimate_tokens(std::vector<event>{}) == 0);
}

TEST_CASE("the summary boundary keeps the last turns and never splits a call from its result") {
  auto events = turns_log(5, 10);
  CHECK(summary_boundary(events, 2) == 15);  // turns 3 and 4 stay (5 events per turn)
  CHECK(summary_boundary(events, 5) == 0);   // as many turns as kept: nothing to summarize
  CHECK(summary_boundary(events, 9) == 0);
  // A result after the boundary pulls it back to before its call.
  std::vector<event> split{make_message(message_role::user, "a"), make_tool_call("k", "t", "{}"),
                           make_message(message_role::user, "b"), make_tool_result("k", "t", "r", false)};
  CHECK(safe_boundary(split, 2) == 1);
  CHECK(safe_boundary(split, 4) == 4);
}

TEST_CASE("randomized: no boundary separates a tool call from its result") {
  auto seed = std::random_device{}();
  std::cout << "compaction boundary seed " << seed << "\n";
  INFO("seed " << seed);
  std::mt19937 rng(seed);
  for (int round = 0; round < 300; ++round) {
    std::vector<event> events;
    std::vector<std::string> open;
    int calls = 0;
    size_t n = 1 + rng() % 40;
    for (size_t i = 0; i < n; ++i) {
      switch (rng() % 5) {
        case 0: events.push_back(make_message(message_role::user, "u")); break;
        case 1: events.push_back(make_message(message_role::assistant, "a")); break;
        case 2: {
          std::string id = "c" + std::to_string(++calls);
          events.push_back(make_tool_call(id, "t", "{}"));
          open.push_back(id);
          break;
        }
        default:
          if (open.empty()) break;
          size_t k = rng() % open.size();
          events.push_back(make_tool_result(open[k], "t", "r", false));
          open.erase(open.begin() + static_cast<std::ptrdiff_t>(k));
      }
    }
    size_t b = summary_boundary(events, 1 + rng() % 4);
    size_t raw = rng() % (events.size() + 1);
    for (size_t boundary : {b, safe_boundary(events, raw)}) {
      INFO("round " << round << " boundary " << boundary);
      REQUIRE(boundary <= events.size());
      std::vector<event> tail(events.begin() + static_cast<std::ptrdiff_t>(boundary), events.end());
      std::vector<event> head(events.begin(), events.begin() + static_cast<std::ptrdiff_t>(boundary));
      for (const auto& r : tail) {
        if (r.type != event_type::tool_result) continue;
        for (const auto& c : head) CHECK_FALSE((c.type == event_type::tool_call && c.call_id == r.call_id));
      }
      // Summarized, the tail's results still pair.
      std::vector<event> summarized = events;
      apply_summary(&summarized, boundary, "s");
      CHECK(check_compacted(summarized).is_ok());
    }
    CHECK(safe_boundary(events, raw) <= raw);
  }
}

TEST_CASE("a summary replaces the head by one system message") {
  auto events = turns_log(3, 10);
  apply_summary(&events, 5, "the first turn");
  REQUIRE(events.size() == 11);
  CHECK(events[0].type == event_type::message);
  CHECK(events[0].role == message_role::system);
  CHECK(events[0].text == std::string(summary_prefix) + "the first turn");
  CHECK(events[1].text == "question 1");
}

TEST_CASE("compacted events round-trip through their stored form") {
  auto events = turns_log(2, 20);
  std::string json;
  REQUIRE(encode_compacted(events, &json).is_ok());
  std::vector<event> back;
  REQUIRE(decode_compacted(json, &back).is_ok());
  CHECK(back == events);
  CHECK_FALSE(decode_compacted("{}", &back).is_ok());
  CHECK_FALSE(decode_compacted(R"([{"seq":1}])", &back).is_ok());
}

TEST_CASE("the compaction event keeps counts and estimates, a v1 one decodes with zeros") {
  event e = make_compaction("trim-tool-results+summarize", 1, 40, "[]");
  e.seq = 41;
  e.original_events = 40;
  e.tokens_before = 9000;
  e.tokens_after = 300;
  e.prompt_seq = 1;
  std::string json;
  REQUIRE(encode_event(e, &json).is_ok());
  CHECK(json.find("\"v\":2") != std::string::npos);
  event back;
  REQUIRE(decode_event(json, &back).is_ok());
  CHECK(back == e);

  event v1;
  REQUIRE(decode_event(R"({"seq":3,"ts":0,"run":"","type":"compaction","payload":{"strategy":"s","from_seq":1,"to_seq":2,"events":[]}})", &v1).is_ok());
  CHECK(v1.original_events == 0);
  CHECK(v1.tokens_before == 0);
  CHECK(v1.prompt_seq == 0);
}

TEST_CASE("compaction input expands the previous compaction and drops the prompt") {
  std::vector<event> first = turns_log(1, 5);
  std::string json;
  REQUIRE(encode_compacted(first, &json).is_ok());
  std::vector<event> view{with_seq(make_system_prompt("p"), 1), with_seq(make_compaction("s", 1, 6, json), 7),
                          with_seq(make_message(message_role::user, "next"), 8)};
  std::vector<event> in;
  uint64_t prompt_seq = 0;
  REQUIRE(compaction_input(view, &in, &prompt_seq).is_ok());
  CHECK(prompt_seq == 1);
  REQUIRE(in.size() == first.size() + 1);
  CHECK(in.back().text == "next");
  CHECK(in.front() == first.front());
}

TEST_CASE("compact options are checked, naming the field") {
  compact_options o;
  CHECK(validate_compact_options(o).is_ok());
  o.stages = {"summarize", "nope"};
  status s = validate_compact_options(o);
  CHECK(s.field() == "stages");
  CHECK(s.message().find("unknown stage 'nope'") != std::string::npos);
  o.stages = {"drop-thinking"};
  o.keep_turns = 100000;
  CHECK(validate_compact_options(o).field() == "keep_turns");
  o.keep_turns = 2;
  o.tool_result_bytes_max = 3;
  CHECK(validate_compact_options(o).field() == "tool_result_bytes_max");
  CHECK(strategy_name({"trim-tool-results", "summarize"}) == "trim-tool-results+summarize");
}

TEST_CASE("compacted events with an orphan result are refused") {
  std::vector<event> orphan{make_message(message_role::user, "q"), make_tool_result("gone", "t", "r", false)};
  status s = check_compacted(orphan);
  CHECK_FALSE(s.is_ok());
  CHECK(s.message().find("gone") != std::string::npos);
}
