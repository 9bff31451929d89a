// The event log's read side: manifests, events, listings, agents. Reads run on
// any thread, concurrently with the writer (event_log.hpp).
#include <algorithm>
#include <rocksdb/db.h>

#include "persistence/event_log_internal.hpp"
#include "persistence/keys.hpp"
#include "runtime/model/ids.hpp"

namespace skein {

namespace detail {

status find_log_end(rocksdb::Iterator* events, std::string_view thread_id, log_end* out) {
  *out = log_end{};
  const std::string prefix = keys::event_prefix(thread_id);
  // The greatest possible seq key of the thread: its last event is at or before it.
  events->SeekForPrev(keys::event_key(thread_id, UINT64_MAX));
  for (; events->Valid() && events->key().starts_with(prefix); events->Prev()) {
    std::string_view thread;
    uint64_t seq = 0;
    if (!keys::parse_event_key(events->key().ToStringView(), &thread, &seq) || thread != thread_id) continue;
    out->seq = seq;
    int64_t ts = 0;
    if (peek_event_ts(events->value().ToStringView(), &ts)) out->ts_ms = ts;
    break;
  }
  return from_rocks(events->status(), "scan events of " + std::string{thread_id});
}

void derive_manifest(const log_end& end, manifest* row) {
  const bool behind = end.seq > row->last_seq;
  row->last_seq = end.seq;
  if (!behind || !end.ts_ms) return;
  // While running, every tick moves the heartbeat with updated_at (thread_actor).
  const bool beating = row->status == thread_status::running && row->heartbeat_at_ms == row->updated_at_ms;
  row->updated_at_ms = std::max(row->updated_at_ms, *end.ts_ms);
  if (beating) row->heartbeat_at_ms = row->updated_at_ms;
}

}  // namespace detail

using namespace detail;

// --- read side ---------------------------------------------------------------

status event_log::read_agent(std::string_view agent_id, agent_config* out) const {
  SKEIN_TRY(validate_id(agent_id, "agent id"));
  std::string value;
  auto s = impl_->db->Get(rocksdb::ReadOptions(), impl_->cf(cf_agents), agent_id, &value);
  if (s.IsNotFound()) return status::not_found("agent " + std::string{agent_id} + " does not exist");
  SKEIN_TRY(from_rocks(s, "read agent"));
  status d = decode_agent(value, out, options_.limits);
  if (!d) return status::corruption("agents key " + std::string{agent_id} + ": " + d.message());
  return status::ok();
}

status event_log::list_agents(std::vector<agent_config>* out) const {
  out->clear();
  std::unique_ptr<rocksdb::Iterator> it{impl_->db->NewIterator(rocksdb::ReadOptions(), impl_->cf(cf_agents))};
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    agent_config a;
    status d = decode_agent(it->value().ToStringView(), &a, options_.limits);
    if (!d) return status::corruption("agents key " + it->key().ToString() + ": " + d.message());
    out->push_back(std::move(a));
  }
  return from_rocks(it->status(), "scan agents");
}

status event_log::find_idempotent(std::string_view thread_id, std::string_view key,
                                  idempotent_run* out) const {
  SKEIN_TRY(validate_id(thread_id, "thread id"));
  SKEIN_TRY(validate_id(key, "idempotency_key"));
  std::string value;
  auto s = impl_->db->Get(rocksdb::ReadOptions(), impl_->cf(cf_index),
                          keys::idempotency_key(thread_id, key), &value);
  if (s.IsNotFound()) return status::not_found("no run used idempotency key " + std::string{key});
  SKEIN_TRY(from_rocks(s, "read idempotency key"));
  if (value.size() < 8)
    return status::corruption("index key " + keys::idempotency_key(thread_id, key) + ": value too short");
  out->first_seq = keys::get_be64(value);
  out->run_id = value.substr(8);
  return status::ok();
}

status event_log::read_manifest(std::string_view thread_id, manifest* out) const {
  SKEIN_TRY(validate_id(thread_id, "thread id"));
  // One snapshot for the row and the log's end: a row rewritten between the
  // two reads must not meet a log end it was not derived with.
  snapshot_guard snap{impl_->db.get()};
  rocksdb::ReadOptions ro = snap.read_options();
  std::string value;
  auto s = impl_->db->Get(ro, impl_->cf(cf_threads), thread_id, &value);
  if (s.IsNotFound()) return status::not_found("thread " + std::string{thread_id} + " does not exist");
  SKEIN_TRY(from_rocks(s, "read manifest"));
  // Into a local: thread_id may view out->id (get_thread(m.id, &m)).
  manifest m;
  status d = decode_manifest(value, &m, options_.limits);
  if (!d) return status::corruption("threads key " + std::string{thread_id} + ": " + d.message());
  std::unique_ptr<rocksdb::Iterator> events{impl_->db->NewIterator(ro, impl_->cf(cf_events))};
  log_end end;
  SKEIN_TRY(find_log_end(events.get(), thread_id, &end));
  derive_manifest(end, &m);
  *out = std::move(m);
  return status::ok();
}

status event_log::read_effect_cursor(std::string_view effect, std::string_view thread_id, uint64_t* out) const {
  SKEIN_TRY(validate_id(effect, "effect"));
  SKEIN_TRY(validate_id(thread_id, "thread id"));
  std::string value;
  auto s = impl_->db->Get(rocksdb::ReadOptions(), impl_->cf(cf_effects), keys::effect_key(effect, thread_id), &value);
  if (s.IsNotFound()) {
    *out = 0;
    return status::ok();
  }
  SKEIN_TRY(from_rocks(s, "read effect cursor"));
  if (value.size() != 8)
    return status::corruption("effects key " + std::string{effect} + "/" + std::string{thread_id} + ": " +
                              std::to_string(value.size()) + " bytes, expected 8");
  *out = keys::get_be64(value);
  return status::ok();
}

status event_log::read_embeddings(std::string_view thread_id,
                                  std::vector<std::pair<uint64_t, embedding_record>>* out) const {
  SKEIN_TRY(validate_id(thread_id, "thread id"));
  out->clear();
  std::string begin = keys::event_prefix(thread_id), end = keys::event_prefix_end(thread_id);
  rocksdb::ReadOptions ro;
  rocksdb::Slice upper{end};
  ro.iterate_upper_bound = &upper;
  std::unique_ptr<rocksdb::Iterator> it{impl_->db->NewIterator(ro, impl_->cf(cf_embeddings))};
  for (it->Seek(begin); it->Valid(); it->Next()) {
    std::string_view thread;
    uint64_t seq = 0;
    if (!keys::parse_event_key(it->key().ToStringView(), &thread, &seq) || thread != thread_id)
      return status::corruption("embeddings key " + printable_key(it->key().ToStringView()) + ": malformed");
    embedding_record r;
    if (status d = decode_embedding(it->value().ToStringView(), &r); !d)
      return status::corruption("embeddings key " + printable_key(it->key().ToStringView()) + ": " + d.message());
    out->emplace_back(seq, std::move(r));
  }
  return from_rocks(it->status(), "read embeddings");
}

status event_log::list_effect_lag(std::string_view effect, std::vector<effect_lag_entry>* out) const {
  SKEIN_TRY(validate_id(effect, "effect"));
  out->clear();
  snapshot_guard snap{impl_->db.get()};
  rocksdb::ReadOptions ro = snap.read_options();
  std::unique_ptr<rocksdb::Iterator> threads{impl_->db->NewIterator(ro, impl_->cf(cf_threads))};
  std::unique_ptr<rocksdb::Iterator> cursors{impl_->db->NewIterator(ro, impl_->cf(cf_effects))};
  std::unique_ptr<rocksdb::Iterator> events{impl_->db->NewIterator(ro, impl_->cf(cf_events))};
  std::string prefix = keys::effect_key(effect, "");
  cursors->Seek(prefix);
  // Both walk in thread id order: the cursors' keys are prefix + thread id.
  for (threads->SeekToFirst(); threads->Valid(); threads->Next()) {
    std::string_view id = threads->key().ToStringView();
    manifest m;
    if (!decode_manifest(threads->value().ToStringView(), &m, options_.limits)) continue;
    log_end end;
    SKEIN_TRY(find_log_end(events.get(), id, &end));
    derive_manifest(end, &m);
    uint64_t cursor = 0;
    while (cursors->Valid() && cursors->key().starts_with(prefix) &&
           cursors->key().ToStringView().substr(prefix.size()) < id)
      cursors->Next();
    if (cursors->Valid() && cursors->key().starts_with(prefix) &&
        cursors->key().ToStringView().substr(prefix.size()) == id && cursors->value().size() == 8)
      cursor = keys::get_be64(cursors->value().ToStringView());
    if (m.last_seq <= cursor) continue;
    out->push_back(effect_lag_entry{std::string{id}, m.agent_id, m.last_seq, cursor, m.updated_at_ms});
  }
  SKEIN_TRY(from_rocks(threads->status(), "scan threads"));
  return from_rocks(cursors->status(), "scan effects");
}

status event_log::read_events(std::string_view thread_id, uint64_t from_seq, size_t limit,
                              std::vector<event>* out) const {
  return read_events_lenient(thread_id, from_seq, limit, out, nullptr);
}

// With unreadable == nullptr the read is strict: the first bad record fails it.
status event_log::read_events_lenient(std::string_view thread_id, uint64_t from_seq, size_t limit,
                                      std::vector<event>* out,
                                      std::vector<unreadable_record>* unreadable) const {
  SKEIN_TRY(validate_id(thread_id, "thread id"));
  out->clear();
  if (unreadable != nullptr) unreadable->clear();
  auto bad = [&](std::string key, uint64_t seq, status why) -> status {
    if (unreadable == nullptr) return why;
    unreadable->push_back({std::string{thread_id}, std::move(key), why.message(), seq});
    return status::ok();
  };
  thread_iterator it{impl_->db.get(), impl_->cf(cf_events), thread_id};
  const uint64_t first = std::max<uint64_t>(from_seq, 1);
  // A long read sizes the vector once: seqs are dense, so the last key bounds the
  // count, and 10,000 events are not moved through a dozen regrowths. Capped, so a
  // corrupt key cannot ask for gigabytes.
  if (limit == 0 || limit > 64) {
    log_end end;
    SKEIN_TRY(find_log_end(it.get(), thread_id, &end));
    if (end.seq >= first)
      out->reserve(std::min<uint64_t>({end.seq - first + 1, limit == 0 ? UINT64_MAX : limit, 1 << 17}));
  }
  for (it->Seek(keys::event_key(thread_id, first)); it->Valid() && (limit == 0 || out->size() < limit); it->Next()) {
    std::string_view key = it->key().ToStringView(), thread;
    uint64_t seq = 0;
    if (!keys::parse_event_key(key, &thread, &seq) || thread != thread_id) {
      std::string name = "events key " + printable_key(key);
      SKEIN_TRY(bad(name, 0, status::corruption(name + ": malformed")));
      continue;
    }
    // Decoded in place; the key's name is spelled only for an error.
    auto name = [&] { return "events key " + std::string{thread} + "#" + std::to_string(seq); };
    event& e = out->emplace_back();
    status d = decode_event(it->value().ToStringView(), &e, options_.limits);
    if (d && e.seq == seq) continue;
    if (d) d = status::corruption("value holds seq " + std::to_string(e.seq));
    out->pop_back();
    SKEIN_TRY(bad(name(), seq, status::corruption(name() + ": " + d.message())));
  }
  return from_rocks(it->status(), "scan events");
}

status event_log::read_events_raw(std::string_view thread_id, uint64_t from_seq, size_t limit,
                                  std::vector<raw_event>* out) const {
  SKEIN_TRY(validate_id(thread_id, "thread id"));
  out->clear();
  thread_iterator it{impl_->db.get(), impl_->cf(cf_events), thread_id};
  for (it->Seek(keys::event_key(thread_id, std::max<uint64_t>(from_seq, 1)));
       it->Valid() && (limit == 0 || out->size() < limit); it->Next()) {
    std::string_view key = it->key().ToStringView(), thread;
    uint64_t seq = 0;
    if (!keys::parse_event_key(key, &thread, &seq) || thread != thread_id)
      return status::corruption("events key " + printable_key(key) + ": malformed");
    std::string_view value = it->value().ToStringView();
    raw_event e;
    auto name = [&] { return "events key " + std::string{thread} + "#" + std::to_string(seq); };
    if (value.size() > options_.limits.json_bytes_max)
      return status::corruption(name() + ": " + std::to_string(value.size()) +
                                " bytes exceeds json_bytes_max");
    if (!peek_event_envelope(value, &e.seq, &e.type))
      return status::corruption(name() + ": no event envelope");
    if (e.seq != seq) return status::corruption(name() + ": value holds seq " + std::to_string(e.seq));
    e.json.assign(value);
    out->push_back(std::move(e));
  }
  return from_rocks(it->status(), "scan events");
}

status event_log::list_threads(const thread_query& q, thread_page* out) const {
  out->threads.clear();
  out->next_cursor.clear();
  out->unreadable.clear();
  if (q.limit == 0 || q.limit > thread_query::limit_max)
    return status::invalid_input("limit: must be between 1 and " +
                                 std::to_string(thread_query::limit_max));
  std::string prefix;
  switch (q.index) {
    case thread_query::by::agent: SKEIN_TRY(validate_id(q.value, "agent")); prefix = keys::index_prefix('a', q.value); break;
    case thread_query::by::parent: SKEIN_TRY(validate_id(q.value, "parent")); prefix = keys::index_prefix('p', q.value); break;
    case thread_query::by::tag: SKEIN_TRY(validate_id(q.value, "tag")); prefix = keys::index_prefix('t', q.value); break;
    case thread_query::by::status:
      if (!parse_thread_status(q.value))
        return status::invalid_input("status: unknown status '" + q.value + "'");
      prefix = keys::index_prefix('s', q.value);
      break;
    case thread_query::by::updated: prefix = "u/"; break;
  }
  std::string after;
  if (!q.cursor.empty() && !hex_decode(q.cursor, &after))
    return status::invalid_input("cursor: malformed");

  const bool newest_first = q.index == thread_query::by::updated;
  snapshot_guard snap{impl_->db.get()};
  rocksdb::ReadOptions ro = snap.read_options();
  std::string lower = prefix, upper = prefix;
  upper.back() = static_cast<char>(upper.back() + 1);  // '/' + 1: end of the prefix range
  rocksdb::Slice lower_slice{lower}, upper_slice{upper};
  ro.iterate_lower_bound = &lower_slice;
  ro.iterate_upper_bound = &upper_slice;
  std::unique_ptr<rocksdb::Iterator> it{impl_->db->NewIterator(ro, impl_->cf(cf_index))};
  std::unique_ptr<rocksdb::Iterator> events;  // opened for the first manifest: the ends of their logs

  if (newest_first) {
    if (after.empty()) it->SeekToLast();
    else {
      it->SeekForPrev(prefix + after);
      if (it->Valid() && it->key().ToStringView() == prefix + after) it->Prev();
    }
  } else {
    // Ids hold no 0x00, so suffix + 0x00 is the first key after the cursor.
    if (after.empty()) it->Seek(prefix);
    else it->Seek(prefix + after + std::string(1, '\0'));
  }
  std::string last_suffix;
  for (; it->Valid(); newest_first ? it->Prev() : it->Next()) {
    std::string_view suffix = it->key().ToStringView().substr(prefix.size());
    if (out->threads.size() == q.limit) {
      out->next_cursor = hex_encode(last_suffix);
      break;
    }
    std::string_view thread = suffix;
    if (newest_first) {
      if (suffix.size() < 10) return status::corruption("index key " + printable_key(it->key().ToStringView()) + ": malformed");
      thread = suffix.substr(9);
    }
    last_suffix.assign(suffix);
    std::string value;
    auto s = impl_->db->Get(ro, impl_->cf(cf_threads), thread, &value);
    if (s.IsNotFound()) {
      std::string key = "index key " + printable_key(it->key().ToStringView());
      out->unreadable.push_back({std::string{thread}, key, key + ": names a thread that does not exist", 0});
      continue;
    }
    SKEIN_TRY(from_rocks(s, "read manifest"));
    manifest m;
    if (status d = decode_manifest(value, &m, options_.limits); !d) {
      std::string key = "threads key " + std::string{thread};
      out->unreadable.push_back({std::string{thread}, key, key + ": " + d.message(), 0});
      continue;
    }
    bool archived = m.archived_at_ms != 0;
    if ((q.archived_filter == thread_query::archived::exclude && archived) ||
        (q.archived_filter == thread_query::archived::only && !archived))
      continue;
    if (!events) {
      rocksdb::ReadOptions events_ro = snap.read_options();  // the snapshot, without the index's bounds
      events.reset(impl_->db->NewIterator(events_ro, impl_->cf(cf_events)));
    }
    log_end end;
    SKEIN_TRY(find_log_end(events.get(), thread, &end));
    derive_manifest(end, &m);
    out->threads.push_back(std::move(m));
  }
  return from_rocks(it->status(), "scan index");
}

status event_log::list_untouched(int64_t before_ms, const std::function<void(const manifest&)>& fn,
                                 uint64_t* unreadable) const {
  const std::string prefix = "u/";
  std::string upper = prefix + keys::updated_value(std::max<int64_t>(before_ms, 0));
  rocksdb::Slice upper_slice{upper};
  snapshot_guard snap{impl_->db.get()};
  rocksdb::ReadOptions ro = snap.read_options();
  ro.iterate_upper_bound = &upper_slice;
  std::unique_ptr<rocksdb::Iterator> it{impl_->db->NewIterator(ro, impl_->cf(cf_index))};
  rocksdb::ReadOptions events_ro = snap.read_options();  // the snapshot, without the index's bound
  std::unique_ptr<rocksdb::Iterator> events{impl_->db->NewIterator(events_ro, impl_->cf(cf_events))};
  for (it->Seek(prefix); it->Valid(); it->Next()) {
    std::string_view suffix = it->key().ToStringView().substr(prefix.size());
    if (suffix.size() < 10) continue;  // malformed: not a thread's entry
    std::string_view thread = suffix.substr(9);
    std::string value;
    auto s = impl_->db->Get(ro, impl_->cf(cf_threads), thread, &value);
    if (s.IsNotFound()) continue;  // erased meanwhile
    SKEIN_TRY(from_rocks(s, "read manifest"));
    manifest m;
    if (!decode_manifest(value, &m, options_.limits)) {
      if (unreadable != nullptr) ++*unreadable;
      continue;
    }
    log_end end;
    SKEIN_TRY(find_log_end(events.get(), thread, &end));
    derive_manifest(end, &m);
    fn(m);
  }
  return from_rocks(it->status(), "scan index");
}

status event_log::list_running(std::vector<std::string>* out) const {
  out->clear();
  std::string lower = keys::index_prefix('s', to_string(thread_status::running)), upper = lower;
  upper.back() = static_cast<char>(upper.back() + 1);
  rocksdb::Slice lower_slice{lower}, upper_slice{upper};
  rocksdb::ReadOptions ro;
  ro.iterate_lower_bound = &lower_slice;
  ro.iterate_upper_bound = &upper_slice;
  std::unique_ptr<rocksdb::Iterator> it{impl_->db->NewIterator(ro, impl_->cf(cf_index))};
  for (it->Seek(lower); it->Valid(); it->Next())
    out->emplace_back(it->key().ToStringView().substr(lower.size()));
  return from_rocks(it->status(), "scan index");
}

status event_log::find_claim(std::string_view kind, std::string_view id, std::string* thread_id) const {
  SKEIN_TRY(validate_id(id, kind == "dm" ? "agent id" : "task id"));
  std::string holder;
  auto s = impl_->db->Get(rocksdb::ReadOptions(), impl_->cf(cf_index), keys::claim_key(kind, id), &holder);
  if (s.IsNotFound()) return status::not_found(std::string{kind} + " " + std::string{id} + " has no thread");
  SKEIN_TRY(from_rocks(s, "read claim"));
  *thread_id = std::move(holder);
  return status::ok();
}

status event_log::last_event_seq(std::string_view thread_id, uint64_t* out) const {
  SKEIN_TRY(validate_id(thread_id, "thread id"));
  log_end end;
  SKEIN_TRY(log_end_of(thread_id, &end));
  *out = end.seq;
  return status::ok();
}

status event_log::log_end_of(std::string_view thread_id, detail::log_end* out) const {
  std::string lower = keys::event_prefix(thread_id), upper = keys::event_prefix_end(thread_id);
  rocksdb::Slice lower_slice{lower}, upper_slice{upper};
  rocksdb::ReadOptions ro;
  ro.iterate_lower_bound = &lower_slice;
  ro.iterate_upper_bound = &upper_slice;
  std::unique_ptr<rocksdb::Iterator> it{impl_->db->NewIterator(ro, impl_->cf(cf_events))};
  return find_log_end(it.get(), thread_id, out);
}

status event_log::find_index_keys(std::string_view thread_id, std::vector<std::string>* out) const {
  out->clear();
  std::string tail = "/";
  tail.append(thread_id);
  const std::string idempotency = "k/";  // "k/thread/key" names the thread in the middle
  std::unique_ptr<rocksdb::Iterator> it{impl_->db->NewIterator(rocksdb::ReadOptions(), impl_->cf(cf_index))};
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    std::string_view key = it->key().ToStringView();
    if (key.starts_with("c/")) {
      // A claim names its thread in the value (keys.cpp).
      if (it->value().ToStringView() == thread_id) out->emplace_back(key);
      continue;
    }
    if (key.ends_with(tail) && !key.starts_with(idempotency)) out->emplace_back(key);
  }
  return from_rocks(it->status(), "scan index");
}

status event_log::scan_embeddings(
    const std::function<void(std::string_view thread, uint64_t seq, const embedding_record& r)>& fn,
    size_t* skipped) const {
  *skipped = 0;
  rocksdb::ReadOptions ro;
  ro.total_order_seek = true;  // across every thread, past the prefix extractor
  ro.fill_cache = false;       // a one-off pass over the whole family
  std::unique_ptr<rocksdb::Iterator> it{impl_->db->NewIterator(ro, impl_->cf(cf_embeddings))};
  embedding_record r;
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    std::string_view thread;
    uint64_t seq = 0;
    if (!keys::parse_event_key(it->key().ToStringView(), &thread, &seq) ||
        !decode_embedding(it->value().ToStringView(), &r).is_ok()) {
      ++*skipped;
      continue;
    }
    fn(thread, seq, r);
  }
  return from_rocks(it->status(), "scan embeddings");
}

status event_log::count_thread_keys(std::string_view thread_id, size_t* out) const {
  SKEIN_TRY(validate_id(thread_id, "thread id"));
  *out = 0;
  std::string id{thread_id};
  for (size_t c = 0; c < cf_count; ++c) {
    if (c == cf_meta || c == cf_default || c == cf_agents || c == cf_schedules || c == cf_sessions ||
        c == cf_suggestions)
      continue;
    std::unique_ptr<rocksdb::Iterator> it{impl_->db->NewIterator(rocksdb::ReadOptions(), impl_->cf(static_cast<cf_id>(c)))};
    if (c == cf_events || c == cf_embeddings) {
      rocksdb::ReadOptions ro;
      ro.total_order_seek = true;
      it.reset(impl_->db->NewIterator(ro, impl_->cf(static_cast<cf_id>(c))));
    }
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      std::string_view key = it->key().ToStringView();
      bool mine = false;
      switch (c) {
        case cf_threads: mine = key == id; break;
        case cf_events:
        case cf_embeddings:
        case cf_inbox: mine = key.starts_with(keys::event_prefix(id)); break;
        case cf_index:
          // A claim ("c/") names its thread in the value, not the key.
          mine = key.starts_with("c/") ? it->value().ToStringView() == id
                                       : key.ends_with("/" + id) || key.starts_with(keys::idempotency_prefix(id));
          break;
        case cf_usage: mine = key.starts_with(keys::event_prefix(id)); break;
        case cf_effects: mine = key.ends_with(std::string(1, '\0') + id); break;
        case cf_work: mine = key.ends_with("/" + id); break;
        case cf_graph: {
          // A triple names the thread as a node: "thread:" id, ended by 0x00 or the key's end.
          std::string node = "thread:" + id;
          for (size_t at = key.find(node); at != std::string_view::npos; at = key.find(node, at + 1)) {
            size_t end = at + node.size();
            bool starts = at == 2 || key[at - 1] == '\0';
            if (starts && (end == key.size() || key[end] == '\0')) mine = true;
          }
          break;
        }
        default: break;
      }
      if (mine) ++*out;
    }
    SKEIN_TRY(from_rocks(it->status(), "scan"));
  }
  return status::ok();
}

log_counters event_log::counters() const {
  log_counters c;
  c.writes = counters_.writes.load(std::memory_order_relaxed);
  c.commits = counters_.commits.load(std::memory_order_relaxed);
  c.events = counters_.events.load(std::memory_order_relaxed);
  c.rejected = counters_.rejected.load(std::memory_order_relaxed);
  c.failed = counters_.failed.load(std::memory_order_relaxed);
  c.bytes = counters_.bytes.load(std::memory_order_relaxed);
  c.keys = counters_.keys.load(std::memory_order_relaxed);
  c.manifests = counters_.manifests.load(std::memory_order_relaxed);
  c.group_max = counters_.group_max.load(std::memory_order_relaxed);
  return c;
}

status event_log::read_inbox(std::string_view thread_id, std::vector<inbox_item>* out) const {
  SKEIN_TRY(validate_id(thread_id, "thread id"));
  out->clear();
  thread_iterator it{impl_->db.get(), impl_->cf(cf_inbox), thread_id};
  for (it->Seek(keys::event_prefix(thread_id)); it->Valid(); it->Next()) {
    std::string_view key = it->key().ToStringView(), thread;
    inbox_item item;
    if (!keys::parse_event_key(key, &thread, &item.order) || thread != thread_id)
      return status::corruption("inbox key " + printable_key(key) + ": malformed");
    status d = decode_inbox_input(it->value().ToStringView(), &item.input, options_.limits);
    if (!d)
      return status::corruption("inbox key " + std::string{thread} + "#" + std::to_string(item.order) +
                                ": " + d.message());
    out->push_back(std::move(item));
  }
  return from_rocks(it->status(), "scan inbox");
}

status event_log::list_inbox_threads(std::vector<std::string>* out) const {
  out->clear();
  std::unique_ptr<rocksdb::Iterator> it{impl_->db->NewIterator(rocksdb::ReadOptions(), impl_->cf(cf_inbox))};
  for (it->SeekToFirst(); it->Valid();) {
    std::string_view key = it->key().ToStringView(), thread;
    uint64_t order = 0;
    if (!keys::parse_event_key(key, &thread, &order))
      return status::corruption("inbox key " + printable_key(key) + ": malformed");
    out->emplace_back(thread);
    it->Seek(keys::event_prefix_end(thread));  // past this thread's inputs
  }
  return from_rocks(it->status(), "scan inbox");
}

}  // namespace skein
