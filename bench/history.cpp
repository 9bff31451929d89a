// history: does appending to a thread cost more when its log is long?
//
// One database holds, for each history length (10, 1,000 and 100,000 events at
// scale 1), threads_per_length threads whose logs already hold that many events,
// built through the event log directly (log_builder). Then one-event ticks are
// committed through the journal actor, as the append workload commits them:
// concurrently, one driver actor per thread of a length with one tick in flight
// each, so that group commit works as in real use; and sequentially, one tick at
// a time on one thread, so that the latency of a lone append shows. The lengths
// take turns, round after round, so that whatever the disk and RocksDB's
// background compaction do meanwhile falls on every length alike.
//
// Before the appends, a few threads of each length are brought back through
// skein::runtime while passive: activation, and the first run, which reads the
// thread's whole log once. That cost does grow with the history; it is reported
// apart and never mixed into the append figures.
#include <caf/actor_system.hpp>

#include <algorithm>

#include "actors/error.hpp"
#include "actors/journal.hpp"
#include "bench/log_builder.hpp"
#include "bench/workloads.hpp"
#include "runtime/model/ids.hpp"

namespace skein::bench {
namespace {

constexpr double history_cost_ratio_max = 1.2;

constexpr uint64_t lengths_at_scale_1[] = {10, 1'000, 100'000};
constexpr size_t threads_per_length = 32;
constexpr size_t concurrent_ticks_at_scale_1 = 1'000;  // per thread
constexpr size_t sequential_ticks_at_scale_1 = 2'000;  // on the one thread
constexpr size_t rounds_max = 5;
constexpr size_t cold_samples = 4;  // threads per length brought back through the runtime
constexpr size_t text_bytes = 200;

// One-event ticks of one history length in one manner (concurrent or sequential).
struct history_append {
  uint64_t events = 0;
  double seconds = 0;   // first send to last ack, summed over the rounds
  uint64_t writes = 0;  // RocksDB writes (one fsync each) they took
  std::vector<int64_t> ns;  // ack latencies

  double us_per_event() const { return events > 0 ? seconds * 1e6 / static_cast<double>(events) : 0; }
};

// One history length: its threads, their appends and their cold activations.
struct length_set {
  uint64_t history_events = 0;     // in each thread's log before the appends
  std::vector<std::string> ids;
  std::vector<manifest> manifests;  // current: each tick resends its thread's
  std::vector<uint64_t> appended;   // ticks acknowledged per thread
  std::vector<uint64_t> seq_before;  // last_seq when the appends began
  history_append concurrent;        // every thread of the length, one tick in flight each
  history_append sequential;        // one thread, one tick at a time
  std::vector<cell> cold;           // the row of the cold activation table
};

// Text that differs from tick to tick, as messages do.
std::string append_text(uint64_t seq) {
  std::string out = "appended message " + std::to_string(seq) + ":";
  while (out.size() < text_bytes) out += " the deploy of build " + std::to_string(seq % 97);
  out.resize(text_bytes);
  return out;
}

// Appends `ticks` ticks to each of the first `threads` threads of `set` at once;
// the writes they took from the log's counters.
status append_pass(caf::actor_system& sys, const caf::actor& journal, const event_log& log, length_set& set,
                   size_t threads, size_t ticks, history_append* a) {
  std::vector<uint64_t> before(threads);
  for (size_t i = 0; i < threads; ++i) before[i] = set.manifests[i].last_seq;
  uint64_t writes = log.counters().writes;
  status s = drive_ticks(sys, journal, set.manifests.data(), threads, ticks,
                         [](size_t, uint64_t seq) {
                           event e = make_message(message_role::user, append_text(seq));
                           e.seq = seq;
                           e.ts_ms = now_ms();
                           return e;
                         },
                         nullptr, &a->ns, &a->seconds);
  a->writes += log.counters().writes - writes;
  a->events += threads * ticks;
  for (size_t i = 0; i < threads; ++i) set.appended[i] += set.manifests[i].last_seq - before[i];
  return s;
}

// --- phases ------------------------------------------------------------------------

// Through skein::runtime, before the appends; the lengths take turns, sample after
// sample, like the appends' rounds.
status measure_cold(const std::string& path, std::vector<length_set>& sets) {
  std::unique_ptr<runtime> rt;
  SKEIN_TRY(open_built_runtime(path, &rt));
  size_t samples = std::min(cold_samples, threads_per_length);
  std::vector<std::vector<int64_t>> activate(sets.size()), run(sets.size());
  for (size_t s = 0; s < samples; ++s) {
    for (size_t k = 0; k < sets.size(); ++k) {
      // The first run after activation reads the log: what coming back costs at
      // this history length. It must complete as scripted, right after the history.
      SKEIN_TRY(time_cold(*rt, sets[k].ids[s], "first run after activation",
                          {.first_seq = sets[k].history_events + 1}, &activate[k].emplace_back(),
                          &run[k].emplace_back()));
    }
  }
  runtime_stats st;
  SKEIN_TRY(rt->stats(&st));
  if (st.activations != samples * sets.size())
    return status::corruption(std::to_string(st.activations) + " activations for " +
                              std::to_string(samples * sets.size()) + " cold threads");
  for (size_t k = 0; k < sets.size(); ++k) {
    auto max_ms = [](const std::vector<int64_t>& ns) { return static_cast<double>(*std::max_element(ns.begin(), ns.end())) / 1e6; };
    sets[k].cold = {num(sets[k].history_events), num(samples), num(quantile_us(activate[k], 0.50) / 1000),
                    num(max_ms(activate[k])), num(quantile_us(run[k], 0.50) / 1000), num(max_ms(run[k]))};
  }
  return rt->close();
}

// Every acknowledged tick is in the log, after the history, in order.
status verify_appends(const event_log& log, const length_set& set) {
  std::vector<event> events;
  for (size_t i = 0; i < set.ids.size(); ++i) {
    manifest m;
    SKEIN_TRY(log.read_manifest(set.ids[i], &m));
    SKEIN_TRY(log.read_events(set.ids[i], set.seq_before[i] + 1, 0, &events));
    uint64_t want = set.seq_before[i] + set.appended[i];
    bool in_order = true;
    for (size_t j = 0; j < events.size(); ++j) in_order = in_order && events[j].seq == set.seq_before[i] + 1 + j;
    if (m.last_seq != want || events.size() != set.appended[i] || !in_order)
      return status::corruption("thread " + set.ids[i] + ": last_seq " + std::to_string(m.last_seq) + " and " +
                                std::to_string(events.size()) + " events after seq " +
                                std::to_string(set.seq_before[i]) + ", expected last_seq " + std::to_string(want) +
                                " and " + std::to_string(set.appended[i]));
  }
  return status::ok();
}

// One pass of each kind per length per round, the round's first length rotating
// so that none is always first after a pause.
status measure_appends(const std::string& path, size_t rounds, size_t concurrent_ticks, size_t sequential_ticks,
                       std::vector<length_set>& sets, bool quiet) {
  log_options lo;
  lo.path = path;
  lo.mode = durability::sync;
  std::unique_ptr<event_log> log;
  SKEIN_TRY(event_log::open(lo, &log));
  for (auto& set : sets) {
    set.manifests.resize(set.ids.size());
    set.appended.assign(set.ids.size(), 0);
    set.seq_before.resize(set.ids.size());
    for (size_t i = 0; i < set.ids.size(); ++i) {
      SKEIN_TRY(log->read_manifest(set.ids[i], &set.manifests[i]));
      set.seq_before[i] = set.manifests[i].last_seq;
    }
  }
  progress bar{"appending", rounds * sets.size(), progress_wanted(quiet)};
  SKEIN_TRY(with_journal(*log, [&](caf::actor_system& sys, const caf::actor& journal) {
    for (size_t r = 0; r < rounds; ++r) {
      for (size_t turn = 0; turn < sets.size(); ++turn) {
        length_set& set = sets[(r + turn) % sets.size()];
        SKEIN_TRY(append_pass(sys, journal, *log, set, set.ids.size(), concurrent_ticks, &set.concurrent));
        SKEIN_TRY(append_pass(sys, journal, *log, set, 1, sequential_ticks, &set.sequential));
        bar.advance();
      }
    }
    return status::ok();
  }));
  uint64_t ticks = 0;
  for (const auto& set : sets) ticks += set.concurrent.events + set.sequential.events;
  SKEIN_TRY(check_log_counters(*log, ticks));
  for (const auto& set : sets) SKEIN_TRY(verify_appends(*log, set));
  return status::ok();
}

void report(std::vector<length_set>& sets, size_t rounds, const build_stats& built, bool plot, result* out) {
  table& t = add_table(
      out,
      "history: one-event ticks through the journal on threads with long logs, durability sync;\n" +
          std::to_string(threads_per_length) + " threads per history length, built through the event log (" +
          with_commas(built.events) + " events in " + fixed(built.seconds, 1) +
          " s: not part of any figure);\nthe lengths take turns, " + std::to_string(rounds) + " rounds",
      {col("history events"), col("appends"), col("events"), col("events/s", "events/s"), col("us/event", "", 1),
       col("commits/write", "", 1), col("p50", "ms", 3), col("p99", "ms", 3)});
  for (auto& set : sets) {
    std::string label = "skein, " + with_commas(set.history_events) + "-event history";
    for (history_append* a : {&set.concurrent, &set.sequential}) {
      bool concurrent = a == &set.concurrent;
      t.rows.push_back({num(set.history_events), text(concurrent ? "concurrent" : "sequential"), num(a->events),
                        num(a->seconds > 0 ? a->events / a->seconds : 0), num(a->us_per_event()),
                        num(a->writes > 0 ? static_cast<double>(a->events) / a->writes : 0),
                        num(quantile_us(a->ns, 0.50) / 1000), num(quantile_us(a->ns, 0.99) / 1000)});
      if (!plot) continue;
      if (concurrent)
        add_bar(out, "throughput-history", "history: throughput (events/s appended concurrently, higher is better)",
                "events/s appended concurrently", label, a->events / a->seconds);
      add_cdf(out, "latency-history", "history: latency CDF", label + (concurrent ? ", concurrent" : ", sequential"),
              std::move(a->ns));
    }
  }
  t.notes.push_back("concurrent: " + std::to_string(threads_per_length) +
                    " threads of the length, one tick in flight each; us/event = wall time / events.\n"
                    "sequential: one thread, one tick at a time; us/event = the mean ack latency. Latency: send to ack.");
  table& cold = add_table(out, "history: cold activation",
                          {col("history events"), col("samples"), col("activation p50", "ms", 3), col("max", "ms", 3),
                           col("first run p50", "ms", 3), col("max", "ms", 3)});
  for (const auto& set : sets) cold.rows.push_back(set.cold);
  cold.notes.push_back("through skein::runtime, before the appends: cancel() on a passive thread activates it from its "
                       "manifest;\nits first run then reads the whole log once, which grows with the history. Not "
                       "part of the append figures.");
  if (sets.size() < 2) return;
  const length_set &first = sets.front(), &last = sets.back();
  std::string lengths = with_commas(last.history_events) + "-event over " + with_commas(first.history_events) +
                        "-event history";
  add_target(out, "us/event, concurrent, " + lengths, last.concurrent.us_per_event() / first.concurrent.us_per_event(),
             history_cost_ratio_max, "x", better::lower);
  add_target(out, "us/event, sequential, " + lengths, last.sequential.us_per_event() / first.sequential.us_per_event(),
             history_cost_ratio_max, "x", better::lower);
}

}  // namespace

status run_history(const bench_options& options, result* out) {
  std::vector<length_set> sets;
  for (uint64_t length : lengths_at_scale_1) {
    // The shortest length is what a new thread has: it does not shrink with the scale.
    uint64_t scaled = length == lengths_at_scale_1[0] ? length : scaled_count(length, options.scale);
    sets.emplace_back().history_events = buildable_length(scaled);
  }
  size_t concurrent = scaled_count(concurrent_ticks_at_scale_1, options.scale);
  size_t sequential = scaled_count(sequential_ticks_at_scale_1, options.scale);
  size_t rounds = std::min({rounds_max, concurrent, sequential});

  const std::string path = options.dir + "/history";
  build_stats built;
  {
    std::unique_ptr<event_log> log;
    SKEIN_TRY(open_build_log(path, true, &log));
    SKEIN_TRY(log->put_agent(bench_agent_config()));
    for (size_t k = 0; k < sets.size(); ++k) {
      sets[k].ids = bench_thread_ids(threads_per_length, k + 1);
      SKEIN_TRY(build_threads(*log, bench_agent_id, sets[k].ids, sets[k].history_events, options.quiet, &built));
    }
  }
  SKEIN_TRY(measure_cold(path, sets));
  SKEIN_TRY(measure_appends(path, rounds, concurrent / rounds, sequential / rounds, sets, options.quiet));
  report(sets, rounds, built, options.plot, out);
  return status::ok();
}

}  // namespace skein::bench
