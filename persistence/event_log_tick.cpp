// A tick's rows in a write batch, and an effect write's: the events, the
// threads row (or none: the row left behind the log), the index entries and
// claims, the inbox, effect cursors, usage rows; and the writer's projection of
// a thread they are checked against. Written here, version 2:
//
//   usage value := {"ts":int,"thread":id,"seq":uint,"run":string,"agent_id":id,
//                   "usage":usage,"cost_usd":number,"duration_ms":uint,"turns":uint,
//                   "outcome":string}
//
// One usage row is written for every `result` event, in the same batch, keyed by
// thread and seq (keys.cpp) so that erasing a thread deletes its rows as a range;
// "ts" is the result event's time. Version 1 had no "ts" in the value (it led the
// key); the migration at open moves it there.
//
// Threads rows behind the log (schema version 5). A tick writes its thread's row
// only when a read could not derive it: a tick that appends events and changes
// nothing but what follows from them keeps the stored row, which is then behind
// (its last_seq below the thread's last event key). Every read reports
// (derive_manifest, event_log_read.cpp):
//
//   last_seq        := seq of the thread's last event key (the log, never the row)
//   updated_at_ms   := max(row updated_at, ts of the last event)    if behind
//   heartbeat_at_ms := that updated_at_ms                           if behind, the row
//                      is running and its heartbeat_at equals its updated_at
//
// The writer keeps the row exactly when this derivation, from the stored row and
// the log as the tick leaves it, gives the tick's manifest field for field, and
// the tick's index entries are the stored ones. The "u" entry keeps the second of
// updated_at (keys.cpp), so the row and the entry are rewritten together at least
// once in every second a thread is written in: listing by update stays exact to
// the second, as before. A tick is one batch: after a crash the row and the log
// end are those of the same whole ticks, and the read derives the last of them.
#include <algorithm>
#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>
#include <tuple>

#include "persistence/event_log.hpp"
#include "persistence/event_log_internal.hpp"
#include "persistence/keys.hpp"
#include "persistence/work_rows.hpp"
#include "runtime/model/embedding.hpp"
#include "runtime/model/ids.hpp"
#include "runtime/model/json_writer.hpp"

namespace skein {
namespace {

using namespace detail;

void encode_usage_row(const std::string& thread, const std::string& agent, const event& e,
                      std::string* out) {
  out->clear();
  json_writer w{out};
  w.begin_object();
  w.field_int("ts", e.ts_ms);
  w.field("thread", thread);
  w.field_uint("seq", e.seq);
  w.field("run", e.run_id);
  w.field("agent_id", agent);
  write_result_fields(w, e);
  w.end_object();
}

}  // namespace

std::vector<std::string> index_keys_of(const manifest& m) {
  std::vector<std::string> out;
  out.reserve(4 + m.tags.size());
  out.push_back(keys::index_key('a', m.agent_id, m.id));
  if (!m.parent_id.empty()) out.push_back(keys::index_key('p', m.parent_id, m.id));
  out.push_back(keys::index_key('s', to_string(m.status), m.id));
  for (const auto& tag : m.tags) out.push_back(keys::index_key('t', tag, m.id));
  out.push_back(keys::index_key('u', keys::updated_value(m.updated_at_ms), m.id));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<std::string> claim_keys_of(const manifest& m) {
  std::vector<std::string> out;
  if (!m.task_id.empty()) out.push_back(keys::claim_key("task", m.task_id));
  if (m.parent == parent_kind::agent) out.push_back(keys::claim_key("dm", m.parent_id));
  std::sort(out.begin(), out.end());
  return out;
}
status event_log::load_projection(const std::string& thread_id, projection* out,
                                  bool* found) const {
  // The writer's own reads: nothing else writes between them, no snapshot needed.
  std::string value;
  auto s = impl_->db->Get(rocksdb::ReadOptions(), impl_->cf(cf_threads), thread_id, &value);
  if (s.IsNotFound()) {
    *found = false;
    return status::ok();
  }
  SKEIN_TRY(from_rocks(s, "read manifest of " + thread_id));
  auto m = std::make_shared<manifest>();
  status d = decode_manifest(value, m.get(), options_.limits);
  if (!d) return status::corruption("threads key " + thread_id + ": " + d.message());
  log_end end;
  SKEIN_TRY(log_end_of(thread_id, &end));
  *found = true;
  // The keys, not the row, say where the log ends (the row may be behind).
  out->last_seq = end.seq;
  out->last_ts_ms = end.ts_ms;
  // The index entries and claims are the stored row's: they were written with it.
  out->index_keys = index_keys_of(*m);
  out->claim_keys = claim_keys_of(*m);
  out->row_bytes = value.size();
  out->row = std::move(m);
  return status::ok();
}

status event_log::salvage_projection(const std::string& thread_id, projection* out) const {
  // The keys, not the manifest, say where the log ends: appending there is safe
  // whatever the stored values hold. No row: a repair always writes its own.
  SKEIN_TRY(last_event_seq(thread_id, &out->last_seq));
  projection stored;
  bool found = false;
  status s = load_projection(thread_id, &stored, &found);
  if (s && found) {
    out->index_keys = std::move(stored.index_keys);
    return status::ok();
  }
  if (!s && s.code() != errc::corruption) return s;
  SKEIN_TRY(find_index_keys(thread_id, &out->index_keys));
  // Claims are no index_keys_of() entries: the diff of a repair must not drop them.
  std::erase_if(out->index_keys, [](const std::string& k) { return k.starts_with("c/"); });
  std::sort(out->index_keys.begin(), out->index_keys.end());
  return status::ok();
}

status event_log::prepare_claims(const tick& t, rocksdb::WriteBatch* batch,
                                 std::unordered_map<std::string, std::string>* claims) const {
  for (const auto& key : claim_keys_of(t.manifest)) {
    // "c/task/T": the field that made the claim, for the error.
    const char* field = key.starts_with("c/task/") ? "task_id" : "dm";
    if (auto it = claims->find(key); it != claims->end() && it->second != t.thread_id)
      return status::conflict(std::string{field} + ": " + key.substr(2) + " is claimed by thread " + it->second)
          .with_field(field);
    std::string holder;
    auto s = impl_->db->Get(rocksdb::ReadOptions(), impl_->cf(cf_index), key, &holder);
    if (!s.IsNotFound()) {
      SKEIN_TRY(from_rocks(s, "read claim"));
      if (holder != t.thread_id) {
        // A claim outlives its thread only if something failed between two
        // writes that should have been one; a claim naming no thread is taken over.
        std::string manifest_value;
        auto h = impl_->db->Get(rocksdb::ReadOptions(), impl_->cf(cf_threads), holder, &manifest_value);
        if (!h.IsNotFound()) {
          SKEIN_TRY(from_rocks(h, "read claim holder"));
          return status::conflict(std::string{field} + ": " + key.substr(2) + " is claimed by thread " + holder)
              .with_field(field);
        }
      }
    }
    batch->Put(impl_->cf(cf_index), key, t.thread_id);
    (*claims)[key] = t.thread_id;
  }
  return status::ok();
}

status event_log::prepare(tick& t, const projection* prev, rocksdb::WriteBatch* batch,
                          projection* next, std::unordered_map<std::string, std::string>* claims) const {
  SKEIN_TRY(validate_id(t.thread_id, "tick.thread_id"));
  if (t.manifest.id != t.thread_id)
    return status::invalid_input("tick.manifest.id: '" + t.manifest.id +
                                 "' differs from the tick's thread '" + t.thread_id + "'");
  size_t events_max = t.bulk ? options_.bulk_events_max : options_.tick_events_max;
  if (t.events.size() > events_max)
    return status::invalid_input("tick.events: " + std::to_string(t.events.size()) + " events exceed " +
                                 (t.bulk ? "bulk_events_max (" : "tick_events_max (") +
                                 std::to_string(events_max) + ")");
  if (t.create && t.quarantine)
    return status::invalid_input("tick.quarantine: repairs an existing thread, cannot create one");
  if (t.create && prev != nullptr)
    return status::conflict("thread " + t.thread_id + " already exists");
  if (!t.create && prev == nullptr)
    return status::not_found("thread " + t.thread_id + " does not exist");

  uint64_t last = prev != nullptr ? prev->last_seq : 0;
  for (const auto& e : t.events) {
    if (e.seq != last + 1)
      return status::conflict("thread " + t.thread_id + ": event seq " + std::to_string(e.seq) +
                              " does not continue the log (expected " +
                              std::to_string(last + 1) + ")");
    last = e.seq;
  }
  t.manifest.last_seq = last;
  next->last_seq = last;
  next->last_ts_ms = t.events.empty() ? (prev != nullptr ? prev->last_ts_ms : std::nullopt)
                                      : std::optional<int64_t>{t.events.back().ts_ms};
  next->index_keys = index_keys_of(t.manifest);

  // Every value goes through the storable rule (json_codec.hpp) under the limits
  // the reads apply: a value that could not be read back is never written. A
  // row left behind was checked when it was written; what a read derives of it
  // differs in three numbers only, within row_derivable's margin.
  std::string value;
  if (prev != nullptr && row_derivable(*prev, t, *next)) {
    next->row = prev->row;
    next->row_bytes = prev->row_bytes;
  } else {
    if (status s = encode_manifest(t.manifest, &value, options_.limits); !s)
      return status{s.code(), "thread " + t.thread_id + ": " + s.message()};
    batch->Put(impl_->cf(cf_threads), t.thread_id, value);
    next->row = std::make_shared<const manifest>(t.manifest);
    next->row_bytes = value.size();
  }
  for (const auto& e : t.events) {
    if (status s = encode_event(e, &value, options_.limits); !s)
      return status{s.code(), "thread " + t.thread_id + ": event seq " + std::to_string(e.seq) +
                                  " (" + std::string{to_string(e.type)} + "): " + s.message()};
    batch->Put(impl_->cf(cf_events), keys::event_key(t.thread_id, e.seq), value);
    if (e.type == event_type::result) {
      encode_usage_row(t.thread_id, t.manifest.agent_id, e, &value);
      batch->Put(impl_->cf(cf_usage), keys::usage_key(t.thread_id, e.seq), value);
    }
  }

  for (const auto& [order, input] : t.inbox_put) {
    if (order == 0) return status::invalid_input("tick.inbox_put: arrival order must be at least 1");
    SKEIN_TRY(encode_inbox_input(input, &value));
    batch->Put(impl_->cf(cf_inbox), keys::inbox_key(t.thread_id, order), value);
  }
  if (t.inbox_take != 0) batch->Delete(impl_->cf(cf_inbox), keys::inbox_key(t.thread_id, t.inbox_take));
  SKEIN_TRY(prepare_side_rows(t, batch));
  if (t.create) SKEIN_TRY(prepare_claims(t, batch, claims));
  for (const auto& [effect, cursor] : t.effect_cursors) {
    SKEIN_TRY(validate_id(effect, "tick.effect_cursors"));
    if (cursor > t.manifest.last_seq)
      return status::invalid_input("tick.effect_cursors: " + effect + " cursor " + std::to_string(cursor) +
                                   " is past the thread's last seq " + std::to_string(t.manifest.last_seq));
    // A cursor never moves back: an effect's work redone below it would repeat.
    uint64_t stored = 0;
    SKEIN_TRY(read_effect_cursor(effect, t.thread_id, &stored));
    if (cursor < stored)
      return status::conflict("tick.effect_cursors: " + effect + " cursor " + std::to_string(cursor) +
                              " is below the stored " + std::to_string(stored));
    std::string v;
    keys::put_be64(&v, cursor);
    batch->Put(impl_->cf(cf_effects), keys::effect_key(effect, t.thread_id), v);
  }

  if (!t.idempotency_key.empty()) {
    SKEIN_TRY(validate_id(t.idempotency_key, "idempotency_key"));
    if (t.events.empty())
      return status::invalid_input("tick.idempotency_key: needs the run's first events");
    std::string v;
    keys::put_be64(&v, t.events.front().seq);
    v += t.run_id;
    batch->Put(impl_->cf(cf_index), keys::idempotency_key(t.thread_id, t.idempotency_key), v);
  }

  static const std::vector<std::string> none;
  const auto& old_keys = prev != nullptr ? prev->index_keys : none;
  // Both lists are sorted: a merge walk finds what to delete and what to add.
  size_t i = 0, j = 0;
  while (i < old_keys.size() || j < next->index_keys.size()) {
    if (j == next->index_keys.size() ||
        (i < old_keys.size() && old_keys[i] < next->index_keys[j])) {
      batch->Delete(impl_->cf(cf_index), old_keys[i++]);
    } else if (i == old_keys.size() || next->index_keys[j] < old_keys[i]) {
      batch->Put(impl_->cf(cf_index), next->index_keys[j++], rocksdb::Slice());
    } else {
      ++i;
      ++j;
    }
  }
  return status::ok();
}

bool event_log::row_derivable(const projection& prev, tick& t, const projection& next) const {
  // Reads decode the row under json_bytes_max and derive three integers of it:
  // each may grow by at most 20 digits and a sign over what was checked.
  constexpr size_t derived_bytes_max = 3 * 21;
  if (t.create || t.quarantine || !prev.row) return false;
  if (prev.row_bytes + derived_bytes_max > options_.limits.json_bytes_max) return false;
  if (next.index_keys != prev.index_keys) return false;  // the "u" entry's second among them
  const manifest& row = *prev.row;
  manifest derived_fields;  // the three numbers a read derives, over the log after the tick
  derived_fields.status = row.status;
  derived_fields.last_seq = row.last_seq;
  derived_fields.updated_at_ms = row.updated_at_ms;
  derived_fields.heartbeat_at_ms = row.heartbeat_at_ms;
  derive_manifest(log_end{next.last_seq, next.last_ts_ms}, &derived_fields);
  if (t.manifest.last_seq != derived_fields.last_seq || t.manifest.updated_at_ms != derived_fields.updated_at_ms ||
      t.manifest.heartbeat_at_ms != derived_fields.heartbeat_at_ms)
    return false;
  // Every other field as stored: manifest's own == with the three set to the
  // row's, so that a field added to manifest is compared too.
  manifest& m = t.manifest;
  const auto tick_fields = std::tuple{m.last_seq, m.updated_at_ms, m.heartbeat_at_ms};
  std::tie(m.last_seq, m.updated_at_ms, m.heartbeat_at_ms) = std::tuple{row.last_seq, row.updated_at_ms, row.heartbeat_at_ms};
  const bool same = m == row;
  std::tie(m.last_seq, m.updated_at_ms, m.heartbeat_at_ms) = tick_fields;
  return same;
}

status event_log::prepare_effect(const effect_write& w, const std::unordered_map<std::string, projection>& pending,
                                 rocksdb::WriteBatch* batch) const {
  SKEIN_TRY(validate_id(w.effect, "effect_write.effect"));
  SKEIN_TRY(validate_id(w.thread_id, "effect_write.thread_id"));
  // The journal serializes this check with erase_thread: a thread erased before
  // the write is refused here, one erased after it loses the rows with the rest.
  projection p;
  const projection* prev = nullptr;
  if (auto it = pending.find(w.thread_id); it != pending.end()) {
    prev = &it->second;
  } else if (auto it = cache_.find(w.thread_id); it != cache_.end()) {
    prev = &it->second;
  } else {
    bool found = false;
    SKEIN_TRY(load_projection(w.thread_id, &p, &found));
    if (found) prev = &p;
  }
  if (prev == nullptr) return status::not_found("thread " + w.thread_id + " does not exist");
  if (w.cursor > prev->last_seq)
    return status::invalid_input("effect_write.cursor: " + w.effect + " cursor " + std::to_string(w.cursor) +
                                 " is past the thread's last seq " + std::to_string(prev->last_seq));
  uint64_t stored = 0;
  SKEIN_TRY(read_effect_cursor(w.effect, w.thread_id, &stored));
  if (w.cursor < stored)
    return status::conflict("effect_write.cursor: " + w.effect + " cursor " + std::to_string(w.cursor) +
                            " of thread " + w.thread_id + " is below the stored " + std::to_string(stored));
  for (const auto& [seq, value] : w.embeddings) {
    if (seq <= stored || seq > w.cursor)
      return status::conflict("effect_write.embeddings: seq " + std::to_string(seq) + " of thread " +
                              w.thread_id + " is outside (" + std::to_string(stored) + ", " +
                              std::to_string(w.cursor) + "]");
    embedding_record check;
    if (status d = decode_embedding(value, &check); !d)
      return status::invalid_input("effect_write.embeddings: seq " + std::to_string(seq) + ": " + d.message());
    batch->Put(impl_->cf(cf_embeddings), keys::event_key(w.thread_id, seq), value);
  }
  std::string v;
  keys::put_be64(&v, w.cursor);
  batch->Put(impl_->cf(cf_effects), keys::effect_key(w.effect, w.thread_id), v);
  return status::ok();
}

}  // namespace skein
