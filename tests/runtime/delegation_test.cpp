// Delegation between agents (the built-in ask_agent tool) through the embedded
// runtime, on a real RocksDB: results flowing back up a chain, the permission
// rules, many children of one step, cancel propagation, failures and timeouts,
// cycles, the per-run tool context, and a crash mid-delegation.
#include <catch2/catch.hpp>
#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#include "tests/support/child_process.hpp"
#include "tests/support/runtime_fixture.hpp"

using namespace skein;
using namespace skein::test;
using namespace std::chrono_literals;

namespace {

// Rules for an agent that asks `target` on its first step and then answers
// `prefix` followed by what it was told.
std::string asker_rules(const std::string& target, const std::string& question, const std::string& prefix) {
  return R"({"rules": [{"turn": 1, "tool_calls": [{"name": "ask_agent", "id": "ask1", "arguments": {"agent": ")" +
         target + R"(", "question": ")" + question + R"("}}]}], "default": {"reply": ")" + prefix +
         R"({tool_result}"}})";
}

void make_agent(runtime_fixture& f, const std::string& id, const std::string& rules,
                std::vector<std::string> delegates = {}, uint32_t depth_max = 3, bool self_allowed = false,
                uint64_t tool_timeout_ms = 60000, std::vector<std::string> tools = {}) {
  agent_config a;
  a.id = id;
  a.engine_config = rules;
  a.delegation.agents = std::move(delegates);
  a.delegation.depth_max = depth_max;
  a.delegation.self_allowed = self_allowed;
  a.budgets.tool_timeout_ms = tool_timeout_ms;
  a.tools = std::move(tools);
  auto s = f.rt->create_agent(a);
  INFO(s.to_string());
  REQUIRE(s.is_ok());
}

manifest get(runtime_fixture& f, const std::string& id) {
  manifest m;
  auto s = f.rt->get_thread(id, &m);
  INFO(id << ": " << s.to_string());
  REQUIRE(s.is_ok());
  return m;
}

std::vector<event> of_type(const std::vector<event>& log, event_type type) {
  std::vector<event> out;
  for (const auto& e : log)
    if (e.type == type) out.push_back(e);
  return out;
}

const event* signal_named(const std::vector<event>& log, const std::string& name) {
  for (const auto& e : log)
    if (e.type == event_type::signal && e.name == name) return &e;
  return nullptr;
}

// A delegation that could not start, as the asking thread saw it.
struct failed_dispatch {
  std::string thread_id;    // the asking thread
  std::string error_text;   // its one tool result, an error
  std::string signal_json;  // its dispatch.failed signal
};

// Runs "go" on a new thread of agent "a": the run completes with one tool
// result, an error, and a dispatch.failed signal.
failed_dispatch ask_and_fail(runtime_fixture& f) {
  failed_dispatch d;
  d.thread_id = f.thread("a").id;
  auto r = f.run(d.thread_id, "go");
  CHECK(r.outcome == run_outcome::completed);
  auto log = f.events(d.thread_id);
  auto results = of_type(log, event_type::tool_result);
  REQUIRE(results.size() == 1);
  CHECK(results[0].is_error);
  d.error_text = results[0].text;
  auto failed = signal_named(log, "dispatch.failed");
  REQUIRE(failed != nullptr);
  d.signal_json = failed->json;
  return d;
}

// The thread's last run's outcome, from its thread.stop ("" if none).
std::string last_outcome(runtime_fixture& f, const std::string& id) {
  std::vector<event> log;
  if (!f.rt->read(id, history_view::complete, 1, 0, &log).is_ok()) return "";
  for (auto it = log.rbegin(); it != log.rend(); ++it)
    if (it->type == event_type::signal && it->name == "thread.stop") {
      for (const char* o : {"completed", "failed", "cancelled"})
        if (it->json.find(std::string("\"outcome\":\"") + o + "\"") != std::string::npos) return o;
    }
  return "";
}

bool running(runtime_fixture& f, const std::string& id) {
  manifest m;
  return f.rt->get_thread(id, &m).is_ok() && m.status == thread_status::running;
}

}  // namespace

TEST_CASE("delegation three deep: a asks b asks c, c's text comes back to a") {
  runtime_fixture f{without_effects()};
  make_agent(f, "a", asker_rules("b", "what does c say?", "a heard: "), {"b"});
  make_agent(f, "b", asker_rules("c", "what do you say?", "b heard: "), {"c"});
  make_agent(f, "c", R"({"default": {"reply": "c says 42"}})");
  auto root = f.thread("a");
  auto r = f.run(root.id, "go");
  CHECK(r.outcome == run_outcome::completed);
  CHECK(r.text == "a heard: b heard: c says 42");

  auto child = get(f, root.id + ".1");
  CHECK(child.agent_id == "b");
  CHECK(child.parent == parent_kind::thread);
  CHECK(child.parent_id == root.id);
  CHECK(child.depth == 1);
  CHECK(child.status == thread_status::completed);
  auto grandchild = get(f, root.id + ".1.1");
  CHECK(grandchild.agent_id == "c");
  CHECK(grandchild.parent_id == child.id);
  CHECK(grandchild.depth == 2);
  CHECK(get(f, root.id).depth == 0);
  CHECK(get(f, root.id).children_count == 1);

  // The child's input is the question, sent by an agent.
  auto clog = f.events(child.id);
  CHECK(check_runs(clog) == 1);
  auto start = signal_named(clog, "thread.start");
  REQUIRE(start != nullptr);
  CHECK_THAT(start->json, Catch::Contains(R"("source":"agent")"));
  auto msgs = of_type(clog, event_type::message);
  REQUIRE(!msgs.empty());
  CHECK(msgs.front().text == "what does c say?");

  auto results = of_type(f.events(root.id), event_type::tool_result);
  REQUIRE(results.size() == 1);
  CHECK(results[0].name == "ask_agent");
  CHECK_FALSE(results[0].is_error);
  CHECK(results[0].text == "b heard: c says 42");

  // The children are listed under their parent.
  thread_query q;
  q.index = thread_query::by::parent;
  q.value = root.id;
  thread_page page;
  REQUIRE(f.rt->list_threads(q, &page).is_ok());
  REQUIRE(page.threads.size() == 1);
  CHECK(page.threads[0].id == child.id);
}

namespace {

// An engine that records the tools each request offers, and answers "ok".
struct recorded_tools {
  std::mutex mu;
  std::map<std::string, std::vector<tool_spec>> by_thread;
};

class recording_engine : public engine {
 public:
  explicit recording_engine(std::shared_ptr<recorded_tools> seen) : seen_(std::move(seen)) {}
  std::unique_ptr<call_handle> start(engine_request req, engine_callbacks cb) override {
    {
      std::lock_guard<std::mutex> lock{seen_->mu};
      seen_->by_thread[req.thread_id] = req.tools;
    }
    engine_reply r;
    r.step.text = "ok";
    cb.on_done(std::move(r));
    return nullptr;
  }

 private:
  std::shared_ptr<recorded_tools> seen_;
};

}  // namespace

TEST_CASE("delegation: the engine is offered ask_agent, with its schema, only by a delegating agent") {
  auto seen = std::make_shared<recorded_tools>();
  runtime_options o = without_effects();
  o.engines["recording"] = [seen](std::string_view, timer_service&, std::shared_ptr<engine>* out) {
    *out = std::make_shared<recording_engine>(seen);
    return status::ok();
  };
  runtime_fixture f{o};
  for (const char* id : {"plain", "boss"}) {
    agent_config a;
    a.id = id;
    a.engine = "recording";
    if (std::string(id) == "boss") a.delegation.agents = {"plain"};
    REQUIRE(f.rt->create_agent(a).is_ok());
  }
  auto plain = f.thread("plain");
  auto boss = f.thread("boss");
  f.run(plain.id, "hi");
  f.run(boss.id, "hi");
  std::lock_guard<std::mutex> lock{seen->mu};
  CHECK(seen->by_thread[plain.id].empty());
  REQUIRE(seen->by_thread[boss.id].size() == 1);
  const tool_spec& spec = seen->by_thread[boss.id][0];
  CHECK(spec.name == "ask_agent");
  CHECK_THAT(spec.description, Catch::Contains("plain"));
  CHECK_THAT(spec.schema_json, Catch::Contains(R"("required":["agent","question"])"));
}

TEST_CASE("delegation config: validated field by field, ask_agent reserved, stored as given") {
  runtime_fixture f{without_effects()};
  make_agent(f, "b", R"({"default": {"reply": "ok"}})");
  agent_config a;
  a.id = "a";
  a.tools = {"ask_agent"};
  auto s = f.rt->create_agent(a);
  CHECK(s.code() == errc::invalid_input);
  CHECK_THAT(s.message(), Catch::Contains("agent.tools") && Catch::Contains("ask_agent"));
  a.tools.clear();
  a.delegation.depth_max = 99;
  s = f.rt->create_agent(a);
  CHECK(s.code() == errc::invalid_input);
  CHECK_THAT(s.message(), Catch::Contains("agent.delegation.depth_max"));
  a.delegation.depth_max = 3;
  a.delegation.agents = {"b", "b"};
  s = f.rt->create_agent(a);
  CHECK_THAT(s.message(), Catch::Contains("agent.delegation.agents"));
  a.delegation.agents = {"b"};
  REQUIRE(f.rt->create_agent(a).is_ok());
  agent_config back;
  REQUIRE(f.rt->get_agent("a", &back).is_ok());
  CHECK(back.delegation == a.delegation);
}

TEST_CASE("delegation: past depth_max the call is refused with permission.denied in the same tick") {
  runtime_fixture f{without_effects()};
  // a (depth 0) may create depth 1; b at depth 1 may create at most depth 1.
  make_agent(f, "a", asker_rules("b", "ask c", "a heard: "), {"b"}, 1);
  make_agent(f, "b", asker_rules("c", "hello", "b heard: "), {"c"}, 1);
  make_agent(f, "c", R"({"default": {"reply": "never asked"}})");
  auto root = f.thread("a");
  auto r = f.run(root.id, "go");
  CHECK(r.outcome == run_outcome::completed);
  CHECK_THAT(r.text, Catch::Contains("permission denied") && Catch::Contains("depth_max"));

  auto clog = f.events(root.id + ".1");
  size_t i = 0;
  while (i < clog.size() && clog[i].type != event_type::tool_result) ++i;
  REQUIRE(i + 1 < clog.size());
  CHECK(clog[i].is_error);
  CHECK_THAT(clog[i].text, Catch::Contains("agent.delegation.depth_max (1)"));
  // The signal is the next event, with the same time: written in the result's tick.
  CHECK(clog[i + 1].type == event_type::signal);
  CHECK(clog[i + 1].name == "permission.denied");
  CHECK(clog[i + 1].ts_ms == clog[i].ts_ms);
  CHECK_THAT(clog[i + 1].json, Catch::Contains(R"("rule":"delegation.depth_max")") &&
                                   Catch::Contains(R"("target":"c")"));
  manifest none;
  CHECK(f.rt->get_thread(root.id + ".1.1", &none).code() == errc::not_found);
  CHECK(get(f, root.id + ".1").children_count == 0);
}

TEST_CASE("delegation: a target not in the list, and the agent itself, are refused") {
  runtime_fixture f{without_effects()};
  make_agent(f, "b", R"({"default": {"reply": "ok"}})");
  make_agent(f, "x", R"({"default": {"reply": "ok"}})");
  make_agent(f, "a", asker_rules("x", "hi", "a: "), {"b"});
  make_agent(f, "s", asker_rules("s", "hi", "s: "), {"s"});
  auto t = f.thread("a");
  auto r = f.run(t.id, "go");
  CHECK_THAT(r.text, Catch::Contains("not in agent.delegation.agents"));
  auto log = f.events(t.id);
  auto denied = signal_named(log, "permission.denied");
  REQUIRE(denied != nullptr);
  CHECK_THAT(denied->json, Catch::Contains(R"("rule":"delegation.agents")") && Catch::Contains(R"("target":"x")"));

  auto self = f.thread("s");
  r = f.run(self.id, "go");
  CHECK_THAT(r.text, Catch::Contains("self_allowed is false"));
  log = f.events(self.id);
  denied = signal_named(log, "permission.denied");
  REQUIRE(denied != nullptr);
  CHECK_THAT(denied->json, Catch::Contains(R"("rule":"delegation.self_allowed")"));
  CHECK(get(f, self.id).children_count == 0);
}

TEST_CASE("delegation: a self-asking agent recurses until its depth cap, then the chain unwinds") {
  runtime_fixture f{without_effects()};
  make_agent(f, "s", asker_rules("s", "deeper", "up: "), {"s"}, 3, true);
  auto t = f.thread("s");
  auto r = f.run(t.id, "go");
  CHECK(r.outcome == run_outcome::completed);
  CHECK_THAT(r.text, Catch::StartsWith("up: up: up: up: (error: permission denied"));
  CHECK(get(f, t.id + ".1.1.1").depth == 3);
  manifest none;
  CHECK(f.rt->get_thread(t.id + ".1.1.1.1", &none).code() == errc::not_found);
}

TEST_CASE("delegation: 100 ask_agent calls in one step give 100 distinct children that all run") {
  runtime_fixture f{without_effects()};
  std::string calls;
  for (int i = 1; i <= 100; ++i) {
    if (i > 1) calls += ",";
    calls += R"({"name": "ask_agent", "id": "c)" + std::to_string(i) +
             R"(", "arguments": {"agent": "b", "question": "q)" + std::to_string(i) + R"("}})";
  }
  make_agent(f, "a", R"({"rules": [{"turn": 1, "tool_calls": [)" + calls + R"(]}], "default": {"reply": "done"}})",
             {"b"});
  make_agent(f, "b", R"({"default": {"reply": "answer"}})");
  auto root = f.thread("a");
  auto r = f.run(root.id, "go");
  CHECK(r.outcome == run_outcome::completed);
  auto results = of_type(f.events(root.id), event_type::tool_result);
  REQUIRE(results.size() == 100);
  for (const auto& e : results) {
    INFO(e.call_id << ": " << e.text);
    CHECK_FALSE(e.is_error);
    CHECK(e.text == "answer");
  }
  std::set<std::string> ids;
  thread_query q;
  q.index = thread_query::by::parent;
  q.value = root.id;
  q.limit = 1000;
  thread_page page;
  REQUIRE(f.rt->list_threads(q, &page).is_ok());
  for (const auto& m : page.threads) {
    ids.insert(m.id);
    CHECK(m.status == thread_status::completed);
  }
  std::set<std::string> expected;
  for (int i = 1; i <= 100; ++i) expected.insert(root.id + "." + std::to_string(i));
  CHECK(ids == expected);
  CHECK(get(f, root.id).children_count == 100);
  // Each child ran its own question once.
  for (int i : {1, 50, 100}) {
    auto log = f.events(root.id + "." + std::to_string(i));
    CHECK(check_runs(log) == 1);
  }
}

TEST_CASE("delegation: cancelling the root run cancels its child and grandchild") {
  runtime_fixture f{without_effects()};
  make_agent(f, "a", asker_rules("b", "q", "a: "), {"b"});
  make_agent(f, "b", asker_rules("c", "q", "b: "), {"c"});
  make_agent(f, "c", R"({"default": {"stall": true}})");
  auto root = f.thread("a");
  run_input in;
  in.text = "go";
  auto handle = f.rt->send(root.id, in);
  std::string grandchild = root.id + ".1.1";
  REQUIRE(runtime_fixture::eventually([&] { return running(f, grandchild); }));
  bool cancelled = false;
  REQUIRE(f.rt->cancel(root.id, &cancelled).is_ok());
  CHECK(cancelled);
  run_result r;
  REQUIRE(handle.wait(&r, 30s).is_ok());
  CHECK(r.outcome == run_outcome::cancelled);
  CHECK(runtime_fixture::eventually([&] { return last_outcome(f, root.id + ".1") == "cancelled"; }));
  CHECK(runtime_fixture::eventually([&] { return last_outcome(f, grandchild) == "cancelled"; }));
  CHECK(get(f, root.id + ".1").status == thread_status::cancelled);
  CHECK(get(f, grandchild).status == thread_status::cancelled);
}

TEST_CASE("delegation: a run timeout and an interrupting input cancel the children too") {
  runtime_fixture f{without_effects()};
  agent_config a;
  a.id = "a";
  a.engine_config = asker_rules("b", "q", "a: ");
  a.delegation.agents = {"b"};
  const bool interrupt = GENERATE(false, true);
  INFO((interrupt ? "interrupt policy" : "run timeout"));
  if (interrupt) a.policy = mid_run_policy::interrupt;
  else a.budgets.run_time_ms_max = 300;
  REQUIRE(f.rt->create_agent(a).is_ok());
  make_agent(f, "b", R"({"default": {"stall": true}})");
  auto t = f.thread("a");
  run_input in;
  in.text = "go";
  auto first = f.rt->send(t.id, in);
  REQUIRE(runtime_fixture::eventually([&] { return running(f, t.id + ".1"); }));
  if (interrupt) {
    in.text = "no tools this time";  // turn 1 asks again: a second child, which stalls too
    auto second = f.rt->send(t.id, in);
    run_result r;
    REQUIRE(first.wait(&r, 30s).is_ok());
    CHECK(r.outcome == run_outcome::cancelled);
    REQUIRE(runtime_fixture::eventually([&] { return running(f, t.id + ".2"); }));
    REQUIRE(f.rt->cancel(t.id).is_ok());
    REQUIRE(second.wait(&r, 30s).is_ok());
  } else {
    run_result r;
    REQUIRE(first.wait(&r, 30s).is_ok());
    CHECK(r.outcome == run_outcome::failed);
    CHECK_THAT(r.error, Catch::Contains("run_time_ms_max"));
  }
  CHECK(runtime_fixture::eventually([&] { return last_outcome(f, t.id + ".1") == "cancelled"; }));
}

TEST_CASE("delegation: a child's failure and a tool timeout come back as error results naming the child") {
  runtime_fixture f{without_effects()};
  make_agent(f, "a", asker_rules("b", "q", "a: "), {"b"});
  make_agent(f, "b", R"({"default": {"error": "boom"}})");
  make_agent(f, "slow", asker_rules("z", "q", "slow: "), {"z"}, 3, false, 300);
  make_agent(f, "z", R"({"default": {"stall": true}})");
  auto t = f.thread("a");
  f.run(t.id, "go");
  auto results = of_type(f.events(t.id), event_type::tool_result);
  REQUIRE(results.size() == 1);
  CHECK(results[0].is_error);
  CHECK_THAT(results[0].text, Catch::Contains("child thread " + t.id + ".1 failed") && Catch::Contains("boom"));

  auto s = f.thread("slow");
  f.run(s.id, "go");
  results = of_type(f.events(s.id), event_type::tool_result);
  REQUIRE(results.size() == 1);
  CHECK(results[0].is_error);
  CHECK_THAT(results[0].text, Catch::Contains("tool_timeout_ms") && Catch::Contains(s.id + ".1"));
  // The timeout cancelled the child's run.
  CHECK(runtime_fixture::eventually([&] { return last_outcome(f, s.id + ".1") == "cancelled"; }));
}

TEST_CASE("delegation: an unknown target agent records dispatch.failed on the asking thread") {
  runtime_fixture f{without_effects()};
  make_agent(f, "a", asker_rules("ghost", "q", "a: "), {"ghost"});
  auto d = ask_and_fail(f);
  CHECK_THAT(d.error_text, Catch::Contains("could not start") && Catch::Contains("ghost"));
  CHECK_THAT(d.signal_json, Catch::Contains(R"("target":"ghost")") && Catch::Contains("does not exist"));
}

TEST_CASE("delegation: a child that takes no question (budget spent) records dispatch.failed") {
  runtime_fixture f{without_effects()};
  make_agent(f, "a", asker_rules("b", "q", "a: "), {"b"});
  agent_config b;
  b.id = "b";
  b.engine_config = R"({"default": {"reply": "spent", "usage": {"input_tokens": 5, "output_tokens": 5}}})";
  b.budgets.tokens_per_day_max = 10;
  REQUIRE(f.rt->create_agent(b).is_ok());
  f.run(f.thread("b").id, "spend it all");
  auto d = ask_and_fail(f);
  CHECK_THAT(d.error_text, Catch::Contains(d.thread_id + ".1") && Catch::Contains("tokens_per_day_max"));
  CHECK_THAT(d.signal_json,
             Catch::Contains(R"("target":"b")") && Catch::Contains(R"("child_id":")" + d.thread_id + ".1\""));
  CHECK(check_runs(f.events(d.thread_id + ".1")) == 0);  // the child never ran
}

TEST_CASE("delegation: a child asking its parent's agent does not deadlock") {
  runtime_fixture f{without_effects()};
  // a asks b; b asks a back; that a answers at once. Each ask is a new thread,
  // so nobody waits behind the asker's own run.
  make_agent(f, "a", R"({"rules": [{"match": "^go$", "turn": 1, "tool_calls": [{"name": "ask_agent", "id": "k",
      "arguments": {"agent": "b", "question": "ask a"}}]}], "default": {"reply": "a: {tool_result}"}})",
             {"b"});
  make_agent(f, "b", asker_rules("a", "hello a", "b: "), {"a"});
  auto t = f.thread("a");
  run_input in;
  in.text = "go";
  run_result r;
  REQUIRE(f.rt->send(t.id, in).wait(&r, 30s).is_ok());
  CHECK(r.outcome == run_outcome::completed);
  CHECK(r.text == "a: b: a: ");  // the innermost a had no tool result to quote
  CHECK(get(f, t.id + ".1.1").agent_id == "a");
}

namespace {

// Records the context of every call and holds it until cancelled.
class probe_tool : public tool {
 public:
  struct seen {
    tool_invocation inv;
    std::shared_ptr<std::atomic<bool>> cancelled_by_callback;
  };
  const tool_spec& spec() const override { return spec_; }
  std::unique_ptr<call_handle> invoke(tool_invocation inv, std::function<void(tool_output)>) override {
    auto flag = std::make_shared<std::atomic<bool>>(false);
    if (inv.cancel) inv.cancel->on_cancel([flag] { flag->store(true); });
    std::lock_guard<std::mutex> lock{mu_};
    calls_.push_back({std::move(inv), flag});
    return nullptr;  // answers never: the run cancels it or times it out
  }
  std::vector<seen> calls() {
    std::lock_guard<std::mutex> lock{mu_};
    return calls_;
  }

 private:
  tool_spec spec_{"probe", "records its context", "{}"};
  std::mutex mu_;
  std::vector<seen> calls_;
};

}  // namespace

TEST_CASE("tool context: thread, run, agent, task, depth and a cancellation token") {
  auto probe = std::make_shared<probe_tool>();
  runtime_options o = without_effects();
  o.tools.push_back(probe);
  runtime_fixture f{o};
  const std::string probe_rules =
      R"({"rules": [{"turn": 1, "tool_calls": [{"name": "probe", "id": "p1"}]}], "default": {"reply": "ok"}})";
  make_agent(f, "a", asker_rules("b", "probe it", "a: "), {"b"});
  make_agent(f, "b", probe_rules, {}, 3, false, 300, {"probe"});

  SECTION("in a delegated child, cancelled by the tool timeout") {
    manifest root = f.task_thread("a", "task_7");
    f.run(root.id, "go");
    auto calls = probe->calls();
    REQUIRE(calls.size() == 1);
    const auto& inv = calls[0].inv;
    CHECK(inv.thread_id == root.id + ".1");
    CHECK(inv.agent_id == "b");
    CHECK(inv.depth == 1);
    CHECK(inv.call_id == "p1");
    CHECK(inv.task_id.empty());  // the child is not bound to the root's task
    CHECK_FALSE(inv.run_id.empty());
    REQUIRE(inv.cancel != nullptr);
    CHECK(inv.cancel->cancelled());
    CHECK(calls[0].cancelled_by_callback->load());
  }
  SECTION("in a root with a task, cancelled by a cancel of the run") {
    manifest t = f.task_thread("b", "task_7");
    run_input in;
    in.text = "go";
    auto handle = f.rt->send(t.id, in);
    REQUIRE(runtime_fixture::eventually([&] { return probe->calls().size() == 1; }));
    auto inv = probe->calls()[0].inv;
    CHECK(inv.thread_id == t.id);
    CHECK(inv.task_id == "task_7");
    CHECK(inv.depth == 0);
    CHECK(inv.run_id == handle.run_id());
    REQUIRE(inv.cancel != nullptr);
    CHECK_FALSE(inv.cancel->cancelled());
    REQUIRE(f.rt->cancel(t.id).is_ok());
    run_result r;
    REQUIRE(handle.wait(&r, 30s).is_ok());
    CHECK(r.outcome == run_outcome::cancelled);
    CHECK(inv.cancel->cancelled());
    CHECK(probe->calls()[0].cancelled_by_callback->load());
  }
}

TEST_CASE("delegation: a crash mid-delegation is repaired at open on both sides") {
  temp_dir dir;
  child_process writer{{SKEIN_RUN_WRITER, dir.str(), "delegate"}};
  auto line = writer.read_until(60s, [](const std::string& out) { return out.find('\n') != std::string::npos; });
  writer.kill();
  std::istringstream in{line};
  std::string word, parent, child;
  in >> word >> parent >> child;
  REQUIRE(word == "ready");
  CHECK(child == parent + ".1");

  runtime_options o = without_effects();
  o.data_dir = dir.str();
  o.tools.push_back(make_function_tool({"hang", "answers now", "{}"}, [](const tool_invocation&) {
    return tool_output{"ok", false};
  }));
  runtime_fixture f{o, false};
  auto repaired = f.rt->repaired_at_open();
  std::sort(repaired.begin(), repaired.end());
  CHECK(repaired == std::vector<std::string>{parent, child});
  for (const auto& id : {parent, child}) {
    INFO(id);
    auto log = f.events(id);
    CHECK(check_runs(log) == 1);
    CHECK(signal_named(log, "thread.interrupted") != nullptr);
    CHECK(get(f, id).status == thread_status::failed);
  }
  auto results = of_type(f.events(parent), event_type::tool_result);
  REQUIRE(results.size() == 1);
  CHECK(results[0].name == "ask_agent");
  CHECK(results[0].is_error);
  // The parent runs again and may delegate again: the next child is .2.
  auto r = f.run(parent, "again");
  CHECK(r.outcome == run_outcome::completed);
  CHECK(get(f, parent + ".2").depth == 1);
}
