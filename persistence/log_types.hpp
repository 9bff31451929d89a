// log_types: the values the event log takes and gives — its options and
// quotas, a tick and the side rows it carries, listing and usage queries and
// their pages, counters, and the rows a thread's handoff moves — apart from the
// event_log class (event_log.hpp), which every user of them includes anyway.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/model/event.hpp"
#include "runtime/model/json_codec.hpp"
#include "runtime/model/manifest.hpp"
#include "runtime/model/run.hpp"
#include "runtime/model/schedule.hpp"
#include "runtime/model/status.hpp"

namespace rocksdb {
class Env;
}  // namespace rocksdb

namespace skein {

class master_key;

// 2: usage rows keyed by thread and seq (keys.cpp). 3: the work, graph, sessions
// and suggestions column families (work items). 4: the quota rows of the meta
// column family (the thread count, events per UTC day), kept with every write.
// 5: threads rows may be behind their log (event_log_tick.cpp): a read takes last_seq
// from the log. Opening a version-1 database migrates it to 2; opening a version-2
// one creates the new (empty) families and records 3; opening an older one than 4
// counts its threads once and records 4; a version-4 one needs nothing (no row
// is behind) and records 5; a newer one is refused (an older skein would write
// threads without keeping the count, or append over events a behind row leaves out).
inline constexpr uint32_t schema_version = 5;

enum class durability : uint8_t {
  sync,    // fdatasync before ack: survives power loss
  flush,   // WAL written to the OS before ack, no fsync: survives a process crash
  memory,  // no disk at all: tests and ephemeral use
};

std::string_view to_string(durability d);
bool parse_durability(std::string_view name, durability* out);

// Quotas of one database (one namespace), set by its owner; 0: unlimited. A
// refusal is quota_exceeded naming the limit, and writes nothing.
struct log_quota {
  // Threads stored. Exact: the log counts them (meta row "threads"), and a
  // creating tick past it is refused alone, whatever path created it.
  uint64_t threads_max = 0;
  // Events committed per UTC day, by each event's ts (meta rows "events/<day>").
  // Checked when an input is admitted, never mid-run: the runs admitted before the
  // figure was reached complete and may pass it.
  uint64_t events_per_day_max = 0;
  // Approximate bytes on disk: SST files of every column family + live WAL files
  // (memory mode: + memtables, as it has no WAL). RocksDB's figures, read at most
  // once a second (storage_cache_ms): deleted data counts until compaction drops
  // it, a WAL until its memtables are flushed, a second's writes may go unseen.
  // Checked for new inputs and creating ticks.
  uint64_t storage_bytes_max = 0;
};

// What the quotas measure, now.
struct log_usage {
  uint64_t threads = 0;
  uint64_t events_today = 0;  // events with ts in the UTC day of the `now_ms` asked about
  uint64_t storage_bytes = 0;
};

class log_replicator;  // below

struct log_options {
  std::string path;                  // database directory; a name only in memory mode
  durability mode = durability::sync;
  bool create_if_missing = true;
  // Test hook: a wrapped environment (fault injection). Borrowed: must outlive the log.
  rocksdb::Env* env = nullptr;
  // Encryption at rest (encryption.hpp): the master key that unwraps the
  // database's data key; null: a plain database. A database created with a key
  // is encrypted for good (until `skein rekey`); opening it without one, or with
  // another, is refused, as is a key for a plain database. Memory mode refuses it.
  std::shared_ptr<const master_key> encryption;
  json_limits limits;
  size_t tick_events_max = 4096;     // events in one tick
  size_t bulk_events_max = 100000;   // events in one bulk tick (fork, import)
  size_t manifest_cache_max = 65536; // threads whose index projection the writer caches
  uint64_t wal_bytes_max = 256 << 20; // WAL kept before memtables are flushed: bounds replay at open
  log_quota quota;                   // initial quotas; set_quota() changes them
  // A replicated cluster's leader side (see log_replicator); null: writes
  // stay on this disk. Every family but agents and meta is replicated.
  std::shared_ptr<log_replicator> replicator;
};

// The column families a tick may write beside its thread's own rows (side rows).
enum class side_cf : uint8_t { schedules, work, graph, sessions, suggestions };
std::string_view to_string(side_cf cf);

// One write to a side column family (keys.cpp), carried by a tick so that it is
// in the batch of the event that causes it: a schedule's firing with the thread
// it creates, a work item's row and triples with its transition's signal, a
// session or suggestion (ticks with an empty thread_id and these rows alone).
// Build them with schedule_rows_of() / work_rows.hpp; the values are encoded
// (and checked) there.
struct side_row {
  enum class op : uint8_t { put, erase, erase_range };
  op kind = op::put;
  std::string key;
  std::string value;  // put: the value; erase_range: the exclusive end key
  side_cf cf = side_cf::schedules;
};
using schedule_row = side_row;

// The rows that store `s` (definition and state) and, if given, one history row
// `f` (f->seq must be s.history_seq), deleting the row that falls out of the
// schedule_history_max newest in the same batch.
status schedule_rows_of(const schedule& s, const schedule_firing* f, std::vector<schedule_row>* out);
// The rows that erase a schedule and its whole history.
std::vector<schedule_row> schedule_erase_rows(std::string_view schedule_id);

// A thread's new events and its manifest after them: one atomic unit.
// A tick with an empty thread_id and only side_rows writes those rows alone
// (schedule CRUD, a skipped firing, a firing whose bound thread is gone,
// sessions and suggestions).
struct tick {
  std::string thread_id;
  bool create = false;        // true: the thread must not exist yet; false: it must
  bool bulk = false;          // a copy of history (fork, import): bulk_events_max applies
  std::vector<event> events;  // seqs continue the log: last_seq+1, last_seq+2, ...
  skein::manifest manifest;   // id must equal thread_id; last_seq is set by the log
  // Set on the first tick of a run whose input carried an idempotency key: maps
  // the key to the run (and the seq of the tick's first event) for retried sends.
  std::string idempotency_key;
  std::string run_id;
  // The thread's inbox (DESIGN §5): inputs accepted before their run starts.
  // `inbox_put` stores one (arrival order, input); `inbox_take` removes the one
  // whose run this tick starts — in the same batch as its input message.
  std::vector<std::pair<uint64_t, run_input>> inbox_put;
  uint64_t inbox_take = 0;  // 0: none
  // Effects whose output this tick is (a generated title, a compaction): each
  // effect's cursor for the thread (the last seq it processed), written in the
  // same batch so that after a crash the effect neither repeats nor skips it.
  std::vector<std::pair<std::string, uint64_t>> effect_cursors;
  // Rows of the side column families written in the same batch (a firing, a
  // work transition's item row and triples).
  std::vector<side_row> side_rows;
  // Recovery only: the thread's stored manifest or events may be unreadable. The
  // writer then takes the last seq from the event keys and the index entries from
  // a scan when the manifest does not decode, instead of from the manifest.
  bool quarantine = false;
};

// One effect's output for one thread (DESIGN §4, effects): its rows and its new
// cursor, written in one batch so that after a crash the effect neither repeats
// nor skips what it did. An effect write with no rows only moves the cursor.
struct effect_write {
  std::string effect;     // the effect's name (an id): "titles", "embeddings"
  std::string thread_id;
  uint64_t cursor = 0;    // the last seq processed; at most the thread's last seq
  // embeddings CF rows: (seq, value from encode_embedding), each seq in
  // (stored cursor, cursor].
  std::vector<std::pair<uint64_t, std::string>> embeddings;
};

// A thread an effect has not caught up with: its last seq is past the cursor.
struct effect_lag_entry {
  std::string thread_id;
  std::string agent_id;
  uint64_t last_seq = 0;
  uint64_t cursor = 0;
  int64_t updated_at_ms = 0;
};

struct inbox_item {
  uint64_t order = 0;  // arrival order within the thread, from 1
  run_input input;
};

// A stored record that could not be decoded, skipped by a lenient read.
struct unreadable_record {
  std::string thread_id;
  std::string key;     // printable: "events key t#5", "threads key t"
  std::string reason;  // the decode error, naming the field or limit
  uint64_t seq = 0;    // events: the seq of the key; 0 otherwise
};

struct idempotent_run {
  std::string run_id;
  uint64_t first_seq = 0;
};

struct thread_query {
  enum class by : uint8_t { agent, status, parent, tag, updated };
  by index = by::agent;
  std::string value;    // agent id, status name, parent id or tag; unused for `updated`
  std::string cursor;   // "" for the first page, else the previous page's next_cursor
  size_t limit = 100;   // at most limit_max
  static constexpr size_t limit_max = 1000;
  // Archived threads (manifest.archived_at_ms != 0, the retention effect) leave
  // default listings; they stay readable by id.
  enum class archived : uint8_t { exclude, include, only };
  archived archived_filter = archived::exclude;
};

// A listing never fails because of one thread's record: a manifest that does not
// decode (or an index entry naming no manifest) is skipped and reported in
// `unreadable`, and the page goes on.
struct thread_page {
  std::vector<manifest> threads;  // in index order (`updated`: newest first)
  std::string next_cursor;        // "" when there is no further page
  std::vector<unreadable_record> unreadable;  // skipped on this page, in index order
};

// A usage query (usage_query.cpp): totals of the usage rows that pass every filter.
struct usage_query {
  enum class group : uint8_t { none, agent, thread, day };
  std::string agent_id;    // "": every agent
  std::string thread_id;   // "": every thread
  int64_t since_ms = 0;    // rows with since_ms <= ts < until_ms (half-open)
  int64_t until_ms = INT64_MAX;
  group group_by = group::none;
};

struct usage_totals {
  std::string key;  // the group: an agent id, a thread id, a UTC day "YYYY-MM-DD"; "" for none
  token_usage usage;
  double cost_usd = 0;
  uint64_t runs = 0;
  uint64_t duration_ms = 0;
};

struct usage_report {
  std::vector<usage_totals> groups;  // ordered by key; one group (key "") for group none
  uint64_t rows = 0;                 // rows counted
  uint64_t unreadable = 0;           // rows skipped because they do not decode
};

// One decoded usage row (the grammar at the top of event_log_tick.cpp).
struct usage_row {
  int64_t ts_ms = 0;
  std::string thread_id;
  uint64_t seq = 0;
  std::string agent_id;
  token_usage usage;
  double cost_usd = 0;
  uint64_t duration_ms = 0;
};

std::string_view to_string(usage_query::group g);
std::optional<usage_query::group> parse_usage_group(std::string_view name);
// "YYYY-MM-DD" of the UTC day holding ts_ms.
std::string utc_day(int64_t ts_ms);

struct log_counters {
  uint64_t writes = 0;       // RocksDB writes (one per group)
  uint64_t commits = 0;      // ticks acknowledged
  uint64_t events = 0;       // events acknowledged
  uint64_t rejected = 0;     // ticks refused before writing (conflict, invalid input)
  uint64_t failed = 0;       // ticks failed by a storage error
  uint64_t bytes = 0;        // batch bytes written
  uint64_t keys = 0;         // batch entries written (puts, deletes, range deletes)
  uint64_t manifests = 0;    // threads rows written by ticks (the others left them behind)
  uint64_t group_max = 0;    // most ticks in one write
};

// One stored key of a thread as it is in its column family: what a cluster
// node hands to another when the thread changes owner (runtime/cluster/cluster_handoff.cpp).
struct log_row {
  uint8_t family = 0;  // the column family, by its number (event_log_internal.hpp)
  std::string key;
  std::string value;
};
// One row change carried by the replicated log to a partition's followers
// (persistence/replicated_batch.hpp encodes a message's rows): a put of
// `value` at `key`, an erase of `key`, or an erase of the keys in [key, value).
struct replicated_row {
  enum class op : uint8_t { put, erase, erase_range };
  uint8_t family = 0;  // the column family, by its number (event_log_internal.hpp)
  op kind = op::put;
  std::string key;
  std::string value;  // put: the value; erase_range: the exclusive end key; erase: ""
};

// One partition's part of a write: the rows it changes there, and, once
// replicated, the stream sequence its message got.
struct replicated_part {
  uint32_t partition = 0;
  std::vector<replicated_row> rows;
  uint64_t seq = 0;
};

// A leader's side of the replicated log, as the event log sees it
// (runtime/replication implements it over JetStream). A log opened with one
// hands every write's rows to it, split by partition, before it writes them:
// a write is applied here only once replicate() stored each part. Called on
// the log's writer thread only.
class log_replicator {
 public:
  virtual ~log_replicator() = default;
  // The partition of the rows a write makes for `route`: a thread id (its
  // rows, index entries, claims, effect cursors, work rows and triples), or
  // a schedule id (a schedule's rows written alone).
  virtual uint32_t partition_of(std::string_view route) const = 0;
  // Stores every part in its partition's log, setting each part's seq; ok
  // only when every part is stored (on a quorum). An error fails the write,
  // which is then not applied here: the parts stored before it keep their
  // seq; conflict (this node does not, or no longer, lead the partition)
  // says the failing part was not stored, any other (unavailable: a timeout)
  // that it may have been. The log holds every partition that may hold
  // such a part (event_log::resume_partition).
  virtual status replicate(std::vector<replicated_part>& parts) = 0;
};

// The family of a thread's accepted inputs not yet run (its inbox).
inline constexpr uint8_t log_row_inbox_family = 10;
// The family of its messages' embeddings (the memory index's rows).
inline constexpr uint8_t log_row_embeddings_family = 6;

}  // namespace skein
