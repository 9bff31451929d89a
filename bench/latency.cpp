// latency: every run in flight at once. N threads get one run each, all sent
// before any completes, against a scripted engine that answers after 1 s: the
// runtime must hold N runs (actors, timers, pending commits) and finish them all
// close to the engine's own latency, within a memory budget.
#include <malloc.h>

#include "bench/baselines/baselines.hpp"
#include "bench/workloads.hpp"

namespace skein::bench {
namespace {

constexpr size_t runs_at_scale_1 = 10'000;
constexpr uint64_t engine_latency_ms = 1000;
constexpr size_t host_threads = 2;
// system prompt, user message, thread.start, assistant message, result, thread.stop
constexpr uint64_t events_per_thread = 6;

constexpr double latency_runs_per_s_target = 9'000;
constexpr double latency_rss_mb_max = 512;

}  // namespace

status run_latency(const bench_options& options, result* out) {
  runtime_options ro;
  ro.mode = durability::sync;
  agent_config agent =
      bench_agent(R"({"default":{"reply":"ok","latency_ms":)" + std::to_string(engine_latency_ms) + "}}");
  std::unique_ptr<runtime> rt;
  SKEIN_TRY(open_bench_runtime(options, "latency", ro, agent, &rt));
  std::vector<std::string> ids;
  SKEIN_TRY(create_bench_threads(*rt, agent.id, scaled_count(runs_at_scale_1, options.scale),
                                 options.quiet, &ids));

  // Heap that earlier workloads freed but malloc kept would otherwise sit under the peak.
  ::malloc_trim(0);
  uint64_t rss_start = rss_bytes();
  rss_recorder rss{true};
  merged_outcome m;
  {
    progress bar{"latency", ids.size(), progress_wanted(options.quiet)};
    m = drive_round_robin(ids, host_threads, [&](const std::vector<std::string>& mine, host_outcome* o) {
      // One run to each thread, all sent before any is waited on, in send order: a run
      // that ended before an earlier one is recorded when that one ends. They all end
      // about engine_latency_ms after their send, so the overstatement stays small.
      drive_runs_host(*rt, mine, 1, 1, "", bar, o, {.first_seq = 1, .duration_ms_min = engine_latency_ms});
    });
  }
  rss.finish();
  SKEIN_TRY(check_outcome(m, ids.size()));
  SKEIN_TRY(check_thread_logs(*rt, ids, ids.size(), {events_per_thread, 1}));
  SKEIN_TRY(rt->close());

  double runs_per_s = m.seconds > 0 ? static_cast<double>(m.completed) / m.seconds : 0;
  double peak_mb = static_cast<double>(rss.peak()) / (1 << 20);
  table& t = add_table(out,
                       "latency: " + with_commas(static_cast<double>(ids.size())) +
                           " runs in flight at once (one per thread), scripted engine at " +
                           with_commas(engine_latency_ms) + " ms, durability sync",
                       {col("system"), col("durability"), col("runs"), col("seconds", "s", 2), col("runs/s", "runs/s"),
                        col("p50", "ms", 3), col("p99", "ms", 3), col("RSS at start", "MB", 1),
                        col("peak RSS", "MB", 1)});
  t.rows.push_back({text("skein"), text("sync"), num(m.completed), num(m.seconds), num(runs_per_s),
                    num(quantile_us(m.latencies_ns, 0.50) / 1000), num(quantile_us(m.latencies_ns, 0.99) / 1000),
                    num(static_cast<double>(rss_start) / (1 << 20)), num(peak_mb)});
  // The same runs in flight on kernl (in memory, its mock model delayed alike).
  kernl_row kernl;
  run_kernl(ids.size(), 1, engine_latency_ms, &kernl);
  if (kernl.skipped.empty()) {
    t.rows.push_back({text("kernl " + kernl.version), text("in-memory"), num(static_cast<double>(kernl.runs)),
                      num(kernl.seconds), num(kernl.runs_per_s), num(kernl.p50_us / 1000), num(kernl.p99_us / 1000),
                      num(static_cast<double>(kernl.rss_start_bytes) / (1 << 20)),
                      num(static_cast<double>(kernl.rss_peak_bytes) / (1 << 20))});
    t.notes.push_back("kernl: Node " + kernl.node + ", its mock model delayed " + with_commas(kernl.delay_ms) +
                      " ms, peak RSS of the Node process (ru_maxrss); skein sync / kernl in-memory: " +
                      fixed(kernl.runs_per_s > 0 ? runs_per_s / kernl.runs_per_s : 0, 2) + "x runs/s");
  } else {
    t.notes.push_back("kernl: skipped: " + kernl.skipped);
  }
  t.notes.push_back("peak RSS: the whole process, sampled every 50 ms (" + with_commas(rss.samples()) +
                    " samples), from a start after malloc_trim(0)");
  add_target(out, "runs/s", runs_per_s, latency_runs_per_s_target, "runs/s");
  add_target(out, "peak RSS", peak_mb, latency_rss_mb_max, "MB", better::lower);
  if (options.plot) {
    add_bar(out, "throughput-latency", "latency: throughput (runs/s, higher is better)", "runs/s", "skein sync",
            runs_per_s);
    if (kernl.skipped.empty())
      add_bar(out, "throughput-latency", "latency: throughput (runs/s, higher is better)", "runs/s",
              "kernl in-memory", kernl.runs_per_s);
    add_cdf(out, "latency-latency", "latency: latency CDF", "skein sync, 1 s engine: send to completion",
            std::move(m.latencies_ns));
    rss.add_chart(out, "rss-latency", "latency: resident set size over time");
  }
  return status::ok();
}

}  // namespace skein::bench
