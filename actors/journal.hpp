// journal: the group-committing writer of an event_log, a detached CAF actor on
// its own OS thread.
//
// Interface (journal_actor below; replies follow the order of the requests):
//   (commit_atom, tick)        -> uint64_t last_seq      | error
//   (commit_all_atom, std::vector<tick>) -> std::vector<uint64_t> last seqs | error
//        all or nothing (a multi-thread import): written alone, in one batch;
//        one refused tick refuses them all and nothing is written
//   (effect_atom, effect_write) -> caf::unit             | error
//        an effect's rows and cursor (event_log::commit_effect), merged into
//        the group's batch with the commits queued beside it (one write, one
//        fsync); a refused effect write is refused alone, like a tick. An erase
//        is written alone, in queue order: an effect write never crosses it
//   (erase_atom, std::string)  -> caf::unit              | error
//   (listen_atom, caf::actor)  -> caf::unit  registers a listener of the committed feed
//   (put_atom, agent_config)   -> caf::unit              | error
//   (write_atom, journal_write) -> caf::unit             | error
//        a write of the log's write side that is no tick (a cluster handoff
//        adopting another node's thread): run alone, in queue order
//   (close_atom)               -> caf::unit  after everything queued before it is written
//   (get_atom, stats_atom)     -> journal_stats
// Every commit queued while a write is in flight is merged into the next batch:
// one WriteBatch, one write, one fsync in `sync` mode. A reply comes only once its
// commit is durable in the log's mode; a failed write fails every commit of its
// batch, and the log then refuses all writes until reopened.
//
// The committed feed: after every successful write of ticks (commit groups,
// commit_all) each listener gets (committed_atom, std::vector<committed_tick>),
// one entry per tick, in commit order; after an erase, one entry with `erased`.
// Never before the write is durable. Effects start from this feed only, so they
// never delay a reply.
//
// The event_log is borrowed: it must outlive the journal actor. Nothing else may
// write to it while the journal runs.
#pragma once

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>
#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "actors/wire.hpp"
#include "persistence/event_log.hpp"

namespace skein {

using commit_atom = caf::atom_constant<caf::atom("commit")>;
using erase_atom = caf::atom_constant<caf::atom("erase")>;
using stats_atom = caf::atom_constant<caf::atom("stats")>;
using commit_all_atom = caf::atom_constant<caf::atom("commitall")>;
using effect_atom = caf::atom_constant<caf::atom("effect")>;
using committed_atom = caf::atom_constant<caf::atom("committed")>;
using listen_atom = caf::atom_constant<caf::atom("listen")>;
using write_atom = caf::atom_constant<caf::atom("logwrite")>;

// A write-side call of the event_log that is no tick, run on the journal's
// thread (nothing else may write meanwhile). Local only.
struct journal_write {
  std::function<status(event_log&)> fn;
};

// One entry of the committed feed.
struct committed_tick {
  std::string thread_id;
  std::string agent_id;
  uint64_t last_seq = 0;        // the thread's last seq after the write
  int64_t committed_at_ms = 0;  // wall time of the write (journal_options::wall_clock)
  bool erased = false;          // the thread was erased (the other fields but the id are empty)
};

struct journal_options {
  size_t group_ticks_max = 4096;  // ticks merged into one write at most
  // false: an event-based actor on the actor system's scheduler that writes each
  // request as it comes (no grouping). For deterministic tests under CAF's test
  // coordinator, which cannot drive a detached actor's own thread.
  bool detached = true;
  // Wall time (ms since the epoch) stamped on the committed feed; empty: the system clock.
  std::function<int64_t()> wall_clock;
};

struct journal_stats {
  log_counters log;
  uint64_t groups = 0;       // batches written
  uint64_t queued_max = 0;   // most requests drained for one batch
};

// Both variants (detached and inline) answer exactly these.
using journal_actor = caf::typed_actor<
    caf::replies_to<commit_atom, tick>::with<uint64_t>,
    caf::replies_to<commit_all_atom, std::vector<tick>>::with<std::vector<uint64_t>>,
    caf::reacts_to<effect_atom, effect_write>,
    caf::reacts_to<erase_atom, std::string>,
    caf::reacts_to<listen_atom, caf::actor>,
    caf::reacts_to<caf::put_atom, agent_config>,
    caf::reacts_to<write_atom, journal_write>,
    caf::reacts_to<caf::close_atom>,
    caf::replies_to<caf::get_atom, stats_atom>::with<journal_stats>>;

journal_actor spawn_journal(caf::actor_system& sys, event_log& log, journal_options options = {});

// Blocking helpers for code outside actors (the demo, tests, tools): each waits
// for the journal's reply.
status journal_commit(caf::actor_system& sys, const journal_actor& journal, tick& t);
// All or nothing; on success each tick's manifest.last_seq is set.
status journal_commit_all(caf::actor_system& sys, const journal_actor& journal,
                          std::vector<tick>& ticks);
status journal_commit_effect(caf::actor_system& sys, const journal_actor& journal, effect_write& w);
status journal_erase(caf::actor_system& sys, const journal_actor& journal, const std::string& id);
// Runs `fn` on the journal's thread, after what is queued before it.
status journal_run(caf::actor_system& sys, const journal_actor& journal, std::function<status(event_log&)> fn);
// Writes everything queued, then stops the journal.
status journal_close(caf::actor_system& sys, const journal_actor& journal);

}  // namespace skein

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(skein::tick)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::vector<skein::schedule_row>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::vector<skein::tick>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(skein::journal_stats)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(skein::effect_write)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(skein::journal_write)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::vector<skein::committed_tick>)
