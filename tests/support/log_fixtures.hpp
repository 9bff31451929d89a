// Builders for ticks and manifests, and the opening of a log, shared by the
// persistence and actor tests.
#pragma once

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "persistence/event_log.hpp"

namespace skein::test {

// The event log `o` describes, open; the test stops if it does not open.
inline std::unique_ptr<event_log> open_log(const log_options& o) {
  std::unique_ptr<event_log> log;
  auto s = event_log::open(o, &log);
  INFO(s.to_string());
  REQUIRE(s.is_ok());
  return log;
}

// The event log at `path` in `mode`, open.
inline std::unique_ptr<event_log> open_log(const std::string& path, durability mode = durability::sync) {
  log_options o;
  o.path = path;
  o.mode = mode;
  return open_log(o);
}

inline manifest make_manifest(const std::string& thread, const std::string& agent = "agent",
                              int64_t updated_at_ms = 1000) {
  manifest m;
  m.id = thread;
  m.agent_id = agent;
  m.created_at_ms = 1000;
  m.updated_at_ms = updated_at_ms;
  return m;
}

// A tick of `count` user messages with seqs first..first+count-1.
inline tick make_tick(const std::string& thread, uint64_t first, size_t count,
                      const std::string& agent = "agent") {
  tick t;
  t.thread_id = thread;
  t.create = first == 1;
  t.manifest = make_manifest(thread, agent);
  for (size_t i = 0; i < count; ++i) {
    event e = make_message(message_role::user, "m" + std::to_string(first + i));
    e.seq = first + i;
    e.ts_ms = 1000 + static_cast<int64_t>(first + i);
    e.run_id = "run";
    t.events.push_back(std::move(e));
  }
  return t;
}

// An hourly cron schedule of `agent` with input "x".
inline schedule hourly_schedule(const std::string& id, const std::string& agent = "a") {
  schedule s;
  s.id = id;
  s.agent_id = agent;
  s.kind = schedule_kind::cron;
  s.cron = "0 * * * *";
  s.input_text = "x";
  return s;
}

// How many keys `log` holds for `thread` (0 once it is erased); the test stops
// if they cannot be counted.
inline size_t thread_keys(event_log& log, const std::string& thread) {
  size_t n = 1;  // not 0: a count that wrote nothing must not pass for an erased thread
  REQUIRE(log.count_thread_keys(thread, &n).is_ok());
  return n;
}

inline std::vector<uint64_t> seqs_of(const std::vector<event>& events) {
  std::vector<uint64_t> out;
  for (const auto& e : events) out.push_back(e.seq);
  return out;
}

}  // namespace skein::test
