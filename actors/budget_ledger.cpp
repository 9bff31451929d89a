#include "actors/budget_ledger.hpp"

#include <cstdio>

#include "persistence/event_log.hpp"

namespace skein {
namespace {

int64_t day_of(int64_t ms) { return ms >= 0 ? ms / ms_per_day : (ms - (ms_per_day - 1)) / ms_per_day; }

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

status budget_ledger::build(const std::string& agent_id, int64_t day, entry* out) const {
  usage_query q;
  q.agent_id = agent_id;
  q.since_ms = day * ms_per_day;
  q.until_ms = q.since_ms + ms_per_day;
  *out = entry{};
  out->total.day = day;
  // Unreadable rows are skipped: one bad row must not stop every run of the agent.
  return log_->scan_usage(
      q,
      [&](std::string_view key, const usage_row& row) {
        out->total.tokens += row.usage.input_tokens + row.usage.output_tokens;
        out->total.cost_usd += row.cost_usd;
        out->counted.emplace(key);
      },
      nullptr);
}

status budget_ledger::check(const agent_config& agent, int64_t now_ms) {
  const run_budgets& b = agent.budgets;
  if (b.tokens_per_day_max == 0 && b.cost_usd_per_day_max <= 0) return status::ok();
  int64_t day = day_of(now_ms);
  spent total;
  {
    std::lock_guard<std::mutex> lock{mu_};
    auto it = entries_.find(agent.id);
    if (it == entries_.end() || it->second.total.day < day) {
      // First check, or a new day: the new day's rows are read once. Adds of
      // runs of the new day made before this point are in those rows.
      entry e;
      SKEIN_TRY(build(agent.id, day, &e));
      it = entries_.insert_or_assign(agent.id, std::move(e)).first;
    }
    // An entry of a later day (a clock set back) counts as today's: never less strict.
    total = it->second.total;
  }
  if (b.tokens_per_day_max != 0 && total.tokens >= b.tokens_per_day_max)
    return status::budget_exceeded("agent " + agent.id + " spent " + std::to_string(total.tokens) +
                                   " tokens today (UTC): tokens_per_day_max (" +
                                   std::to_string(b.tokens_per_day_max) + ")")
        .with_limit("tokens_per_day_max");
  if (b.cost_usd_per_day_max > 0 && total.cost_usd >= b.cost_usd_per_day_max)
    return status::budget_exceeded("agent " + agent.id + " spent " + number(total.cost_usd) +
                                   " USD today (UTC): cost_usd_per_day_max (" +
                                   number(b.cost_usd_per_day_max) + ")")
        .with_limit("cost_usd_per_day_max");
  return status::ok();
}

void budget_ledger::add(const std::string& agent_id, const std::string& usage_key, int64_t ts_ms,
                        const token_usage& usage, double cost_usd) {
  std::lock_guard<std::mutex> lock{mu_};
  auto it = entries_.find(agent_id);
  if (it == entries_.end()) return;  // not built: its build will read the row
  entry& e = it->second;
  int64_t day = day_of(ts_ms);
  if (day < e.total.day) return;  // yesterday's run, closed after midnight
  if (day > e.total.day) {
    // The first run of a new day: the next check rebuilds from that day's rows,
    // which hold this one. Until then nothing of the old day counts.
    entries_.erase(it);
    return;
  }
  if (e.counted.erase(usage_key) > 0) return;  // the build read this row already
  e.total.tokens += usage.input_tokens + usage.output_tokens;
  e.total.cost_usd += cost_usd;
}

bool budget_ledger::spending(const std::string& agent_id, spent* out) const {
  std::lock_guard<std::mutex> lock{mu_};
  auto it = entries_.find(agent_id);
  if (it == entries_.end()) return false;
  *out = it->second.total;
  return true;
}

}  // namespace skein
