// directory: maps thread ids to thread actors and agent ids to agent actors.
//
// Activation is lazy and single-flight: (resolve_atom, id) spawns the thread
// actor from its manifest the first time and hands out the same actor until it
// passivates (idle timeout, or least recently used past active_threads_max).
// Protocol, beside resolve (-> caf::actor):
//   (caf::put_atom, agent_config)       -> agent_config   create an agent (stored first)
//   (agent_atom, id)                    -> agent_config
//   (agent_atom)                        -> std::vector<agent_config>
//   (agent_atom, id, caf::get_atom)     -> agent_spec_ptr  (its engine and embedder: for effects)
//   (create_atom, thread_options)       -> manifest       through the thread's agent
//   (delegate_atom, delegation_child)   -> manifest       a delegation's child, through its agent
//   (fork_atom, thread id, at_seq)      -> manifest       through the source's agent
//   (import_atom, manifest, events)     -> manifest       through the manifest's agent
//   (import_atom, std::vector<tick>)    -> std::vector<manifest>  all through one agent, all or nothing
//   (delete_atom, thread id)            -> caf::unit      stops the actor, erases the log
//   (retire_atom, thread id, before_ms) -> bool           erases it only if idle and untouched since
//                                                         before_ms (retention); false: left as it is
//   (freeze_atom, thread id, bool on)   -> bool           a cluster handoff: on, the thread is
//        frozen only if idle (no run, input or commit pending: the actor decides, as for retire)
//        and its actor stops; until deleted or unfrozen no call reaches it (unavailable).
//        false: busy, left as it is
//   (caf::get_atom, stats_atom)         -> directory_stats
#pragma once

#include <caf/actor.hpp>
#include <vector>

#include "actors/messages.hpp"

namespace skein {

using freeze_atom = caf::atom_constant<caf::atom("freeze")>;

struct directory_config {
  event_log* log = nullptr;         // borrowed: outlives the directory
  caf::actor journal;
  core_options options;
  registry reg;
  timer_service* timers = nullptr;  // borrowed: engines keep using it
  std::vector<agent_config> agents;  // loaded from the log at start
};

caf::actor spawn_directory(caf::actor_system& sys, directory_config config);

}  // namespace skein
