// sequential: does a thread slow down as its history grows? One agent, one
// thread, 2,000 runs one after another, each sent once the previous one answered
// (scripted engine at 0 ms, durability sync), so that the thread's log grows by
// five events a run to 10,001 events. The mean of the last 200 runs against the
// mean of the first 200 says what the growth costs a run. Measured embedded
// (runtime::send().wait()) and through the HTTP API in this process (POST
// /v1/threads/{id}/entries {"wait":true} on one keep-alive connection), each on a
// fresh database.
#include <algorithm>
#include <memory>
#include <numeric>

#include "bench/workloads.hpp"
#include "runtime/model/json_reader.hpp"
#include "tools/client/http_client.hpp"
#include "tools/server/http_server.hpp"

namespace skein::bench {
namespace {

constexpr size_t runs_at_scale_1 = 2'000;
// The runs compared at each end of the sequence.
constexpr size_t window_runs = 200;
// Both windows must exist and must not overlap.
constexpr size_t runs_min = 2 * window_runs;
// Issue 12: the last 200 runs may take at most 1.2 times the first 200.
constexpr double ratio_max = 1.2;
// skein serve's default http_threads.
constexpr size_t io_threads = 2;
constexpr const char* engine_config = R"({"default":{"reply":"ok","latency_ms":0}})";

// Sends run `n` of the thread and waits for its end; `*r` is what the run answered.
using run_fn = std::function<status(size_t n, run_result* r)>;

// One row: a path and the durability it runs under. Only the sync rows carry the
// issue's target; the flush row leaves out the fdatasync, whose time on a shared
// disk varies more than any growth of a run's own cost.
struct path_spec {
  const char* path;  // "embedded", "http"
  bool over_http = false;
  durability mode = durability::sync;
  bool targeted = true;
};

constexpr path_spec path_specs[] = {
    {"embedded", false, durability::sync, true},
    {"http", true, durability::sync, true},
    {"embedded", false, durability::flush, false},
};

struct path_figures {
  path_spec spec;
  std::string path;                   // "embedded", "http"
  size_t runs = 0;
  double seconds = 0;                 // first send to last answer
  std::vector<int64_t> latencies_ns;  // in run order
  std::vector<int64_t> old_ns;        // interleave(): the long thread's runs
  std::vector<int64_t> new_ns;        // and the new thread's, alternating with them
  uint64_t events = 0;                // in the long thread's log at the end
};

std::string run_where(const std::string& path, size_t n) {
  return path + " run " + std::to_string(n) + ": ";
}

run_fn embedded_sender(runtime& rt, const std::string& id) {
  return [&rt, id](size_t n, run_result* r) {
    run_input in;
    in.text = "run " + std::to_string(n);
    return rt.send(id, std::move(in)).wait(r);
  };
}

// `client` is borrowed and used from the driving thread only.
run_fn http_sender(http::client& client, const std::string& id) {
  return [&client, id](size_t n, run_result* r) { return post_run(client, id, n, r); };
}

// Sends run `n` of a thread (its n-th, from 0), times it into *ns and checks that
// it ran as scripted and as the thread's next: its events follow the previous
// run's without a gap.
status one_run(const run_fn& send, size_t n, const std::string& where, int64_t* ns) {
  run_result r;
  auto sent = bench_clock::now();
  status s = send(n, &r);
  *ns = (bench_clock::now() - sent).count();
  if (!s) return status{s.code(), where + s.message()};
  // The first run also writes the system prompt: seqs 1..6, then 7..11, ...
  return check_scripted_run(where, r, {.first_seq = n == 0 ? 1 : 2 + scripted_events_per_run * n});
}

// Runs 0..runs-1 one after another; the first that fails ends the drive.
status drive(const run_fn& send, size_t runs, bool quiet, path_figures* f) {
  progress bar{"sequential " + f->path, runs, progress_wanted(quiet)};
  f->latencies_ns.reserve(runs);
  auto first = bench_clock::now();
  for (size_t n = 0; n < runs; ++n) {
    SKEIN_TRY(one_run(send, n, run_where(f->path, n), &f->latencies_ns.emplace_back()));
    bar.advance();
  }
  f->runs = runs;
  f->seconds = seconds_since(first, bench_clock::now());
  return status::ok();
}

// After the drive: window_runs runs on the long thread (runs on from `runs`)
// alternating with the first window_runs runs of a new thread, so that both
// windows see the same load on the machine.
status interleave(const run_fn& old_thread, const run_fn& new_thread, size_t runs, path_figures* f) {
  f->old_ns.reserve(window_runs);
  f->new_ns.reserve(window_runs);
  for (size_t i = 0; i < window_runs; ++i) {
    SKEIN_TRY(one_run(old_thread, runs + i, run_where(f->path, runs + i), &f->old_ns.emplace_back()));
    SKEIN_TRY(one_run(new_thread, i, run_where(f->path + " new thread", i), &f->new_ns.emplace_back()));
  }
  return status::ok();
}

// One path on its own fresh database: through the server when spec.over_http.
status run_path(const bench_options& options, const path_spec& spec, size_t runs, path_figures* f) {
  f->spec = spec;
  f->path = spec.path;
  runtime_options ro;
  ro.mode = spec.mode;
  agent_config agent = bench_agent(engine_config);
  std::unique_ptr<runtime> rt;
  SKEIN_TRY(open_bench_runtime(options, "sequential-" + f->path + "-" + std::string{to_string(spec.mode)}, ro,
                               agent, &rt));
  std::vector<std::string> ids;
  SKEIN_TRY(create_bench_threads(*rt, agent.id, 2, true, &ids));
  const std::string &long_id = ids[0], &new_id = ids[1];
  if (spec.over_http) {
    std::unique_ptr<bench_server> srv;
    SKEIN_TRY(bench_server::start(*rt, http::server_limits{}, io_threads, &srv));
    http::client client{http::endpoint{"127.0.0.1", srv->port()}};
    SKEIN_TRY(drive(http_sender(client, long_id), runs, options.quiet, f));
    SKEIN_TRY(interleave(http_sender(client, long_id), http_sender(client, new_id), runs, f));
  } else {
    SKEIN_TRY(drive(embedded_sender(*rt, long_id), runs, options.quiet, f));
    SKEIN_TRY(interleave(embedded_sender(*rt, long_id), embedded_sender(*rt, new_id), runs, f));
  }
  log_expectation want_long{1 + scripted_events_per_run * (runs + window_runs), runs + window_runs};
  SKEIN_TRY(check_thread_logs(*rt, {long_id}, 1, want_long));
  SKEIN_TRY(check_thread_logs(*rt, {new_id}, 1, {1 + scripted_events_per_run * window_runs, window_runs}));
  f->events = want_long.events;
  return rt->close();
}

double mean_ms(std::vector<int64_t>::const_iterator from, std::vector<int64_t>::const_iterator to) {
  double sum_ns = std::accumulate(from, to, 0.0);
  return sum_ns / static_cast<double>(to - from) / 1e6;
}

double median_ms(std::vector<int64_t>::const_iterator from, std::vector<int64_t>::const_iterator to) {
  std::vector<int64_t> ns{from, to};
  return quantile_us(ns, 0.50) / 1000;
}

double ratio(double last, double first) { return first > 0 ? last / first : 0; }

std::string row_label(const path_figures& f) { return f.path + " " + std::string{to_string(f.spec.mode)}; }

void add_row(const path_figures& f, table* t, result* out) {
  const auto& l = f.latencies_ns;
  auto first_end = l.begin() + window_runs, last_begin = l.end() - window_runs;
  double first_mean = mean_ms(l.begin(), first_end), last_mean = mean_ms(last_begin, l.end());
  double median_ratio = ratio(median_ms(last_begin, l.end()), median_ms(l.begin(), first_end));
  std::vector<int64_t> sorted = l;
  double p50 = quantile_us(sorted, 0.50) / 1000, p99 = quantile_us(sorted, 0.99) / 1000;
  double per_s = f.seconds > 0 ? static_cast<double>(f.runs) / f.seconds : 0;
  double interleaved = ratio(mean_ms(f.old_ns.begin(), f.old_ns.end()), mean_ms(f.new_ns.begin(), f.new_ns.end()));
  t->rows.push_back({f.path, std::string{to_string(f.spec.mode)}, static_cast<double>(f.runs), per_s, p50, p99,
                     first_mean, last_mean, ratio(last_mean, first_mean), median_ratio, interleaved,
                     static_cast<double>(f.events)});
  if (f.spec.targeted)
    out->targets.push_back({"sequential " + row_label(f) + ": last " + std::to_string(window_runs) +
                                " runs / first " + std::to_string(window_runs) + " (means)",
                            ratio(last_mean, first_mean), ratio_max, "x", better::lower, ""});
}

// Each run's latency over the seconds of its path: the drift, if any, shows.
void add_charts(const std::vector<path_figures>& paths, result* out) {
  chart drift{chart::kind::over_time, "drift-sequential", "sequential: each run's latency over the runs", "ms"};
  for (const auto& f : paths) {
    add_cdf(out, "latency-sequential", "sequential: send to reply", "skein " + row_label(f), f.latencies_ns);
    drift.labels.push_back("skein " + row_label(f));
    std::vector<double>& points = drift.series.emplace_back();
    double at_s = 0;
    for (int64_t ns : f.latencies_ns) {
      at_s += static_cast<double>(ns) / 1e9;
      points.push_back(at_s);
      points.push_back(static_cast<double>(ns) / 1e6);
    }
  }
  out->charts.push_back(std::move(drift));
}

}  // namespace

status run_sequential(const bench_options& options, result* out) {
  size_t runs = std::max(runs_min, scaled_count(runs_at_scale_1, options.scale));
  std::vector<path_figures> paths(std::size(path_specs));
  for (size_t i = 0; i < paths.size(); ++i) SKEIN_TRY(run_path(options, path_specs[i], runs, &paths[i]));

  table& t = add_table(out, "sequential: one thread x " + with_commas(runs) +
                                " runs one after another (scripted engine at 0 ms)",
                       {col("path"), col("durability"), col("runs"), col("runs/s"), col("p50", "ms", 3),
                        col("p99", "ms", 3), col("first 200 mean", "ms", 3), col("last 200 mean", "ms", 3),
                        col("last/first means", "x", 2), col("last/first medians", "x", 2),
                        col("old/new interleaved", "x", 2), col("events at end")});
  for (const auto& f : paths) add_row(f, &t, out);
  t.notes = {"each run waits for the previous one's reply; a fresh database per path; the HTTP path is "
             "one keep-alive client to the server in this process (2 I/O threads)",
             "every run checked as scripted and in order; both threads' logs read back whole, seqs 1..N "
             "without a gap",
             "the target is on the sync rows' means; the flush row leaves out the fdatasync, whose time on a "
             "shared disk varies more than a run's own cost may grow, and the medians resist a stall or two",
             "old/new interleaved: after the runs, " + std::to_string(window_runs) + " more on the long thread "
             "alternating with the first " + std::to_string(window_runs) + " of a new thread (means): the same "
             "comparison as last/first with both windows under the same load"};
  if (options.plot) add_charts(paths, out);
  return status::ok();
}

}  // namespace skein::bench
