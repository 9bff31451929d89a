// drive: what the append and runs baselines share: host threads that call into a
// design, and the read-back checks that stand between a design and its figures.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bench/baselines/lace_design.hpp"
#include "bench/baselines/opennova_design.hpp"
#include "bench/workloads.hpp"
#include "runtime/model/status.hpp"

namespace skein::bench {

// What drive_rounds measured.
struct drive_outcome {
  std::vector<int64_t> latencies_ns;  // one per call, host by host
  double seconds = 0;                 // first call to the last host's end
};

// Calls fn(thread, round) for every round < rounds and thread < threads from `hosts`
// host threads: host h owns threads h, h + hosts, ... and goes round by round (round
// 0 of each of its threads, then round 1, ...). Advances `bar` once per call. The
// first failure stops every host and is returned.
using round_fn = std::function<status(size_t thread, size_t round)>;
status drive_rounds(size_t threads, size_t rounds, size_t hosts, progress& bar,
                    const round_fn& fn, drive_outcome* out);

// An opennova thread's file must hold its manifest at last_seq `events`, then
// `events` event lines with seqs 1..events in order.
status check_opennova_thread(opennova_store& store, const std::string& id, uint64_t events);

// A lace thread must have one event row for each seq 1..events, and last_seq `events`.
status check_lace_thread(lace_store& store, const std::string& id, uint64_t events);

}  // namespace skein::bench
