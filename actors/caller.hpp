// caller: a scoped_actor for a thread outside the actor system — the host's, a
// server thread — that asks an actor and waits.
//
// CAF 0.17 makes every thread that constructs a scoped_actor (or the actor
// system itself) hold a reference to the system's logger in a thread-local, and
// ~actor_system waits until every such reference is gone. A runtime used from
// one thread and closed from another would then hang until the first thread
// exits. A caller drops its thread's reference when it goes; release_logger()
// does the same after the actor system's constructor.
#pragma once

#include <caf/logger.hpp>
#include <caf/scoped_actor.hpp>
#include <optional>

namespace skein {

inline void release_logger() { caf::logger::set_current_actor_system(nullptr); }

class caller {
 public:
  explicit caller(caf::actor_system& sys) { self_.emplace(sys); }
  ~caller() {
    self_.reset();
    release_logger();
  }
  caller(const caller&) = delete;
  caller& operator=(const caller&) = delete;

  caf::blocking_actor* operator->() { return self_->ptr(); }

 private:
  std::optional<caf::scoped_actor> self_;
};

}  // namespace skein
