// usage: the time of a usage query (event_log::query_usage, what GET /v1/usage and
// `skein usage` run) over 100,000 usage rows at scale 1: 10 agents x 1,000
// threads x 10 runs, built through the event log directly (log_builder). Each
// query runs `repeats` times; the table gives the fastest and the median. Filters:
// none (a full scan of the usage column family), grouped by day; one agent (its
// index entries, then its threads' rows: a tenth of them); one thread (one
// prefix scan). The database stays in --dir (usage/) for `skein serve --data`.
#include <algorithm>

#include "bench/log_builder.hpp"
#include "bench/workloads.hpp"

namespace skein::bench {
namespace {

constexpr size_t agents = 10;
constexpr size_t threads_per_agent_at_scale_1 = 1000;
constexpr uint64_t runs_per_thread = 10;
constexpr int repeats = 5;

struct query_row {
  std::string name;
  usage_query query;
  uint64_t rows = 0;
  double min_ms = 0;
  double median_ms = 0;
};

status time_query(const event_log& log, query_row* row) {
  std::vector<double> ms;
  for (int i = 0; i < repeats; ++i) {
    usage_report r;
    auto start = bench_clock::now();
    SKEIN_TRY(log.query_usage(row->query, &r));
    ms.push_back(seconds_since(start, bench_clock::now()) * 1000);
    row->rows = r.rows;
  }
  std::sort(ms.begin(), ms.end());
  row->min_ms = ms.front();
  row->median_ms = ms[ms.size() / 2];
  return status::ok();
}

}  // namespace

status run_usage(const bench_options& options, result* out) {
  const size_t threads = scaled_count(threads_per_agent_at_scale_1, options.scale);
  const std::string path = options.dir + "/usage";
  std::unique_ptr<event_log> log;
  SKEIN_TRY(open_build_log(path, true, &log));
  std::string first_thread;
  for (size_t a = 0; a < agents; ++a) {
    agent_config agent = bench_agent_config();
    agent.id = "usage" + std::to_string(a);
    SKEIN_TRY(log->put_agent(agent));
    auto ids = bench_thread_ids(threads, a + 1);
    if (first_thread.empty()) first_thread = ids.front();
    build_stats stats;
    SKEIN_TRY(build_threads(*log, agent.id, ids, 1 + history_run_events * runs_per_thread, true, &stats));
  }
  const uint64_t want = agents * threads * runs_per_thread;

  std::vector<query_row> rows(3);
  rows[0].name = "full scan, by day";
  rows[0].query.group_by = usage_query::group::day;
  rows[1].name = "agent filter";
  rows[1].query.agent_id = "usage0";
  rows[2].name = "thread filter";
  rows[2].query.thread_id = first_thread;
  for (auto& r : rows) SKEIN_TRY(time_query(*log, &r));
  if (rows[0].rows != want)
    return status::corruption("usage: the full scan counted " + std::to_string(rows[0].rows) + " rows of " +
                              std::to_string(want));

  table& t = add_table(out,
                       "usage: " + with_commas(static_cast<double>(want)) + " usage rows (" + std::to_string(agents) +
                           " agents x " + with_commas(static_cast<double>(threads)) + " threads x " +
                           std::to_string(runs_per_thread) + " runs); " + std::to_string(repeats) + " queries each",
                       {col("query"), col("rows"), col("min", "ms", 2), col("median", "ms", 2)});
  for (const auto& r : rows) t.rows.push_back({text(r.name), num(r.rows), num(r.min_ms), num(r.median_ms)});
  return status::ok();
}

}  // namespace skein::bench
