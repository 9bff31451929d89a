// sequential: does a thread slow down as its history grows? One thread, 2,000 runs
// one after another (scripted engine at 0 ms), its log growing five events a run;
// the mean of the last 200 runs against that of the first 200. Embedded and through
// the HTTP API in this process (one keep-alive connection), each on a fresh database.
#include <algorithm>
#include <memory>
#include <numeric>

#include "bench/workloads.hpp"
#include "tools/client/http_client.hpp"
#include "tools/server/http_server.hpp"

namespace skein::bench {
namespace {

// The runs compared at each end of the sequence.
constexpr size_t window_runs = 200;

double mean_ms(const int64_t* from, const int64_t* to) {
  return std::accumulate(from, to, 0.0) / static_cast<double>(to - from) / 1e6;
}

double median_ms(const int64_t* from, const int64_t* to) { return ms_at({from, to}, 0.50); }

}  // namespace

status run_sequential(const bench_options& options, result* out) {
  // Both windows must exist and must not overlap.
  size_t runs = std::max(2 * window_runs, scaled_count(2'000, options.scale));
  table& t = add_table(out, "sequential: one thread x " + with_commas(runs) +
                                " runs one after another (scripted engine at 0 ms)",
                       {col("path"), col("durability"), col("runs"), col("runs/s"), col("p50", "ms", 3),
                        col("p99", "ms", 3), col("first 200 mean", "ms", 3), col("last 200 mean", "ms", 3),
                        col("last/first means", "x", 2), col("last/first medians", "x", 2),
                        col("old/new interleaved", "x", 2), col("events at end")});
  // Each run's latency over the seconds of its path: the drift, if any, shows.
  chart drift{chart::kind::over_time, "drift-sequential", "sequential: each run's latency over the runs", "ms",
              {}, {}, {}, {}};
  // Only the sync rows carry the target; the flush row leaves out the
  // fdatasync, whose time on a shared disk varies more than any growth of a run's cost.
  struct path_spec {
    const char* path;
    durability mode;
  };
  for (path_spec spec : {path_spec{"embedded", durability::sync}, path_spec{"http", durability::sync},
                         path_spec{"embedded", durability::flush}}) {
    std::string path = spec.path, label = path + " " + std::string{to_string(spec.mode)};
    runtime_options ro;
    ro.mode = spec.mode;
    std::unique_ptr<runtime> rt;
    std::vector<std::string> ids;
    SKEIN_TRY(open_bench_runtime(options, "sequential-" + path + "-" + std::string{to_string(spec.mode)}, ro,
                                 bench_agent(), &rt, 2, &ids));
    const std::string &long_id = ids[0], &new_id = ids[1];
    std::unique_ptr<bench_server> srv;
    std::unique_ptr<http::client> client;  // used from this thread only
    if (path == "http") {
      SKEIN_TRY(bench_server::start(*rt, http::server_limits{}, 2, &srv));  // skein serve's default http_threads
      client = std::make_unique<http::client>(http::endpoint{"127.0.0.1", srv->listener->port()});
    }
    // Run `n` of thread `id` (its n-th, from 0), timed into *ns and checked: as
    // scripted, and as the thread's next, its events following the previous run's.
    auto one_run = [&](const std::string& id, size_t n, const std::string& where, std::vector<int64_t>* ns) {
      // The first run also writes the system prompt: seqs 1..6, then 7..11, ...
      scripted_expect want{.first_seq = n == 0 ? 1 : 2 + scripted_events_per_run * n};
      bench_clock::time_point sent = bench_clock::now(), answered;
      status s = client ? post_run(*client, id, n, where, want, &answered)
                        : run_checked(*rt, id, "run " + std::to_string(n), want);
      ns->push_back(((client ? answered : bench_clock::now()) - sent).count());
      return s;
    };
    std::vector<int64_t> l, old_ns, new_ns;
    auto first = bench_clock::now();
    {
      progress bar{"sequential " + path, runs, options.quiet};
      for (size_t n = 0; n < runs; ++n) {
        SKEIN_TRY(one_run(long_id, n, path + " run " + std::to_string(n) + ": ", &l));
        bar.advance();
      }
    }
    double seconds = seconds_since(first, bench_clock::now());
    // Then window_runs more on the long thread alternating with the first
    // window_runs of a new thread, so that both windows see the same load.
    for (size_t i = 0; i < window_runs; ++i) {
      SKEIN_TRY(one_run(long_id, runs + i, path + " run " + std::to_string(runs + i) + ": ", &old_ns));
      SKEIN_TRY(one_run(new_id, i, path + " new thread run " + std::to_string(i) + ": ", &new_ns));
    }
    client.reset();
    srv.reset();
    log_expectation want_long{1 + scripted_events_per_run * (runs + window_runs), runs + window_runs};
    SKEIN_TRY(check_thread_logs(*rt, {long_id}, 1, want_long));
    SKEIN_TRY(check_thread_logs(*rt, {new_id}, 1, {1 + scripted_events_per_run * window_runs, window_runs}));
    SKEIN_TRY(rt->close());

    const int64_t *begin = l.data(), *end = begin + l.size();
    double first_mean = mean_ms(begin, begin + window_runs), last_mean = mean_ms(end - window_runs, end);
    t.rows.push_back({text(path), text(std::string{to_string(spec.mode)}), num(runs), num(runs / seconds),
                      num(ms_at(l, 0.50)), num(ms_at(l, 0.99)), num(first_mean),
                      num(last_mean), num(ratio(last_mean, first_mean)),
                      num(ratio(median_ms(end - window_runs, end), median_ms(begin, begin + window_runs))),
                      num(ratio(mean_ms(old_ns.data(), old_ns.data() + old_ns.size()),
                                mean_ms(new_ns.data(), new_ns.data() + new_ns.size()))),
                      num(want_long.events)});
    // Issue 12: the last 200 runs may take at most 1.2 times the first 200.
    if (spec.mode == durability::sync)
      add_target(out, "sequential " + label + ": last " + std::to_string(window_runs) + " runs / first " +
                          std::to_string(window_runs) + " (means)",
                 ratio(last_mean, first_mean), 1.2, "x", better::lower);
    if (!options.plot) continue;
    add_cdf(out, "latency-sequential", "sequential: send to reply", "skein " + label, l);
    drift.labels.push_back("skein " + label);
    std::vector<double>& points = drift.series.emplace_back();
    double at_s = 0;
    for (int64_t ns : l) {
      at_s += static_cast<double>(ns) / 1e9;
      points.push_back(at_s);
      points.push_back(static_cast<double>(ns) / 1e6);
    }
  }
  t.notes = {"each run waits for the previous one's reply; a fresh database per path; the HTTP path is "
             "one keep-alive client to the server in this process (2 I/O threads)",
             "every run checked as scripted and in order; both threads' logs read back whole, seqs 1..N "
             "without a gap",
             "the target is on the sync rows' means; the flush row leaves out the fdatasync, whose time on a "
             "shared disk varies more than a run's own cost may grow, and the medians resist a stall or two",
             "old/new interleaved: after the runs, " + std::to_string(window_runs) + " more on the long thread "
             "alternating with the first " + std::to_string(window_runs) + " of a new thread (means): the same "
             "comparison as last/first with both windows under the same load"};
  if (options.plot) out->charts.push_back(std::move(drift));
  return status::ok();
}

}  // namespace skein::bench
