// runs: end-to-end runs through skein::runtime — send, engine, durable commits,
// result — with the scripted engine answering at once, so that the runtime and
// the log are all that is measured. N threads x R runs, durability sync, sent
// from two host threads that keep every thread busy; the same in durability
// memory, like for like with an in-memory design. Then the same runs on the
// designs of bench/baselines/ (baselines.hpp).
#include "bench/baselines/baselines.hpp"
#include "bench/workloads.hpp"

namespace skein::bench {
namespace {

constexpr size_t threads_at_scale_1 = 1000;
// Fixed, not scaled: the queue of one thread must stay under thread_queue_max.
constexpr size_t runs_per_thread = 10;
constexpr size_t host_threads = 2;
// One run executing and one queued behind it: a thread never idles while its host
// thread is busy waiting on another thread's run. Far below thread_queue_max (64).
constexpr size_t window_per_thread = 2;
constexpr const char* runs_engine_config = R"({"default":{"reply":"ok","latency_ms":0}})";

constexpr double runs_per_s_target = 15'000;
// skein's runs/s (sync) over the designs of other agent tools (bench/baselines/).
constexpr double runs_over_opennova_target = 10;
constexpr double runs_over_kernl_target = 3;

// The log must hold exactly what the completed runs wrote, nothing failed or refused.
status verify_runs(runtime& rt, const std::vector<std::string>& ids, const merged_outcome& m) {
  SKEIN_TRY(check_outcome(m, ids.size() * runs_per_thread));
  log_expectation want{1 + scripted_events_per_run * runs_per_thread, runs_per_thread};
  SKEIN_TRY(check_thread_logs(rt, ids, ids.size(), want));
  runtime_stats st;
  SKEIN_TRY(rt.stats(&st));
  if (st.log.failed != 0 || st.log.rejected != 0 || st.log.events != want.events * ids.size())
    return status::corruption("event log counted " + std::to_string(st.log.events) + " events, " +
                              std::to_string(st.log.failed) + " failed and " +
                              std::to_string(st.log.rejected) + " rejected ticks; expected " +
                              std::to_string(want.events * ids.size()) + " events");
  return status::ok();
}

// "lace-design FULL", "kernl in-memory": the system and the first word of its mode.
std::string baseline_name(const measured_row& r) {
  return r.system + " " + r.mode.substr(0, r.mode.find(' '));
}

double ratio(double a, double b) { return b > 0 ? a / b : 0; }

}  // namespace

status measure_runs(const bench_options& options, durability mode, std::shared_ptr<const master_key> key,
                    measured_row* out) {
  runtime_options ro;
  ro.mode = mode;
  ro.encryption = key;
  agent_config agent = bench_agent(runs_engine_config);
  std::unique_ptr<runtime> rt;
  std::string name = std::string{"runs"} + (mode == durability::sync ? "" : "-" + std::string{to_string(mode)}) +
                     (key ? "-encrypted" : "");
  SKEIN_TRY(open_bench_runtime(options, name, ro, agent, &rt));
  std::vector<std::string> ids;
  SKEIN_TRY(create_bench_threads(*rt, agent.id, scaled_count(threads_at_scale_1, options.scale),
                                 options.quiet, &ids));

  measured_row& f = *out;
  f.threads = ids.size();
  f.host_threads = host_threads;
  runtime_stats before, after;
  SKEIN_TRY(rt->stats(&before));
  merged_outcome m;
  {
    progress bar{name, ids.size() * runs_per_thread, progress_wanted(options.quiet)};
    m = drive_round_robin(ids, host_threads, [&](const std::vector<std::string>& mine, host_outcome* o) {
      drive_runs_host(*rt, mine, runs_per_thread, window_per_thread, "", bar, o);
    });
  }
  f.count = m.completed;
  f.seconds = m.seconds;
  f.p50_us = quantile_us(m.latencies_ns, 0.50);
  f.p99_us = quantile_us(m.latencies_ns, 0.99);
  SKEIN_TRY(rt->stats(&after));
  f.commits = after.log.commits - before.log.commits;
  f.writes = after.log.writes - before.log.writes;
  SKEIN_TRY(verify_runs(*rt, ids, m));
  f.latencies_ns = std::move(m.latencies_ns);
  return rt->close();
}

status run_runs(const bench_options& options, result* out) {
  measured_row sync, memory;
  SKEIN_TRY(measure_runs(options, durability::sync, nullptr, &sync));
  SKEIN_TRY(measure_runs(options, durability::memory, nullptr, &memory));
  std::vector<measured_row> baselines;
  SKEIN_TRY(run_runs_baselines({sync.threads, runs_per_thread, host_threads}, options, &baselines));

  table& t = add_table(out,
                       "runs: " + with_commas(static_cast<double>(sync.threads)) + " threads x " +
                           std::to_string(runs_per_thread) +
                           " runs through skein::runtime, scripted engine at 0 ms;\n" + std::to_string(host_threads) +
                           " host threads, " + std::to_string(window_per_thread) +
                           " runs in flight per thread (one running, the rest queued)",
                       {col("system"), col("durability"), col("runs"), col("seconds", "s", 2),
                        col("runs/s", "runs/s"), col("p50", "ms", 3), col("p99", "ms", 3),
                        col("commits/write", "", 1)});
  const char* throughput = "runs: throughput (runs/s, higher is better)";
  for (const measured_row* f : {&sync, &memory}) {
    std::string mode = f == &sync ? "sync" : "memory";
    t.rows.push_back({text("skein"), text(mode), num(f->count), num(f->seconds), num(f->per_s()),
                      num(f->p50_us / 1000), num(f->p99_us / 1000), num(ratio(f->commits, f->writes))});
    if (options.plot) {
      add_bar(out, "throughput-runs", throughput, "runs/s", "skein " + mode, f->per_s());
      add_cdf(out, "latency-runs", "runs: latency CDF", "skein " + mode + ": send to completion",
              f->latencies_ns);
    }
  }
  t.notes.push_back("latency: send to completion, waited for in send order (a run that ended before an earlier one\n"
                    "is recorded when that one ends)");
  for (const auto& r : baselines) {
    if (!r.skipped.empty()) {
      t.notes.push_back(r.system + ": skipped: " + r.skipped);
      continue;
    }
    t.rows.push_back({text(r.system), text(r.mode), num(r.count), num(r.seconds), num(r.per_s()),
                      num(r.p50_us / 1000), num(r.p99_us / 1000), cell{}});
    t.notes.push_back(baseline_name(r) + ": " + r.note);
    t.notes.push_back("skein sync / " + baseline_name(r) + ": " + fixed(ratio(sync.per_s(), r.per_s()), 2) +
                      "x; skein memory / " + baseline_name(r) + ": " +
                      fixed(ratio(memory.per_s(), r.per_s()), 2) + "x");
    if (options.plot) add_bar(out, "throughput-runs", throughput, "runs/s", r.system + " " + r.mode, r.per_s());
  }

  add_target(out, "skein sync runs/s", sync.per_s(), runs_per_s_target, "runs/s");
  for (const auto& r : baselines) {
    double goal = r.system == "kernl" ? runs_over_kernl_target
                  : r.system == "opennova-design" ? runs_over_opennova_target : 0;
    if (goal == 0) continue;
    if (!r.skipped.empty()) add_skipped_target(out, "skein sync / " + r.system, goal, "x", r.system);
    else add_target(out, "skein sync / " + baseline_name(r), ratio(sync.per_s(), r.per_s()), goal, "x",
                    better::higher, baseline_name(r));
  }
  return status::ok();
}

}  // namespace skein::bench
