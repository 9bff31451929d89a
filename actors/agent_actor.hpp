// agent actor: the one creation path for an agent's threads.
//   (create_atom, thread_options)  -> manifest   a new thread (a child id is minted by its parent)
//   (fork_atom, thread id, at_seq) -> manifest   a new thread whose log starts as 1..at_seq
//   (import_atom, manifest, events) -> manifest  a thread brought from elsewhere, whole
//   (import_atom, std::vector<tick>) -> std::vector<manifest>  several threads of this
//        agent, written in one batch, all or nothing (tick: thread_id, manifest, events)
//   (fire_atom, trigger_firing) -> manifest  a schedule's trigger thread: created with the
//        input in its inbox and the schedule's rows in the same tick (the caller wakes it)
//   (delegate_atom, delegation_child) -> manifest  a delegation's child thread (parent kind
//        thread), created with the question in its inbox in one tick (the caller wakes it)
// Spawned by the directory, one per agent.
#pragma once

#include <caf/actor.hpp>
#include <memory>

#include "actors/thread_actor.hpp"
#include "persistence/event_log.hpp"

namespace skein {

using fire_atom = caf::atom_constant<caf::atom("fire")>;
using delegate_atom = caf::atom_constant<caf::atom("delegate")>;

// The child thread of an ask_agent call. Its id was minted by the parent's actor
// (the parent's children_count); the target agent owns it. Created with the
// question in its inbox, so a crash leaves either no child or one that runs it.
struct delegation_child {
  std::string agent_id;   // the target agent: the owner of the child
  std::string thread_id;  // parent.N
  std::string parent_id;  // the asking thread
  uint32_t depth = 0;     // the parent's depth + 1
  run_input input;        // the question (source "agent"), inbox order 1
};

// A schedule firing that creates a new thread (parent kind schedule).
struct trigger_firing {
  thread_options options;  // agent_id, title, tags of the new thread
  std::string thread_id;   // minted by the scheduler: the history row in the same tick names it
  std::string schedule_id;
  run_input input;         // put in the new thread's inbox (order 1)
  std::vector<schedule_row> rows;  // the schedule's new state and history row
};

caf::actor spawn_agent_actor(caf::actor_system& sys, agent_spec_ptr spec,
                             std::shared_ptr<const thread_context> ctx);

}  // namespace skein

namespace skein {
// A spec for an agent from the log whose engine or tools this runtime lacks:
// its runs fail with `why` instead of the runtime refusing to open.
agent_spec_ptr unavailable_agent_spec(const agent_config& config, const std::string& why);
}  // namespace skein

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(skein::trigger_firing)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(skein::delegation_child)
