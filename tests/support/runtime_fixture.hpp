// A real runtime (real scheduler, real RocksDB in a temp dir) for tests.
#pragma once

#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "tests/support/eventually.hpp"
#include "runtime/runtime.hpp"
#include "tests/support/temp_dir.hpp"

namespace skein::test {

// Options with the effects off: for tests that count the log's writes, which
// effects would add to in the background.
inline runtime_options without_effects(runtime_options o = {}) {
  o.effects.titles = false;
  o.effects.embeddings = false;
  o.effects.compaction = false;
  return o;
}

struct runtime_fixture {
  temp_dir dir;
  std::unique_ptr<runtime> rt;

  // own_dir: the database goes in this fixture's temp dir, else in o.data_dir.
  explicit runtime_fixture(runtime_options o = {}, bool own_dir = true) {
    if (own_dir) o.data_dir = dir.str();
    auto s = runtime::open(std::move(o), &rt);
    INFO(s.to_string());
    REQUIRE(s.is_ok());
  }

  // Creates agent `a`; the test stops if the runtime refuses it.
  void add_agent(const agent_config& a) {
    auto s = rt->create_agent(a);
    INFO(s.to_string());
    REQUIRE(s.is_ok());
  }

  void agent(const std::string& id, const std::string& rules, mid_run_policy policy = mid_run_policy::queue) {
    agent_config a;
    a.id = id;
    a.system_prompt = "test";
    a.engine_config = rules;
    a.policy = policy;
    add_agent(a);
  }

  // Creates agent `id` on engine `engine`, with that engine's default config.
  void engine_agent(const std::string& id, const std::string& engine) {
    agent_config a;
    a.id = id;
    a.engine = engine;
    add_agent(a);
  }

  // A new thread made with `o`; the test stops if the runtime refuses it.
  manifest thread(const thread_options& o) {
    manifest m;
    auto s = rt->create_thread(o, &m);
    INFO(s.to_string());
    REQUIRE(s.is_ok());
    return m;
  }

  manifest thread(const std::string& agent) {
    thread_options o;
    o.agent_id = agent;
    return thread(o);
  }

  // The thread of `agent` bound to task `task_id`.
  manifest task_thread(const std::string& agent, const std::string& task_id) {
    thread_options o;
    o.agent_id = agent;
    o.task_id = task_id;
    return thread(o);
  }

  run_result run(const std::string& thread, const std::string& text) {
    run_input in;
    in.text = text;
    run_result r;
    auto s = rt->send(thread, in).wait(&r, std::chrono::seconds(60));
    INFO(s.to_string());
    REQUIRE(s.is_ok());
    return r;
  }

  // Compacts `thread` keeping its last `keep_turns` turns; the test stops unless
  // the call succeeds and a compaction happened.
  compact_result compacted(const std::string& thread, uint32_t keep_turns) {
    compact_options co;
    co.keep_turns = keep_turns;
    compact_result r;
    auto s = rt->compact(thread, co, &r);
    INFO(s.to_string());
    REQUIRE(s.is_ok());
    REQUIRE(r.compacted);
    return r;
  }

  std::vector<event> events(const std::string& thread) {
    std::vector<event> out;
    REQUIRE(rt->read(thread, history_view::complete, 1, 0, &out).is_ok());
    return out;
  }

  runtime_stats stats() {
    runtime_stats s;
    REQUIRE(rt->stats(&s).is_ok());
    return s;
  }

  // test::eventually (eventually.hpp), where the tests have long called it.
  template <class F>
  static bool eventually(F done, std::chrono::seconds limit = std::chrono::seconds(30)) {
    return test::eventually(std::move(done), limit);
  }
};

// Checks the invariants of a log: seqs 1..n; every run's events between its own
// thread.start and thread.stop; one start and one stop per run. Returns the runs.
inline size_t check_runs(const std::vector<event>& log) {
  std::string open;
  size_t runs = 0;
  for (size_t i = 0; i < log.size(); ++i) {
    const event& e = log[i];
    INFO("seq " << e.seq << " " << to_string(e.type) << " " << e.name << " run " << e.run_id);
    REQUIRE(e.seq == i + 1);
    bool start = e.type == event_type::signal && e.name == "thread.start";
    bool stop = e.type == event_type::signal && e.name == "thread.stop";
    if (start) {
      REQUIRE(open.empty());
      open = e.run_id;
      ++runs;
    } else if (!open.empty()) {
      REQUIRE(e.run_id == open);
    }
    if (stop) {
      REQUIRE(e.run_id == open);
      open.clear();
    }
  }
  REQUIRE(open.empty());
  return runs;
}

}  // namespace skein::test
