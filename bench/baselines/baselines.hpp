// baselines: the designs skein-bench compares skein with, in this process, on the
// append and runs workloads' own threads and events: opennova-design (one JSONL file
// per thread), lace-design (SQLite) and kernl (the npm package, run by Node). Each
// reads back what it wrote before it reports a figure; those that fsync every event
// are capped, like rocksdb put-sync, and report rates. Files go under options.dir.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bench/workloads.hpp"

namespace skein::bench {

// Appends the rows opennova-design, lace-design FULL and lace-design NORMAL: ticks of
// one event each to `threads` (as skein's append drivers send them), `ticks` per thread
// at most, from 2 x cores host threads, each owning a slice of the threads.
// event_json(index, seq, json): the stored JSON of event `seq` (from 1) of thread
// `index`; called from any thread.
status run_append_baselines(const std::vector<manifest>& threads, size_t ticks,
                            const std::function<status(size_t, uint64_t, std::string*)>& event_json,
                            const bench_options& options, std::vector<measured_row>* rows);

// Appends the rows opennova-design, lace-design FULL and NORMAL, and kernl, for the
// runs workload's shape (`hosts`: the skein row's host threads). kernl never fails
// the workload: without Node or its installed package, or when its script fails, its
// row says why it was skipped and how to enable it.
status run_runs_baselines(size_t threads, size_t runs_per_thread, size_t hosts, const bench_options& options,
                          std::vector<measured_row>* rows);

// kernl (kernl.cpp): `threads` at once on Node's one event loop, `runs_per_thread`
// runs each one after another, its mock model answering after `delay_ms`. The row
// is kernl.mjs's output: system "kernl", mode "in-memory 0.8.2" (its storage and
// version), the RSS of the Node process, a note naming Node; `skipped` says why
// there are no figures.
void run_kernl(size_t threads, size_t runs_per_thread, uint64_t delay_ms, measured_row* row);

}  // namespace skein::bench
