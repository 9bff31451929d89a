// compaction: runtime::compact on 10,000-event threads (pure stages, and with the
// scripted summary), and the first run after activation on 100,000-event threads
// without and after a compaction (reopened: activation reads the compaction event,
// the prompt it names and the tail), on threads built through the event log.
#include <algorithm>

#include "bench/log_builder.hpp"
#include "bench/workloads.hpp"

namespace skein::bench {

status run_compaction(const bench_options& options, result* out) {
  uint64_t short_events = buildable_length(static_cast<uint64_t>(10'000 * options.scale));
  uint64_t long_events = buildable_length(static_cast<uint64_t>(100'000 * options.scale));
  runtime_options ro;
  ro.data_dir = options.dir + "/compaction";
  std::vector<std::string> ids[4];  // pure, summarized, cold without and with a compaction
  {
    std::unique_ptr<event_log> log;
    SKEIN_TRY(open_build_log(ro.data_dir, true, &log));
    SKEIN_TRY(log->put_agent(bench_agent_config()));
    for (size_t i = 0; i < 4; ++i) {
      ids[i] = bench_thread_ids(8, i + 1);
      build_stats st;
      SKEIN_TRY(build_threads(*log, bench_agent_id, ids[i], i < 2 ? short_events : long_events, options.quiet, &st));
    }
  }
  table& t = add_table(out, "compaction", {col("what"), col("events"), col("samples"), col("p50", "ms", 2),
                                           col("max", "ms", 2), col("tokens before"), col("tokens after")});
  // A row of timings; tokens of the last compaction (none for runs).
  auto add_row = [&](std::string what, uint64_t events, std::vector<int64_t> ns, const compact_result* last) {
    std::sort(ns.begin(), ns.end());
    bool tokens = last != nullptr && last->tokens_before != 0;
    t.rows.push_back({text(std::move(what)), num(events), num(ns.size()), num(ns[ns.size() / 2] / 1e6),
                      num(ns.back() / 1e6), tokens ? num(last->tokens_before) : cell{},
                      tokens ? num(last->tokens_after) : cell{}});
  };
  const std::vector<std::string> pure = {"trim-tool-results", "drop-thinking"};
  const std::vector<std::string> summary = {"trim-tool-results", "drop-thinking", "summarize"};
  std::unique_ptr<runtime> rt;
  SKEIN_TRY(runtime::open(ro, &rt));
  std::pair<size_t, const std::vector<std::string>*> compactions[] = {{0, &pure}, {1, &summary}, {3, &summary}};
  for (auto [set, stages] : compactions) {
    std::vector<int64_t> ns;
    compact_result last;
    for (const auto& id : ids[set]) {
      compact_options o;
      o.stages = *stages;
      compact_result r;
      SKEIN_TRY(timed(&ns, [&] { return rt->compact(id, o, &r); }));
      if (!r.compacted) return status::corruption("thread " + id + ": not compacted: " + r.reason);
      last = r;
    }
    std::string what = "compact ";
    for (size_t i = 0; i < stages->size(); ++i) what += (i ? "+" : "") + (*stages)[i];
    add_row(what, set == 3 ? long_events : short_events, std::move(ns), &last);
  }
  SKEIN_TRY(rt->close());
  rt.reset();
  SKEIN_TRY(runtime::open(ro, &rt));  // reopened: every thread passive
  for (size_t set : {2, 3}) {
    std::vector<int64_t> ns;
    for (const auto& id : ids[set])
      SKEIN_TRY(run_checked(*rt, id, "first run after activation", {}, &ns.emplace_back()));
    add_row(set == 2 ? "first run after activation, no compaction" : "first run after activation, compacted",
            long_events, std::move(ns), nullptr);
  }
  return rt->close();
}

}  // namespace skein::bench
