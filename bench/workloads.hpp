// The workloads of skein-bench and what every one of them is given.
//
// A workload measures, prints its table on stdout, and returns its figures as one
// JSON object (for --json). A failed or lost write is an error, never a figure:
// the workload returns it and skein-bench exits 1.
#pragma once

#include <string>

#include "runtime/model/status.hpp"

namespace skein::bench {

struct bench_options {
  double scale = 1.0;  // multiplies every size of every workload
  std::string dir;     // existing directory where workloads create their databases
  bool quiet = false;  // no progress bar
};

// Concurrent one-event ticks through the journal in each durability mode, against
// RocksDB written directly by one writer.
status run_append(const bench_options& options, std::string* json);

}  // namespace skein::bench
