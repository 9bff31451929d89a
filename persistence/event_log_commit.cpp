// Group commit: ticks and effect writes prepared (event_log_tick.cpp) into one
// batch, each refused alone (commit_group) or all refused by one (commit_all),
// checked against the quotas, written once; the writer's cache, quota rows and
// counters follow a written batch. Also the log's one-row writes (agents).
#include <cassert>
#include <map>
#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include "persistence/event_log.hpp"
#include "persistence/event_log_internal.hpp"
#include "runtime/model/ids.hpp"

namespace skein {

using namespace detail;

void event_log::group_tally::add(const tick& t, bool row_written) {
  if (row_written) ++rows;
  events += t.events.size();
  if (t.create) ++creates;
  for (const auto& e : t.events) ++days[day_of(e.ts_ms)];
}

status event_log::write_group(rocksdb::WriteBatch* batch, size_t ticks, const group_tally& tally,
                              std::unordered_map<std::string, projection>* pending, const route_marks& routes) {
  const uint64_t threads = threads_.load(std::memory_order_relaxed) + tally.creates;
  if (status s = write_counted(batch, ticks, threads, tally.days, routes); !s) {
    counters_.failed.fetch_add(ticks, std::memory_order_relaxed);
    return s;
  }
  for (auto& [id, p] : *pending) remember(id, std::move(p));
  counters_.commits.fetch_add(ticks, std::memory_order_relaxed);
  counters_.events.fetch_add(tally.events, std::memory_order_relaxed);
  counters_.manifests.fetch_add(tally.rows, std::memory_order_relaxed);
  return status::ok();
}

status event_log::write(rocksdb::WriteBatch* batch, size_t ticks, const route_marks* routes) {
  if (routes != nullptr && options_.replicator) SKEIN_TRY(replicate(batch, *routes));
  auto s = impl_->db->Write(impl_->write_options, batch);
  if (!s.ok()) {
    // A failed write may have left the WAL in an unknown state; RocksDB does not
    // retry a failed fsync and neither do we: refuse writes until reopened.
    // A full disk latches too, though nothing was acknowledged wrongly: after
    // DB::Resume() RocksDB 7.8 goes on appending to the WAL writer that failed
    // (the packaged build aborts on an assertion there; a release build refuses
    // every write), and its own recovery waits for free space of a whole write
    // buffer. Only a reopen, with a new WAL, is safe. Refusals keep saying
    // no_space, so callers see a full disk (507), not a broken one.
    bool full = s.IsNoSpace() || s.subcode() == rocksdb::Status::kSpaceLimit;
    no_space_.store(full, std::memory_order_release);
    writable_.store(false, std::memory_order_release);
    cache_.clear();
    return from_rocks(s, full ? "write batch (the disk is full: reopen the log once space is freed)" : "write batch");
  }
  counters_.writes.fetch_add(1, std::memory_order_relaxed);
  counters_.bytes.fetch_add(batch->GetDataSize(), std::memory_order_relaxed);
  counters_.keys.fetch_add(batch->Count(), std::memory_order_relaxed);
  uint64_t seen = counters_.group_max.load(std::memory_order_relaxed);
  while (ticks > seen && !counters_.group_max.compare_exchange_weak(seen, ticks)) {
  }
  return status::ok();
}

status event_log::refusal() const {
  if (no_space_.load(std::memory_order_acquire))
    return status::no_space("event log refuses writes after the disk was full; reopen it once space is freed");
  return status::io_error("event log refuses writes after a failed write; reopen it");
}

void event_log::remember(const std::string& thread_id, projection p) {
  if (options_.manifest_cache_max == 0) return;
  if (cache_.size() >= options_.manifest_cache_max && cache_.find(thread_id) == cache_.end())
    cache_.clear();  // crude but O(1) amortized; misses only cost a Get
  cache_[thread_id] = std::move(p);
}

status event_log::commit(tick& t) {
  tick* one[] = {&t};
  status result;
  commit_group(one, std::span<status>(&result, 1));
  return result;
}

void event_log::commit_group(std::span<tick* const> ticks, std::span<status> results) {
  commit_group(ticks, results, {}, {});
}

void event_log::commit_group(std::span<tick* const> ticks, std::span<status> results,
                             std::span<effect_write* const> effects, std::span<status> effect_results) {
  assert(ticks.size() == results.size());  // one result per tick
  assert(effects.size() == effect_results.size());  // one result per effect write
  if (!writable()) {
    for (auto& r : results)
      r = refusal();
    for (auto& r : effect_results) r = refusal();
    counters_.failed.fetch_add(ticks.size(), std::memory_order_relaxed);
    return;
  }
  rocksdb::WriteBatch batch;
  std::unordered_map<std::string, projection> pending;  // threads touched by this group
  std::unordered_map<std::string, std::string> claims;  // claim keys put by this group
  std::vector<size_t> accepted;
  accepted.reserve(ticks.size());
  group_tally tally;
  route_marks routes;  // each accepted tick's and effect write's entries
  auto mark = [&](std::string route) { routes.push_back({static_cast<uint32_t>(batch.Count()), std::move(route)}); };

  for (size_t i = 0; i < ticks.size(); ++i) {
    tick& t = *ticks[i];
    if (t.thread_id.empty() && !t.side_rows.empty()) {
      // Schedule rows alone: no thread to check.
      batch.SetSavePoint();
      if (status s = prepare_side_rows(t, &batch); !s) {
        batch.RollbackToSavePoint().PermitUncheckedError();
        results[i] = s;
        counters_.rejected.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      batch.PopSavePoint().PermitUncheckedError();
      accepted.push_back(i);
      mark(side_route(t.side_rows.front()));
      continue;
    }
    const projection* prev = nullptr;
    projection loaded;
    if (auto it = pending.find(t.thread_id); it != pending.end()) {
      prev = &it->second;
    } else if (t.quarantine) {
      status s = validate_id(t.thread_id, "tick.thread_id");
      if (s) s = salvage_projection(t.thread_id, &loaded);
      if (!s) {
        results[i] = s;
        counters_.rejected.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      prev = &loaded;
    } else if (auto it = cache_.find(t.thread_id); it != cache_.end()) {
      prev = &it->second;
    } else {
      bool found = false;
      status s = validate_id(t.thread_id, "tick.thread_id");
      if (s) s = load_projection(t.thread_id, &loaded, &found);
      if (!s) {
        results[i] = s;
        counters_.rejected.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      if (found) prev = &loaded;
    }
    projection next;
    batch.SetSavePoint();
    // A refused tick's claims must not stay claimed; only creating ticks claim.
    std::unordered_map<std::string, std::string> claims_before;
    if (t.create) claims_before = claims;
    status s = prepare(t, prev, &batch, &next, &claims);
    // Quotas after the tick is known valid: an invalid one gets its own error.
    if (s && t.create) s = check_create(t, tally.creates, tally.days);
    if (!s) {
      if (t.create) claims = std::move(claims_before);
      batch.RollbackToSavePoint().PermitUncheckedError();
      results[i] = s;
      counters_.rejected.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    batch.PopSavePoint().PermitUncheckedError();
    tally.add(t, prev == nullptr || next.row != prev->row);
    pending[t.thread_id] = std::move(next);
    accepted.push_back(i);
    mark(t.thread_id);
  }
  // Effect writes after the ticks: a thread created or advanced by this group is
  // known to them through `pending`.
  std::vector<size_t> effects_accepted;
  for (size_t i = 0; i < effects.size(); ++i) {
    batch.SetSavePoint();
    status s = prepare_effect(*effects[i], pending, &batch);
    if (!s) {
      batch.RollbackToSavePoint().PermitUncheckedError();
      effect_results[i] = s;
      counters_.rejected.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    batch.PopSavePoint().PermitUncheckedError();
    effects_accepted.push_back(i);
    mark(effects[i]->thread_id);
  }
  if (accepted.empty() && effects_accepted.empty()) return;
  status s = write_group(&batch, accepted.size(), tally, &pending, routes);
  for (size_t i : accepted) results[i] = s;
  for (size_t i : effects_accepted) effect_results[i] = s;
}

status event_log::commit_effect(effect_write& w) {
  effect_write* one[] = {&w};
  status result;
  commit_effects(one, std::span<status>(&result, 1));
  return result;
}

void event_log::commit_effects(std::span<effect_write* const> writes, std::span<status> results) {
  commit_group({}, {}, writes, results);
}

status event_log::put_agent(const agent_config& agent) {
  if (!writable()) return refusal();
  std::string value;
  SKEIN_TRY(encode_agent(agent, &value, options_.limits));
  rocksdb::WriteBatch batch;
  batch.Put(impl_->cf(cf_agents), agent.id, value);
  return write(&batch, 0, nullptr);  // agents are the cluster's, not a partition's
}

status event_log::commit_all(std::span<tick* const> ticks) {
  if (!writable()) {
    counters_.failed.fetch_add(ticks.size(), std::memory_order_relaxed);
    return status::io_error("event log refuses writes after a failed write; reopen it");
  }
  rocksdb::WriteBatch batch;
  std::unordered_map<std::string, projection> pending;  // threads touched by this call
  std::unordered_map<std::string, std::string> claims;  // claim keys put by this call
  group_tally tally;
  route_marks routes;
  for (size_t i = 0; i < ticks.size(); ++i) {
    tick& t = *ticks[i];
    const projection* prev = nullptr;
    projection loaded;
    status s = validate_id(t.thread_id, "tick.thread_id");
    if (s) {
      if (auto it = pending.find(t.thread_id); it != pending.end()) {
        prev = &it->second;
      } else if (auto it = cache_.find(t.thread_id); it != cache_.end()) {
        prev = &it->second;
      } else {
        bool found = false;
        s = load_projection(t.thread_id, &loaded, &found);
        if (found) prev = &loaded;
      }
    }
    projection next;
    if (s) s = prepare(t, prev, &batch, &next, &claims);
    if (s && t.create) s = check_create(t, tally.creates, tally.days);
    if (!s) {
      // One refusal refuses them all: the batch is dropped unwritten.
      counters_.rejected.fetch_add(ticks.size(), std::memory_order_relaxed);
      return status(s.code(), "tick " + std::to_string(i + 1) + " of " +
                                  std::to_string(ticks.size()) + ": " + s.message())
          .with_limit(s.limit())
          .with_field(s.field());
    }
    tally.add(t, prev == nullptr || next.row != prev->row);
    pending[t.thread_id] = std::move(next);
    routes.push_back({static_cast<uint32_t>(batch.Count()), t.thread_id});
  }
  if (ticks.empty()) return status::ok();
  return write_group(&batch, ticks.size(), tally, &pending, routes);
}

}  // namespace skein
