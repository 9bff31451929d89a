// agent actor: implements agent_protocol.hpp; spawned by the directory, one per
// agent.
#pragma once

#include <memory>

#include "actors/agent_protocol.hpp"
#include "actors/thread_actor.hpp"
#include "persistence/event_log.hpp"

namespace skein {

agent_actor spawn_agent_actor(caf::actor_system& sys, agent_spec_ptr spec,
                             std::shared_ptr<const thread_context> ctx);

}  // namespace skein

namespace skein {
// A spec for an agent from the log whose engine or tools this runtime lacks:
// its runs fail with `why` instead of the runtime refusing to open.
agent_spec_ptr unavailable_agent_spec(const agent_config& config, const std::string& why);
}  // namespace skein

