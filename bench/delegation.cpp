// delegation: parent runs that each call ask_agent once (scripted engine at 0 ms,
// durability sync). A parent run is two engine steps of the parent around one
// whole child run: the parent's tool call commit, the child id commit, the
// child's creation tick (question in its inbox), the child's run, the tool
// result commit, the parent's closing commit. Its wall time, from send to
// result, is the delegation round trip. Plain one-step runs on other threads
// of the same runtime, driven the same way, give the cost without delegation.
// Closed loop: each host thread waits for one run before sending the next.
// The check: every delegated run completed with the child's answer, and every
// sampled parent has its one child, completed.
#include <algorithm>

#include "bench/workloads.hpp"

namespace skein::bench {
namespace {

constexpr size_t parents_at_scale_1 = 2000;
constexpr size_t hosts = 16;           // host threads sending at once
constexpr size_t check_sample = 100;   // parents whose child is read back
constexpr const char* child_agent_id = "bench_child";
constexpr const char* expected_text = "got: ok";

struct measured {
  std::vector<int64_t> latencies_ns;
  double seconds = 0;
};

// One run on each of `threads`, over `hosts` host threads; each run's text must be `want`.
status drive(runtime& rt, const std::vector<std::string>& threads, const std::string& want, measured* out) {
  std::vector<int64_t> ns(threads.size());
  auto start = bench_clock::now();
  SKEIN_TRY(on_host_threads(threads.size(), hosts, [&](size_t i) -> status {
    run_input in;
    in.text = "go";
    auto sent = bench_clock::now();
    run_result r;
    SKEIN_TRY(rt.send(threads[i], in).wait(&r));
    ns[i] = std::chrono::duration_cast<std::chrono::nanoseconds>(bench_clock::now() - sent).count();
    if (r.outcome != run_outcome::completed || r.text != want)
      return status::corruption("delegation: run of " + threads[i] + " ended " + std::string{to_string(r.outcome)} +
                                " with '" + r.text + "' (" + r.error + ")");
    return status::ok();
  }));
  out->seconds = seconds_since(start, bench_clock::now());
  out->latencies_ns = std::move(ns);
  return status::ok();
}

}  // namespace

status run_delegation(const bench_options& options, result* out) {
  const size_t n = scaled_count(parents_at_scale_1, options.scale);
  runtime_options ro;
  ro.effects.titles = ro.effects.embeddings = ro.effects.compaction = false;
  agent_config parent;
  parent.id = bench_agent_id;
  parent.engine_config =
      R"({"rules":[{"match":"^go$","turn":1,"tool_calls":[{"name":"ask_agent","id":"a1",)"
      R"("arguments":{"agent":"bench_child","question":"hello"}}]}],"default":{"reply":"got: {tool_result}"}})";
  parent.delegation.agents = {child_agent_id};
  std::unique_ptr<runtime> rt;
  SKEIN_TRY(open_bench_runtime(options, "delegation", ro, parent, &rt));
  agent_config child;
  child.id = child_agent_id;
  child.engine_config = R"({"default":{"reply":"ok"}})";
  SKEIN_TRY(rt->create_agent(child));
  agent_config plain;
  plain.id = "bench_plain";
  plain.engine_config = R"({"default":{"reply":"ok"}})";
  SKEIN_TRY(rt->create_agent(plain));

  std::vector<std::string> parents, plains;
  SKEIN_TRY(create_bench_threads(*rt, bench_agent_id, n, options.quiet, &parents));
  SKEIN_TRY(create_bench_threads(*rt, "bench_plain", n, options.quiet, &plains));
  measured plain_runs, delegated;
  SKEIN_TRY(drive(*rt, plains, "ok", &plain_runs));
  SKEIN_TRY(drive(*rt, parents, expected_text, &delegated));
  for (size_t i = 0; i < n; i += std::max<size_t>(1, n / check_sample)) {
    manifest m;
    SKEIN_TRY(rt->get_thread(parents[i] + ".1", &m));
    if (m.status != thread_status::completed || m.depth != 1)
      return status::corruption("delegation: child " + m.id + " is " + std::string{to_string(m.status)});
  }
  SKEIN_TRY(rt->close());

  double d50 = quantile_us(delegated.latencies_ns, 0.5) / 1000, d99 = quantile_us(delegated.latencies_ns, 0.99) / 1000;
  double p50 = quantile_us(plain_runs.latencies_ns, 0.5) / 1000, p99 = quantile_us(plain_runs.latencies_ns, 0.99) / 1000;
  table& t = add_table(out,
                       "delegation: " + with_commas(static_cast<double>(n)) +
                           " parent runs, each asking one child (scripted 0 ms, sync), " + std::to_string(hosts) +
                           " host threads",
                       {col("runs"), col("runs/s", "runs/s"), col("p50", "ms", 2), col("p99", "ms", 2)});
  t.rows = {{text("delegated (round trip)"), num(n / delegated.seconds), num(d50), num(d99)},
            {text("plain (no delegation)"), num(n / plain_runs.seconds), num(p50), num(p99)}};
  return status::ok();
}

}  // namespace skein::bench
