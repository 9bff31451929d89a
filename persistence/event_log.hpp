// event_log: the RocksDB database that is the source of truth for threads.
//
// One database per node, one column family per kind of record (keys.cpp has the
// grammar). A tick — a thread's new events, its manifest, the index entries and
// usage rows they imply — is written as one WriteBatch: after a crash a tick is
// there whole or not at all. commit_group() merges many ticks into one batch and
// one write (group commit); the journal actor is its only caller at run time.
//
// Thread-safety: the write side (commit, commit_group, erase_thread) is for one
// thread at a time — the journal. Reads may run on any thread concurrently with
// writes and with each other. After a failed write the log refuses every further
// write with io_error until it is closed and opened again: RocksDB may not retry
// a failed fsync, and neither do we. After a full disk the refusals answer
// no_space (write() says why a reopen is needed there too).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "persistence/log_types.hpp"
#include "runtime/model/agent.hpp"
#include "runtime/model/embedding.hpp"
#include "runtime/model/event.hpp"
#include "runtime/model/json_codec.hpp"
#include "runtime/model/manifest.hpp"
#include "runtime/model/run.hpp"
#include "runtime/model/schedule.hpp"
#include "runtime/model/status.hpp"

namespace rocksdb {
class ColumnFamilyHandle;
class DB;
class Env;
class WriteBatch;
}  // namespace rocksdb

namespace skein {

class encrypted_env;
class master_key;
namespace detail {
struct log_end;
}

class event_log {
 public:
  // Opens (or creates) the database. Refuses one written with a newer schema.
  // First finishes or rolls back a rekey a crash interrupted (rekey.hpp), then
  // checks the key (log_options::encryption) before RocksDB touches a file.
  static status open(const log_options& options, std::unique_ptr<event_log>* out);
  ~event_log();
  event_log(const event_log&) = delete;
  event_log& operator=(const event_log&) = delete;

  // --- write side: one thread at a time ---

  // Writes one tick. On success `t.manifest.last_seq` holds the new last seq.
  status commit(tick& t);
  // Writes every valid tick of `ticks` in one batch and one write. results[i] is the
  // outcome of ticks[i]: an invalid tick is refused alone; a storage failure fails
  // every tick of the batch. `results` must have ticks.size() elements.
  void commit_group(std::span<tick* const> ticks, std::span<status> results);
  // The same, with effect writes in the same batch and write (after the ticks):
  // effect_results[i] is the outcome of effects[i], refused alone like a tick.
  void commit_group(std::span<tick* const> ticks, std::span<status> results,
                    std::span<effect_write* const> effects, std::span<status> effect_results);
  // Writes every tick of `ticks` in one batch and one write, all or nothing: the
  // first tick refused fails the call with its error ("tick i of n: ...") and
  // nothing is written (a multi-thread import). On success each tick's
  // manifest.last_seq holds its new last seq.
  status commit_all(std::span<tick* const> ticks);
  // Removes every key of the thread from every column family, by ranges and point
  // deletes: it reads no event. A thread whose manifest cannot be read is erased
  // too; its index entries are then found by a scan of the index. Idempotent.
  // keep_claims: its claims stay (a cluster handoff moved the thread, not them).
  status erase_thread(std::string_view thread_id, bool keep_claims = false);
  // Writes one effect's output and cursor in one batch. not_found if the thread
  // does not exist (erased: its rows must not come back); conflict if `cursor`
  // is below the stored one or a row's seq is outside (stored cursor, cursor];
  // invalid_input past the thread's last seq.
  status commit_effect(effect_write& w);
  // commit_effect() for many writes in one batch and one write; results[i] is
  // the outcome of writes[i] (one refused write is refused alone). At most one
  // write per (effect, thread) in one call.
  void commit_effects(std::span<effect_write* const> writes, std::span<status> results);
  // Stores an agent's configuration (agents column family); replaces one with the same id.
  status put_agent(const agent_config& agent);
  // Writes another node's copy of a thread (thread_rows() there) in one batch,
  // counted as one more thread. Each row must be one of the thread's own (its
  // threads row, which must decode, events, inbox, usage, embeddings, index
  // entries, idempotency keys, effect cursors, and a work item's row and the
  // graph triples naming it); invalid_input names the first
  // that is not, and nothing is written. *adopted is false, and nothing is
  // written, when the thread is stored here already.
  status adopt_thread(std::string_view thread_id, const std::vector<log_row>& rows, bool* adopted);
  // A schedule moving between cluster nodes: its definition row and its
  // history rows (schedules family) from one snapshot; not_found if it is not
  // stored here.
  status schedule_rows(std::string_view schedule_id, std::vector<log_row>* out) const;
  // Writes another node's schedule_rows() in one batch. Each row must be the
  // schedule's own: its definition (which must decode, naming this id) or a
  // history row of it that decodes; invalid_input names the first that is not,
  // and nothing is written. *adopted is false, and nothing is written, when
  // the schedule is stored here already.
  status adopt_schedule(std::string_view schedule_id, const std::vector<log_row>& rows, bool* adopted);
  // Erases a schedule's definition and history in one batch (the old owner,
  // after the new one adopted them).
  status erase_schedule(std::string_view schedule_id);
  // An agent's work moving between cluster nodes beside its items (which move
  // as threads, their work rows and triples with them): the agents with any
  // work, session or suggestion row here; one agent's session and suggestion
  // rows from one snapshot; another node's such rows written in one batch
  // (each must be a session or suggestion row of that agent that decodes,
  // keyed by its id; invalid_input names the first that is not, and nothing
  // is written; rows here already are overwritten with the same bytes); and
  // their erasure on the old node.
  status work_agents(std::vector<std::string>* out) const;
  status agent_work_rows(std::string_view agent_id, std::vector<log_row>* out) const;
  status adopt_agent_work(std::string_view agent_id, const std::vector<log_row>& rows);
  status erase_agent_work(std::string_view agent_id);
  // Claims handed over by another node ("c/<kind>/<id>" -> thread id): each is
  // written unless it is here already; conflict if one here names another thread.
  status put_claims(const std::vector<log_row>& rows);
  status erase_claims(const std::vector<std::string>& keys);
  // Flushes every memtable and compacts every column family into its last
  // level, WAL records included: what is on disk is then SST files alone. A
  // maintenance and test aid (the encryption tests read every byte written);
  // O(size of the database). Not concurrent with writes.
  status compact_all();

  // --- read side: any thread ---

  // The thread's manifest: its stored row, with last_seq from the log's last
  // event key and, for a row behind the log, updated_at_ms (and a running
  // thread's heartbeat) from that event (event_log_tick.cpp). Row and log end are
  // read from one snapshot. Listings and the other manifest reads report the same.
  status read_manifest(std::string_view thread_id, manifest* out) const;
  // Events with seq >= from_seq, in seq order, at most `limit` (0: no limit).
  status read_events(std::string_view thread_id, uint64_t from_seq, size_t limit,
                     std::vector<event>* out) const;
  // read_events() that skips what does not decode (a malformed key, a value past
  // the limits) and reports it in *unreadable; storage errors still fail it. For
  // diagnose and recovery, which must see around one bad record.
  status read_events_lenient(std::string_view thread_id, uint64_t from_seq, size_t limit,
                             std::vector<event>* out,
                             std::vector<unreadable_record>* unreadable) const;
  // read_events() without the decode: each event's stored JSON, which is what
  // encode_event writes for it (the API's and the export's form). Checked: the
  // key, the value's size against json_bytes_max, and an envelope whose seq is
  // the key's; a value that fails is corruption, as in read_events(). What the
  // check leaves out (a payload that would not decode) is served as stored.
  status read_events_raw(std::string_view thread_id, uint64_t from_seq, size_t limit,
                         std::vector<raw_event>* out) const;
  // The seq of the thread's last event key (its value unread); 0 when it has none.
  status last_event_seq(std::string_view thread_id, uint64_t* out) const;
  // Index entries naming the thread, found by a scan of the whole index: for a
  // thread whose manifest cannot be read (erase, quarantine). O(size of the index).
  status find_index_keys(std::string_view thread_id, std::vector<std::string>* out) const;
  status list_threads(const thread_query& query, thread_page* out) const;
  // Every stored row of the thread but its claims, from one snapshot: what
  // adopt_thread() writes on another node. not_found if it is not stored.
  status thread_rows(std::string_view thread_id, std::vector<log_row>* out) const;
  // Every claim stored here (index rows "c/<kind>/<id>" -> thread id).
  status claim_rows(std::vector<log_row>* out) const;
  // A follower's apply of one message of a partition's replicated log, at
  // stream sequence `seq`: its rows and the partition's applied sequence in
  // one batch, so after a crash both are there or neither, and a message is
  // applied exactly once. A seq not above the applied one changes nothing
  // (*applied false): the follower resumes from replicated_seq() + 1 and may
  // be handed a message again. invalid_input (nothing written) for a row of
  // an unknown family or the meta family. Durable in the log's mode. One
  // applier per partition; partitions apply in parallel. A follower's
  // partition has no writer here: its rows bypass the writer's cached
  // projections and the quota counts; a node taking the lead calls
  // resume_partition() before its first write there.
  status apply_replicated(uint32_t partition, uint64_t seq, const std::vector<replicated_row>& rows, bool* applied);
  // The last sequence applied for `partition`; 0 before the first.
  status replicated_seq(uint32_t partition, uint64_t* seq) const;
  // A leader's writes of a partition after a replicate() that failed with its
  // outcome unknown (a publish timed out: the message may be stored) are
  // refused, `unavailable`, until the node applied the partition's log up to
  // its end (apply_replicated) and calls this: the writer's cached
  // projections are dropped and the partition's writes go on. Writer only.
  void resume_partition(uint32_t partition);
  // The partitions refused so, in order.
  std::vector<uint32_t> unsettled_partitions() const { return {unsettled_.begin(), unsettled_.end()}; }
  // How many there are; any thread (the partition manager looks before it asks the writer).
  size_t unsettled_count() const { return unsettled_count_.load(std::memory_order_acquire); }
  // A cluster node's own rows in the meta family, under "node/" (its
  // membership, its handoff marks). Keys outside "node/" are refused. The
  // write is durable in the log's mode; any thread may call these.
  status read_node_rows(std::string_view prefix, std::vector<std::pair<std::string, std::string>>* out) const;
  status write_node_rows(const std::vector<std::pair<std::string, std::string>>& puts,
                         const std::vector<std::string>& deletes);
  status read_agent(std::string_view agent_id, agent_config* out) const;
  status list_agents(std::vector<agent_config>* out) const;
  // The run that first used `key` on the thread; not_found if none did.
  status find_idempotent(std::string_view thread_id, std::string_view key,
                         idempotent_run* out) const;
  // Ids of every thread indexed as `running`: the input of recovery. Reads the
  // index only, so a thread whose manifest does not decode is listed too.
  status list_running(std::vector<std::string>* out) const;
  // The thread holding a claim (keys.cpp, "c/"): kind "task" with a task id, or
  // "dm" with an agent id. not_found when none does.
  status find_claim(std::string_view kind, std::string_view id, std::string* thread_id) const;
  // The effect's cursor for the thread: the last seq it processed, 0 if none.
  status read_effect_cursor(std::string_view effect, std::string_view thread_id, uint64_t* out) const;
  // Every thread whose last seq is past the effect's cursor, in id order: the
  // catch-up of an effect at open. Scans the threads column family (decoding
  // each manifest) and the effect's cursors: O(threads), once per open.
  // A manifest that does not decode is skipped (recovery reports those).
  status list_effect_lag(std::string_view effect, std::vector<effect_lag_entry>* out) const;
  // The thread's embeddings rows, in seq order (a row that does not decode fails it).
  status read_embeddings(std::string_view thread_id,
                         std::vector<std::pair<uint64_t, embedding_record>>* out) const;
  // The thread's inbox, oldest first.
  status read_inbox(std::string_view thread_id, std::vector<inbox_item>* out) const;
  // Ids of every thread with inputs in its inbox: they are woken at open.
  status list_inbox_threads(std::vector<std::string>* out) const;
  // Every stored embedding, in key order: fn(thread, seq, record), for the memory
  // index rebuilt at open. A key or value that does not decode is skipped and
  // counted in *skipped (never fails the scan: memory is derived state); storage
  // errors fail it. O(embeddings).
  status scan_embeddings(const std::function<void(std::string_view thread, uint64_t seq,
                                                  const embedding_record& r)>& fn,
                         size_t* skipped) const;
  // Counts the thread's keys across every column family by full scans: a test and
  // diagnose aid, O(size of the database).
  status count_thread_keys(std::string_view thread_id, size_t* out) const;

  // Manifests of the threads last updated before `before_ms` (index u/, oldest
  // first; the index keeps seconds, so a thread updated within the second before
  // `before_ms` may be left out), for retention. O(such threads), not O(threads).
  // A manifest that does not decode is skipped and counted in *unreadable.
  status list_untouched(int64_t before_ms, const std::function<void(const manifest&)>& fn,
                        uint64_t* unreadable) const;

  // Usage totals (usage_query.cpp). A thread filter is one prefix scan; an agent
  // filter scans the rows of the agent's threads (index a/agent/); otherwise the
  // whole usage column family is scanned. Rows are keyed by thread and seq, not
  // time, so since/until filter rows as they are read. A row that does not decode
  // is counted in `unreadable` and skipped.
  // `only`, when given, keeps the rows of the threads it selects (a
  // replicated cluster's node totals the partitions it leads).
  status query_usage(const usage_query& query, usage_report* out,
                     const std::function<bool(std::string_view thread_id)>& only = {}) const;
  // The rows query_usage() totals, one call per row passing the filters, with
  // the row's key. `unreadable` (may be null) counts the rows skipped.
  status scan_usage(const usage_query& query,
                    const std::function<void(std::string_view key, const usage_row&)>& fn,
                    uint64_t* unreadable) const;

  // Schedules (schedules column family; grammar in runtime/model/schedule.cpp).
  status read_schedule(std::string_view id, schedule* out) const;
  // Definitions in id order after `after_id` ("" : from the first), at most
  // `limit` (<= schedule_page_max); *next is the last id returned when more may
  // follow, else "". A row that does not decode fails the call as corruption.
  status list_schedules(std::string_view after_id, size_t limit, std::vector<schedule>* out,
                        std::string* next) const;
  // Every definition: the scheduler's load at open, one scan.
  status scan_schedules(const std::function<void(schedule&&)>& fn) const;
  // History rows newest first, those with seq < before_seq (0: from the newest),
  // at most `limit` (<= schedule_page_max); *next is the seq to pass as
  // before_seq for the next page, 0 when there is none.
  status schedule_history(std::string_view id, uint64_t before_seq, size_t limit,
                          std::vector<schedule_firing>* out, uint64_t* next) const;

  // Side column families (work, graph, sessions, suggestions; grammars in
  // persistence/work_rows.cpp). One row: not_found if absent.
  status read_side(side_cf cf, std::string_view key, std::string* value) const;
  // Rows whose key starts with `prefix`, in key order, until fn returns false.
  status scan_side(side_cf cf, std::string_view prefix,
                   const std::function<bool(std::string_view key, std::string_view value)>& fn) const;

  // --- quotas: any thread ---

  // Takes effect for the next tick or input; ticks already queued at the journal
  // are checked when written.
  void set_quota(const log_quota& q);
  log_quota quota() const;
  // The figures the quotas measure; events_today is of the UTC day of now_ms.
  status usage(int64_t now_ms, log_usage* out) const;
  // For a new input (a send, a submit, a scheduled or delegated input):
  // quota_exceeded when the events of the UTC day of now_ms reached
  // events_per_day_max or storage reached storage_bytes_max. O(1) but for a
  // storage figure older than storage_cache_ms, which is read again.
  status admit_input(int64_t now_ms) const;
  // How long a storage figure is reused before RocksDB is asked again.
  static constexpr int64_t storage_cache_ms = 1000;

  log_counters counters() const;
  durability mode() const { return options_.mode; }
  const log_options& options() const { return options_; }
  // false once a write failed; then every write returns io_error, or no_space if
  // the failure was a full disk.
  bool writable() const { return writable_.load(std::memory_order_acquire); }

 private:
  struct impl;
  explicit event_log(log_options options);

  // What the writer caches per thread: enough to validate seqs, diff the index
  // and tell whether a tick's manifest can be left to derive_manifest().
  struct projection {
    uint64_t last_seq = 0;                  // the log's last event key
    std::optional<int64_t> last_ts_ms;      // that event's ts (detail::log_end)
    std::shared_ptr<const manifest> row;    // the stored threads row; null: write the next one
    size_t row_bytes = 0;                   // its encoded size
    std::vector<std::string> index_keys;    // index entries currently stored
    std::vector<std::string> claim_keys;    // erase only: the claims the stored manifest makes
  };

  status load_projection(const std::string& thread_id, projection* out, bool* found) const;
  status log_end_of(std::string_view thread_id, detail::log_end* out) const;
  // Whether the stored row, derived over the log as it is after `t`, reads back
  // as t.manifest (last_seq set): then the tick need not write the row. Leaves
  // t.manifest as it found it (it compares in place).
  bool row_derivable(const projection& prev, tick& t, const projection& next) const;
  // The projection of a quarantine tick (tick::quarantine).
  status salvage_projection(const std::string& thread_id, projection* out) const;
  // `pending`: projections of threads written earlier in the same batch.
  status prepare_effect(const effect_write& w, const std::unordered_map<std::string, projection>& pending,
                        rocksdb::WriteBatch* batch) const;
  // `claims`: claim keys put earlier in the same batch, and the thread of each.
  status prepare(tick& t, const projection* prev, rocksdb::WriteBatch* batch,
                 projection* next, std::unordered_map<std::string, std::string>* claims) const;
  // The claims a creating tick makes, checked against the batch and the database.
  status prepare_claims(const tick& t, rocksdb::WriteBatch* batch,
                        std::unordered_map<std::string, std::string>* claims) const;
  // Which write a batch's entries belong to, for a replicated log: the
  // entries before `end` (the batch's Count() once the piece was added) and
  // at or past the previous mark's end are `route`'s (log_replicator).
  struct route_mark {
    uint32_t end = 0;
    std::string route;
  };
  using route_marks = std::vector<route_mark>;
  // Writes `batch`. With a replicator and `routes` given, its rows of the
  // replicated families are replicated first, split by partition, and the
  // partitions' sequences go into the batch (event_log_replica.cpp). A null
  // `routes`: rows that stay on this node (agents, node rows, a follower's apply).
  // A replication refused or timed out fails the write `unavailable` (retry:
  // the partition's leader serves it), nothing written here.
  status write(rocksdb::WriteBatch* batch, size_t ticks, const route_marks* routes);
  status replicate(rocksdb::WriteBatch* batch, const route_marks& routes);
  status prepare_side_rows(const tick& t, rocksdb::WriteBatch* batch) const;
  // The thread's work row and every graph triple naming it (erase_thread).
  status erase_work_rows(const std::string& id, const std::vector<std::string>& index_keys,
                         rocksdb::WriteBatch* batch) const;
  status refusal() const;  // what a write gets once the log is not writable
  // Quotas. `creates`: creating ticks accepted earlier in the same batch; `days`:
  // events per day those ticks add. A creating tick is checked against
  // threads_max and storage_bytes_max, and, when it carries an input (a
  // scheduled or delegated thread), against events_per_day_max too.
  status check_create(const tick& t, uint64_t creates, const std::map<int64_t, uint64_t>& days) const;
  status check_events(int64_t day, uint64_t pending) const;
  status check_storage() const;
  status storage_bytes(uint64_t* out) const;
  // After ticks were prepared: the quota rows of their creates and events, and
  // the erasure of day rows older than the days kept.
  void put_quota_rows(uint64_t threads, const std::map<int64_t, uint64_t>& days,
                      rocksdb::WriteBatch* batch, std::map<int64_t, uint64_t>* next_days) const;
  // Once the batch is written: the counts it recorded become the log's.
  void adopt_quota_rows(uint64_t threads, std::map<int64_t, uint64_t> next_days);
  // Writes `batch` (`ticks` of them) with the quota rows of a thread count of
  // `threads` and `days`' events; once written, those counts become the log's.
  status write_counted(rocksdb::WriteBatch* batch, size_t ticks, uint64_t threads,
                       const std::map<int64_t, uint64_t>& days, const route_marks& routes);
  // What the ticks a group accepted add once it is written: threads created and
  // events per UTC day (the quota rows), events and threads rows (the counters).
  struct group_tally {
    uint64_t events = 0;
    uint64_t creates = 0;              // creating ticks accepted (threads_max)
    uint64_t rows = 0;                 // threads rows written (the others are left behind)
    std::map<int64_t, uint64_t> days;  // events accepted per UTC day (events_per_day_max)
    // Counts tick `t`, accepted; `row_written`: it writes its threads row.
    void add(const tick& t, bool row_written);
  };
  // Writes a group's batch of `ticks` accepted ticks with their quota rows; once
  // written, the projections of `pending` are remembered and the counters
  // advance. On a failure, the ticks count as failed.
  status write_group(rocksdb::WriteBatch* batch, size_t ticks, const group_tally& tally,
                     std::unordered_map<std::string, projection>* pending, const route_marks& routes);
  // Writes a batch that stores or removes one whole thread (erase, adopt): the
  // thread count becomes `threads`, and its cached projection is forgotten.
  status write_whole_thread(rocksdb::WriteBatch* batch, uint64_t threads, const std::string& thread_id);
  // A thread's or a schedule's rows written alone: one mark over the whole batch.
  static route_marks whole(const rocksdb::WriteBatch& batch, std::string route);
  // At open: the thread count (counted when absent or `recount`, then recorded
  // with the schema version in one batch) and the day rows.
  status load_quota_rows(bool recount);
  void remember(const std::string& thread_id, projection p);

  log_options options_;
  std::unique_ptr<rocksdb::Env> mem_env_;
  std::unique_ptr<encrypted_env> encrypted_env_;  // outlives impl_ (declared before it)
  std::unique_ptr<impl> impl_;
  std::unordered_map<std::string, projection> cache_;  // writer-only
  // Partitions an append to which may or may not have been stored (writer-only):
  // their writes are refused until resume_partition().
  std::set<uint32_t> unsettled_;
  std::atomic<size_t> unsettled_count_{0};  // its size, for any thread
  std::map<uint32_t, uint8_t> families_;    // RocksDB's column family ids -> cf_id (writer-only, filled once)

  // Quotas: limits any thread sets; counts the writer keeps and any thread reads.
  std::atomic<uint64_t> threads_max_{0}, events_per_day_max_{0}, storage_bytes_max_{0};
  std::atomic<uint64_t> threads_{0};  // threads stored (the meta row "threads")
  mutable std::mutex days_mu_;        // guards days_
  std::map<int64_t, uint64_t> days_;  // events per UTC day (days since the epoch), recent days only
  mutable std::mutex storage_mu_;     // guards the two below: one refresh at a time
  mutable int64_t storage_at_ms_ = INT64_MIN;  // steady clock of the last read
  mutable uint64_t storage_bytes_ = 0;
  std::atomic<bool> writable_{true};
  std::atomic<bool> no_space_{false};  // the failed write found the disk full

  struct atomic_counters {
    std::atomic<uint64_t> writes{0}, commits{0}, events{0}, rejected{0}, failed{0}, bytes{0}, keys{0},
        manifests{0}, group_max{0};
  };
  atomic_counters counters_;
};

// The index entries a manifest implies (index CF keys).
std::vector<std::string> index_keys_of(const manifest& m);
// The claim keys a manifest implies ("c/task/<task_id>", "c/dm/<agent>"), sorted.
std::vector<std::string> claim_keys_of(const manifest& m);

}  // namespace skein
