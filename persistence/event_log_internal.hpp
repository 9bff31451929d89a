// Internals shared by the event log's translation units (event_log.cpp: open;
// event_log_tick.cpp, event_log_commit.cpp, event_log_erase.cpp: the write side;
// event_log_read.cpp: the read side; and the others). Not part of the API.
#pragma once

#include <memory>
#include <optional>
#include <rocksdb/db.h>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "persistence/event_log.hpp"
#include "persistence/keys.hpp"

namespace skein::detail {

enum cf_id : size_t { cf_default, cf_threads, cf_events, cf_index, cf_usage, cf_effects,
                      cf_embeddings, cf_schedules, cf_agents, cf_meta, cf_inbox,
                      // schema 3 (work items)
                      cf_work, cf_graph, cf_sessions, cf_suggestions, cf_count };

inline constexpr const char* cf_names[cf_count] = {"default",    "threads",   "events", "index",
                                                   "usage",      "effects",   "embeddings",
                                                   "schedules",  "agents",    "meta",
                                                   "inbox",      "work",      "graph",
                                                   "sessions",   "suggestions"};

inline cf_id cf_of(side_cf c) {
  switch (c) {
    case side_cf::schedules: return cf_schedules;
    case side_cf::work: return cf_work;
    case side_cf::graph: return cf_graph;
    case side_cf::sessions: return cf_sessions;
    case side_cf::suggestions: return cf_suggestions;
  }
  return cf_schedules;
}

status from_rocks(const rocksdb::Status& s, std::string_view what);

// The route (log_replicator::partition_of) of a thread-less tick's side row:
// a schedule's id, or the work home key of the agent whose session or
// suggestion it is.
std::string side_route(const side_row& row);

// Days since the epoch of the UTC day holding ms (floor: before 1970 too): the
// day an event counts against events_per_day_max in.
inline int64_t day_of(int64_t ms) {
  constexpr int64_t ms_per_day = 86400000;
  return ms >= 0 ? ms / ms_per_day : (ms - (ms_per_day - 1)) / ms_per_day;
}
// A key with its non-printable bytes as \xNN, for error messages.
std::string printable_key(std::string_view key);

// Where a thread's log ends: what a threads row behind it is read with.
struct log_end {
  uint64_t seq = 0;              // seq of the thread's last event key; 0: no event
  std::optional<int64_t> ts_ms;  // that event's ts, when its value shows it (peek_event_ts)
};

// The end of `thread_id`'s log through `events`, an iterator of the events
// family (prefix mode is enough: it stays within the thread's prefix). A key of
// the thread's range that is no seq key (another length) is looked past.
status find_log_end(rocksdb::Iterator* events, std::string_view thread_id, log_end* out);

// The keys of every graph triple naming thread `id` (as subject or object),
// each under all three of its keys, read through `graph`, an iterator of the
// graph family (a snapshot's when made with one). *undecodable: the keys under
// the thread's two prefixes whose triple does not decode (they cannot name
// their twin keys). Work items: erase_thread erases them, thread_rows moves them.
status thread_triple_keys(rocksdb::Iterator* graph, std::string_view id, std::set<std::string>* keys,
                          std::vector<std::string>* undecodable);

// The exclusive upper bound of the keys that start with `prefix`.
std::string prefix_end(std::string prefix);

// The manifest a read reports for a stored threads row and its log's end
// (the derivation at the top of event_log_tick.cpp): last_seq from the log always;
// updated_at_ms and heartbeat_at_ms too when the row is behind the log.
void derive_manifest(const log_end& end, manifest* row);

// An iterator over one thread's keys in `family` (events, embeddings, inbox:
// the keys under keys::event_prefix), bounded above so that it never leaves
// them. Holds the bound it reads: neither copied nor moved.
class thread_iterator {
 public:
  thread_iterator(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* family, std::string_view thread_id)
      : upper_(keys::event_prefix_end(thread_id)), upper_slice_(upper_) {
    rocksdb::ReadOptions ro;
    ro.iterate_upper_bound = &upper_slice_;
    it_.reset(db->NewIterator(ro, family));
  }
  thread_iterator(const thread_iterator&) = delete;
  thread_iterator& operator=(const thread_iterator&) = delete;
  rocksdb::Iterator* operator->() const { return it_.get(); }
  rocksdb::Iterator* get() const { return it_.get(); }

 private:
  std::string upper_;
  rocksdb::Slice upper_slice_;  // over upper_
  std::unique_ptr<rocksdb::Iterator> it_;
};

// Releases a snapshot when it goes out of scope.
class snapshot_guard {
 public:
  explicit snapshot_guard(rocksdb::DB* db) : db_(db), snap_(db->GetSnapshot()) {}
  ~snapshot_guard() { db_->ReleaseSnapshot(snap_); }
  snapshot_guard(const snapshot_guard&) = delete;
  snapshot_guard& operator=(const snapshot_guard&) = delete;
  const rocksdb::Snapshot* get() const { return snap_; }
  // Options that read at this snapshot (bounds and the rest left default).
  rocksdb::ReadOptions read_options() const {
    rocksdb::ReadOptions ro;
    ro.snapshot = snap_;
    return ro;
  }

 private:
  rocksdb::DB* db_;
  const rocksdb::Snapshot* snap_;
};

}  // namespace skein::detail

namespace skein {

struct event_log::impl {
  std::unique_ptr<rocksdb::DB> db;
  std::vector<rocksdb::ColumnFamilyHandle*> cfs;  // indexed by detail::cf_id
  rocksdb::WriteOptions write_options;

  rocksdb::ColumnFamilyHandle* cf(detail::cf_id i) const { return cfs[i]; }

  ~impl() {
    // An orderly close flushes the memtables, so the next open replays no WAL.
    if (db && !cfs.empty()) {
      rocksdb::FlushOptions fo;
      db->Flush(fo, cfs).PermitUncheckedError();
    }
    for (auto* h : cfs) {
      if (h != nullptr) db->DestroyColumnFamilyHandle(h).PermitUncheckedError();
    }
    if (db) db->Close().PermitUncheckedError();
  }
};

}  // namespace skein
