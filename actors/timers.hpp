// A timer_service on the actor system's clock: after() schedules a message to a
// small actor that runs the function. Under CAF's test coordinator the test
// advances that clock, so engines that simulate latency stay deterministic.
#pragma once

#include <caf/fwd.hpp>
#include <memory>

#include "runtime/model/engine.hpp"

namespace skein {

// The service stops its actor when destroyed; pending functions then never run.
std::unique_ptr<timer_service> make_actor_timers(caf::actor_system& sys);

}  // namespace skein
