// log_builder: databases with many threads or long histories, committed straight
// to the event log (many ticks per commit_group) instead of run through the
// runtime. Each log is what skein writes for the same history: the system prompt,
// then completed runs (user message, thread.start, thinking, assistant text, a
// tool call and its result, assistant message, result, thread.stop). Not
// thread-safe: nothing else may write to the log meanwhile.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "persistence/event_log.hpp"

namespace skein::bench {

// splitmix64's step and finalizer: spread, reproducible.
uint64_t splitmix64(uint64_t x);

inline constexpr uint64_t history_run_events = 9;
// The shortest log built: the system prompt and one run.
inline constexpr uint64_t history_events_min = 1 + history_run_events;

// The length nearest `events` that a built log can have: 1 + 9 r, at least 10.
uint64_t buildable_length(uint64_t events);

// `n` distinct thread ids, spread over the key space like random ones; `salt`
// keeps the sets of one database apart.
std::vector<std::string> bench_thread_ids(size_t n, uint64_t salt);

// The agent of the built threads: scripted engine at 0 ms replying "ok" (what
// check_scripted_run expects), system prompt "Be brief.".
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
// when the log's counters do not account for every event afterwards.
status build_threads(event_log& log, const std::string& agent_id,
                     const std::vector<std::string>& ids, uint64_t events_per_thread,
                     bool quiet, build_stats* out, size_t group_events = 16384);

// Commits `ticks` in one group; the first refused tick is the error.
status commit_all(event_log& log, std::vector<tick>& ticks);

// Opens the event log at `path` for a build, durability flush (a build is redone,
// not recovered, if the machine dies mid-way).
status open_build_log(const std::string& path, bool fresh, std::unique_ptr<event_log>* out);

// Bytes under `path`, and in its RocksDB write-ahead log files (*.log) alone:
// what the next open replays.
uint64_t directory_bytes(const std::string& path);
uint64_t wal_bytes(const std::string& path);

}  // namespace skein::bench
