// effects: derived work after runs (DESIGN §4), one actor per effect kind.
//
// Each effect actor listens to the journal's committed feed (never to a run
// directly, so no effect can delay a reply) and keeps a backlog per thread: the
// last seq committed (target) and when the oldest unprocessed commit landed.
// A thread is processed from its stored cursor + 1 to the target: a reader
// (a detached actor: reads block) loads what the effect needs, the effect does
// its work (an engine or embedder call, answered by message), and its output is
// written with the new cursor in one batch — through the journal (effect_write)
// or, for a manifest change, through the thread actor (the only writer of a
// manifest). After a crash the effect resumes at the cursor: nothing is done
// twice, nothing skipped. Failures are retried per thread with capped
// exponential backoff, so one poisoned thread stalls neither the others nor any
// other effect. At start each effect catches up from its cursors
// (event_log::list_effect_lag: one O(threads) scan of the manifests per open).
//
// Protocol of an effect actor:
//   (committed_atom, std::vector<committed_tick>)   the journal's feed
//   (caf::get_atom, stats_atom)  -> effect_stats
//   (effect_scan_atom)           catches up from the cursors again (effects_config::serves)
// Stopping: an exit message. Work half done is redone after the next open,
// once, by the cursor rule. Host hooks (effects_config) are called on the
// effect's actor, guarded: an exception is counted as a failure, never let in.
#pragma once

#include <caf/actor.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/directory.hpp"
#include "actors/journal.hpp"
#include "actors/messages.hpp"
#include "runtime/model/effect_stats.hpp"
#include "runtime/model/embedding.hpp"

namespace skein {

using effect_scan_atom = caf::atom_constant<caf::atom("effscan")>;


// One thread's work for an effect, filled by the effect's load().
struct effect_job {
  std::string thread_id;
  agent_spec_ptr agent;
  uint64_t cursor = 0;        // stored: the last seq done
  uint64_t target = 0;        // process up to this seq (load may lower it)
  manifest thread;            // as stored when the job was loaded
  std::vector<event> events;  // what load() read
  std::string hint;           // kind-specific, from load(): the titles effect's fallback title
};

// What a job produced: rows and cursor for the journal, or a title for the
// thread actor (with write.cursor as the effect's cursor in the same tick).
struct effect_result {
  status result;  // not ok: the job failed and is retried
  effect_write write;
  std::optional<std::string> title;
  std::vector<std::pair<uint64_t, embedding_record>> embedded;  // seq, record: for on_embedded
  // A compaction for the thread actor to make between runs; the compaction's
  // tick (or, when it finds nothing to do, an effect write) carries the cursor.
  std::optional<compact_request> compaction;
};

// The work of one effect kind. Implementations are stateless (or thread-safe):
// load() runs on the reader's thread, the rest on the effect actor's.
class effect_kind {
 public:
  virtual ~effect_kind() = default;
  virtual std::string name() const = 0;
  // May block. Reads what process() needs; may lower job.target (a bounded job).
  virtual status load(const event_log& log, effect_job& job) const = 0;
  // Must not block: `done` is called exactly once, on any thread. The handle (may
  // be null) is cancelled if the job times out or the effect stops.
  virtual std::unique_ptr<call_handle> process(effect_job job, std::function<void(effect_result)> done) const = 0;
  // After the result is durable.
  virtual void on_durable(const effect_job&, const effect_result&) const {}
  virtual void on_erased(const std::string&) const {}
};

struct effects_config {
  bool titles = true;      // run the titles effect (agents still opt out one by one)
  bool embeddings = true;  // run the embeddings effect
  bool compaction = true;  // run the compaction effect (agents opt in with compaction.auto_tokens)
  // Called after an embeddings row is durable, and after a thread's erasure:
  // the memory index plugs in here. On the effect's actor; must not block.
  std::function<void(const std::string& thread, uint64_t seq, const embedding_record&)> on_embedded;
  std::function<void(const std::string& thread)> on_erased;
  // A replicated cluster's node works only on the threads it serves (the
  // partitions it leads): others are left to their leader. Empty: every one.
  // (scan_atom) sent to an effect actor catches up from the cursors again:
  // a partition just taken over.
  std::function<bool(std::string_view thread_id)> serves;

  size_t jobs_in_flight_max = 64;                      // threads one effect works on at once
  // Foreground first: a journal write of at least busy_group_ticks threads' ticks
  // means runs keep the journal saturated; until busy_hold passes without such a
  // write, an effect works on at most busy_jobs_in_flight_max threads at once, so
  // that its reads and writes do not take the journal's time from replies. It
  // never stops: each job then takes a thread's whole backlog, and the rest is
  // worked off at full width once the load drops (lag and backlog show it).
  size_t busy_group_ticks = 16;
  size_t busy_jobs_in_flight_max = 1;
  std::chrono::milliseconds busy_hold{200};
  size_t job_events_max = 256;                         // events one job reads
  std::chrono::milliseconds job_timeout{60000};        // an engine or embedder call that hangs fails
  std::chrono::milliseconds retry_delay_min{100};      // first retry after a failure
  std::chrono::milliseconds retry_delay_max{30000};    // backoff cap
  size_t lag_window = 1024;                            // lag samples kept for p50/p99
  // false: readers are scheduled actors (CAF's test coordinator drives them).
  bool detached_readers = true;
  // Wall time (ms) for lag; empty: the system clock.
  std::function<int64_t()> wall_clock;
};

// Effect kinds built in.
std::shared_ptr<const effect_kind> make_titles_effect();
std::shared_ptr<const effect_kind> make_embeddings_effect(effects_config hooks);
inline constexpr const char* compaction_effect_name = "compaction";
std::shared_ptr<const effect_kind> make_compaction_effect();

// A title as the effect stores it: one line, trimmed, quotes stripped, at most
// generated_title_words_max words and generated_title_bytes_max bytes, valid UTF-8. "" if nothing is left.
inline constexpr size_t generated_title_words_max = 6;
inline constexpr size_t generated_title_bytes_max = 80;
std::string sanitize_title(std::string_view raw);

// Spawns one effect actor. It registers with the journal's feed and, unless
// catch_up is false, catches up from its cursors. `log` is borrowed.
caf::actor spawn_effect(caf::actor_system& sys, std::shared_ptr<const effect_kind> kind, event_log& log,
                        journal_actor journal, directory_actor directory, effects_config config);

}  // namespace skein

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(skein::effect_stats)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(skein::effect_job)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(skein::effect_result)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::vector<skein::effect_lag_entry>)
