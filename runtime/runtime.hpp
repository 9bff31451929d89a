// skein::runtime — the one header an embedding agent host includes.
//
// A runtime owns one event log (a RocksDB database) and the actors over it:
// agents create threads, inputs sent to a thread become runs, and every event is
// acknowledged only once durable in the configured mode. All methods are
// thread-safe and may be called from any number of host threads, except close(),
// which must not race the others; blocking ones wait for the actors' answer. Callbacks given to subscribe() run on the
// runtime's worker threads, one at a time per subscription, and must not block.
//
//   std::unique_ptr<skein::runtime> rt;
//   skein::runtime_options o;  o.data_dir = "./data";
//   if (auto s = skein::runtime::open(o, &rt); !s) ...
//   rt->create_agent({.id = "helper", .system_prompt = "Be brief."});
//   skein::manifest t;  rt->create_thread({.agent_id = "helper"}, &t);
//   skein::run_result r;  rt->send(t.id, {.text = "hi"}).wait(&r);
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "persistence/encryption.hpp"
#include "persistence/event_log.hpp"
#include "persistence/recovery.hpp"
#include "runtime/model/agent.hpp"
#include "runtime/model/cluster.hpp"
#include "runtime/model/compaction.hpp"
#include "runtime/model/effect_stats.hpp"
#include "runtime/model/embedding.hpp"
#include "runtime/model/embedder.hpp"
#include "runtime/model/engine.hpp"
#include "runtime/model/run.hpp"
#include "runtime/model/tool.hpp"
#include "runtime/model/work_api.hpp"
#include "runtime/memory_service.hpp"

namespace skein {

class work_service;

// Effects (DESIGN §4): derived work after runs, exactly once relative to the log.
struct runtime_effects {
  bool titles = true;      // the titles effect (each agent opts out with effects.titles)
  bool embeddings = true;  // the embeddings effect (each agent names its embedder)
  bool compaction = true;  // the compaction effect (each agent opts in with compaction.auto_tokens)
  // After an embeddings row is durable / after a thread's erasure: a memory
  // index plugs in here. Called on a runtime thread, one effect at a time; must not block.
  std::function<void(const std::string& thread, uint64_t seq, const embedding_record&)> on_embedded;
  std::function<void(const std::string& thread)> on_erased;
  uint64_t job_timeout_ms = 60000;      // an engine or embedder call of an effect that hangs fails
  uint64_t retry_delay_min_ms = 100;    // a failed job is retried after this, doubling
  uint64_t retry_delay_max_ms = 30000;  // up to this
};

struct runtime_options {
  std::string data_dir = "./skein-data";
  durability mode = durability::sync;
  size_t active_threads_max = 100000;   // thread actors alive at once (LRU passivation past it)
  uint64_t idle_passivate_ms = 60000;   // an idle thread actor is passivated after this
  size_t thread_queue_max = 64;         // inputs waiting on one thread
  size_t worker_threads = 0;            // CAF scheduler threads; 0: one per core (at least 2)
  std::map<std::string, engine_factory> engines;  // besides the built-in "scripted", "openai" and "process"
  std::map<std::string, embedder_factory> embedders;  // besides the built-in "hashing" and "openai"
  std::vector<std::shared_ptr<tool>> tools;
  // Wall time in ms since the epoch, for event times, heartbeats and staleness.
  // Empty: the system clock. Tests inject their own.
  std::function<int64_t()> clock;
  uint64_t heartbeat_interval_ms = 5000;  // a running thread records a heartbeat this often
  int64_t heartbeat_stale_ms = 90000;     // running with an older heartbeat: orphaned
  int64_t start_stale_ms = 1800000;       // running with no heartbeat at all, this old: orphaned
  uint64_t retention_interval_ms = 3600000;  // between sweeps of the retention effect
  // Schedules: a due time further in the past than this (at open, after a long
  // stall) is missed and follows the schedule's missed policy.
  int64_t schedule_grace_ms = 60000;
  // The longest the scheduler sleeps (it wakes at each due time; this bounds a
  // sleep against wall-clock jumps); 0: no timer, only fire_due_schedules()
  // fires (tests under their own clock).
  uint64_t schedule_wake_ms = 1000;
  // Between sweeps of the work items (sweep_items with work_auto_archive); 0: none.
  uint64_t work_sweep_interval_ms = 3600000;
  bool work_auto_archive = false;
  // Test hook: the RocksDB environment of the event log (fault injection), passed
  // to log_options::env. Borrowed: must outlive the runtime. nullptr: the default.
  rocksdb::Env* env = nullptr;
  // Encryption at rest: the master key of the data directory (load_master_key in
  // persistence/encryption.hpp), passed to log_options::encryption. null: plain.
  std::shared_ptr<const master_key> encryption;
  runtime_effects effects;
  // Quotas of this runtime's database (event_log.hpp, log_quota; 0: unlimited):
  // threads stored, events per UTC day, approximate bytes on disk. A refusal is
  // quota_exceeded naming the limit; set_quota() changes them while open.
  log_quota quota;
  // A node of a cluster (runtime/model/cluster.hpp; empty node_id: alone). Each
  // node keeps its own database for the threads it owns; any call about a thread
  // is forwarded to its owner, listings gather from every node, agents are
  // written through the first member to all; usage and memory search gather
  // from every node; a schedule lives on the node its id routes to (a bound
  // one's id starts with its thread's root id). Node-local still: work items.
  cluster_options cluster;
};

enum class history_view { working, complete };

// Creations in one runtime::create_threads call at most: the journal's group
// (journal_options::group_ticks_max) holds this many ticks.
inline constexpr size_t create_threads_max = 4096;

// One thread brought from elsewhere: its manifest (id, agent_id) and its whole
// log, seqs 1..n.
struct thread_import {
  skein::manifest manifest;
  std::vector<event> events;
};

// The eventual result of one send(). Copyable; all copies see the same run.
class run_handle {
 public:
  struct state;
  run_handle() = default;
  explicit run_handle(std::shared_ptr<state> s) : state_(std::move(s)) {}

  const std::string& run_id() const;
  const std::string& thread_id() const;
  bool ready() const;
  // Waits until the run has ended. `overloaded` if the timeout passed first (the
  // run goes on); otherwise the send's own error, or ok with *out filled.
  status wait(run_result* out,
              std::chrono::milliseconds timeout = std::chrono::milliseconds::max()) const;
  // Calls `fn` once when the run has ended — at once if it has. `fn` runs on a
  // runtime thread (or the caller's) and must not block.
  void on_done(std::function<void(const status&, const run_result&)> fn) const;

 private:
  std::shared_ptr<state> state_;
};

struct event_sink {
  std::function<void(const event&)> on_event;                  // durable events, in seq order
  // Optional, instead of on_event: each durable event as its JSON (what
  // encode_event writes and the log stores), with its seq and type — no decode
  // for a backlog, and one encoding per event shared by every subscriber.
  std::function<void(uint64_t seq, event_type type, const std::string& json)> on_event_json;
  std::function<void(const std::string& run_id, const std::string& delta)> on_delta;  // optional
  // Optional: the thread will send nothing more, and why ("deleted"). Called at
  // most once, after the last on_event; the subscription stays until unsubscribed.
  std::function<void(const std::string& reason)> on_end;
};

// Where a thread stands, for people and scripts.
struct diagnosis {
  std::string thread_id;
  thread_status status = thread_status::open;
  std::string stage;            // idle | running | stalled | failed | cancelled
  uint64_t last_seq = 0;
  int64_t heartbeat_age_ms = -1;  // -1: no heartbeat recorded
  std::string last_run_id;
  std::string last_outcome;     // of the last finished run, "" if none
  std::string last_error;
  // Recovery found a record of this thread it could not read (recovery.hpp): the
  // thread.quarantined signal's key and reason. Its runs cannot resume.
  bool quarantined = false;
  std::string quarantine_key;
  std::string quarantine_reason;
};

// What one retention sweep did (apply_retention()).
struct retention_result {
  std::vector<std::string> archived;  // threads archived
  std::vector<std::string> deleted;   // threads erased
  std::vector<std::string> skipped;   // due but running: left for the next sweep
  uint64_t examined = 0;              // manifests read (threads old enough for some policy)
  uint64_t unreadable = 0;            // manifests that did not decode, skipped
};

struct runtime_stats {
  uint64_t active_threads = 0;
  uint64_t activations = 0;
  uint64_t passivations = 0;
  uint64_t agents = 0;
  uint64_t host_failures = 0;  // exceptions from host callbacks (on_done, subscribers), caught
  uint64_t compactions = 0;                   // compaction events written
  uint64_t compactions_failed = 0;            // compactions that wrote thread.compaction_failed
  uint64_t compaction_tokens_before = 0;      // estimated tokens, totals over the compactions written
  uint64_t compaction_tokens_after = 0;
  memory_index_stats memory;           // rows and bytes the memory index holds now
  memory_rebuild_stats memory_rebuild;  // what the rebuild at open read and what it took
  log_counters log;
  std::vector<effect_stats> effects;  // one per effect kind running
  log_quota quota;              // the quotas in force
  log_usage quota_usage;        // what they measure now (today: the runtime's clock)
};

class runtime {
 public:
  // Opens the log, repairs runs a crash interrupted, loads the agents.
  static status open(runtime_options options, std::unique_ptr<runtime>* out);
  ~runtime();  // close()s
  runtime(const runtime&) = delete;
  runtime& operator=(const runtime&) = delete;

  // Agents. Creating an existing agent with the same config is a no-op; with
  // another config, `conflict`.
  status create_agent(agent_config config, agent_config* out = nullptr);
  status get_agent(const std::string& id, agent_config* out);
  status list_agents(std::vector<agent_config>* out);

  // Threads, created through their agent only. A thread bound to a task
  // (options.task_id) is the task's only thread: when the task has one already,
  // that thread is the answer and *created (may be null) is false — also when
  // two creates race, whichever the log wrote first wins — provided it is
  // options.agent_id's; another agent's is `conflict` naming task_id. options.dm gives the
  // agent's DM thread the same way (dm_thread()).
  status create_thread(thread_options options, manifest* out, bool* created = nullptr);
  // Many creations at once: all are put in flight together, so they share the
  // journal's group commits (one fsync for up to a group of them in `sync` mode)
  // instead of one fsync per blocking create_thread. Each succeeds or fails by
  // itself: (*each)[i] is options[i]'s status, naming the field at fault, and
  // (*out)[i] its manifest when it succeeded; each thread is one tick, so a
  // failed creation writes nothing. Returns once every creation is answered, each
  // success durable in the runtime's mode. Unlike create_thread, a creation is
  // never an existing thread: a task that has a thread already, or a task_id
  // named twice in the call (the later ones), is `conflict` on task_id; dm is
  // refused (dm_thread() creates or reuses). The call itself fails, creating
  // nothing, past create_threads_max options (invalid_input naming the limit) or
  // when the runtime is closed. Otherwise it returns ok when every creation
  // succeeded, else the first failure, its message prefixed "options[i]: ".
  // `each` may be null.
  status create_threads(const std::vector<thread_options>& options, std::vector<manifest>* out,
                        std::vector<status>* each = nullptr);
  // The task's dedicated thread; not_found when the task has none.
  status find_task_thread(const std::string& task_id, manifest* out);
  // The agent's DM thread (parent kind agent), created on first use, atomically:
  // concurrent first calls get one thread. not_found: an unknown agent.
  status dm_thread(const std::string& agent_id, manifest* out, bool* created = nullptr);
  // House members (manifest.members) of a root or DM thread: each input runs every
  // member it triggers in turn, each under its own agent. Adding records
  // house.member_added (an existing member gets the new trigger), removing
  // house.member_removed. not_found: the thread, the agent, or (remove) the member.
  status add_member(const std::string& thread_id, const house_member& member, manifest* out = nullptr);
  status remove_member(const std::string& thread_id, const std::string& agent_id, manifest* out = nullptr);
  status get_thread(const std::string& id, manifest* out);
  // Whether this node serves thread `id` itself (a call about it asks no other
  // node): always alone; in a cluster, by the members' view and this node's
  // own log, without waiting on another node. An invalid id is served here
  // (the call refuses it here).
  bool serves_here(const std::string& id);
  status list_threads(const thread_query& query, thread_page* out);
  status delete_thread(const std::string& id);  // idempotent
  // A user's title: replaces any title, generated or not, and is never replaced
  // by the titles effect. One line of valid UTF-8, 1..title_bytes_max bytes.
  status set_title(const std::string& id, const std::string& title, manifest* out = nullptr);
  // A new thread of the same agent whose log starts as a copy of 1..at_seq.
  status fork(const std::string& id, uint64_t at_seq, manifest* out);
  // A thread brought from elsewhere (an export, another tool): written whole, in
  // one batch, under its manifest's agent. Its id must be new.
  status import_thread(manifest m, std::vector<event> events, manifest* out);
  // Several threads of one agent (a lace or gitmem import), written in one batch:
  // all or nothing. A refusal of any (an id that exists, an unknown agent, mixed
  // agents, a storage failure) writes none and says which ("thread i of n" or
  // "tick i of n" with its id).
  // out[i] is the stored manifest of threads[i].
  status import_threads(std::vector<thread_import> threads, std::vector<manifest>* out);

  // A thread left `running` whose heartbeat is stale is closed as failed with
  // signal thread.orphaned. *reconciled tells whether it was.
  status reconcile(const std::string& id, bool* reconciled = nullptr);
  // reconcile() for every running thread; the ids it closed.
  status prune(std::vector<std::string>* reconciled);
  status diagnose(const std::string& id, diagnosis* out);

  // Runs. send() returns at once; errors (unknown thread, bad input, mid-run
  // policy reject, full queue) come through the handle.
  run_handle send(const std::string& thread_id, run_input input);
  // Hands the input to the thread and returns once it is durable, without
  // waiting for the run: *run_id names it. A busy thread keeps it in its inbox
  // (written before this returns, consumed by the tick that starts its run), so
  // an acknowledged input runs exactly once even across a crash or a close: the
  // runtime replays inboxes at open. Refusals (mid-run policy reject, full
  // queue, unknown thread) come back at once and store nothing.
  status submit(const std::string& thread_id, run_input input, std::string* run_id);
  // Cancels the thread's current run; *cancelled tells whether there was one.
  status cancel(const std::string& thread_id, bool* cancelled = nullptr);

  // Compacts the thread's working view (DESIGN §6) between runs: it waits for a
  // run going on and for inputs queued before it; inputs sent meanwhile wait for
  // it. Unset options take the agent's compaction settings. Nothing to compact
  // is ok with out->compacted false and a reason; a failed compaction is ok with
  // out->failed true: the thread is as it was, plus a thread.compaction_failed
  // signal. Errors: not_found, invalid_input naming the option.
  status compact(const std::string& thread_id, const compact_options& options, compact_result* out);

  // History: the working conversation or the complete log, from a seq on.
  status read(const std::string& thread_id, history_view view, uint64_t from_seq, size_t limit,
              std::vector<event>* out);
  // read() of the events in `groups` only (payload groups, event.hpp). `limit`
  // counts the events read before the filter, so a page may hold fewer;
  // *next_seq is the seq to read from next (past every event read).
  status read(const std::string& thread_id, history_view view, uint64_t from_seq, size_t limit,
              const group_filter& groups, std::vector<event>* out, uint64_t* next_seq);
  // read() of the complete view without a decode: the stored JSON of each event
  // (event_log::read_events_raw), which is what encode_event writes for it.
  status read_raw(const std::string& thread_id, uint64_t from_seq, size_t limit,
                  const group_filter& groups, std::vector<raw_event>* out, uint64_t* next_seq);
  // Durable events from from_seq on, then live ones, in order and without
  // duplicates; deltas as they stream. *id names the subscription.
  status subscribe(const std::string& thread_id, uint64_t from_seq, event_sink sink, uint64_t* id);
  // subscribe() to the events of `groups` only; deltas (chat text) pass when chat does.
  status subscribe(const std::string& thread_id, uint64_t from_seq, const group_filter& groups,
                   event_sink sink, uint64_t* id);
  // Ends subscription `id`. When it returns, none of its sink's callbacks runs
  // again and one running on another thread has returned, so what they use may
  // be freed; do not call it holding a lock they take. From inside one of them
  // it returns at once, and that callback is the last.
  status unsubscribe(uint64_t id);

  // Usage totals from the usage rows (event_log::query_usage says what each
  // filter costs). Reads only.
  status usage(const usage_query& query, usage_report* out);
  // One sweep of the retention effect now (it also sweeps every
  // retention_interval_ms): archives and erases the threads agents' retention
  // policies say are due. The first failure is returned after the sweep went on.
  status apply_retention(retention_result* out);
  // Memory search: embeds `query` with the agent's embedder and returns the k
  // (1..memory_search_k_max) messages of its threads closest to it, best first,
  // each with a snippet of its text. A hit whose event is gone is skipped.
  // invalid_input names q or k; not_found: an unknown agent.
  status memory_search(const std::string& agent_id, const std::string& query, size_t k,
                       std::vector<memory_hit>* out);
  // The memory index, rebuilt from the embeddings column family at open. The
  // embeddings effect feeds it: memory().add() after each durable write of an
  // embedding, memory().remove_thread() on erasure (delete_thread does this too).
  memory_index& memory();

  // Schedules (runtime/model/schedule.hpp): each firing creates a trigger thread
  // (parent kind schedule) or sends to a bound thread, exactly once across
  // crashes. create_schedule mints the id when s.id is empty and ignores the
  // state fields; errors name the field (not_found: the agent or bound thread;
  // invalid_input: a bound thread of another agent; conflict: the id exists).
  status create_schedule(schedule s, schedule* out = nullptr);
  status get_schedule(const std::string& id, schedule* out);
  // Paged by id: after_id "" for the first page; *next "" when none follows.
  status list_schedules(const std::string& after_id, size_t limit, std::vector<schedule>* out,
                        std::string* next);
  // Pausing keeps the schedule; resuming computes the next fire from now, so the
  // firings missed while paused are skipped, not caught up.
  status pause_schedule(const std::string& id, schedule* out = nullptr);
  status resume_schedule(const std::string& id, schedule* out = nullptr);
  status delete_schedule(const std::string& id);  // idempotent; removes the history
  // Firings newest first: before_seq 0 for the first page; *next 0 when none follows.
  status schedule_history(const std::string& id, uint64_t before_seq, size_t limit,
                          std::vector<schedule_firing>* out, uint64_t* next);
  // The next n (<= schedule_preview_max) due times after now.
  status preview_schedule(const std::string& id, size_t n, std::vector<int64_t>* out);
  // Fires every schedule due at the runtime's clock now and returns once each
  // firing is durable; *fired counts those that delivered their input.
  status fire_due_schedules(size_t* fired = nullptr);

  // Work items (runtime/model/work.hpp): threads an agent carries
  // across sessions. Every transition is a signal in the item's log, written
  // with its manifest and its graph triples in one batch. Errors name the field
  // or limit; not_found for an unknown agent or thread (a thread that is no
  // item: invalid_input naming thread_id); conflict for a transition a terminal
  // item (resolved, archived) refuses.
  status create_item(const work_create& in, work_create_result* out);
  // Records a touch (touch_count + 1, last touched now); revives a dormant item.
  status touch_item(const std::string& thread_id, work_entry* out);
  status resolve_item(const work_resolve& in, work_entry* out);
  // Links an item to an external issue (a relates_to_thread triple and a signal).
  status relate_item(const std::string& thread_id, const std::string& issue_id, work_entry* out);
  status get_item(const std::string& thread_id, work_entry* out);
  status list_items(const work_list_query& query, work_list_page* out);
  // Records dormancy the clock implies and, with auto_archive, archives items
  // dormant >= 30 days. Also runs every work_sweep_interval_ms.
  status sweep_items(const work_sweep_options& options, work_sweep_result* out);
  // Knowledge-graph lenses (each bounded by `limit`, 1..work_list_limit_max),
  // of the triples `filter` matches (a predicate, a project; "" any).
  status graph_connected_to(const std::string& node, size_t limit, std::vector<work_triple>* out,
                            const work_graph_filter& filter = {});
  status graph_produced_by(const std::string& agent_id, size_t limit, std::vector<work_triple>* out,
                           const work_graph_filter& filter = {});
  // Triples reaching `node` backwards (who created, resolved, related it), up
  // to `depth` hops (1..work_graph_depth_max), breadth first.
  status graph_provenance(const std::string& node, size_t depth, size_t limit, std::vector<work_triple>* out,
                          const work_graph_filter& filter = {});
  // Counts and the top nodes of the triples of `project` ("": every project).
  status graph_stats(work_graph_stats* out, const std::string& project = "");
  // Suggestions of one agent, pending ones unless `all`.
  status list_suggestions(const std::string& agent_id, bool all, std::vector<work_suggestion>* out);
  // The item is created in `project` ("": the suggestion's own).
  status promote_suggestion(const std::string& suggestion_id, work_create_result* out, const std::string& project = "");
  status dismiss_suggestion(const std::string& suggestion_id, work_suggestion* out);
  status session_start(const work_session_start& in, work_session_started* out);
  status session_close(const work_session_close& in, work_session_closed* out);

  status stats(runtime_stats* out);
  // The cluster's members and their state, asking each reachable one for its
  // counts (one entry, this node, when the runtime is alone).
  status cluster_members(std::vector<cluster_member_state>* out);
  // A replicated cluster's partitions as this node sees them; not_found on a
  // runtime that is not a node of one.
  status replication(replication_status* out);
  // Marks `node` of a replicated cluster draining (on: its partitions' leads
  // move to the others, before a planned stop) or not (off), through any
  // node. invalid_input on a runtime that is not a node of one.
  status drain(const std::string& node, bool on);
  // A membership change (docs/cluster.md). reload_cluster() takes
  // a node's new cluster file (serve's SIGHUP): when it differs from the active
  // members it becomes the target, and ownership stays with the active members
  // until a rebalance commits it; the same list again clears the target.
  // rebalance(), on any node: every node hands the threads (and claims) whose
  // owner changes to the new owner, one thread at a time — the old owner stops
  // serving it (503 while it moves), copies every row, the new owner writes them
  // in one batch, the old one erases its copy — then every node commits the new
  // members. Refused when a node is unreachable or its target differs; after a
  // failure nothing is lost and a rerun goes on where it stopped. It blocks;
  // start_rebalance() runs it on a thread of its own, and rebalance_state()
  // reports that run (or the last one) as this node coordinates it.
  status reload_cluster(std::vector<cluster_member> members);
  status rebalance(cluster_rebalance_state* out);
  status start_rebalance();
  status rebalance_state(cluster_rebalance_state* out);
  // Quotas of the database (runtime_options::quota): take effect for the next
  // creation or input; a run already admitted completes.
  status set_quota(const log_quota& q);
  // The figures the quotas measure, events of the UTC day of the runtime's clock.
  status quota_usage(log_usage* out);
  // The runtime's clock now (runtime_options::clock, else the system's), in ms
  // since the epoch: what vitality and every work-item time are measured by.
  int64_t now_ms() const;
  // Threads that recovery repaired when this runtime opened.
  const std::vector<std::string>& repaired_at_open() const;
  // Threads that recovery quarantined when this runtime opened: running threads
  // with a record it could not read, closed as failed so that the rest opens.
  const std::vector<quarantined_thread>& quarantined_at_open() const;
  // Ends every run as cancelled, writes what is queued, stops the actors. Idempotent.
  status close();

 private:
  struct impl;
  explicit runtime(std::unique_ptr<impl> p);
  // The work service (runtime_work.cpp); null once closed.
  work_service* works() const;
  std::unique_ptr<impl> impl_;
};

}  // namespace skein
