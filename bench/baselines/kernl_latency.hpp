// kernl_latency: the kernl baseline of the latency workload — N runs in flight at
// once, one per thread, on kernl with its mock model answering after a delay —
// run by Node as a child process (bench/baselines/kernl/latency.mjs). kernl is
// optional: without Node or its installed package, or when the script fails,
// the row says why it was skipped and nothing fails.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/model/status.hpp"

namespace skein::bench {

struct kernl_latency_row {
  size_t runs = 0;            // sent at once, one per thread
  uint64_t engine_ms = 0;     // the mock model's delay
  std::string version;        // kernl's, "0.8.2"
  std::string node;           // Node's, "v20.20.2"
  double seconds = 0;         // first start to last end
  double runs_per_s = 0;
  double p50_us = 0;          // start to end of a run
  double p99_us = 0;
  uint64_t rss_start_bytes = 0;  // the Node process, threads created, before the runs
  uint64_t rss_peak_bytes = 0;   // its peak (ru_maxrss) by the last end
  std::string skipped;        // why there are no figures; "" when measured
};

// Runs latency.mjs for `runs` runs against a model delayed `engine_ms`. Fails only
// on a bad argument; anything kernl-side goes to out->skipped.
status run_kernl_latency(size_t runs, uint64_t engine_ms, kernl_latency_row* out);

}  // namespace skein::bench
