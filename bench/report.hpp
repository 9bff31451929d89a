// report: how skein-bench presents figures — tables on stdout, and a JSON document
// (--json) holding every figure plus the machine that produced them.
// Plain functions over value types; not thread-safe (the main thread reports).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "runtime/model/json_writer.hpp"
#include "runtime/model/status.hpp"

namespace skein::bench {

// One system in one mode of the append workload.
struct append_row {
  std::string system;  // "skein", "rocksdb", "opennova-design" or "lace-design"
  std::string mode;    // skein: sync | flush | memory; rocksdb: put-sync | put-unsynced;
                       // opennova-design: fdatasync; lace-design: FULL | NORMAL
  uint64_t events = 0;
  double seconds = 0;  // start to last ack
  // skein only (0 for rocksdb): from the event log's counters after the run.
  uint64_t writes = 0;
  uint64_t commits = 0;
  uint64_t group_max = 0;
  uint64_t bytes = 0;
  double p50_us = 0;   // skein: send to reply; rocksdb: one Put; baselines: one tick
  double p99_us = 0;
  uint64_t failures = 0;
  size_t host_threads = 0;  // the baselines' writers (0: not a baseline of bench/baselines)
  std::string note;         // the baselines': how they write, printed under the table

  double events_per_s() const;
  double commits_per_write() const;  // 0 without writes
};

struct append_figures {
  size_t threads = 0;
  size_t ticks_per_thread = 0;
  size_t text_bytes = 0;        // the message text of each event
  size_t event_json_bytes = 0;  // the stored value of each event (the first one)
  std::vector<append_row> rows;
};

// What the append workload aims for: skein-sync against RocksDB without fsync,
// and absolute throughput.
inline constexpr double append_ratio_target = 0.8;
inline constexpr double append_events_per_s_target = 100'000;
// ... and against the designs of other agent tools (bench/baselines/).
inline constexpr double append_over_lace_full_target = 20;
inline constexpr double append_over_opennova_target = 20;

void print_append(const append_figures& f, std::FILE* out);
void write_append_json(const append_figures& f, json_writer& w);

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

  double runs_per_s() const;
};

// The runs workload: end-to-end runs through skein::runtime.
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
  uint64_t writes = 0;           // RocksDB writes (one fsync each) they took
  uint64_t failures = 0;
  std::vector<runs_baseline_row> baselines;

  double runs_per_s() const;
};

inline constexpr double runs_per_s_target = 15'000;
// skein's runs/s over the designs of other agent tools (bench/baselines/).
inline constexpr double runs_over_opennova_target = 10;
inline constexpr double runs_over_kernl_target = 2;

void print_runs(const runs_figures& f, std::FILE* out);
void write_runs_json(const runs_figures& f, json_writer& w);

// The latency workload: every run in flight at once against a slow engine.
struct latency_figures {
  size_t runs = 0;                 // sent at once, one per thread
  uint64_t engine_latency_ms = 0;  // the scripted engine's answer time
  uint64_t completed = 0;
  double seconds = 0;              // first send to last completion
  double p50_us = 0;               // send to completion
  double p99_us = 0;
  uint64_t rss_start_bytes = 0;    // just before the first send, after malloc_trim
  uint64_t rss_peak_bytes = 0;     // highest sample until the last completion
  uint64_t rss_samples = 0;
  uint64_t failures = 0;

  double runs_per_s() const;
};

inline constexpr double latency_runs_per_s_target = 9'000;
inline constexpr double latency_rss_mb_max = 512;

void print_latency(const latency_figures& f, std::FILE* out);
void write_latency_json(const latency_figures& f, json_writer& w);

// Cold activation of one kind of thread in the scale workload.
struct cold_row {
  std::string threads;          // which threads were activated
  uint64_t history_events = 0;  // in each thread's log before activation
  size_t samples = 0;
  double cancel_p50_us = 0;     // cancel() on the passive thread: activation alone
  double cancel_p99_us = 0;
  double run_p50_us = 0;        // the first run after it: reads the whole log
  double run_p99_us = 0;
};

// The scale workload: memory per thread, active and passivated, and cold activation.
struct scale_figures {
  size_t threads = 0;
  size_t threads_target = 0;        // the thread count the targets are set for
  double scale_for_target = 0;      // the --scale that creates threads_target threads
  uint64_t idle_passivate_ms = 0;
  double create_seconds = 0;
  double touch_seconds = 0;         // cancel() on every thread
  double passivate_seconds = 0;     // last touch until no thread actor was left
  uint64_t rss_baseline_bytes = 0;  // runtime open, agent created, no thread; after malloc_trim
  uint64_t rss_created_bytes = 0;   // threads created, none active
  uint64_t rss_active_bytes = 0;    // every thread active
  uint64_t rss_passivated_bytes = 0;  // every thread passivated again
  uint64_t rss_trimmed_bytes = 0;   // the same after malloc_trim(0)
  std::vector<cold_row> cold;

  double active_bytes_per_thread() const;      // (active - created) / threads
  double passivated_bytes_per_thread() const;  // (passivated - baseline) / threads
  double trimmed_bytes_per_thread() const;     // (trimmed - baseline) / threads
};

inline constexpr double scale_active_bytes_max = 16 * 1024;
inline constexpr double scale_passivated_bytes_max = 2 * 1024;

void print_scale(const scale_figures& f, std::FILE* out);
void write_scale_json(const scale_figures& f, json_writer& w);

// One way of running the http workload's runs: through the server or embedded.
struct http_row {
  std::string path;       // "http" or "embedded"
  uint64_t runs = 0;      // completed as scripted
  double seconds = 0;     // first send to last answer
  double p50_us = 0;      // http: request written to response read; embedded: send to completion
  double p99_us = 0;
  uint64_t failures = 0;  // http: any answer but 200, or a connection error

  double runs_per_s() const;
};

// The http workload: the same runs through the HTTP API and embedded.
struct http_figures {
  size_t threads = 0;
  size_t runs_per_thread = 0;
  size_t clients = 0;     // client threads (http) and host threads (embedded), one run each in flight
  size_t io_threads = 0;  // the server's
  http_row http;
  http_row embedded;

  double http_over_embedded() const;  // of runs/s; 0 without embedded runs
};

void print_http(const http_figures& f, std::FILE* out);
void write_http_json(const http_figures& f, json_writer& w);

// One pass of the fanout workload, with one stream buffer limit.
struct fanout_row {
  uint64_t stream_buffer_bytes_max = 0;
  bool default_buffer = true;
  uint64_t events = 0;         // produced on the thread: its last_seq delta
  uint64_t expected = 0;       // subscribers x events
  uint64_t delivered = 0;      // frames with an id, counted over all subscribers
  uint64_t bytes = 0;          // stream bytes after the headers, all subscribers
  uint64_t disconnected = 0;   // the server's slow_clients: streams closed for falling behind
  double subscribe_seconds = 0;  // first connect until every stream was open
  double produce_seconds = 0;  // first send to the last run's completion
  double seconds = 0;          // first send to the last event at the last subscriber

  double events_per_s() const;  // delivered / seconds
};

// The fanout workload: one thread's events streamed to many subscribers at once.
struct fanout_figures {
  size_t subscribers = 0;
  size_t runs = 0;
  size_t io_threads = 0;
  uint64_t from_seq = 0;       // where every subscription starts: the thread's next seq
  uint64_t nofile_limit = 0;   // RLIMIT_NOFILE (soft) during the workload
  uint64_t nofile_before = 0;  // the same before it; lower when the workload raised it
  std::vector<fanout_row> rows;  // the default buffer; then a raised one if it disconnected clients
};

void print_fanout(const fanout_figures& f, std::FILE* out);
void write_fanout_json(const fanout_figures& f, json_writer& w);

// One runtime::open of the recovery workload's database and the run after it.
struct recovery_open {
  uint64_t interrupted = 0;       // runs left mid-way in the database before the open
  uint64_t repaired = 0;          // repaired_at_open().size()
  uint64_t wal_bytes = 0;         // write-ahead log files the open found (and replayed)
  double open_seconds = 0;        // runtime::open: until runs can start
  double first_run_seconds = 0;   // then one run on an existing thread, send to completion

  double ready_seconds() const { return open_seconds; }
};

// The recovery workload: coming back on a big database, with and without
// interrupted runs to repair.
struct recovery_figures {
  uint64_t threads = 0;
  uint64_t events = 0;
  uint64_t events_target = 0;     // the database size the targets are set for
  double build_seconds = 0;       // writing the database: not part of any figure
  uint64_t build_writes = 0;
  uint64_t db_bytes = 0;          // on disk after the build
  double interrupt_seconds = 0;   // writing the interrupted runs: not part of any figure
  size_t repair_sample = 0;       // repaired threads whose repair events were checked
  recovery_open first_open;       // right after the build: replays the WAL the build left
  recovery_open clean;            // opened again: next to no WAL
  recovery_open after_repair;     // with interrupted runs to repair, next to no WAL

  // (after_repair.open - clean.open) / interrupted runs, in ms: both opens find
  // next to no WAL, so the difference is the repairs.
  double per_interrupted_ms() const;
};

inline constexpr double recovery_ready_seconds_max = 1.0;
inline constexpr double recovery_per_interrupted_ms_max = 1.0;

void print_recovery(const recovery_figures& f, std::FILE* out);
void write_recovery_json(const recovery_figures& f, json_writer& w);

// One-event ticks of the history workload in one manner (concurrent or sequential).
struct history_append {
  uint64_t events = 0;
  double seconds = 0;   // first send to last ack, summed over the rounds
  uint64_t writes = 0;  // RocksDB writes (one fsync each) they took
  double p50_us = 0;    // send to ack
  double p99_us = 0;

  double us_per_event() const;  // seconds / events
  double events_per_s() const;
  double commits_per_write() const;
};

// One history length.
struct history_row {
  uint64_t history_events = 0;  // in each thread's log before the appends
  history_append concurrent;    // every thread of the length, one tick in flight each
  history_append sequential;    // one thread, one tick at a time
  size_t cold_samples = 0;      // passive threads brought back through the runtime
  double activate_p50_us = 0;   // cancel() on the passive thread: activation alone
  double activate_max_us = 0;
  double run_p50_us = 0;        // the first run after it, which reads the whole log
  double run_max_us = 0;
};

// The history workload: append cost against history length.
struct history_figures {
  size_t threads_per_length = 0;
  size_t rounds = 0;            // the lengths take turns this many times
  uint64_t build_events = 0;
  double build_seconds = 0;     // writing the histories: not part of any figure
  std::vector<history_row> rows;  // shortest history first

  // us_per_event of the longest history over the shortest's; 0 without rows.
  double concurrent_ratio() const;
  double sequential_ratio() const;
};

inline constexpr double history_cost_ratio_max = 1.2;

void print_history(const history_figures& f, std::FILE* out);
void write_history_json(const history_figures& f, json_writer& w);

// One index size of the memory workload.
// hashing: the hashing embedder's vectors of generated messages, queried with
// short generated queries (sparse: a few non-zero dimensions). random: dense
// random unit vectors, queried with others (every dimension non-zero).
enum class vector_kind { hashing, random };
const char* to_string(vector_kind k);

struct memory_row {
  vector_kind vectors = vector_kind::hashing;
  uint64_t rows = 0;
  double build_seconds = 0;     // memory_index::add of every row (vectors made beforehand)
  uint64_t index_bytes = 0;     // what the index holds (memory_index_stats::bytes)
  size_t queries = 0;
  double p50_us = 0;            // memory_index::search, k = memory_k
  double p99_us = 0;
  size_t baseline_queries = 0;  // the naive scan is slow: fewer queries
  double baseline_p50_us = 0;   // vector<vector<float>>, one scalar dot per row, partial_sort
  double baseline_p99_us = 0;

  double speedup() const;  // baseline_p50_us / p50_us; 0 without figures
};

// The memory workload: brute-force memory search over random normalized vectors,
// and the rebuild of the index from the embeddings column family at open.
struct memory_figures {
  size_t dims = 0;
  size_t k = 0;
  std::vector<memory_row> rows;  // smallest index first
  uint64_t target_rows = 0;      // the index size the latency target is set for
  uint64_t rebuild_rows = 0;     // rows in the database runtime::open rebuilt the index from
  double rebuild_ms = 0;         // runtime_stats::memory_rebuild.ms
  double open_ms = 0;            // the whole runtime::open around it

  double rebuild_ms_per_100k() const;
};

inline constexpr double memory_p50_ms_max = 20;  // at target_rows (1M), hashing vectors

void print_memory(const memory_figures& f, std::FILE* out);
void write_memory_json(const memory_figures& f, json_writer& w);

struct machine_info {
  unsigned cores = 0;
  uint64_t memory_bytes = 0;  // 0: unknown
  std::string cpu;            // model name, "unknown" if not found
  std::string disk_device;    // the block device holding the databases, "unknown" if not found
  std::string disk_kind;      // "rotational", "non-rotational" or "unknown"
  std::string kernel;
  std::string build_type;
  std::string git_revision;
};

// `dir`: the directory holding the databases, whose disk is described.
machine_info probe_machine(const std::string& dir);

// Writes {"tool", "scale", "machine", "workloads": {name: figures, ...}} to `path`,
// creating its parent directory. Each workload's figures are one JSON object.
status write_report(const std::string& path, double scale, const machine_info& machine,
                    const std::vector<std::pair<std::string, std::string>>& workloads);

}  // namespace skein::bench
