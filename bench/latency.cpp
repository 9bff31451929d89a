// latency: every run in flight at once. N threads get one run each, all sent
// before any completes, against a scripted engine that answers after 1 s: the
// runtime must hold N runs (actors, timers, pending commits) and finish them all
// close to the engine's own latency, within a memory budget.
#include <malloc.h>

#include "bench/baselines/baselines.hpp"
#include "bench/workloads.hpp"

namespace skein::bench {

status run_latency(const bench_options& options, result* out) {
  constexpr uint64_t engine_ms = 1000;
  agent_config agent = bench_agent(R"({"default":{"reply":"ok","latency_ms":)" + std::to_string(engine_ms) + "}}");
  std::unique_ptr<runtime> rt;
  std::vector<std::string> ids;  // durability sync, the default
  SKEIN_TRY(open_bench_runtime(options, "latency", {}, agent, &rt, scaled_count(10'000, options.scale), &ids));

  // Heap that earlier workloads freed but malloc kept would otherwise sit under the peak.
  ::malloc_trim(0);
  uint64_t rss_start = rss_bytes();
  rss_recorder rss{true};
  host_outcome o;
  // One run to each thread, all sent before any is waited on. They all end about
  // engine_ms after their send, so waiting in send order overstates little.
  status driven =
      drive_runs(*rt, ids, 1, 1, "", {.first_seq = 1, .duration_ms_min = engine_ms}, "latency", options.quiet, &o);
  rss.finish();
  SKEIN_TRY(driven);
  // system prompt, user message, thread.start, assistant message, result, thread.stop
  SKEIN_TRY(check_thread_logs(*rt, ids, ids.size(), {6, 1}));
  SKEIN_TRY(rt->close());
  // The same runs in flight on kernl (in memory, its mock model delayed alike).
  measured_row kernl;
  run_kernl(ids.size(), 1, engine_ms, &kernl);

  constexpr double mib = 1 << 20;
  table& t = add_table(out,
                       "latency: " + with_commas(static_cast<double>(ids.size())) +
                           " runs in flight at once (one per thread), scripted engine at " +
                           with_commas(engine_ms) + " ms, durability sync",
                       {col("system"), col("durability"), col("runs"), col("seconds", "s", 2), col("runs/s", "runs/s"),
                        col("p50", "ms", 3), col("p99", "ms", 3), col("RSS at start", "MB", 1),
                        col("peak RSS", "MB", 1)});
  t.rows.push_back({text("skein"), text("sync"), num(o.completed), num(o.seconds()), num(o.per_s()),
                    num(ms_at(o.latencies_ns, 0.50)), num(ms_at(o.latencies_ns, 0.99)),
                    num(rss_start / mib), num(rss.peak() / mib)});
  if (kernl.skipped.empty()) {
    t.rows.push_back({text("kernl"), text(kernl.mode), num(kernl.count), num(kernl.seconds), num(kernl.per_s()),
                      num(kernl.p50_us / 1000), num(kernl.p99_us / 1000), num(kernl.rss_start_bytes / mib),
                      num(kernl.rss_peak_bytes / mib)});
    t.notes.push_back(kernl.note + "; peak RSS of the Node process (ru_maxrss); skein sync / kernl in-memory: " +
                      fixed(ratio(o.per_s(), kernl.per_s()), 2) + "x runs/s");
  } else {
    t.notes.push_back("kernl: skipped: " + kernl.skipped);
  }
  t.notes.push_back("peak RSS: the whole process, sampled every 50 ms (" + with_commas(rss.samples()) +
                    " samples), from a start after malloc_trim(0)");
  add_target(out, "runs/s", o.per_s(), 9'000, "runs/s");
  add_target(out, "peak RSS", rss.peak() / mib, 512, "MB", better::lower);
  if (options.plot) {
    const char* title = "latency: throughput (runs/s, higher is better)";
    add_bar(out, "throughput-latency", title, "runs/s", "skein sync", o.per_s());
    if (kernl.skipped.empty()) add_bar(out, "throughput-latency", title, "runs/s", "kernl in-memory", kernl.per_s());
    add_cdf(out, "latency-latency", "latency: latency CDF", "skein sync, 1 s engine: send to completion",
            std::move(o.latencies_ns));
    rss.add_chart(out, "rss-latency", "latency: resident set size over time");
  }
  return status::ok();
}

}  // namespace skein::bench
