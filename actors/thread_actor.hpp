// thread actor: one per active thread, the single writer of its log.
//
// Holds the manifest, the queue of inputs and the current run. Its mailbox
// serializes runs; inputs that arrive mid-run follow the thread's mid-run policy.
// It never blocks on engines or tools — their answers come back as messages — and
// it delivers an event to subscribers and waiting callers only after the journal
// acknowledged it. Interface: actors/thread_protocol.hpp. Spawned by the
// directory only.
#pragma once

#include <memory>

#include "actors/budget_ledger.hpp"
#include "actors/directory.hpp"
#include "actors/journal.hpp"
#include "actors/messages.hpp"
#include "actors/thread_protocol.hpp"

namespace skein {

class reader_pool;

struct thread_context {
  event_log* log = nullptr;  // borrowed; thread actors only read through it
  journal_actor journal;
  directory_actor directory;
  core_options options;
  // Daily spending of agents with a budget; refuses runs past it. Shared by
  // every thread actor of the runtime (thread-safe). Null: no budgets checked.
  std::shared_ptr<budget_ledger> ledger;
  // Storage reads that must not block an actor (reader_pool.hpp); owned with the
  // directory, stopped when it exits.
  std::shared_ptr<reader_pool> readers;
};

// The working conversation of a thread read without a full scan (DESIGN §6):
// with a compaction (manifest.compaction_seq), the system prompt its event
// names (prompt_seq) and the log from the compaction on — O(working view).
// Equal to working_conversation(complete log). *events_read (may be null)
// counts the events read from the log. `upto_last_seq`: events past
// m.last_seq (committed after `m` was taken) are left out.
status read_working_view(const event_log& log, const manifest& m, std::vector<event>* out,
                         size_t* events_read = nullptr, bool upto_last_seq = false);

thread_actor spawn_thread_actor(caf::actor_system& sys, std::shared_ptr<const thread_context> ctx,
                              manifest m, agent_spec_ptr agent);

}  // namespace skein
