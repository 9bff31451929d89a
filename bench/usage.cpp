// usage: event_log::query_usage (GET /v1/usage, `skein usage`) over 100,000 usage
// rows (10 agents x 1,000 threads x 10 runs at scale 1, built through the event
// log): a full scan grouped by day, one agent (its index, then a tenth of the
// rows), one thread (one prefix scan). The database stays in --dir (usage/).
#include <algorithm>

#include "bench/log_builder.hpp"
#include "bench/workloads.hpp"

namespace skein::bench {

status run_usage(const bench_options& options, result* out) {
  const size_t agents = 10, threads = scaled_count(1000, options.scale), runs = 10, repeats = 5;
  std::unique_ptr<event_log> log;
  SKEIN_TRY(open_build_log(options.dir + "/usage", true, &log));
  std::string first_thread;
  for (size_t a = 0; a < agents; ++a) {
    agent_config agent = bench_agent_config();
    agent.id = "usage" + std::to_string(a);
    SKEIN_TRY(log->put_agent(agent));
    auto ids = bench_thread_ids(threads, a + 1);
    if (first_thread.empty()) first_thread = ids.front();
    build_stats stats;
    SKEIN_TRY(build_threads(*log, agent.id, ids, 1 + history_run_events * runs, true, &stats));
  }
  const uint64_t want = agents * threads * runs;
  table& t = add_table(out,
                       "usage: " + with_commas(static_cast<double>(want)) + " usage rows (" + std::to_string(agents) +
                           " agents x " + with_commas(static_cast<double>(threads)) + " threads x " +
                           std::to_string(runs) + " runs); " + std::to_string(repeats) + " queries each",
                       {col("query"), col("rows"), col("min", "ms", 2), col("median", "ms", 2)});
  usage_query by_day, by_agent, by_thread;
  by_day.group_by = usage_query::group::day;
  by_agent.agent_id = "usage0";
  by_thread.thread_id = first_thread;
  std::pair<const char*, const usage_query*> queries[] = {
      {"full scan, by day", &by_day}, {"agent filter", &by_agent}, {"thread filter", &by_thread}};
  for (auto [name, query] : queries) {
    std::vector<double> ms;
    uint64_t rows = 0;
    for (size_t i = 0; i < repeats; ++i) {
      usage_report r;
      auto start = bench_clock::now();
      SKEIN_TRY(log->query_usage(*query, &r));
      ms.push_back(seconds_since(start, bench_clock::now()) * 1000);
      rows = r.rows;
    }
    if (query == &by_day && rows != want)
      return status::corruption("usage: the full scan counted " + std::to_string(rows) + " rows of " +
                                std::to_string(want));
    std::sort(ms.begin(), ms.end());
    t.rows.push_back({text(name), num(rows), num(ms.front()), num(ms[ms.size() / 2])});
  }
  return status::ok();
}

}  // namespace skein::bench
