// history: does appending to a thread cost more when its log is long? Threads whose
// logs already hold 10, 1,000 and 100,000 events (log_builder) take one-event ticks
// through the journal, as `append` commits them: concurrently (one in flight per
// thread of a length, so that group commit works) and sequentially (one thread, one
// at a time), the lengths taking turns round after round. Before that, a few threads
// of each length are activated through skein::runtime and run once: that first run
// reads the whole log, so it grows with the history, and is reported apart.
#include <algorithm>

#include "bench/log_builder.hpp"
#include "bench/workloads.hpp"
#include "runtime/model/ids.hpp"

namespace skein::bench {
namespace {

constexpr uint64_t lengths_at_scale_1[] = {10, 1'000, 100'000};
constexpr size_t threads_per_length = 32;
constexpr size_t cold_samples = 4;  // threads per length brought back through the runtime

// One-event ticks of one history length in one manner (concurrent or sequential).
struct history_append {
  uint64_t events = 0;
  double seconds = 0;       // first send to last ack, summed over the rounds
  uint64_t writes = 0;      // RocksDB writes (one fsync each) they took
  std::vector<int64_t> ns;  // ack latencies

  double us_per_event() const { return events > 0 ? seconds * 1e6 / static_cast<double>(events) : 0; }
};

// One history length: its threads and their appends.
struct length_set {
  uint64_t history_events = 0;      // in each thread's log before the appends
  std::vector<std::string> ids;
  std::vector<manifest> manifests;  // current: each tick resends its thread's
  history_append appends[2];        // concurrent: every thread, one tick in flight each; sequential: one thread
};

}  // namespace

status run_history(const bench_options& options, result* out) {
  std::vector<length_set> sets;
  for (uint64_t length : lengths_at_scale_1) {
    // The shortest length is what a new thread has: it does not shrink with the scale.
    uint64_t scaled = length == lengths_at_scale_1[0] ? length : scaled_count(length, options.scale);
    sets.emplace_back().history_events = buildable_length(scaled);
  }
  size_t concurrent = scaled_count(1'000, options.scale);  // ticks per thread
  size_t sequential = scaled_count(2'000, options.scale);  // on the one thread
  size_t rounds = std::min({size_t{5}, concurrent, sequential});

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
  // Through skein::runtime, before the appends; the lengths take turns, sample after
  // sample, like the appends' rounds. The first run after activation reads the log:
  // what coming back costs at this history length. It must complete as scripted,
  // right after the history. One row per length.
  std::vector<std::vector<cell>> cold_rows;
  {
    std::unique_ptr<runtime> rt;
    SKEIN_TRY(open_built_runtime(path, &rt));
    std::vector<std::vector<int64_t>> activate(sets.size()), run(sets.size());
    for (size_t s = 0; s < cold_samples; ++s) {
      for (size_t k = 0; k < sets.size(); ++k)
        SKEIN_TRY(time_cold(*rt, sets[k].ids[s], "first run after activation",
                            {.first_seq = sets[k].history_events + 1}, &activate[k].emplace_back(),
                            &run[k].emplace_back()));
    }
    runtime_stats st;
    SKEIN_TRY(rt->stats(&st));
    if (st.activations != cold_samples * sets.size())
      return status::corruption(std::to_string(st.activations) + " activations for " +
                                std::to_string(cold_samples * sets.size()) + " cold threads");
    for (size_t k = 0; k < sets.size(); ++k) {
      cold_rows.push_back({num(sets[k].history_events), num(cold_samples),
                           num(ms_at(activate[k], 0.50)), num(ms_at(activate[k], 1.0)),
                           num(ms_at(run[k], 0.50)), num(ms_at(run[k], 1.0))});
    }
    SKEIN_TRY(rt->close());
  }

  // One pass of each kind per length per round, the round's first length rotating
  // so that none is always first after a pause. Then every acknowledged tick must be
  // in the log, after the history, in order.
  log_options lo;
  lo.path = path;
  lo.mode = durability::sync;
  std::unique_ptr<event_log> log;
  SKEIN_TRY(event_log::open(lo, &log));
  std::vector<std::vector<uint64_t>> before(sets.size());  // last_seq when the appends began
  for (size_t k = 0; k < sets.size(); ++k) {
    sets[k].manifests.resize(sets[k].ids.size());
    for (size_t i = 0; i < sets[k].ids.size(); ++i) {
      SKEIN_TRY(log->read_manifest(sets[k].ids[i], &sets[k].manifests[i]));
      before[k].push_back(sets[k].manifests[i].last_seq);
    }
  }
  // Text that differs from tick to tick, as messages do.
  auto make_event = [](size_t, uint64_t seq) {
    std::string text = "appended message " + std::to_string(seq) + ":";
    while (text.size() < 200) text += " the deploy of build " + std::to_string(seq % 97);
    text.resize(200);
    event e = make_message(message_role::user, std::move(text));
    e.seq = seq;
    e.ts_ms = now_ms();
    return e;
  };
  progress bar{"appending", rounds * sets.size(), options.quiet};
  uint64_t commits = 0;  // every one-event tick of the rounds
  for (const auto& set : sets) commits += rounds * (set.ids.size() * (concurrent / rounds) + sequential / rounds);
  SKEIN_TRY(with_journal(*log, commits, [&](caf::actor_system& sys, const journal_actor& journal) {
    for (size_t r = 0; r < rounds; ++r) {
      for (size_t turn = 0; turn < sets.size(); ++turn) {
        length_set& set = sets[(r + turn) % sets.size()];
        for (size_t kind : {0, 1}) {
          history_append& a = set.appends[kind];
          size_t threads = kind == 0 ? set.ids.size() : 1;
          size_t ticks = (kind == 0 ? concurrent : sequential) / rounds;
          uint64_t writes = log->counters().writes;
          SKEIN_TRY(drive_ticks(sys, journal, set.manifests.data(), threads, ticks, make_event, nullptr, &a.ns,
                                &a.seconds));
          a.writes += log->counters().writes - writes;
          a.events += threads * ticks;
        }
        bar.advance();
      }
    }
    return status::ok();
  }));
  std::vector<event> events;
  for (size_t k = 0; k < sets.size(); ++k) {
    const length_set& set = sets[k];
    for (size_t i = 0; i < set.ids.size(); ++i) {
      // The sequential ticks all went to the first thread.
      uint64_t appended = set.appends[0].events / set.ids.size() + (i == 0 ? set.appends[1].events : 0);
      uint64_t want = before[k][i] + appended;
      manifest m;
      SKEIN_TRY(log->read_manifest(set.ids[i], &m));
      SKEIN_TRY(log->read_events(set.ids[i], before[k][i] + 1, 0, &events));
      bool in_order = set.manifests[i].last_seq == want;  // what the journal acknowledged
      for (size_t j = 0; j < events.size(); ++j) in_order = in_order && events[j].seq == before[k][i] + 1 + j;
      if (m.last_seq != want || events.size() != appended || !in_order)
        return status::corruption("thread " + set.ids[i] + ": last_seq " + std::to_string(m.last_seq) + " and " +
                                  std::to_string(events.size()) + " events after seq " +
                                  std::to_string(before[k][i]) + ", expected last_seq " + std::to_string(want) +
                                  " and " + std::to_string(appended));
    }
  }

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
    for (size_t kind : {0, 1}) {
      history_append& a = set.appends[kind];
      t.rows.push_back({num(set.history_events), text(kind == 0 ? "concurrent" : "sequential"), num(a.events),
                        num(a.seconds > 0 ? a.events / a.seconds : 0), num(a.us_per_event()),
                        num(a.writes > 0 ? static_cast<double>(a.events) / a.writes : 0),
                        num(ms_at(a.ns, 0.50)), num(ms_at(a.ns, 0.99))});
      if (!options.plot) continue;
      if (kind == 0)
        add_bar(out, "throughput-history", "history: throughput (events/s appended concurrently, higher is better)",
                "events/s appended concurrently", label, a.events / a.seconds);
      add_cdf(out, "latency-history", "history: latency CDF", label + (kind == 0 ? ", concurrent" : ", sequential"),
              std::move(a.ns));
    }
  }
  t.notes.push_back("concurrent: " + std::to_string(threads_per_length) +
                    " threads of the length, one tick in flight each; us/event = wall time / events.\n"
                    "sequential: one thread, one tick at a time; us/event = the mean ack latency. "
                    "Latency: send to ack.");
  add_table(out, "history: cold activation",
            {col("history events"), col("samples"), col("activation p50", "ms", 3), col("max", "ms", 3),
             col("first run p50", "ms", 3), col("max", "ms", 3)})
      .rows = std::move(cold_rows);
  out->tables.back().notes.push_back(
      "through skein::runtime, before the appends: cancel() on a passive thread activates it from its "
      "manifest;\nits first run then reads the whole log once, which grows with the history. Not "
      "part of the append figures.");
  const length_set &first = sets.front(), &last = sets.back();
  std::string lengths =
      with_commas(last.history_events) + "-event over " + with_commas(first.history_events) + "-event history";
  for (size_t kind : {0, 1})
    add_target(out, std::string{"us/event, "} + (kind == 0 ? "concurrent, " : "sequential, ") + lengths,
               last.appends[kind].us_per_event() / first.appends[kind].us_per_event(), 1.2, "x", better::lower);
  return status::ok();
}

}  // namespace skein::bench
