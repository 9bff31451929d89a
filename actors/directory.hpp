// directory: maps thread ids to thread actors and agent ids to agent actors.
//
// Activation is lazy and single-flight: (resolve_atom, id) spawns the thread
// actor from its manifest the first time and hands out the same actor until it
// passivates (idle timeout, or least recently used past active_threads_max).
// Interface: directory_actor below. Beside resolve:
//   (caf::put_atom, agent_config)       -> agent_config   create an agent (stored first)
//   (agent_atom, id)                    -> agent_config
//   (agent_atom)                        -> std::vector<agent_config>
//   (agent_atom, id, caf::get_atom)     -> agent_spec_ptr  (its engine and embedder: for effects)
//   (create_atom, thread_options)       -> manifest       through the thread's agent
//   (delegate_atom, delegation_child)   -> manifest       a delegation's child, through its agent
//   (fire_atom, trigger_firing)         -> manifest       a schedule's trigger thread, through its agent
//   (work_atom, work_birth)             -> manifest       a work item's thread, through its agent
//   (fork_atom, thread id, at_seq)      -> manifest       through the source's agent
//   (import_atom, manifest, events)     -> manifest       through the manifest's agent
//   (import_atom, std::vector<tick>)    -> std::vector<manifest>  all through one agent, all or nothing
//   (delete_atom, thread id)                              stops the actor, erases the log
//   (retire_atom, thread id, before_ms) -> bool           erases it only if idle and untouched since
//                                                         before_ms (retention); false: left as it is
//   (freeze_atom, thread id, bool on)   -> bool           a cluster handoff: on, the thread is
//        frozen only if idle (no run, input or commit pending: the actor decides, as for retire)
//        and its actor stops; until deleted or unfrozen no call reaches it (unavailable).
//        false: busy, left as it is
//   (passivate_atom, thread id, thread) a thread actor that quit idle
//   (stop_atom, thread_filter)                            stops the actors of the threads it
//        selects at once (a replicated cluster's partition this node no longer leads)
//   (caf::get_atom, stats_atom)         -> directory_stats
//   (caf::close_atom)                                     stops every thread actor (gracefully)
#pragma once

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>
#include <functional>
#include <string_view>
#include <vector>

#include "actors/agent_protocol.hpp"
#include "actors/journal.hpp"
#include "actors/messages.hpp"
#include "actors/thread_protocol.hpp"

namespace skein {

using freeze_atom = caf::atom_constant<caf::atom("freeze")>;

// Selects thread ids (directory: stop_atom). Local only.
struct thread_filter {
  std::function<bool(std::string_view thread_id)> fn;
};

using directory_actor = caf::typed_actor<
    caf::replies_to<resolve_atom, std::string>::with<thread_actor>,
    caf::reacts_to<passivate_atom, std::string, thread_actor>,
    caf::replies_to<caf::put_atom, agent_config>::with<agent_config>,
    caf::replies_to<agent_atom, std::string>::with<agent_config>,
    caf::replies_to<agent_atom, std::string, caf::get_atom>::with<agent_spec_ptr>,
    caf::replies_to<agent_atom>::with<std::vector<agent_config>>,
    caf::replies_to<create_atom, thread_options>::with<manifest>,
    caf::replies_to<work_atom, work_birth>::with<manifest>,
    caf::replies_to<fire_atom, trigger_firing>::with<manifest>,
    caf::replies_to<delegate_atom, delegation_child>::with<manifest>,
    caf::replies_to<fork_atom, std::string, uint64_t>::with<manifest>,
    caf::replies_to<import_atom, manifest, std::vector<event>>::with<manifest>,
    caf::replies_to<import_atom, std::vector<tick>>::with<std::vector<manifest>>,
    caf::reacts_to<delete_atom, std::string>,
    caf::replies_to<freeze_atom, std::string, bool>::with<bool>,
    caf::reacts_to<stop_atom, thread_filter>,
    caf::replies_to<retire_atom, std::string, int64_t>::with<bool>,
    caf::replies_to<caf::get_atom, stats_atom>::with<directory_stats>,
    caf::reacts_to<caf::close_atom>>;

struct directory_config {
  event_log* log = nullptr;         // borrowed: outlives the directory
  journal_actor journal;
  core_options options;
  registry reg;
  timer_service* timers = nullptr;  // borrowed: engines keep using it
  std::vector<agent_config> agents;  // loaded from the log at start
};

directory_actor spawn_directory(caf::actor_system& sys, directory_config config);

}  // namespace skein

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(skein::thread_filter)
