// The agent actor's interface: the one creation path for an agent's threads.
// The directory holds one agent actor per agent and delegates creations to it;
// the actor (agent_actor.cpp) implements exactly these.
//
//   (create_atom, thread_options)   -> manifest   a new thread (a child's id is minted by its parent)
//   (fork_atom, thread id, at_seq)  -> manifest   a new thread whose log starts as 1..at_seq
//   (import_atom, manifest, events) -> manifest   a thread brought from elsewhere, whole
//   (import_atom, std::vector<tick>) -> std::vector<manifest>  several threads of this agent,
//        written in one batch, all or nothing (tick: thread_id, manifest, events)
//   (fire_atom, trigger_firing)     -> manifest   a schedule's trigger thread: created with the
//        input in its inbox and the schedule's rows in the same tick (the caller wakes it)
//   (delegate_atom, delegation_child) -> manifest  a delegation's child thread (parent kind
//        thread), created with the question in its inbox in one tick (the caller wakes it)
//   (work_atom, work_birth)         -> manifest   a work item's thread (work_messages.hpp)
//
// Local to one node (ticks, firings and births carry rows computed here).
#pragma once

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/journal.hpp"
#include "actors/messages.hpp"
#include "actors/work_messages.hpp"

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

using agent_actor = caf::typed_actor<
    caf::replies_to<create_atom, thread_options>::with<manifest>,
    caf::replies_to<fork_atom, std::string, uint64_t>::with<manifest>,
    caf::replies_to<import_atom, manifest, std::vector<event>>::with<manifest>,
    caf::replies_to<import_atom, std::vector<tick>>::with<std::vector<manifest>>,
    caf::replies_to<fire_atom, trigger_firing>::with<manifest>,
    caf::replies_to<delegate_atom, delegation_child>::with<manifest>,
    caf::replies_to<work_atom, work_birth>::with<manifest>>;

}  // namespace skein

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(skein::trigger_firing)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(skein::delegation_child)
