// effects: what the effect actors (titles, embeddings, automatic compaction) cost
// the runs. The load of `runs` — N threads x R runs, scripted engine at 0 ms,
// durability sync, two host threads keeping every thread busy — measured twice in
// one process on fresh databases: effects off, then effects on. Then, from the
// last reply, the time until every effect's backlog is empty, and each effect's
// lag and jobs from runtime_stats::effects.
//
// Each user message carries message_bytes of text in both passes, so that a
// thread's working conversation passes auto_compaction_tokens during its runs and
// the automatic compaction effect has work; the two passes send the same bytes.
#include <algorithm>
#include <deque>
#include <thread>

#include "bench/workloads.hpp"

namespace skein::bench {
namespace {

constexpr size_t threads_at_scale_1 = 1000;
// Fixed, not scaled, as in `runs`: one thread's queue stays under thread_queue_max.
constexpr size_t runs_per_thread = 10;
constexpr size_t host_threads = 2;
constexpr size_t window_per_thread = 2;  // one run executing, one queued behind it
constexpr const char* engine_config = R"({"default":{"reply":"ok","latency_ms":0}})";
// About 250 estimated tokens per user message (compaction.hpp: 4 bytes a token):
// ten runs make some 2,600 tokens, past auto_compaction_tokens after the eighth run.
constexpr size_t message_bytes = 1000;
constexpr uint64_t auto_compaction_tokens = 2000;
// From the last reply, how long the effects may take to empty their backlogs
// before the workload fails: a backlog that never drains is a defect, not a figure.
constexpr auto drain_timeout = std::chrono::seconds(120);
constexpr auto drain_poll = std::chrono::milliseconds(2);
// Effects on must keep this share of the runs/s with effects off.
constexpr double on_over_off_min = 0.90;

struct pass_figures {
  bool effects = false;
  uint64_t runs = 0;
  uint64_t failures = 0;
  double seconds = 0;  // first send to last completion
  double p50_us = 0;   // send to completion
  double p99_us = 0;
  double drain_ms = -1;  // last reply to every backlog empty; -1: effects off
  uint64_t compactions = 0;
  std::vector<effect_stats> effects_after;  // at the end of the drain
  std::vector<uint64_t> backlog_at_last_reply;  // per effect, in effects_after's order

  double runs_per_s() const { return seconds > 0 ? static_cast<double>(runs) / seconds : 0; }
};



bool drained(const runtime_stats& st) {
  for (const auto& e : st.effects)
    if (e.backlog != 0) return false;
  return true;
}

// Polls stats until every effect's backlog is empty; *ms from `last_reply`.
status wait_drained(runtime& rt, bench_clock::time_point last_reply, double* ms,
                    runtime_stats* out) {
  auto deadline = bench_clock::now() + drain_timeout;
  for (;;) {
    SKEIN_TRY(rt.stats(out));
    auto now = bench_clock::now();
    if (drained(*out)) {
      *ms = seconds_since(last_reply, now) * 1000;
      return status::ok();
    }
    if (now >= deadline) {
      std::string pending;
      for (const auto& e : out->effects)
        if (e.backlog != 0)
          pending += " " + e.effect + " backlog " + std::to_string(e.backlog) + " (last error '" +
                     e.last_error + "')";
      return status::overloaded("effects not drained within drain_timeout (" +
                                std::to_string(drain_timeout.count()) + " s):" + pending);
    }
    std::this_thread::sleep_for(drain_poll);
  }
}

status run_pass(const bench_options& options, bool effects, pass_figures* p) {
  runtime_options ro;
  ro.mode = durability::sync;
  ro.effects.titles = effects;
  ro.effects.embeddings = effects;
  agent_config agent = bench_agent(engine_config);
  agent.effects.titles = effects;
  agent.effects.embedder = effects ? "hashing" : "";
  agent.compaction.auto_tokens = effects ? auto_compaction_tokens : 0;
  std::unique_ptr<runtime> rt;
  SKEIN_TRY(open_bench_runtime(options, effects ? "effects-on" : "effects-off", ro, agent, &rt));
  std::vector<std::string> ids;
  SKEIN_TRY(create_bench_threads(*rt, agent.id, scaled_count(threads_at_scale_1, options.scale),
                                 options.quiet, &ids));
  p->effects = effects;
  std::string padding(message_bytes, 'x');
  for (size_t i = 0; i < padding.size(); i += 8) padding[i] = ' ';  // words, for the embedder
  merged_outcome m;
  {
    progress bar{effects ? "runs, effects on" : "runs, effects off", ids.size() * runs_per_thread,
                 progress_wanted(options.quiet)};
    m = drive_round_robin(ids, host_threads, [&](const std::vector<std::string>& mine, host_outcome* out) {
      drive_runs_host(*rt, mine, runs_per_thread, window_per_thread, padding, bar, out);
    });
  }
  // The last reply: the hosts have all seen their last run end (joined just now).
  auto last_reply = bench_clock::now();
  p->runs = m.completed;
  p->failures = m.failures;
  p->seconds = m.seconds;
  p->p50_us = quantile_us(m.latencies_ns, 0.50);
  p->p99_us = quantile_us(m.latencies_ns, 0.99);
  SKEIN_TRY(check_outcome(m, ids.size() * runs_per_thread));
  runtime_stats st;
  if (effects) {
    // How far behind the effects are when the runs end: what the drain works off.
    runtime_stats at_reply;
    SKEIN_TRY(rt->stats(&at_reply));
    SKEIN_TRY(wait_drained(*rt, last_reply, &p->drain_ms, &st));
    p->effects_after = st.effects;
    for (const auto& e : st.effects) {
      uint64_t backlog = 0;
      for (const auto& r : at_reply.effects)
        if (r.effect == e.effect) backlog = r.backlog;
      p->backlog_at_last_reply.push_back(backlog);
    }
  } else {
    SKEIN_TRY(rt->stats(&st));
    // Nothing derived with effects off: the log holds exactly what the runs wrote.
    log_expectation want{1 + (scripted_events_per_run * runs_per_thread), runs_per_thread};
    SKEIN_TRY(check_thread_logs(*rt, ids, ids.size(), want));
  }
  p->compactions = st.compactions;
  if (st.log.failed != 0 || st.log.rejected != 0)
    return status::corruption("event log counted " + std::to_string(st.log.failed) + " failed and " +
                              std::to_string(st.log.rejected) + " rejected ticks");
  return rt->close();
}

}  // namespace

status run_effects(const bench_options& options, result* out) {
  size_t threads = scaled_count(threads_at_scale_1, options.scale);
  pass_figures off, on;
  SKEIN_TRY(run_pass(options, false, &off));
  SKEIN_TRY(run_pass(options, true, &on));

  table& t = add_table(out,
                       "effects: " + with_commas(static_cast<double>(threads)) + " threads x " +
                           std::to_string(runs_per_thread) + " runs (scripted engine at 0 ms, durability sync, " +
                           std::to_string(host_threads) + " host threads, " + std::to_string(message_bytes) +
                           "-byte messages), effects off vs on",
                       {col("effects"), col("runs"), col("seconds", "s", 2), col("runs/s", "runs/s"),
                        col("p50", "ms", 3), col("p99", "ms", 3), col("compactions"), col("drain", "ms", 1)});
  for (const pass_figures* p : {&off, &on})
    t.rows.push_back({text(p->effects ? "on" : "off"), num(p->runs), num(p->seconds), num(p->runs_per_s()),
                      num(p->p50_us / 1000), num(p->p99_us / 1000), num(p->compactions),
                      p->effects ? num(p->drain_ms) : cell{}});
  t.notes.push_back("on: titles, embeddings (hashing), automatic compaction past " +
                    with_commas(auto_compaction_tokens) +
                    " tokens. drain: from the\nlast reply until every effect's backlog is 0 (runtime::stats polled "
                    "every " + std::to_string(drain_poll.count()) + " ms).");
  table& e = add_table(out, "effects: each effect, effects on",
                       {col("effect"), col("backlog at last reply"), col("lag p50", "ms", 1), col("lag p99", "ms", 1),
                        col("done"), col("failed"), col("retries"), col("discarded")});
  for (size_t i = 0; i < on.effects_after.size(); ++i) {
    const auto& x = on.effects_after[i];
    e.rows.push_back({text(x.effect), num(on.backlog_at_last_reply[i]), num(x.lag_p50_s * 1000),
                      num(x.lag_p99_s * 1000), num(x.done), num(x.failed), num(x.retries), num(x.discarded)});
  }
  add_target(out, "runs/s effects on / off", on.runs_per_s() / off.runs_per_s(), on_over_off_min, "x",
             better::higher, "effects off");
  return status::ok();
}

}  // namespace skein::bench
