// latency: every run in flight at once. N threads get one run each, all sent
// before any completes, against a scripted engine that answers after 1 s: the
// runtime must hold N runs (actors, timers, pending commits) and finish them all
// close to the engine's own latency, within a memory budget.
#include <malloc.h>

#include "bench/baselines/kernl_latency.hpp"
#include "bench/workloads.hpp"

namespace skein::bench {
namespace {

constexpr size_t runs_at_scale_1 = 10'000;
constexpr uint64_t engine_latency_ms = 1000;
constexpr size_t host_threads = 2;
// system prompt, user message, thread.start, assistant message, result, thread.stop
constexpr uint64_t events_per_thread = 6;

// A run that did not wait out the engine, or did not complete as scripted, fails.
status check_run(const run_handle& h, const status& waited, const run_result& r) {
  std::string where = "thread " + h.thread_id() + " run " + h.run_id() + ": ";
  if (!waited) return status{waited.code(), where + waited.message()};
  if (r.outcome != run_outcome::completed)
    return status::io_error(where + "ended " + std::string{to_string(r.outcome)} + ": " + r.error);
  if (r.text != "ok") return status::corruption(where + "replied '" + r.text + "', expected 'ok'");
  if (r.duration_ms < engine_latency_ms)
    return status::corruption(where + "took " + std::to_string(r.duration_ms) +
                              " ms, less than the engine's " + std::to_string(engine_latency_ms));
  if (r.first_seq != 1 || r.last_seq != events_per_thread)
    return status::corruption(where + "events " + std::to_string(r.first_seq) + ".." +
                              std::to_string(r.last_seq) + ", expected 1.." +
                              std::to_string(events_per_thread));
  return status::ok();
}

// Sends one run to each of `threads`, then waits for them in send order: a run
// that ended before an earlier one is recorded when that one ends. They all end
// about engine_latency_ms after their send, so the overstatement stays small.
void drive_host(runtime& rt, const std::vector<std::string>& threads, progress& bar,
                host_outcome* out) {
  std::vector<std::pair<run_handle, bench_clock::time_point>> sent;
  sent.reserve(threads.size());
  out->first_send = bench_clock::now();
  for (const auto& id : threads) {
    run_input in;
    in.text = "hello";
    auto at = bench_clock::now();
    sent.emplace_back(rt.send(id, std::move(in)), at);
  }
  out->latencies_ns.reserve(sent.size());
  out->last_done = out->first_send;
  for (auto& [handle, at] : sent) {
    run_result r;
    status waited = handle.wait(&r);
    out->last_done = bench_clock::now();
    out->latencies_ns.push_back((out->last_done - at).count());
    bar.advance();
    if (status s = check_run(handle, waited, r); !s) {
      if (out->failures++ == 0) out->first_error = s.to_string();
    } else {
      ++out->completed;
    }
  }
}

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
      drive_host(*rt, mine, bar, o);
    });
  }
  rss.finish();
  if (m.failures > 0)
    return status::io_error(std::to_string(m.failures) + " of " + std::to_string(ids.size()) +
                            " runs failed; first: " + m.first_error);
  if (m.completed != ids.size())
    return status::corruption(std::to_string(m.completed) + " runs completed, expected " +
                              std::to_string(ids.size()));
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
  kernl_latency_row kernl;
  SKEIN_TRY(run_kernl_latency(ids.size(), engine_latency_ms, &kernl));
  if (kernl.skipped.empty()) {
    t.rows.push_back({text("kernl " + kernl.version), text("in-memory"), num(static_cast<double>(kernl.runs)),
                      num(kernl.seconds), num(kernl.runs_per_s), num(kernl.p50_us / 1000), num(kernl.p99_us / 1000),
                      num(static_cast<double>(kernl.rss_start_bytes) / (1 << 20)),
                      num(static_cast<double>(kernl.rss_peak_bytes) / (1 << 20))});
    t.notes.push_back("kernl: Node " + kernl.node + ", its mock model delayed " + with_commas(kernl.engine_ms) +
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
