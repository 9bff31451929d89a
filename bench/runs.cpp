// runs: end-to-end runs through skein::runtime, the scripted engine answering at
// once so that the runtime and the log are all that is measured: N threads x R runs
// from two host threads, durability sync, then memory (like for like with an
// in-memory design), then the baselines (baselines.hpp).
#include "bench/baselines/baselines.hpp"
#include "bench/workloads.hpp"

namespace skein::bench {
namespace {

constexpr size_t threads_at_scale_1 = 1000;
// Fixed, not scaled: the queue of one thread must stay under thread_queue_max.
constexpr size_t runs_per_thread = 10;
// One run executing and one queued behind it: a thread never idles while its host
// thread is busy waiting on another thread's run. Far below thread_queue_max (64).
constexpr size_t window_per_thread = 2;

}  // namespace

status measure_runs(const bench_options& options, durability mode, std::shared_ptr<const master_key> key,
                    measured_row* row) {
  row->system = "skein";
  row->mode = std::string{to_string(mode)};
  runtime_options ro;
  ro.mode = mode;
  ro.encryption = key;
  std::string name = "runs" + (mode == durability::sync ? "" : "-" + row->mode) + (key ? "-encrypted" : "");
  std::unique_ptr<runtime> rt;
  std::vector<std::string> ids;
  SKEIN_TRY(open_bench_runtime(options, name, ro, bench_agent(), &rt, scaled_count(threads_at_scale_1, options.scale),
                               &ids));
  runtime_stats before, after;
  SKEIN_TRY(rt->stats(&before));
  host_outcome o;
  SKEIN_TRY(drive_runs(*rt, ids, runs_per_thread, window_per_thread, "", {}, name, options.quiet, &o));
  SKEIN_TRY(rt->stats(&after));
  // The log must hold exactly what the completed runs wrote, nothing failed or refused.
  log_expectation want{1 + scripted_events_per_run * runs_per_thread, runs_per_thread};
  SKEIN_TRY(check_thread_logs(*rt, ids, ids.size(), want));
  if (after.log.failed != 0 || after.log.rejected != 0 || after.log.events != want.events * ids.size())
    return status::corruption("event log counted " + std::to_string(after.log.events) + " events, " +
                              std::to_string(after.log.failed) + " failed and " +
                              std::to_string(after.log.rejected) + " rejected ticks; expected " +
                              std::to_string(want.events * ids.size()) + " events");
  row->count = o.completed;
  row->seconds = o.seconds();
  row->commits = after.log.commits - before.log.commits;
  row->writes = after.log.writes - before.log.writes;
  row->take_latencies(std::move(o.latencies_ns), true);
  return rt->close();
}

status run_runs(const bench_options& options, result* out) {
  size_t threads = scaled_count(threads_at_scale_1, options.scale);
  std::vector<measured_row> rows(2);
  SKEIN_TRY(measure_runs(options, durability::sync, nullptr, &rows[0]));
  SKEIN_TRY(measure_runs(options, durability::memory, nullptr, &rows[1]));
  SKEIN_TRY(run_runs_baselines(threads, runs_per_thread, run_hosts, options, &rows));
  double sync = rows[0].per_s(), memory = rows[1].per_s();

  table& t = add_table(out,
                       "runs: " + with_commas(static_cast<double>(threads)) + " threads x " +
                           std::to_string(runs_per_thread) +
                           " runs through skein::runtime, scripted engine at 0 ms;\n" + std::to_string(run_hosts) +
                           " host threads, " + std::to_string(window_per_thread) +
                           " runs in flight per thread (one running, the rest queued)",
                       {col("system"), col("durability"), col("runs"), col("seconds", "s", 2),
                        col("runs/s", "runs/s"), col("p50", "ms", 3), col("p99", "ms", 3),
                        col("commits/write", "", 1)});
  t.notes.push_back("latency: send to completion, waited for in send order (a run that ended before an earlier one\n"
                    "is recorded when that one ends)");
  for (const auto& r : rows) {
    bool skein = r.system == "skein";
    // "lace-design FULL", "kernl in-memory": the system and the first word of its mode.
    std::string name = r.system + " " + r.mode.substr(0, r.mode.find(' '));
    if (!r.skipped.empty()) {
      t.notes.push_back(r.system + ": skipped: " + r.skipped);
      continue;
    }
    t.rows.push_back({text(r.system), text(r.mode), num(r.count), num(r.seconds), num(r.per_s()),
                      num(r.p50_us / 1000), num(r.p99_us / 1000), skein ? num(ratio(r.commits, r.writes)) : cell{}});
    if (!skein) {
      t.notes.push_back(name + ": " + r.note);
      t.notes.push_back("skein sync / " + name + ": " + fixed(ratio(sync, r.per_s()), 2) + "x; skein memory / " +
                        name + ": " + fixed(ratio(memory, r.per_s()), 2) + "x");
    }
    if (!options.plot) continue;
    add_bar(out, "throughput-runs", "runs: throughput (runs/s, higher is better)", "runs/s",
            r.system + " " + r.mode, r.per_s());
    if (skein)
      add_cdf(out, "latency-runs", "runs: latency CDF", name + ": send to completion", r.latencies_ns);
  }

  add_target(out, "skein sync runs/s", sync, 15'000, "runs/s");
  // skein's runs/s (sync) over the designs of other agent tools (bench/baselines/).
  for (const auto& r : rows) {
    double goal = r.system == "kernl" ? 3 : r.system == "opennova-design" ? 10 : 0;
    std::string name = r.system + " " + r.mode.substr(0, r.mode.find(' '));
    if (goal == 0) continue;
    if (!r.skipped.empty()) add_skipped_target(out, "skein sync / " + r.system, goal, "x", r.system);
    else add_target(out, "skein sync / " + name, ratio(sync, r.per_s()), goal, "x", better::higher, name);
  }
  return status::ok();
}

}  // namespace skein::bench
