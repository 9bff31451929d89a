// The workloads of skein-bench, what every one of them is given, and the helpers
// they share (one copy each: common.cpp, runs.cpp, http.cpp).
//
// A workload measures and returns one `result` (result.hpp): tables, targets and,
// with --plot, charts; skein-bench prints it and writes it to --json. A failed or
// lost write is an error, never a figure: the workload returns it and skein-bench
// exits 1.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bench/result.hpp"

#include "runtime/model/status.hpp"
#include "runtime/runtime.hpp"

namespace caf {
class actor;
class actor_system;
}  // namespace caf
namespace skein::server {
class api;
}
namespace skein::http {
class client;
class server;
struct server_limits;
}  // namespace skein::http

namespace skein::bench {

struct bench_options {
  double scale = 1.0;  // multiplies every size of every workload
  std::string dir;     // existing directory where workloads create their databases
  bool quiet = false;  // no progress bar
  bool plot = false;   // --plot: workloads fill result::charts
};

// Concurrent one-event ticks through the journal in each durability mode, against
// RocksDB written directly by one writer.
status run_append(const bench_options& options, result* out);

// End-to-end runs through skein::runtime, scripted engine at 0 ms, durability sync.
status run_runs(const bench_options& options, result* out);

// Many runs in flight at once against a slow (1 s) scripted engine; throughput and peak RSS.
status run_latency(const bench_options& options, result* out);

// Memory per active and per passivated thread, and cold activation of a long thread.
status run_scale(const bench_options& options, result* out);

// The runs workload through the HTTP API in this process, against the same runs
// embedded: the cost of the HTTP layer.
status run_http(const bench_options& options, result* out);

// One thread's events streamed (SSE) to many subscribers at once.
status run_fanout(const bench_options& options, result* out);

// runtime::open on a database of many threads, clean and with interrupted runs to repair.
status run_recovery(const bench_options& options, result* out);

// Append cost through the journal on threads with short and long histories.
status run_history(const bench_options& options, result* out);

// Usage queries over 100,000 usage rows: a full scan, one agent's, one thread's.
status run_usage(const bench_options& options, result* out);
// Compaction time of a 10,000-event thread, and the first run after activation on
// 100,000-event threads with and without a compaction.
status run_compaction(const bench_options& options, result* out);
// Memory search over 100k and 1M vectors against a naive scan, and the rebuild at open.
status run_memory(const bench_options& options, result* out);
// The runs of `runs` with the effects off and on (titles, embeddings, automatic
// compaction): runs/s of both, effect lag and jobs, the drain after the last reply.
status run_effects(const bench_options& options, result* out);
// 100,000 one-shot schedules due within one minute of test clock: firings/s, lag, RSS.
status run_schedules(const bench_options& options, result* out);
// Parent runs that each ask one child agent (ask_agent, scripted 0 ms): the
// delegation round trip p50/p99 and runs/s, beside plain one-step runs.
status run_delegation(const bench_options& options, result* out);
// Work items: create_item with dedup against 10,000 and 100,000 open items (p50/p99),
// session_start with 10,000 items, the sweep over 1,000,000 items.
status run_work(const bench_options& options, result* out);

// The skein rows of `append` (sync, flush) and the runs of `runs`, each plain and
// encrypted at rest, in this process: the throughput of both and their ratio.
status run_encryption(const bench_options& options, result* out);

// One system in one mode of the append workload (append.cpp, baselines/).
struct append_row {
  std::string system;  // "skein", "rocksdb", "opennova-design" or "lace-design"
  std::string mode;    // skein: sync | flush | memory; rocksdb: put-sync | put-unsynced;
                       // opennova-design: fdatasync; lace-design: FULL | NORMAL
  uint64_t events = 0;
  double seconds = 0;  // start to last ack
  uint64_t writes = 0;   // skein only: RocksDB writes (one fsync each in sync mode)
  uint64_t commits = 0;  // skein only: ticks acknowledged
  double p50_us = 0;     // skein: send to reply; rocksdb: one Put; baselines: one tick
  double p99_us = 0;
  uint64_t failures = 0;
  size_t host_threads = 0;  // the baselines' writers (0: not a baseline of bench/baselines)
  std::string note;         // the baselines': how they write, printed under the table
  std::vector<int64_t> latencies_ns;  // skein and rocksdb rows, for the CDF

  double events_per_s() const { return seconds > 0 ? static_cast<double>(events) / seconds : 0; }
};

// One skein row of `append` (append.cpp), encrypted under `key` unless null.
status measure_append_skein(const bench_options& options, durability mode, std::shared_ptr<const master_key> key,
                            append_row* row);

// The same runs on another design (bench/baselines/).
struct runs_baseline_row {
  std::string system;      // "opennova-design", "lace-design" or "kernl"
  std::string mode;        // fdatasync | FULL | NORMAL | "in-memory <kernl version>"
  size_t threads = 0;      // fewer than the workload's when capped
  size_t host_threads = 0; // callers with one run in flight each (kernl: Node's one loop)
  uint64_t runs = 0;       // completed and read back
  uint64_t events = 0;     // what the runs wrote, read back
  double seconds = 0;      // first run to last
  double p50_us = 0;       // one run, start to end
  double p99_us = 0;
  std::string note;        // how it runs, printed under the table
  std::string skipped;     // not empty: no figures, and why (kernl is optional)

  double runs_per_s() const { return seconds > 0 ? static_cast<double>(runs) / seconds : 0; }
};

// The skein part of `runs` (runs.cpp) in durability `mode`: no baselines.
struct runs_figures {
  size_t threads = 0;
  size_t runs_per_thread = 0;
  size_t host_threads = 0;
  size_t window_per_thread = 0;  // runs in flight per thread (one running, the rest queued)
  uint64_t runs = 0;             // completed as scripted
  double seconds = 0;            // first send to last completion
  double p50_us = 0;             // send to completion
  double p99_us = 0;
  uint64_t commits = 0;          // ticks the log acknowledged during the runs
  uint64_t writes = 0;           // RocksDB writes they took
  std::vector<int64_t> latencies_ns;

  double runs_per_s() const { return seconds > 0 ? static_cast<double>(runs) / seconds : 0; }
};
status measure_runs(const bench_options& options, durability mode, std::shared_ptr<const master_key> key,
                    runs_figures* out);
// A listing in one namespace among many (one database each) against the same
// threads in one shared database, one agent per namespace.
status run_namespaces(const bench_options& options, result* out);
// One agent, one thread, 2,000 runs one after another (each waits for its reply;
// scripted engine at 0 ms, durability sync), embedded and through the HTTP API in
// this process: runs/s, p50/p99, and the last 200 runs against the first 200.
status run_sequential(const bench_options& options, result* out);
// Threads of 10,000 and 100,000 events read whole after a reopen (cold) and again
// (warm), through runtime::read and through GET /v1/threads/{id}/entries.
status run_read(const bench_options& options, result* out);
// Run `n` of thread `id` through the server: POST /v1/threads/{id}/entries
// {"text":"run n","wait":true}; *out gets the run_result of the 200 answer, as far
// as check_scripted_run reads it; *answered (unless null), when the answer came.
status post_run(http::client& client, const std::string& id, size_t n, run_result* out,
                std::chrono::steady_clock::time_point* answered = nullptr);

// --- What the workloads over skein::runtime share (runs.cpp defines it) ---------

using bench_clock = std::chrono::steady_clock;

inline constexpr const char* bench_agent_id = "bench";

// Removes `path` with everything in it, then creates it empty.
status fresh_dir(const std::string& path);

// `n` times `scale`, rounded, at least 1.
size_t scaled_count(size_t n, double scale);

// The agent bench_agent_id, system prompt "Be brief.", on `engine_config`.
agent_config bench_agent(std::string engine_config = "{}");

// Opens a runtime over the fresh database `options.dir`/`name` (removing an
// earlier one) and creates the agent `agent`. `ro.data_dir` is set here.
status open_bench_runtime(const bench_options& options, const std::string& name,
                          runtime_options ro, const agent_config& agent,
                          std::unique_ptr<runtime>* out);

// Opens a runtime (durability sync) over the database a workload built at `path`,
// which recovery must find clean. Effects off: their catch-up at open would read
// the threads (titles go through the thread actor) before the measured reads and runs.
status open_built_runtime(const std::string& path, std::unique_ptr<runtime>* out);

// Runs fn(i) for every i < n, spread over `hosts` host threads; the first failure
// stops them all and is returned.
status on_host_threads(size_t n, size_t hosts, const std::function<status(size_t)>& fn);

// Creates `n` threads of `agent_id`. Each creation waits for its durable commit,
// so several host threads create at once and share the journal's fsyncs.
status create_bench_threads(runtime& rt, const std::string& agent_id, size_t n, bool quiet,
                            std::vector<std::string>* ids);

// What the scripted engine's default rule {"reply":"ok"} makes of one run: user
// message, thread.start, assistant message, result, thread.stop. The first run of
// a thread also writes the system prompt.
inline constexpr uint64_t scripted_events_per_run = 5;

// Checks that a run of that rule ended as scripted: completed, replied "ok", and
// wrote scripted_events_per_run events (one more when it was the thread's first).
// `where` names the run in the error.
status check_scripted_run(const std::string& where, const run_result& r);
// The same for a waited run_handle, whatever wait() said; names its thread and run.
status check_waited_run(const run_handle& h, const status& waited, const run_result& r);

// Activates the passive thread `id` with cancel(), which must find no run, then
// sends it one run of `text`: the time of each; check(handle, waited, result)
// judges the run.
using run_check = std::function<status(const run_handle&, const status& waited, const run_result&)>;
status time_cold(runtime& rt, const std::string& id, const std::string& text, const run_check& check,
                 int64_t* activate_ns, int64_t* run_ns);

// What a thread's complete log must hold after the workload.
struct log_expectation {
  uint64_t events = 0;          // seqs 1..events, no gap
  uint64_t completed_runs = 0;  // `result` events with outcome completed, and no other outcome
};

// Reads back the complete log of up to `sample` of `ids` (all when sample >= size,
// else evenly spread ones) through runtime::read and checks it against `want`.
status check_thread_logs(runtime& rt, const std::vector<std::string>& ids, size_t sample,
                         const log_expectation& want);

// The process's resident set (VmRSS of /proc/self/status) in bytes; 0 if unreadable.
uint64_t rss_bytes();

// The q-quantile (nearest rank) of `ns`, in microseconds; reorders `ns`. 0 when empty.
double quantile_us(std::vector<int64_t>& ns, double q);

double seconds_since(bench_clock::time_point from, bench_clock::time_point to);

// What one host (or client) thread of a closed-loop workload saw.
struct host_outcome {
  std::vector<int64_t> latencies_ns;  // one per run waited on
  bench_clock::time_point first_send;
  bench_clock::time_point last_done;
  uint64_t completed = 0;
  uint64_t failures = 0;
  std::string first_error;
};

// A one-line bar on stderr for a long measurement, drawn only when enabled
// (progress_wanted) and redrawn at most every 100 ms. advance() from any thread.
bool progress_wanted(bool quiet);  // not --quiet and stderr is a terminal
class progress {
 public:
  progress(std::string label, uint64_t total, bool enabled);
  ~progress();  // clears the line, so the table that follows starts clean
  progress(const progress&) = delete;
  progress& operator=(const progress&) = delete;
  void advance(uint64_t n = 1);

 private:
  void draw(uint64_t done) const;
  std::string label_;
  uint64_t total_;
  bool enabled_;
  std::atomic<uint64_t> done_{0};
  std::atomic<int64_t> drawn_at_ns_{0};
};

// Samples the process's RSS every 50 ms on its own thread from construction until
// finish() (idempotent); does nothing when not enabled. Marks name phases.
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

// The closed loop of the `runs` shape (runs.cpp): `runs` runs to each of `threads`,
// `window` at a time per thread, waited on in send order; each input is
// "run N" followed by `padding`. A run that did not complete as scripted is a failure.
void drive_runs_host(runtime& rt, const std::vector<std::string>& threads, size_t runs, size_t window,
                     const std::string& padding, progress& bar, host_outcome* out);

// All hosts together: wall time from the first send to the last completion.
struct merged_outcome {
  double seconds = 0;
  uint64_t completed = 0;
  uint64_t failures = 0;
  std::string first_error;
  std::vector<int64_t> latencies_ns;
};

// Deals `ids` round-robin to `hosts` host threads, runs drive(mine, outcome) on
// each, waits for them all and merges what they saw.
merged_outcome drive_round_robin(
    const std::vector<std::string>& ids, size_t hosts,
    const std::function<void(const std::vector<std::string>& mine, host_outcome* out)>& drive);

// One-event ticks through the journal actor (journal_ticks.cpp; append, history):
// `ticks` to each of the `count` threads at once, one in flight per thread, the
// event of each from make_event(thread index, seq) (called on actor threads).
// `threads` hold each thread's manifest as it is (last_seq: before the first
// tick) and are left as after its last acknowledged tick. Appends the latencies
// (send to ack), adds first send to last ack to *seconds, returns the first failure.
status drive_ticks(caf::actor_system& sys, const caf::actor& journal, manifest* threads, size_t count,
                   size_t ticks, const std::function<event(size_t, uint64_t)>& make_event, progress* bar,
                   std::vector<int64_t>* latencies_ns, double* seconds);

// --- What the workloads over the HTTP server share (http.cpp defines it) -------

// The HTTP API over a runtime, served in this process on 127.0.0.1 at an
// ephemeral port, without a tokens file (every request is admin, as skein serve
// allows on loopback). Stops, joining its I/O threads, when destroyed; `rt` is
// borrowed and must outlive it.
class bench_server {
 public:
  static status start(runtime& rt, const http::server_limits& limits, size_t io_threads,
                      std::unique_ptr<bench_server>* out);
  ~bench_server();
  bench_server(const bench_server&) = delete;
  bench_server& operator=(const bench_server&) = delete;

  uint16_t port() const;
  http::server& http() { return *http_; }

 private:
  bench_server() = default;

  std::unique_ptr<server::api> api_;
  std::unique_ptr<http::server> http_;  // calls into api_: stopped before it goes
};

}  // namespace skein::bench
