// log_builder: databases with many threads or long histories, written fast by
// committing straight to the event log (event_log::commit_group, many ticks per
// write) instead of running the runtime — the recovery and history workloads
// measure what comes after the build, not the build.
//
// What it writes is what skein itself writes for the same history: each log is
// the agent's system prompt and then completed runs of history_run_events events
// (user message, thread.start, thinking, assistant text, one tool call and its
// result, assistant message, result, thread.stop), manifest status open. Every
// tick goes through the log's own validation; nothing is written around it.
//
// Not thread-safe: it is the event log's writer while it runs, so nothing else
// may write to the log meanwhile (no journal, no runtime).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "persistence/event_log.hpp"

namespace skein::bench {

// A 64-bit mix of x (splitmix64's finalizer after its step): spread, reproducible.
uint64_t splitmix64(uint64_t x);

// Events in one built run.
inline constexpr uint64_t history_run_events = 9;
// The shortest log built: the system prompt and one run.
inline constexpr uint64_t history_events_min = 1 + history_run_events;

// The length nearest `events` that a built log can have: 1 + 9 r, at least 10.
uint64_t buildable_length(uint64_t events);

// `n` distinct thread ids, spread over the key space like random ones; `salt`
// keeps the sets of one database apart.
std::vector<std::string> bench_thread_ids(size_t n, uint64_t salt);

// The agent the built threads belong to: scripted engine at 0 ms replying "ok"
// (what check_scripted_run expects), system prompt "Be brief.".
agent_config bench_agent_config();

struct build_stats {
  uint64_t threads = 0;
  uint64_t events = 0;
  uint64_t ticks = 0;
  uint64_t writes = 0;  // commit_group calls: RocksDB writes
  double seconds = 0;
};

// Creates every thread of `ids`, agent `agent_id`, with a log of `events_per_thread`
// events (a buildable_length), in ticks of at most the log's tick_events_max and
// groups of about `group_events` events. Fails on the first refused tick, and
// when the log's counters do not account for every tick and event afterwards.
status build_threads(event_log& log, const std::string& agent_id,
                     const std::vector<std::string>& ids, uint64_t events_per_thread,
                     bool quiet, build_stats* out, size_t group_events = 16384);

// Commits `ticks` in one group; the first refused tick is the error.
status commit_all(event_log& log, std::vector<tick>& ticks);

// Opens the event log at `path` for a build: durability flush (the build is
// redone, not recovered, if the machine dies mid-way).
status open_build_log(const std::string& path, bool fresh, std::unique_ptr<event_log>* out);

// Bytes under `path`, and in its RocksDB write-ahead log files (*.log) alone:
// what the next open replays.
uint64_t directory_bytes(const std::string& path);
uint64_t wal_bytes(const std::string& path);

}  // namespace skein::bench
