// The process engine: an external program over JSON lines (the fixture program
// skein-test-engine, and the python example), driven directly and through a real
// runtime on a real RocksDB. Waits are bounded waits on real events: a reply, a
// log line, a durable event.
#include <catch2/catch.hpp>
#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <mutex>
#include <optional>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/engines/process_engine.hpp"
#include "tests/support/runtime_fixture.hpp"

using namespace skein;
using namespace skein::test;
using namespace std::chrono_literals;

namespace {

constexpr auto wait_limit = 30s;

std::string fixture_config(const std::string& mode, const std::string& extra = "") {
  return R"({"command":[")" SKEIN_TEST_ENGINE R"(",)" + mode + "]" + (extra.empty() ? "" : "," + extra) + "}";
}

// One call's callbacks, and a bounded wait for its end.
struct recorder {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> deltas;
  std::optional<engine_reply> reply;
  int done_count = 0;

  engine_callbacks callbacks() {
    engine_callbacks cb;
    cb.on_delta = [this](std::string d) {
      std::lock_guard<std::mutex> lock{mu};
      deltas.push_back(std::move(d));
    };
    cb.on_done = [this](engine_reply r) {
      std::lock_guard<std::mutex> lock{mu};
      reply = std::move(r);
      ++done_count;
      cv.notify_all();
    };
    return cb;
  }

  engine_reply wait() {
    std::unique_lock<std::mutex> lock{mu};
    REQUIRE(cv.wait_for(lock, wait_limit, [&] { return reply.has_value(); }));
    return *reply;
  }
};

// The engine's log lines, and a bounded wait for one.
struct log_sink {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> lines;

  process_engine_hooks hooks() {
    process_engine_hooks h;
    h.log = [this](std::string_view line) {
      std::lock_guard<std::mutex> lock{mu};
      lines.emplace_back(line);
      cv.notify_all();
    };
    return h;
  }

  size_t count(const std::string& part) {
    size_t n = 0;
    for (const auto& l : lines)
      if (l.find(part) != std::string::npos) ++n;
    return n;
  }

  bool wait_for(const std::string& part, size_t times = 1) {
    std::unique_lock<std::mutex> lock{mu};
    return cv.wait_for(lock, wait_limit, [&] { return count(part) >= times; });
  }

  std::string all() {
    std::lock_guard<std::mutex> lock{mu};
    std::string out;
    for (const auto& l : lines) out += l + "\n";
    return out;
  }
};

engine_request request(const std::string& text) {
  engine_request r;
  r.thread_id = "t1";
  r.run_id = "r1";
  event e = make_message(message_role::user, text);
  e.seq = 1;
  e.run_id = "r1";
  r.conversation.push_back(e);
  return r;
}

std::shared_ptr<engine> make(const std::string& config, log_sink& log) {
  std::shared_ptr<engine> e;
  auto s = make_process_engine_with_hooks(config, log.hooks(), &e);
  INFO(s.to_string());
  REQUIRE(s.is_ok());
  return e;
}

engine_reply call(engine& e, const std::string& text, recorder& rec) {
  auto handle = e.start(request(text), rec.callbacks());
  return rec.wait();
}

// call() for a reply that must succeed: the test stops, saying why, if it did not.
engine_reply call_ok(engine& e, const std::string& text, recorder& rec) {
  engine_reply reply = call(e, text, rec);
  INFO(reply.result.to_string());
  REQUIRE(reply.result.is_ok());
  return reply;
}

bool gone(pid_t pid) {
  errno = 0;
  return ::kill(pid, 0) == -1 && errno == ESRCH;
}

agent_config process_agent(const std::string& id, const std::string& config, std::vector<std::string> tools = {}) {
  agent_config a;
  a.id = id;
  a.engine = "process";
  a.engine_config = config;
  a.tools = std::move(tools);
  return a;
}

void make_process_agent(runtime_fixture& f, const std::string& id, const std::string& config,
                        std::vector<std::string> tools = {}) {
  f.add_agent(process_agent(id, config, std::move(tools)));
}

// On a new thread of agent "proc": `failing` fails with an error that mentions
// `error`, then the program still echoes `next`, and the log holds both runs.
void check_fails_then_serves(runtime_fixture& f, const std::string& failing, const std::string& error,
                             const std::string& next) {
  auto t = f.thread("proc");
  auto failed = f.run(t.id, failing);
  CHECK(failed.outcome == run_outcome::failed);
  CHECK_THAT(failed.error, Catch::Contains(error));
  auto served = f.run(t.id, next);
  CHECK(served.outcome == run_outcome::completed);
  CHECK(served.text == "echo: " + next);
  check_runs(f.events(t.id));
}

std::vector<event> of_type(const std::vector<event>& log, event_type type) {
  std::vector<event> out;
  for (const auto& e : log)
    if (e.type == type) out.push_back(e);
  return out;
}

}  // namespace

TEST_CASE("process engine: echo streams its deltas in order, then the step") {
  log_sink log;
  auto e = make(fixture_config(R"("echo")"), log);
  recorder rec;
  auto reply = call_ok(*e, "hello process world", rec);
  CHECK(reply.step.text == "echo: hello process world");
  CHECK(reply.step.usage.input_tokens == 7);
  CHECK(reply.step.usage.output_tokens == reply.step.text.size());
  CHECK(reply.step.cost_usd == 0.25);
  CHECK(reply.step.session_id == "fixture-session");
  std::lock_guard<std::mutex> lock{rec.mu};
  REQUIRE(rec.deltas.size() == 3);
  CHECK(rec.deltas[0] + rec.deltas[1] + rec.deltas[2] == "hello process world");
  CHECK(rec.deltas[0] == "hello ");
}

TEST_CASE("process engine: 50 concurrent calls answered out of order reach their callers") {
  constexpr int calls = 50;
  log_sink log;
  auto e = make(fixture_config(R"("ooo","50")"), log);
  std::vector<std::unique_ptr<recorder>> recs;
  std::vector<std::unique_ptr<call_handle>> handles;
  for (int i = 0; i < calls; ++i) {
    recs.push_back(std::make_unique<recorder>());
    handles.push_back(e->start(request("message " + std::to_string(i)), recs.back()->callbacks()));
  }
  for (int i = 0; i < calls; ++i) {
    auto reply = recs[i]->wait();
    INFO(i << ": " << reply.result.to_string());
    REQUIRE(reply.result.is_ok());
    CHECK(reply.step.text == "echo: message " + std::to_string(i));
    CHECK(recs[i]->done_count == 1);
  }
}

TEST_CASE("process engine: calls past calls_in_flight_max fail with an error naming it") {
  log_sink log;
  auto e = make(fixture_config(R"("ooo","3")", R"("calls_in_flight_max":2)"), log);
  recorder a, b, c;
  auto ha = e->start(request("a"), a.callbacks());
  auto hb = e->start(request("b"), b.callbacks());
  auto hc = e->start(request("c"), c.callbacks());
  auto refused = c.wait();
  CHECK(refused.result.code() == errc::overloaded);
  CHECK(refused.result.limit() == "calls_in_flight_max");
  CHECK_THAT(refused.result.message(), Catch::Contains("calls_in_flight_max"));
  // The third call's slot frees once one ends: the fixture answers at three.
  recorder d;
  ha->cancel();
  auto hd = e->start(request("d"), d.callbacks());
  CHECK(b.wait().step.text == "echo: b");
  CHECK(d.wait().step.text == "echo: d");
}

TEST_CASE("process engine: the program exits mid-call, the call fails clearly, the next one succeeds") {
  log_sink log;
  // The failed call's reply comes just before the backoff: the next call arrives
  // while the program is down and waits for the restart.
  auto e = make(fixture_config(R"("exit")", R"("restart_backoff_ms":200,"restart_backoff_max_ms":200)"), log);
  recorder first;
  auto ok = call(*e, "warm up", first);
  REQUIRE(ok.result.is_ok());
  pid_t before = process_engine_pid(*e);
  REQUIRE(before > 0);

  recorder dying;
  auto died = call(*e, "please die now", dying);
  CHECK(died.result.code() == errc::io_error);
  CHECK(died.result.message() == "engine process exited with status 3");

  recorder after;
  auto back = call(*e, "are you back", after);
  INFO(back.result.to_string());
  REQUIRE(back.result.is_ok());
  CHECK(back.step.text == "echo: are you back");
  CHECK(process_engine_pid(*e) != before);
  CHECK(gone(before));

  recorder killed;
  auto sig = call(*e, "kill yourself", killed);
  CHECK_THAT(sig.result.message(), Catch::Contains("engine process killed by signal 9"));
  recorder again;
  CHECK(call(*e, "and again", again).result.is_ok());
  CHECK(log.wait_for("restarting", 2));
}

TEST_CASE("process engine: lines that are not JSON or name no call are dropped and logged") {
  log_sink log;
  auto e = make(fixture_config(R"("garbage")"), log);
  recorder rec;
  auto reply = call_ok(*e, "through the noise", rec);
  CHECK(reply.step.text == "echo: through the noise");
  INFO(log.all());
  CHECK(log.wait_for("dropped a line", 4));
  CHECK(log.count("this is not json") == 1);
  CHECK(log.count("no call in flight has this id") == 1);
  CHECK(log.count("unknown type") == 1);
  CHECK(log.count("expected an object") == 1);
  // The log is bounded: 4 dropped lines a call, 24 in all, 20 logged. The garbage
  // precedes each reply on the same pipe, so it is handled when the reply is.
  for (int i = 0; i < 5; ++i) {
    recorder more;
    REQUIRE(call(*e, "more noise", more).result.is_ok());
  }
  std::lock_guard<std::mutex> lock{log.mu};
  CHECK(log.count("dropped a line") == process_dropped_lines_logged_max);
  CHECK(log.count("further dropped lines are not logged") == 1);
}

TEST_CASE("process engine: a line past line_bytes_max kills the program, it restarts") {
  log_sink log;
  auto e = make(fixture_config(R"("huge","3000000")", R"("line_bytes_max":1000000,"restart_backoff_ms":1)"), log);
  recorder big;
  auto reply = call(*e, "send a huge line", big);
  CHECK(reply.result.code() == errc::io_error);
  CHECK_THAT(reply.result.message(), Catch::Contains("line_bytes_max (1000000)"));
  recorder next;
  auto ok = call(*e, "small again", next);
  INFO(ok.result.to_string());
  REQUIRE(ok.result.is_ok());
  CHECK(ok.step.text == "echo: small again");
}

TEST_CASE("process engine: cancel sends the cancel line and the call ends without a callback") {
  log_sink log;
  auto e = make(fixture_config(R"("slow")"), log);
  recorder slow;
  auto handle = e->start(request("a slow question"), slow.callbacks());
  handle->cancel();
  INFO(log.all());
  REQUIRE(log.wait_for("fixture: cancel c1"));
  recorder fast;
  CHECK(call(*e, "a fast one", fast).result.is_ok());
  std::lock_guard<std::mutex> lock{slow.mu};
  CHECK(slow.done_count == 0);
}

TEST_CASE("process engine: the program's stderr reaches the log, prefixed and bounded per line") {
  log_sink log;
  auto e = make(fixture_config(R"("stderr")"), log);
  recorder rec;
  REQUIRE(call(*e, "talk", rec).result.is_ok());
  REQUIRE(log.wait_for("fixture chatter for c1"));
  REQUIRE(log.wait_for("line cut at"));
  std::lock_guard<std::mutex> lock{log.mu};
  for (const auto& l : log.lines) {
    CHECK(l.rfind("skein: process engine skein-test-engine[", 0) == 0);
    CHECK(l.size() < process_stderr_line_bytes_max + 200);
  }
}

TEST_CASE("process engine: config errors name the field") {
  struct bad {
    std::string config;
    std::string field;
  };
  const std::string program = SKEIN_TEST_ENGINE;
  struct no_timers final : timer_service {
    void after(std::chrono::milliseconds, std::function<void()>) override { FAIL("the process engine uses no timers"); }
  } unused_timers;
  std::vector<bad> cases = {
      {"{}", "engine_config.command"},
      {R"({"command":"echo"})", "engine_config.command"},
      {R"({"command":[]})", "engine_config.command"},
      {R"({"command":["no-such-program-skein-test"]})", "engine_config.command[0]"},
      {R"({"command":["relative/path"]})", "engine_config.command[0]"},
      {R"({"command":["/no/such/file"]})", "engine_config.command[0]"},
      {R"({"command":[")" + program + R"("],"comand":1})", "engine_config.comand"},
      {R"({"command":[")" + program + R"("],"env":[]})", "engine_config.env"},
      {R"({"command":[")" + program + R"("],"env":{"A":1}})", "engine_config.env.A"},
      {R"({"command":[")" + program + R"("],"cwd":7})", "engine_config.cwd"},
      {R"({"command":[")" + program + R"("],"restart_backoff_ms":"x"})", "engine_config.restart_backoff_ms"},
      {R"({"command":[")" + program + R"("],"restart_backoff_ms":0})", "engine_config.restart_backoff_ms"},
      {R"({"command":[")" + program + R"("],"restart_backoff_ms":50,"restart_backoff_max_ms":10})",
       "engine_config.restart_backoff_max_ms"},
      {R"({"command":[")" + program + R"("],"line_bytes_max":0})", "engine_config.line_bytes_max"},
      {R"({"command":[")" + program + R"("],"calls_in_flight_max":-1})", "engine_config.calls_in_flight_max"},
  };
  for (const auto& c : cases) {
    std::shared_ptr<engine> e;
    auto s = make_process_engine(c.config, unused_timers, &e);
    INFO(c.config << " -> " << s.to_string());
    CHECK(s.code() == errc::invalid_input);
    CHECK_THAT(s.message(), Catch::Contains(c.field));
    CHECK(e == nullptr);
  }
  // A bare name is looked up on PATH.
  std::shared_ptr<engine> e;
  log_sink log;
  CHECK(make_process_engine_with_hooks(R"({"command":["sh","-c","exit 0"]})", log.hooks(), &e).is_ok());

  // Through the runtime: the agent is refused, naming the field.
  runtime_fixture f{without_effects()};
  agent_config a;
  a.id = "bad";
  a.engine = "process";
  a.engine_config = R"({"command":[")" + program + R"("],"line_bytes_max":"big"})";
  auto s = f.rt->create_agent(a);
  CHECK(s.code() == errc::invalid_input);
  CHECK_THAT(s.message(), Catch::Contains("engine_config.line_bytes_max"));
}

TEST_CASE("process engine: destroying the engine leaves no child process and no late callback") {
  log_sink log;
  auto e = make(fixture_config(R"("slow")"), log);
  recorder warm;
  REQUIRE(call(*e, "hello", warm).result.is_ok());
  pid_t pid = process_engine_pid(*e);
  REQUIRE(pid > 0);
  recorder pending;
  auto handle = e->start(request("slow, never answered"), pending.callbacks());
  e.reset();
  CHECK(gone(pid));
  errno = 0;
  CHECK(::waitpid(pid, nullptr, WNOHANG) == -1);
  CHECK(errno == ECHILD);
  handle->cancel();  // the engine is gone: a no-op
  std::lock_guard<std::mutex> lock{pending.mu};
  CHECK(pending.done_count == 0);
}

TEST_CASE("process engine: a program that ignores end of input and SIGTERM is killed with its group") {
  log_sink log;
  // The shell ignores TERM and keeps a child in its group; both must go.
  auto e = make(R"({"command":["sh","-c","trap '' TERM; echo started >&2; while :; do sleep 1; done"]})", log);
  recorder never;
  auto handle = e->start(request("anyone there"), never.callbacks());
  REQUIRE(log.wait_for("started"));
  pid_t pid = process_engine_pid(*e);
  REQUIRE(pid > 0);
  e.reset();
  CHECK(gone(pid));
}

TEST_CASE("process engine: writing to a program that closed its stdin fails its calls, never skein") {
  log_sink log;
  // The shell reads the first request, closes its stdin and lives on: the
  // second request's write then raises SIGPIPE, which must not end the test
  // process. (It reads first so that the order is fixed: a shell closing its
  // stdin before the first write made the engine restart it, and the second
  // request could land in the new shell's pipe just before that one closed it
  // — read by nobody, answered by nobody.)
  auto e = make(R"({"command":["sh","-c","read line; exec 0<&-; echo closed >&2; exec sleep 30"]})", log);
  recorder first;
  auto h1 = e->start(request("first"), first.callbacks());
  REQUIRE(log.wait_for("closed"));
  recorder second;
  auto h2 = e->start(request("second"), second.callbacks());
  auto reply = second.wait();
  CHECK(reply.result.code() == errc::io_error);
  CHECK(reply.result.message() == "engine process closed its stdin");
  CHECK(first.wait().result.code() == errc::io_error);
}

TEST_CASE("process engine through the runtime: an echo run streams its deltas in order") {
  runtime_fixture f{without_effects()};
  make_process_agent(f, "proc", fixture_config(R"("echo")"));
  auto t = f.thread("proc");
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> deltas;
  bool stopped = false;
  event_sink sink;
  sink.on_event = [&](const event& ev) {
    std::lock_guard<std::mutex> lock{mu};
    if (ev.type == event_type::signal && ev.name == "thread.stop") stopped = true;
    cv.notify_all();
  };
  sink.on_delta = [&](const std::string&, const std::string& d) {
    std::lock_guard<std::mutex> lock{mu};
    deltas.push_back(d);
  };
  uint64_t sub = 0;
  REQUIRE(f.rt->subscribe(t.id, 1, sink, &sub).is_ok());
  auto r = f.run(t.id, "streaming through skein");
  CHECK(r.outcome == run_outcome::completed);
  CHECK(r.text == "echo: streaming through skein");
  CHECK(r.usage.input_tokens == 7);
  {
    std::unique_lock<std::mutex> lock{mu};
    REQUIRE(cv.wait_for(lock, wait_limit, [&] { return stopped; }));
    REQUIRE(deltas.size() == 3);
    CHECK(deltas[0] + deltas[1] + deltas[2] == "streaming through skein");
  }
  REQUIRE(f.rt->unsubscribe(sub).is_ok());
  check_runs(f.events(t.id));
}

TEST_CASE("process engine through the runtime: a tool call round trip lands in the log") {
  runtime_options o = without_effects();
  tool_spec spec;
  spec.name = "shout";
  spec.description = "upper-cases its text";
  spec.schema_json = R"({"type":"object","properties":{"text":{"type":"string"}}})";
  o.tools.push_back(make_function_tool(spec, [](const tool_invocation& inv) {
    return tool_output{"SHOUTED " + inv.arguments_json, false};
  }));
  runtime_fixture f{o};
  make_process_agent(f, "proc", fixture_config(R"("tool")"), {"shout"});
  auto t = f.thread("proc");
  auto r = f.run(t.id, "hey");
  CHECK(r.outcome == run_outcome::completed);
  CHECK(r.text == R"(tool said: SHOUTED {"text":"hey"})");
  CHECK(r.turns == 2);
  auto log = f.events(t.id);
  check_runs(log);
  auto calls = of_type(log, event_type::tool_call);
  REQUIRE(calls.size() == 1);
  CHECK(calls[0].name == "shout");
  CHECK(calls[0].json == R"({"text":"hey"})");
  auto results = of_type(log, event_type::tool_result);
  REQUIRE(results.size() == 1);
  CHECK(results[0].call_id == calls[0].call_id);
  CHECK(results[0].text == R"(SHOUTED {"text":"hey"})");
  auto thinking = of_type(log, event_type::thinking);
  REQUIRE(thinking.size() == 1);
  CHECK(thinking[0].text == "a tool knows");
}

TEST_CASE("process engine through the runtime: the program dies mid-run, the run fails, the next succeeds") {
  runtime_fixture f{without_effects()};
  make_process_agent(f, "proc", fixture_config(R"("exit")", R"("restart_backoff_ms":1)"));
  check_fails_then_serves(f, "time to die", "engine process exited with status 3", "hello again");
}

TEST_CASE("process engine through the runtime: a stalled call trips the idle watchdog and is cancelled") {
  runtime_fixture f{without_effects()};
  agent_config a = process_agent("proc", fixture_config(R"("slow")"));
  a.budgets.engine_idle_ms = 300;
  f.add_agent(a);
  // The cancelled call's slot is free and the program still serves.
  check_fails_then_serves(f, "a slow question", "engine_idle_ms", "a quick one");
}

TEST_CASE("process engine: the python example agent answers end to end") {
  std::shared_ptr<engine> probe;
  log_sink probe_log;
  if (!make_process_engine_with_hooks(R"({"command":["python3","-c","0"]})", probe_log.hooks(), &probe).is_ok()) {
    WARN("python3 is not on PATH: the example agent's test is skipped (apt-get install python3)");
    return;
  }
  probe.reset();
  runtime_fixture f{without_effects()};
  make_process_agent(f, "py", R"({"command":["python3",")" SKEIN_EXAMPLES_DIR R"(/process-agent/agent.py"]})");
  auto t = f.thread("py");
  auto r = f.run(t.id, "hello from skein");
  INFO(r.error);
  CHECK(r.outcome == run_outcome::completed);
  CHECK(r.text == "You said: hello from skein");
  auto r2 = f.run(t.id, "count my words please");
  CHECK(r2.text == "You said: count my words please");
  check_runs(f.events(t.id));
}
