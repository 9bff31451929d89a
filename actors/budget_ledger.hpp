// budget_ledger: what each agent with a daily budget (run_budgets::tokens_per_day_max,
// cost_usd_per_day_max) has spent in the current UTC day, over all its threads.
//
// One per runtime, shared by the thread actors through their context. A thread
// actor asks check() before a run starts and calls add() once the run's closing
// commit is acknowledged. Thread-safe: one mutex guards the per-agent entries.
//
// An agent's entry is built lazily, at its first check(), from the usage rows of
// the day (event_log::scan_usage with the agent filter: the rows of the agent's
// threads, not the whole usage column family) under the lock: that first check
// costs one read of every usage row of the agent's threads; later checks and adds
// are O(1). Rows the build counted are remembered (their keys, for that day only)
// so that an add() for a run whose closing commit landed just before the build
// read it is not counted twice. Agents without a budget never get an entry.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "runtime/model/agent.hpp"
#include "runtime/model/event.hpp"
#include "runtime/model/status.hpp"

namespace skein {

class event_log;

inline constexpr int64_t ms_per_day = 86400000;

class budget_ledger {
 public:
  explicit budget_ledger(const event_log* log) : log_(log) {}  // borrowed: outlives the ledger
  budget_ledger(const budget_ledger&) = delete;
  budget_ledger& operator=(const budget_ledger&) = delete;

  // ok, or budget_exceeded naming the limit (tokens_per_day_max or
  // cost_usd_per_day_max) when the agent's spending today (the UTC day of now_ms)
  // has reached it; a storage error if the day's rows cannot be read.
  status check(const agent_config& agent, int64_t now_ms);

  // A run of `agent_id` closed: its result event (usage row `usage_key`) at ts_ms.
  void add(const std::string& agent_id, const std::string& usage_key, int64_t ts_ms,
           const token_usage& usage, double cost_usd);

  struct spent {
    int64_t day = 0;  // days since the epoch
    uint64_t tokens = 0;
    double cost_usd = 0;
  };
  // What the agent spent on its entry's day; false if it has no entry yet.
  bool spending(const std::string& agent_id, spent* out) const;

 private:
  struct entry {
    spent total;
    std::unordered_set<std::string> counted;  // usage keys the build read, of total.day
  };

  status build(const std::string& agent_id, int64_t day, entry* out) const;

  const event_log* log_;
  mutable std::mutex mu_;  // guards entries_
  std::unordered_map<std::string, entry> entries_;
};

}  // namespace skein
