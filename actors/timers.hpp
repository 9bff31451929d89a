// A timer_service on the actor system's clock: after() schedules a message to a
// small actor that runs the function. Under CAF's test coordinator the test
// advances that clock, so engines that simulate latency stay deterministic.
#pragma once

#include <caf/fwd.hpp>
#include <memory>

#include "runtime/model/engine.hpp"

namespace skein {

// stop() ends the actor: functions pending or scheduled later never run, yet
// after() stays safe to call. Engines hold the service by reference, so destroy
// it only once nothing can call after() — after the actor system is gone. A
// service destroyed without stop() stops its actor then.
class actor_timer_service : public timer_service {
 public:
  virtual void stop() = 0;
};

std::unique_ptr<actor_timer_service> make_actor_timers(caf::actor_system& sys);

}  // namespace skein
