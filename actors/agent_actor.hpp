// agent actor: the one creation path for an agent's threads.
//   (create_atom, thread_options)  -> manifest   a new thread (a child id is minted by its parent)
//   (fork_atom, thread id, at_seq) -> manifest   a new thread whose log starts as 1..at_seq
//   (import_atom, manifest, events) -> manifest  a thread brought from elsewhere, whole
//   (import_atom, std::vector<tick>) -> std::vector<manifest>  several threads of this
//        agent, written in one batch, all or nothing (tick: thread_id, manifest, events)
// Spawned by the directory, one per agent.
#pragma once

#include <caf/actor.hpp>
#include <memory>

#include "actors/thread_actor.hpp"
#include "persistence/event_log.hpp"

namespace skein {

caf::actor spawn_agent_actor(caf::actor_system& sys, agent_spec_ptr spec,
                             std::shared_ptr<const thread_context> ctx);

}  // namespace skein

namespace skein {
// A spec for an agent from the log whose engine or tools this runtime lacks:
// its runs fail with `why` instead of the runtime refusing to open.
agent_spec_ptr unavailable_agent_spec(const agent_config& config, const std::string& why);
}  // namespace skein

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::vector<skein::manifest>)
