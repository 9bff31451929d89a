// Whatever an engine or a tool hands back, a run ends and its thread stays
// readable: text is made valid and cut, bad arguments become error results, and
// a commit the journal refuses ends the run as failed — never a run left open,
// never a second run on top of it.
#include <catch2/catch.hpp>

#include "runtime/model/text.hpp"
#include "tests/support/det_runtime.hpp"

using namespace skein;
using namespace skein::test;
using namespace std::chrono_literals;

namespace {

// An engine whose steps the test writes as a function of the request.
engine_factory steps_engine(std::function<engine_step(const engine_request&)> fn) {
  return [fn](std::string_view, timer_service&, std::shared_ptr<engine>* out) -> status {
    struct impl : engine {
      std::function<engine_step(const engine_request&)> fn;
      std::unique_ptr<call_handle> start(engine_request r, engine_callbacks cb) override {
        engine_reply reply;
        reply.step = fn(r);
        cb.on_done(std::move(reply));
        return nullptr;
      }
    };
    auto e = std::make_shared<impl>();
    e->fn = fn;
    *out = e;
    return status::ok();
  };
}

engine_step final_text(std::string text, std::string thinking = "") {
  engine_step s;
  s.text = std::move(text);
  s.thinking = std::move(thinking);
  return s;
}

engine_step calls(std::vector<requested_tool_call> c) {
  engine_step s;
  s.tool_calls = std::move(c);
  return s;
}

std::string nested_arguments(size_t depth) {
  std::string s;
  for (size_t i = 0; i < depth; ++i) s += i == 0 ? "{\"a\":" : "[";
  s += "1";
  for (size_t i = depth; i-- > 0;) s += i == 0 ? "}" : "]";
  return s;
}

// Every run of the log opens with thread.start and closes with thread.stop
// before the next one starts; the number of runs.
size_t closed_runs(const std::vector<event>& log) {
  size_t runs = 0;
  bool open = false;
  for (const auto& e : log) {
    if (e.type != event_type::signal) continue;
    if (e.name == "thread.start") {
      REQUIRE_FALSE(open);  // a run started on top of an open one
      open = true;
      ++runs;
    } else if (e.name == "thread.stop") {
      REQUIRE(open);
      open = false;
    }
  }
  CHECK_FALSE(open);
  return runs;
}

run_result one_run(det_runtime& rt, const std::string& thread, const std::string& text) {
  rt.send(thread, text);
  rt.run();
  return only_result(rt);
}

// Agent "a" on the test's "raw" engine, with `tools`.
agent_config raw_agent(std::vector<std::string> tools) {
  auto a = scripted_agent("a", "{}", std::move(tools));
  a.engine = "raw";
  return a;
}

}  // namespace

TEST_CASE("engine text and tool output are stored valid and cut past output_bytes_max") {
  const std::string bad = "ok \xff\xfe half \xe2\x82 end";
  det_runtime rt{{}, [&](core_config& cc, log_options&) {
    cc.reg.engines["raw"] = steps_engine([&](const engine_request& r) {
      if (r.turn == 1) {
        engine_step s = calls({{"c1", "flood", "{}"}, {"c2", "flood", "{}"}});
        s.thinking = bad;
        return s;
      }
      return final_text(bad + std::string(10000, 'x'));
    });
    cc.reg.tools["flood"] = make_function_tool({"flood", "too much", "{}"}, [](const tool_invocation&) {
      std::string out(5 << 20, 'y');  // 5 MiB: past json_bytes_max once in an event
      out[100] = '\xc3';              // a torn two-byte sequence
      for (size_t i = 200; i < 300; ++i) out[i] = '\x01';  // escapes to six bytes each
      return tool_output{out, false};
    });
  }};
  auto a = raw_agent({"flood"});
  a.budgets.output_bytes_max = 4096;
  auto t = rt.start_run(a, "go");
  auto r = only_result(rt);
  CHECK(r.outcome == run_outcome::completed);
  CHECK(valid_utf8(r.text));
  CHECK_THAT(r.text, Catch::Contains("\xEF\xBF\xBD"));
  CHECK_THAT(r.text, Catch::Contains("output_bytes_max"));

  auto log = rt.events(t.id);  // readable: every event within the reader's limits
  size_t results = 0;
  for (const auto& e : log) {
    CHECK(valid_utf8(e.text));
    if (e.type == event_type::tool_result) {
      ++results;
      CHECK(json_escaped_size(e.text) <= 4096);
      bool marked = e.text.find("cut at") != std::string::npos && e.text.find("of 5242880 bytes") != std::string::npos;
      CHECK(marked);
    }
    if (e.type == event_type::thinking) CHECK(e.text == "ok \xEF\xBF\xBD\xEF\xBF\xBD half \xEF\xBF\xBD end");
  }
  CHECK(results == 2);
  CHECK(closed_runs(log) == 1);
  CHECK(rt.read_manifest(t.id).status == thread_status::open);
}

TEST_CASE("a 5 MiB tool result under the default budget leaves the thread readable") {
  det_runtime rt{{}, [](core_config& cc, log_options&) {
    cc.reg.tools["big"] = make_function_tool({"big", "5 MiB", "{}"}, [](const tool_invocation&) {
      return tool_output{std::string(5 << 20, 'z'), false};
    });
  }};
  rt.add_agent(scripted_agent(
      "a", R"({"rules":[{"match":"go","turn":1,"tool_calls":[{"name":"big","id":"b1"}]}],"default":{"reply":"done"}})",
      {"big"}));
  auto t = rt.add_thread("a");
  auto r = one_run(rt, t.id, "go");
  CHECK(r.outcome == run_outcome::completed);
  auto log = rt.events(t.id);
  bool cut = false;
  for (const auto& e : log)
    if (e.type == event_type::tool_result) cut = e.text.size() <= (1u << 20) && e.text.find("output_bytes_max") != std::string::npos;
  CHECK(cut);
}

TEST_CASE("tool-call arguments that are not JSON or nest too deep become error results") {
  det_runtime rt{{}, [](core_config& cc, log_options&) {
    cc.reg.engines["raw"] = steps_engine([](const engine_request& r) {
      if (r.turn == 1)
        return calls({{"c1", "echo", "not json at all"},
                      {"c2", "echo", nested_arguments(63)},  // with the envelope, past json_depth_max
                      {"c3", "echo", "[1,2]"},
                      {"c4", "echo", R"({"fine":true})"}});
      return final_text("done");
    });
  }};
  auto a = raw_agent({"echo"});
  auto t = rt.start_run(a, "go");
  auto r = only_result(rt);
  CHECK(r.outcome == run_outcome::completed);
  std::map<std::string, event> results, calls_seen;
  for (const auto& e : rt.events(t.id)) {
    if (e.type == event_type::tool_result) results[e.call_id] = e;
    if (e.type == event_type::tool_call) calls_seen[e.call_id] = e;
  }
  REQUIRE(results.size() == 4);
  for (const char* id : {"c1", "c2", "c3"}) {
    CHECK(calls_seen[id].json == "{}");
    CHECK(results[id].is_error);
    CHECK_THAT(results[id].text, Catch::Contains("arguments refused"));
  }
  CHECK_THAT(results["c2"].text, Catch::Contains("json_depth_max"));
  CHECK_FALSE(results["c4"].is_error);
  CHECK(results["c4"].text == R"(echo {"fine":true})");
  // Arguments exactly as deep as a reader takes back (62 + the envelope's 2 is
  // json_depth_max) are stored as they are; one level more is refused.
  std::string ok;
  CHECK(storable_arguments(nested_arguments(62), json_limits{}, &ok).is_ok());
  CHECK_FALSE(storable_arguments(nested_arguments(63), json_limits{}, &ok).is_ok());
}

TEST_CASE("more tool calls than tool_calls_max in one step fail the run") {
  det_runtime rt{{}, [](core_config& cc, log_options&) {
    cc.reg.engines["raw"] = steps_engine([](const engine_request&) {
      std::vector<requested_tool_call> c(5, requested_tool_call{"", "echo", "{}"});
      return calls(c);
    });
  }};
  auto a = raw_agent({"echo"});
  a.budgets.tool_calls_max = 4;
  auto t = rt.start_run(a, "go");
  auto r = only_result(rt);
  CHECK(r.outcome == run_outcome::failed);
  CHECK_THAT(r.error, Catch::Contains("tool_calls_max (4)"));
  CHECK(closed_runs(rt.events(t.id)) == 1);
}

TEST_CASE("a refused commit ends the run as failed, the next input runs alone") {
  // tick_events_max 3: a step of thinking + text + 2 calls (4 events) is refused.
  det_runtime rt{{}, [](core_config& cc, log_options& lo) {
    lo.tick_events_max = 3;
    cc.reg.engines["raw"] = steps_engine([](const engine_request& r) {
      std::string input = r.conversation.back().text;
      if (input == "many" && r.turn == 1) {
        engine_step s = calls({{"c1", "echo", "{}"}, {"c2", "echo", "{}"}});
        s.thinking = "hmm";
        s.text = "calling";
        return s;
      }
      if (input == "think") return final_text("answer", "long thoughts");  // closing of 4 events
      return final_text("plain");
    });
  }};
  auto a = scripted_agent("a", "{}", {"echo"});
  a.system_prompt.clear();
  a.engine = "raw";
  rt.add_agent(a);
  auto t = rt.add_thread("a");

  auto r = one_run(rt, t.id, "many");
  CHECK(r.outcome == run_outcome::failed);
  CHECK_THAT(r.error, Catch::Contains("commit refused") && Catch::Contains("tick_events_max (3)"));
  CHECK(rt.read_manifest(t.id).status == thread_status::open);
  auto log = rt.events(t.id);
  for (const auto& e : log) CHECK(e.type != event_type::tool_call);  // the refused step left nothing
  CHECK(closed_runs(log) == 1);

  // The closing commit itself refused: closed again with short events only.
  r = one_run(rt, t.id, "think");
  CHECK(r.outcome == run_outcome::failed);
  CHECK_THAT(r.error, Catch::Contains("tick_events_max"));
  CHECK(rt.read_manifest(t.id).status == thread_status::open);

  r = one_run(rt, t.id, "again");
  CHECK(r.outcome == run_outcome::completed);
  CHECK(r.text == "plain");
  CHECK(closed_runs(rt.events(t.id)) == 3);
}

TEST_CASE("a run whose closing cannot be written is repaired before the next run starts") {
  // tick_events_max 4: cancelling during two slow calls needs 2 results + message,
  // result and stop = 5 events: refused twice. The actor leaves; the next input
  // activates it again, the open run is closed from the log (4 events), then it runs.
  det_runtime rt{{}, [](core_config&, log_options& lo) { lo.tick_events_max = 4; }};
  auto a = scripted_agent(
      "a", R"({"rules":[{"match":"slow","turn":1,"tool_calls":[{"name":"slow","id":"s1"},{"name":"slow","id":"s2"}]}],"default":{"reply":"fine"}})",
      {"slow"});
  a.system_prompt.clear();
  rt.add_agent(a);
  auto t = rt.add_thread("a");
  rt.send(t.id, "slow");
  rt.run();
  REQUIRE(rt.slow->calls().size() == 2);
  rt.cancel(t.id);
  rt.run();
  auto replies = rt.drain();
  REQUIRE_FALSE(replies.empty());
  CHECK(rt.read_manifest(t.id).status == thread_status::running);  // the closing never landed

  auto r = one_run(rt, t.id, "hello");
  CHECK(r.outcome == run_outcome::completed);
  auto log = rt.events(t.id);
  CHECK(closed_runs(log) == 2);
  bool interrupted = false;
  for (const auto& e : log) interrupted |= e.type == event_type::signal && e.name == "thread.interrupted";
  CHECK(interrupted);
}

TEST_CASE("to_valid_utf8 replaces each maximal bad subpart with one U+FFFD") {
  const std::string r = "\xEF\xBF\xBD";
  CHECK(to_valid_utf8("plain") == "plain");
  CHECK(to_valid_utf8("\x80") == r);
  CHECK(to_valid_utf8("a\xe2\x82z") == "a" + r + "z");        // a torn 3-byte sequence: one
  CHECK(to_valid_utf8("\xed\xa0\x80") == r + r + r);           // a surrogate: its bytes one by one
  CHECK(to_valid_utf8("\xf4\x90\x80\x80") == r + r + r + r);   // past U+10FFFF
  CHECK(to_valid_utf8("\xc0\xaf") == r + r);                   // overlong
  CHECK(to_valid_utf8("\xf0\x9f\x98") == r);                   // a torn emoji
  CHECK(to_valid_utf8("\xf0\x9f\x98\x80") == "\xf0\x9f\x98\x80");
  std::string cut = std::string(100, 'a') + "\xe2\x82\xac";
  CHECK(make_storable_text(&cut, 90, "output_bytes_max"));
  CHECK(valid_utf8(cut));
  CHECK(cut.size() <= 90);
}

TEST_CASE("a scripted rule's regex over a 1 MiB input does not take the runtime down") {
  det_runtime rt;
  rt.add_agent(scripted_agent("a", R"({"rules":[{"match":".*z$","reply":"ends in z"}],"default":{"reply":"other"}})"));
  auto t = rt.add_thread("a");
  auto r = one_run(rt, t.id, std::string(input_bytes_max - 1, 'a') + "z");
  CHECK(r.outcome == run_outcome::completed);
  CHECK(r.text == "other");  // the rule sees the first scripted_match_bytes_max bytes only
  r = one_run(rt, t.id, "short z");
  CHECK(r.text == "ends in z");
}
