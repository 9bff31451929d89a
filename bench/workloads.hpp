// The workloads of skein-bench, what each is given, and the helpers they share
// (common.cpp, runs.cpp, http.cpp). A workload returns one `result` (result.hpp);
// a failed or lost write is an error, never a figure: skein-bench exits 1.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "actors/journal.hpp"
#include "bench/result.hpp"
#include "runtime/model/status.hpp"
#include "runtime/runtime.hpp"

namespace caf {
class actor;
class actor_system;
}  // namespace caf
namespace skein {
class event_log;
}
namespace skein::server {
class api;
}
namespace skein::http {
class client;
class server;
struct server_limits;
}  // namespace skein::http

namespace skein::bench {

using bench_clock = std::chrono::steady_clock;

struct bench_options {
  double scale = 1.0;  // multiplies every size of every workload
  std::string dir;     // existing directory where workloads create their databases
  bool quiet = false;  // no progress bar
  bool plot = false;   // --plot: workloads fill result::charts
};

// The workloads; bench_main.cpp says what each measures.
status run_append(const bench_options& options, result* out);
status run_runs(const bench_options& options, result* out);
status run_latency(const bench_options& options, result* out);
status run_scale(const bench_options& options, result* out);
status run_http(const bench_options& options, result* out);
status run_fanout(const bench_options& options, result* out);
status run_recovery(const bench_options& options, result* out);
status run_history(const bench_options& options, result* out);
status run_usage(const bench_options& options, result* out);
status run_compaction(const bench_options& options, result* out);
status run_memory(const bench_options& options, result* out);
status run_effects(const bench_options& options, result* out);
status run_schedules(const bench_options& options, result* out);
status run_delegation(const bench_options& options, result* out);
status run_work(const bench_options& options, result* out);
status run_encryption(const bench_options& options, result* out);
status run_namespaces(const bench_options& options, result* out);
status run_sequential(const bench_options& options, result* out);
status run_read(const bench_options& options, result* out);
status run_cluster(const bench_options& options, result* out);

// --- What the workloads over skein::runtime share (common.cpp) -------------------

inline constexpr const char* bench_agent_id = "bench";

// Removes `path` with everything in it, then creates it empty.
status fresh_dir(const std::string& path);
// `n` times `scale`, rounded, at least 1.
size_t scaled_count(size_t n, double scale);
// What the scripted engine answers every run with: "ok", at once.
inline constexpr const char* scripted_ok = R"({"default":{"reply":"ok"}})";
// The agent bench_agent_id, system prompt "Be brief.", on `engine_config`.
agent_config bench_agent(std::string engine_config = scripted_ok);
// Opens a runtime over the fresh database `options.dir`/`name` (removing an
// earlier one), creates the agent `agent` and, when `threads` > 0, that many of
// its threads into *ids (create_bench_threads). `ro.data_dir` is set here.
status open_bench_runtime(const bench_options& options, const std::string& name, runtime_options ro,
                          const agent_config& agent, std::unique_ptr<runtime>* out, size_t threads = 0,
                          std::vector<std::string>* ids = nullptr);
// Opens a runtime (durability sync) over the database a workload built at `path`,
// which recovery must find clean. Effects off: their catch-up at open would read
// the threads (titles go through the thread actor) before the measured reads and runs.
status open_built_runtime(const std::string& path, std::unique_ptr<runtime>* out);
// Runs fn(i) for every i < n, spread over `hosts` host threads; the first failure
// stops them all and is returned.
status on_host_threads(size_t n, size_t hosts, const std::function<status(size_t)>& fn);
// Creates `n` threads of `agent_id`, from two host threads that share the journal's fsyncs.
status create_bench_threads(runtime& rt, const std::string& agent_id, size_t n, bool quiet,
                            std::vector<std::string>* ids);

// What the scripted engine's default rule {"reply":"ok"} makes of one run: user
// message, thread.start, assistant message, result, thread.stop. The first run of
// a thread also writes the system prompt.
inline constexpr uint64_t scripted_events_per_run = 5;

// What a scripted run must have ended with, besides completed.
struct scripted_expect {
  const char* reply = "ok";
  uint64_t events = scripted_events_per_run;  // one more when it was the thread's first
  uint64_t first_seq = 0;                     // 0: any
  uint32_t turns = 0;                         // 0: any
  uint64_t duration_ms_min = 0;               // the engine's own latency
};
// Checks a run against `want`; `where` names the run in the error.
status check_scripted_run(const std::string& where, const run_result& r, const scripted_expect& want = {});
// The same for a waited run_handle, whatever wait() said; names its thread and run.
status check_waited_run(const run_handle& h, const status& waited, const run_result& r,
                        const scripted_expect& want = {});
// Sends `text` to `id`, waits and checks the run; *took (unless null) gets send to end.
status run_checked(runtime& rt, const std::string& id, std::string text, const scripted_expect& want = {},
                   int64_t* took_ns = nullptr);
// Activates the passive thread `id` with cancel(), which must find no run, then
// sends it one run of `text` checked against `want`: the time of each.
status time_cold(runtime& rt, const std::string& id, const std::string& text, const scripted_expect& want,
                 int64_t* activate_ns, int64_t* run_ns);

// What a thread's complete log must hold: seqs 1..events without a gap, and
// completed_runs results, all completed.
struct log_expectation {
  uint64_t events = 0;
  uint64_t completed_runs = 0;
};
// Reads back the complete log of up to `sample` of `ids` (evenly spread, the
// first and last among them) through runtime::read and checks it against `want`.
status check_thread_logs(runtime& rt, const std::vector<std::string>& ids, size_t sample,
                         const log_expectation& want);
// The event log failed and rejected no tick.
status check_log_clean(runtime& rt);

// The value of `key` in a "key : value" file such as /proc/meminfo; "unknown" when absent.
std::string proc_field(const char* file, std::string_view key);
// VmRSS in bytes; 0 if unreadable.
uint64_t rss_bytes();
// `n` indices of [0, size) spread evenly, the first and last among them.
std::vector<size_t> spread(size_t n, size_t size);
// The q-quantile (nearest rank) of `ns`, in microseconds; reorders `ns`. 0 when empty.
double quantile_us(std::vector<int64_t>& ns, double q);
// The same in milliseconds, of a copy.
inline double ms_at(std::vector<int64_t> ns, double q) { return quantile_us(ns, q) / 1000; }
// a / b, 0 when b is not positive (a baseline that measured nothing).
inline double ratio(double a, double b) { return b > 0 ? a / b : 0; }
double seconds_since(bench_clock::time_point from, bench_clock::time_point to);
// Calls fn() and appends its time to *ns; returns what fn returned.
template <class F>
status timed(std::vector<int64_t>* ns, F fn) {
  auto start = bench_clock::now();
  status s = fn();
  ns->push_back((bench_clock::now() - start).count());
  return s;
}

// A one-line bar on stderr for a long measurement, drawn only when enabled
// (not --quiet and stderr is a terminal) and redrawn at most every 100 ms.
// advance() from any thread.
class progress {
 public:
  progress(std::string label, uint64_t total, bool quiet);
  ~progress();  // clears the line, so the table that follows starts clean
  progress(const progress&) = delete;
  progress& operator=(const progress&) = delete;
  void advance(uint64_t n = 1);

 private:
  std::string label_;
  uint64_t total_;
  bool enabled_;
  std::atomic<uint64_t> done_{0};
  std::atomic<int64_t> drawn_at_ns_{0};
};

// Samples the RSS every 50 ms on its own thread from construction until finish()
// (idempotent); does nothing when not enabled. Marks name phases.
class rss_recorder {
 public:
  explicit rss_recorder(bool enabled);
  ~rss_recorder() { finish(); }
  rss_recorder(const rss_recorder&) = delete;
  rss_recorder& operator=(const rss_recorder&) = delete;
  void mark(std::string label);  // the present moment starts phase `label`
  void finish();
  uint64_t peak() const { return peak_; }  // after finish()
  uint64_t samples() const { return samples_.size() / 2; }
  // Adds the series (seconds, MiB) and its marks to `r` as an over_time chart.
  void add_chart(result* r, const std::string& name, const std::string& title) const;

 private:
  void sample();  // with mu_ held
  bench_clock::time_point start_ = bench_clock::now();
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  uint64_t peak_ = 0;
  std::vector<double> samples_;  // seconds, MiB, seconds, MiB, ...
  std::vector<std::pair<double, std::string>> marks_;
  std::thread thread_;
};

// --- What the append, runs, http and journal workloads share ---------------------

// One row of the append and runs tables: a system in a mode doing `count`
// operations (append: events; runs: runs), every one read back.
struct measured_row {
  std::string system;  // "skein", "rocksdb", "opennova-design", "lace-design", "kernl"
  std::string mode;    // skein: its durability; rocksdb: put-sync | put-unsynced;
                       // opennova-design: fdatasync; lace-design: FULL | NORMAL; kernl: "in-memory 0.8.2"
  uint64_t count = 0;
  double seconds = 0;                // first send to last completion
  double p50_us = 0, p99_us = 0;     // skein: send to reply; rocksdb: one Put; baselines: one tick or run
  uint64_t commits = 0, writes = 0;  // skein: ticks acknowledged, RocksDB writes they took
  std::string note;                  // how a baseline writes, printed under the table
  std::string skipped;               // not empty: no figures, and why (kernl is optional)
  std::vector<int64_t> latencies_ns;  // skein and rocksdb rows, for the CDF
  uint64_t rss_start_bytes = 0, rss_peak_bytes = 0;  // kernl: of the Node process

  double per_s() const { return seconds > 0 ? static_cast<double>(count) / seconds : 0; }
  // The quantiles of `ns`, which the row keeps for the CDF when `keep`.
  void take_latencies(std::vector<int64_t> ns, bool keep) {
    p50_us = quantile_us(ns, 0.50);
    p99_us = quantile_us(ns, 0.99);
    if (keep) latencies_ns = std::move(ns);
  }
};

// One skein row of `append` (append.cpp), encrypted under `key` unless null.
status measure_append_skein(const bench_options& options, durability mode, std::shared_ptr<const master_key> key,
                            measured_row* row);
// The skein part of `runs` (runs.cpp) in durability `mode`, encrypted under `key`
// unless null: no baselines.
status measure_runs(const bench_options& options, durability mode, std::shared_ptr<const master_key> key,
                    measured_row* row);

// What the host (or client) threads of a closed loop saw, each its own, then
// merged by drive_round_robin.
struct host_outcome {
  std::vector<int64_t> latencies_ns;  // one per run waited on
  bench_clock::time_point first_send = bench_clock::time_point::max();
  bench_clock::time_point last_done = bench_clock::time_point::min();
  uint64_t completed = 0;
  uint64_t failures = 0;
  std::string first_error;

  // A run sent at `sent` that ended at `done` with `s`.
  void record(bench_clock::time_point sent, bench_clock::time_point done, const status& s) {
    last_done = done;
    latencies_ns.push_back((done - sent).count());
    if (s) ++completed;
    else if (failures++ == 0) first_error = s.to_string();
  }
  double seconds() const { return seconds_since(first_send, last_done); }
  double per_s() const { return seconds() > 0 ? static_cast<double>(completed) / seconds() : 0; }
};

// Deals `ids` round-robin to `hosts` host threads, runs drive(mine, outcome) on
// each and merges what they saw into *all: an error unless all `expected` runs
// completed.
status drive_round_robin(const std::vector<std::string>& ids, size_t hosts, uint64_t expected,
                         const std::function<void(const std::vector<std::string>& mine, host_outcome* out)>& drive,
                         host_outcome* all);

// The host threads of drive_runs.
inline constexpr size_t run_hosts = 2;
// The closed loop of `runs` (also effects, latency): `runs` runs to each of
// `ids`, `window` at a time per thread, from run_hosts host threads, waited on in
// send order; each input is "run N", then `padding`. A run that did not complete
// as `want` says is an error. `label` names the progress bar.
status drive_runs(runtime& rt, const std::vector<std::string>& ids, size_t runs, size_t window,
                  const std::string& padding, const scripted_expect& want, const std::string& label, bool quiet,
                  host_outcome* out);

// Run `n` of thread `id` through the server (http.cpp): POST /v1/threads/{id}/entries
// {"text":"run n","wait":true}, its 200 answer's run checked against `want`
// (check_scripted_run), errors led by `where`; *answered, when the answer came.
status post_run(http::client& client, const std::string& id, size_t n, const std::string& where,
                const scripted_expect& want, bench_clock::time_point* answered);

// One-event ticks through the journal actor (journal_ticks.cpp; append, history):
// `ticks` to each of the `count` threads at once, one in flight per thread, the
// event of each from make_event(thread index, seq) (called on actor threads).
// `threads` hold each thread's manifest as it is (last_seq: before the first
// tick) and are left as after its last acknowledged tick. Appends the latencies
// (send to ack), adds first send to last ack to *seconds, returns the first failure.
status drive_ticks(caf::actor_system& sys, const journal_actor& journal, manifest* threads, size_t count,
                   size_t ticks, const std::function<event(size_t, uint64_t)>& make_event, progress* bar,
                   std::vector<int64_t>* latencies_ns, double* seconds);

// Runs fn with a journal actor over `log` in an actor system of its own, then
// closes the journal: the system is gone, and the log free, when this returns. The
// log must then count `ticks` one-event commits, and no failed or rejected one.
status with_journal(event_log& log, uint64_t ticks,
                    const std::function<status(caf::actor_system&, const journal_actor&)>& fn);

// The HTTP API over `rt` on 127.0.0.1 at an ephemeral port, without a tokens file
// (every request is admin, as skein serve allows on loopback); `rt` must outlive it.
// Defined in http.cpp.
struct bench_server {
  static status start(runtime& rt, const http::server_limits& limits, size_t io_threads,
                      std::unique_ptr<bench_server>* out);
  ~bench_server();  // stops the listener, joining its I/O threads

  std::unique_ptr<server::api> api;
  std::unique_ptr<http::server> listener;  // calls into api: stopped before it goes
};

}  // namespace skein::bench
