// compaction: what compacting a thread costs, and what it saves at activation.
//
// One database holds threads built through the event log directly (log_builder):
// compaction_samples threads of 10,000 events and, per variant, cold_samples
// threads of 100,000 events (at scale 1). Through skein::runtime then:
//   1. runtime::compact on the 10,000-event threads, with the pure stages
//      (trim-tool-results+drop-thinking) and with the scripted summary
//      (trim-tool-results+drop-thinking+summarize, keep_turns 4): one thread per
//      sample, each compacted once.
//   2. the first run after activation on the 100,000-event threads, without a
//      compaction (it reads the whole log) and after one (the runtime is
//      reopened, so every thread is passive: activation reads the compaction
//      event, the prompt it names and the tail).
// Every compaction must have compacted; every run must end as scripted.
#include <algorithm>

#include "bench/log_builder.hpp"
#include "bench/workloads.hpp"

namespace skein::bench {
namespace {

constexpr uint64_t compact_events_at_scale_1 = 10'000;
constexpr uint64_t long_events_at_scale_1 = 100'000;
constexpr size_t compaction_samples = 8;
constexpr size_t cold_samples = 8;

struct timing_row {
  std::string what;
  uint64_t events = 0;  // in each thread's log
  size_t samples = 0;
  double p50_ms = 0;
  double max_ms = 0;
  uint64_t tokens_before = 0;  // of the last sample (compactions only)
  uint64_t tokens_after = 0;
};

double ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }

timing_row summarize_ns(std::string what, uint64_t events, std::vector<int64_t> ns) {
  timing_row r;
  r.what = std::move(what);
  r.events = events;
  r.samples = ns.size();
  std::sort(ns.begin(), ns.end());
  if (!ns.empty()) {
    r.p50_ms = ms(ns[ns.size() / 2]);
    r.max_ms = ms(ns.back());
  }
  return r;
}

void add_rows(const std::vector<timing_row>& rows, result* out) {
  table& t = add_table(out, "compaction", {col("what"), col("events"), col("samples"), col("p50", "ms", 2),
                                           col("max", "ms", 2), col("tokens before"), col("tokens after")});
  for (const auto& r : rows)
    t.rows.push_back({text(r.what), num(r.events), num(r.samples), num(r.p50_ms), num(r.max_ms),
                      r.tokens_before == 0 ? cell{} : num(r.tokens_before),
                      r.tokens_before == 0 ? cell{} : num(r.tokens_after)});
}

status time_compactions(runtime& rt, const std::vector<std::string>& ids, const std::vector<std::string>& stages,
                        uint64_t events, timing_row* row) {
  std::vector<int64_t> ns;
  compact_result last;
  for (const auto& id : ids) {
    compact_options o;
    o.stages = stages;
    compact_result r;
    auto start = bench_clock::now();
    SKEIN_TRY(rt.compact(id, o, &r));
    ns.push_back((bench_clock::now() - start).count());
    if (!r.compacted) return status::corruption("thread " + id + ": not compacted: " + r.reason);
    last = r;
  }
  std::string what = "compact ";
  for (size_t i = 0; i < stages.size(); ++i) what += (i ? "+" : "") + stages[i];
  *row = summarize_ns(what, events, std::move(ns));
  row->tokens_before = last.tokens_before;
  row->tokens_after = last.tokens_after;
  return status::ok();
}

status time_first_runs(runtime& rt, const std::vector<std::string>& ids, uint64_t events, std::string what,
                       timing_row* row) {
  std::vector<int64_t> ns;
  for (const auto& id : ids)
    SKEIN_TRY(run_checked(rt, id, "first run after activation", {}, &ns.emplace_back()));
  *row = summarize_ns(std::move(what), events, std::move(ns));
  return status::ok();
}

}  // namespace

status run_compaction(const bench_options& options, result* out) {
  uint64_t short_events = buildable_length(static_cast<uint64_t>(compact_events_at_scale_1 * options.scale));
  uint64_t long_events = buildable_length(static_cast<uint64_t>(long_events_at_scale_1 * options.scale));
  std::string path = options.dir + "/compaction";
  auto pure = bench_thread_ids(compaction_samples, 1);
  auto summarized = bench_thread_ids(compaction_samples, 2);
  auto cold_plain = bench_thread_ids(cold_samples, 3);
  auto cold_compacted = bench_thread_ids(cold_samples, 4);
  {
    std::unique_ptr<event_log> log;
    SKEIN_TRY(open_build_log(path, true, &log));
    SKEIN_TRY(log->put_agent(bench_agent_config()));
    build_stats st;
    SKEIN_TRY(build_threads(*log, bench_agent_id, pure, short_events, options.quiet, &st));
    SKEIN_TRY(build_threads(*log, bench_agent_id, summarized, short_events, options.quiet, &st));
    SKEIN_TRY(build_threads(*log, bench_agent_id, cold_plain, long_events, options.quiet, &st));
    SKEIN_TRY(build_threads(*log, bench_agent_id, cold_compacted, long_events, options.quiet, &st));
  }
  std::vector<timing_row> rows;
  runtime_options ro;
  ro.data_dir = path;
  ro.mode = durability::sync;
  {
    std::unique_ptr<runtime> rt;
    SKEIN_TRY(runtime::open(ro, &rt));
    SKEIN_TRY(time_compactions(*rt, pure, {"trim-tool-results", "drop-thinking"}, short_events, &rows.emplace_back()));
    SKEIN_TRY(time_compactions(*rt, summarized, {"trim-tool-results", "drop-thinking", "summarize"}, short_events,
                               &rows.emplace_back()));
    timing_row compact_long;
    SKEIN_TRY(time_compactions(*rt, cold_compacted, {"trim-tool-results", "drop-thinking", "summarize"},
                               long_events, &compact_long));
    rows.push_back(compact_long);
    SKEIN_TRY(rt->close());
  }
  {
    std::unique_ptr<runtime> rt;  // reopened: every thread passive
    SKEIN_TRY(runtime::open(ro, &rt));
    SKEIN_TRY(time_first_runs(*rt, cold_plain, long_events, "first run after activation, no compaction",
                              &rows.emplace_back()));
    SKEIN_TRY(time_first_runs(*rt, cold_compacted, long_events, "first run after activation, compacted",
                              &rows.emplace_back()));
    SKEIN_TRY(rt->close());
  }
  add_rows(rows, out);
  return status::ok();
}

}  // namespace skein::bench
