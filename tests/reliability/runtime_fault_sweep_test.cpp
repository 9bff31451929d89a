// The fault sweep through skein::runtime: real actors, the scripted engine and a
// tool, runs whose steps commit the engine's tool calls and then their results.
// The file system fails the n-th write, sync, read or rename (once or from then
// on) or loses power at the n-th mutating operation, over a spread of n (every
// n with SKEIN_FAULT_SWEEP=full).
//
// Each run: a database with agent and threads (copied from a template) is opened
// under the armed file system, two runs are sent to each of two threads at once,
// every send must come back (done or failed) within a bound, and the runtime is
// closed. Then it is opened on a healthy file system, where recovery closes what
// the fault interrupted, and every thread must show: a gapless log; every run
// between one thread.start and one thread.stop; every tool_call answered by a
// tool_result; a run closed by recovery (thread.interrupted) only in a thread
// recovery says it repaired; every acknowledged run there, stopped, with its
// outcome. And the runtime must run new inputs.
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <map>
#include <rocksdb/env.h>
#include <set>

#include "persistence/event_log.hpp"
#include "runtime/runtime.hpp"
#include "tests/reliability/sweep_support.hpp"
#include "tests/support/fault_fs.hpp"
#include "tests/support/runtime_fixture.hpp"
#include "tests/support/temp_dir.hpp"

using namespace skein;
using namespace skein::test;
using namespace std::chrono_literals;

namespace {

constexpr size_t quick_points = 5;    // n per kind and fault mode in the quick sweep
constexpr size_t runs_per_thread = 2;  // sent at once, per wave
constexpr size_t waves = 2;
constexpr auto run_wait_limit = 30s;  // a send not answered by then hangs
constexpr auto session_limit = 120s;  // a faulted session and its check, together

const char* rules = R"({"rules": [{"turn": 1, "tool_calls": [{"name": "echo", "id": "e1"}, {"name": "echo", "id": "e2"}]},
                                  {"turn": 2, "reply": "done"}]})";

runtime_options options(const std::string& dir, rocksdb::Env* env) {
  runtime_options o;
  o.data_dir = dir;
  o.mode = durability::sync;
  o.env = env;
  o.worker_threads = 2;
  o.tools.push_back(make_function_tool({"echo", "echoes its arguments", "{}"},
                                       [](const tool_invocation& call) { return tool_output{call.arguments_json}; }));
  return o;
}

run_input input(const std::string& text) {
  run_input in;
  in.text = text;
  return in;
}

struct acked_run {
  std::string thread, run_id;
  run_outcome outcome;
};

struct sweep_env {
  temp_dir dir{temp_dir::memory_base()};  // syncs cost nothing there: the sweep tests logic
  std::shared_ptr<fault_fs> fs = std::make_shared<fault_fs>();
  std::unique_ptr<rocksdb::Env> env = rocksdb::NewCompositeEnv(fs);
  std::string template_db = dir.str("template");
  std::vector<std::string> threads;
  uint64_t run_counter = 0;

  sweep_env() {
    std::unique_ptr<runtime> rt;
    REQUIRE(runtime::open(options(template_db, nullptr), &rt).is_ok());
    agent_config a;
    a.id = "a";
    a.tools = {"echo"};
    a.engine_config = rules;
    REQUIRE(rt->create_agent(a).is_ok());
    for (int i = 0; i < 2; ++i) {
      thread_options to;
      to.agent_id = "a";
      manifest m;
      REQUIRE(rt->create_thread(to, &m).is_ok());
      run_result r;
      REQUIRE(rt->send(m.id, input("first")).wait(&r, run_wait_limit).is_ok());
      threads.push_back(m.id);
    }
    REQUIRE(rt->close().is_ok());
  }

  std::vector<acked_run> faulted_session(const std::string& db, sweep_tally* tally) {
    std::unique_ptr<runtime> rt;
    std::vector<acked_run> acked;
    if (!runtime::open(options(db, env.get()), &rt)) {
      ++tally->open_refused;
      return acked;
    }
    bool failed = false;
    // Two waves: the second goes to threads whose run the fault may have cut, in
    // the same session: the runtime must serve them or refuse them cleanly.
    for (size_t wave = 0; wave < waves; ++wave) {
      std::vector<run_handle> handles;
      for (size_t i = 0; i < runs_per_thread; ++i)
        for (const auto& t : threads) handles.push_back(rt->send(t, input("go " + std::to_string(i))));
      for (auto& h : handles) {
        run_result r;
        status s = h.wait(&r, run_wait_limit);
        INFO("wave " << wave << ", run " << h.run_id() << ": " << s.to_string());
        REQUIRE(s.code() != errc::overloaded);  // overloaded: the wait timed out, the run hangs
        if (s) acked.push_back({h.thread_id(), h.run_id(), r.outcome});
        failed = failed || !s || r.outcome != run_outcome::completed;
      }
    }
    rt->close().ignore();  // a close after a failed write reports it; the check is the reopen
    ++(failed ? tally->writes_failed : tally->unaffected);
    return acked;
  }

  void verify(const std::string& db, const std::vector<acked_run>& acked, sweep_tally* tally) {
    // Runs the faulted session closed itself: a thread whose commit failed on a
    // read is activated again by the second wave, and that activation closes
    // its open run (thread.interrupted) while writes still work. Read before
    // the runtime's open, whose recovery must report every run it closes.
    std::set<std::string> closed_in_session;
    {
      log_options lo;
      lo.path = db;
      lo.create_if_missing = false;
      std::unique_ptr<event_log> log;
      REQUIRE(event_log::open(lo, &log).is_ok());
      for (const auto& t : threads) {
        std::vector<event> events;
        REQUIRE(log->read_events(t, 1, 0, &events).is_ok());
        for (const auto& e : events)
          if (e.type == event_type::signal && e.name == "thread.interrupted") closed_in_session.insert(e.run_id);
      }
    }
    std::unique_ptr<runtime> rt;
    status s = runtime::open(options(db, nullptr), &rt);
    INFO("reopen: " << s.to_string());
    REQUIRE(s.is_ok());
    std::set<std::string> repaired(rt->repaired_at_open().begin(), rt->repaired_at_open().end());
    std::map<std::string, std::map<std::string, const event*>> stops;  // thread -> run -> its stop
    std::map<std::string, std::vector<event>> logs;
    std::map<std::string, std::map<std::string, std::string>> outcomes;  // thread -> run -> its result's outcome
    for (const auto& t : threads) {
      auto& log = logs[t];
      REQUIRE(rt->read(t, history_view::complete, 1, 0, &log).is_ok());
      manifest m;
      REQUIRE(rt->get_thread(t, &m).is_ok());
      REQUIRE(m.last_seq == log.size());
      CHECK(m.status != thread_status::running);
      check_runs(log);  // gapless; every run between one start and one stop
      std::set<std::pair<std::string, std::string>> calls, results;
      for (const auto& e : log) {
        if (e.type == event_type::tool_call) calls.insert({e.run_id, e.call_id});
        if (e.type == event_type::tool_result) {
          INFO("tool_result " << e.call_id << " of run " << e.run_id << " answers a call");
          CHECK(calls.count({e.run_id, e.call_id}) == 1);
          results.insert({e.run_id, e.call_id});
        }
        if (e.type == event_type::signal && e.name == "thread.interrupted" && !closed_in_session.count(e.run_id)) {
          INFO("run " << e.run_id << " closed by recovery");
          CHECK(repaired.count(t) == 1);
        }
        if (e.type == event_type::signal && e.name == "thread.stop") stops[t][e.run_id] = &e;
        if (e.type == event_type::result) outcomes[t][e.run_id] = e.outcome;
      }
      CHECK(calls == results);  // every tool call has its result
    }
    for (const auto& a : acked) {
      ++tally->acked;
      INFO("acknowledged run " << a.run_id << " on " << a.thread);
      REQUIRE(stops[a.thread].count(a.run_id) == 1);
      CHECK(outcomes[a.thread][a.run_id] == to_string(a.outcome));
    }
    // It serves: a new run completes on every thread.
    for (const auto& t : threads) {
      run_result r;
      REQUIRE(rt->send(t, input("after")).wait(&r, run_wait_limit).is_ok());
      CHECK(r.outcome == run_outcome::completed);
    }
    REQUIRE(rt->close().is_ok());
  }

  void run_one(fault_fs::kind k, uint64_t n, fault_fs::fault f, sweep_tally* tally) {
    sweep_run(*this, "runtime sweep", k, n, f, session_limit, tally);
  }

  // Operations of each kind one clean session performs.
  std::map<fault_fs::kind, uint64_t> count_clean() { return count_clean_session(*this); }
};

void print_tally(const char* what, const sweep_tally& t, double seconds) {
  print_sweep_tally("runtime fault sweep", what, "runs", "runs", t, seconds);
}

}  // namespace

TEST_CASE("runtime fault sweep: runs with tool calls stay whole under failed writes/syncs/reads/renames and power loss") {
  sweep_env e;
  auto counts = e.count_clean();
  std::printf("runtime fault sweep (%s): a clean session does %llu writes, %llu syncs, %llu reads, %llu renames, "
              "%llu mutating operations\n",
              full_sweep() ? "full" : "quick", static_cast<unsigned long long>(counts[fault_fs::kind::append]),
              static_cast<unsigned long long>(counts[fault_fs::kind::sync]),
              static_cast<unsigned long long>(counts[fault_fs::kind::read]),
              static_cast<unsigned long long>(counts[fault_fs::kind::rename]),
              static_cast<unsigned long long>(counts[fault_fs::kind::power_loss]));
  REQUIRE(counts[fault_fs::kind::sync] > 0);
  struct mode {
    fault_fs::kind kind;
    fault_fs::fault fault;
    const char* name;
  };
  std::vector<mode> modes;
  for (auto k : {fault_fs::kind::append, fault_fs::kind::sync, fault_fs::kind::read, fault_fs::kind::rename}) {
    modes.push_back({k, fault_fs::fault::once, "once"});
    modes.push_back({k, fault_fs::fault::persistent, "persistent"});
  }
  modes.push_back({fault_fs::kind::power_loss, fault_fs::fault::persistent, ""});
  for (const auto& m : modes) {
    sweep_tally tally;
    auto start = std::chrono::steady_clock::now();
    size_t points = m.kind == fault_fs::kind::power_loss ? 2 * quick_points : quick_points;
    for (uint64_t n : sweep_points(counts[m.kind], points)) {
      INFO(kind_name(m.kind) << " " << m.name << " at n=" << n);
      e.run_one(m.kind, n, m.fault, &tally);
    }
    std::string what = std::string{kind_name(m.kind)} + (*m.name ? ", " : "") + m.name;
    print_tally(what.c_str(), tally, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
}
