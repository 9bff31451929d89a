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
  std::string system;  // "skein" or "rocksdb"
  std::string mode;    // skein: sync | flush | memory; rocksdb: put-sync | put-unsynced
  uint64_t events = 0;
  double seconds = 0;  // start to last ack
  // skein only (0 for rocksdb): from the event log's counters after the run.
  uint64_t writes = 0;
  uint64_t commits = 0;
  uint64_t group_max = 0;
  uint64_t bytes = 0;
  double p50_us = 0;   // skein: send to reply; rocksdb: one Put
  double p99_us = 0;
  uint64_t failures = 0;

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

void print_append(const append_figures& f, std::FILE* out);
void write_append_json(const append_figures& f, json_writer& w);

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
