// effects: what the effect actors (titles, embeddings, automatic compaction) cost
// the runs. The load of `runs`, with message_bytes of text in each user message so
// that automatic compaction has work, effects off then on, each on a fresh database;
// then, from the last reply, the time until every effect's backlog is empty, and
// each effect's lag and jobs (runtime_stats::effects).
#include <algorithm>
#include <thread>

#include "bench/workloads.hpp"

namespace skein::bench {
namespace {

// Fixed, not scaled, as in `runs`: one thread's queue stays under thread_queue_max.
constexpr size_t runs_per_thread = 10;
// About 250 estimated tokens per user message (compaction.hpp: 4 bytes a token):
// ten runs make some 2,600 tokens, past auto_compaction_tokens after the eighth run.
constexpr size_t message_bytes = 1000;
constexpr uint64_t auto_compaction_tokens = 2000;
constexpr auto drain_poll = std::chrono::milliseconds(2);

}  // namespace

status run_effects(const bench_options& options, result* out) {
  size_t threads = scaled_count(1000, options.scale);
  table& t = add_table(out,
                       "effects: " + with_commas(static_cast<double>(threads)) + " threads x " +
                           std::to_string(runs_per_thread) + " runs (scripted engine at 0 ms, durability sync, " +
                           std::to_string(run_hosts) + " host threads, " + std::to_string(message_bytes) +
                           "-byte messages), effects off vs on",
                       {col("effects"), col("runs"), col("seconds", "s", 2), col("runs/s", "runs/s"),
                        col("p50", "ms", 3), col("p99", "ms", 3), col("compactions"), col("drain", "ms", 1)});
  std::vector<std::vector<cell>> effect_rows;  // of the pass with effects on
  double per_s[2] = {};
  for (bool on : {false, true}) {
    runtime_options ro;  // durability sync, the default
    ro.effects.titles = ro.effects.embeddings = on;
    agent_config agent = bench_agent();
    agent.effects.titles = on;
    agent.effects.embedder = on ? "hashing" : "";
    agent.compaction.auto_tokens = on ? auto_compaction_tokens : 0;
    std::unique_ptr<runtime> rt;
    std::vector<std::string> ids;
    SKEIN_TRY(open_bench_runtime(options, on ? "effects-on" : "effects-off", ro, agent, &rt, threads, &ids));
    std::string padding(message_bytes, 'x');
    for (size_t i = 0; i < padding.size(); i += 8) padding[i] = ' ';  // words, for the embedder
    host_outcome o;
    SKEIN_TRY(drive_runs(*rt, ids, runs_per_thread, 2, padding, {}, on ? "runs, effects on" : "runs, effects off",
                         options.quiet, &o));
    // The last reply: the hosts have all seen their last run end (joined just now).
    auto last_reply = bench_clock::now();
    runtime_stats at_reply, st;
    cell drain_ms;
    if (on) {
      // How far behind the effects are when the runs end: what the drain works off.
      SKEIN_TRY(rt->stats(&at_reply));
      // A backlog that never drains is a defect, not a figure: 120 s, then an error.
      for (auto deadline = bench_clock::now() + std::chrono::seconds(120);;) {
        SKEIN_TRY(rt->stats(&st));
        auto now = bench_clock::now();
        if (std::all_of(st.effects.begin(), st.effects.end(), [](const auto& e) { return e.backlog == 0; })) {
          drain_ms = num(seconds_since(last_reply, now) * 1000);
          break;
        }
        if (now >= deadline) {
          std::string pending;
          for (const auto& e : st.effects)
            if (e.backlog != 0)
              pending += " " + e.effect + " backlog " + std::to_string(e.backlog) + " (last error '" + e.last_error +
                         "')";
          return status::overloaded("effects not drained within 120 s:" + pending);
        }
        std::this_thread::sleep_for(drain_poll);
      }
      for (const auto& e : st.effects) {
        uint64_t backlog = 0;
        for (const auto& r : at_reply.effects)
          if (r.effect == e.effect) backlog = r.backlog;
        effect_rows.push_back({text(e.effect), num(backlog), num(e.lag_p50_s * 1000), num(e.lag_p99_s * 1000),
                               num(e.done), num(e.failed), num(e.retries), num(e.discarded)});
      }
    } else {
      SKEIN_TRY(rt->stats(&st));
      // Nothing derived with effects off: the log holds exactly what the runs wrote.
      SKEIN_TRY(check_thread_logs(*rt, ids, ids.size(),
                                  {1 + scripted_events_per_run * runs_per_thread, runs_per_thread}));
    }
    SKEIN_TRY(check_log_clean(*rt));
    SKEIN_TRY(rt->close());
    per_s[on] = o.per_s();
    t.rows.push_back({text(on ? "on" : "off"), num(o.completed), num(o.seconds()), num(o.per_s()),
                      num(ms_at(o.latencies_ns, 0.50)), num(ms_at(o.latencies_ns, 0.99)),
                      num(st.compactions), drain_ms});
  }
  t.notes.push_back("on: titles, embeddings (hashing), automatic compaction past " +
                    with_commas(auto_compaction_tokens) +
                    " tokens. drain: from the\nlast reply until every effect's backlog is 0 (runtime::stats polled "
                    "every " + std::to_string(drain_poll.count()) + " ms).");
  add_table(out, "effects: each effect, effects on",
            {col("effect"), col("backlog at last reply"), col("lag p50", "ms", 1), col("lag p99", "ms", 1),
             col("done"), col("failed"), col("retries"), col("discarded")})
      .rows = std::move(effect_rows);
  // Effects on must keep this share of the runs/s with effects off.
  add_target(out, "runs/s effects on / off", per_s[1] / per_s[0], 0.90, "x", better::higher, "effects off");
  return status::ok();
}

}  // namespace skein::bench
