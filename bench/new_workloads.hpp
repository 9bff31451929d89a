// The workloads that return their figures as a result (result.hpp) from the start:
// each measures, checks what it wrote or read, and fills *out on the main thread;
// the caller prints and writes it. A failed or lost write, or a read that misses
// an event, is an error, never a figure.
#pragma once

#include "bench/result.hpp"
#include "bench/workloads.hpp"

namespace skein::bench {

// One agent, one thread, 2,000 runs one after another (each waits for its reply;
// scripted engine at 0 ms, durability sync), embedded and through the HTTP API in
// this process: runs/s, p50/p99, and the last 200 runs against the first 200.
status run_sequential(const bench_options& options, result* out);

// Threads of 10,000 and 100,000 events read whole after a reopen (cold) and again
// (warm), through runtime::read and through GET /v1/threads/{id}/entries.
status run_read(const bench_options& options, result* out);

}  // namespace skein::bench
