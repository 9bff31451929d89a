// reader_pool: a few detached actors, each on its own OS thread, that run
// storage reads for the actors that must not block on them (DESIGN §4: the
// directory's manifest reads at activation). A read is a job; its outcome
// comes back to the asking actor as the response to its request, so the asker
// handles it in its own turn, like any other message.
//
// Bounded: at most reads_queued_max jobs queued or running at once; past that
// read_then() answers overloaded at once instead of queueing, and
// try_read_then() returns false: backpressure, never a blocked actor. Jobs go
// round-robin to the readers.
//
// Thread-safe: read_then() may be called from any actor. stop() ends the
// readers; a job queued then gets an error, never silence.
#pragma once

#include <atomic>
#include <caf/actor.hpp>
#include <caf/event_based_actor.hpp>
#include <functional>
#include <memory>
#include <vector>

#include "actors/error.hpp"
#include "runtime/model/status.hpp"

namespace caf {
class actor_system;
}

namespace skein {

using reader_read_atom = caf::atom_constant<caf::atom("read")>;

// A job and the outcome it leaves for the asker. Local only.
struct read_job {
  std::function<status()> fn;
  std::shared_ptr<status> outcome;
};

}  // namespace skein

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(skein::read_job)

namespace skein {

struct reader_options {
  size_t readers = 2;              // reader threads
  size_t reads_queued_max = 65536;  // jobs queued or running at once, across readers
  bool detached = true;            // false: scheduled actors (CAF's test coordinator drives them)
};

class reader_pool {
 public:
  reader_pool(caf::actor_system& sys, reader_options options);
  ~reader_pool();
  reader_pool(const reader_pool&) = delete;
  reader_pool& operator=(const reader_pool&) = delete;

  // Runs `job` on a reader thread, then `done(job's status)` in `self` (any
  // event-based actor, typed or not), as a response handler. A full pool calls
  // done(overloaded) at once, inside this call; a stopped one done(overloaded) too.
  template <class Self>
  void read_then(Self* self, std::function<status()> job, std::function<void(const status&)> done) {
    if (!try_read_then(self, job, done)) done(refusal());
  }
  // read_then() that takes no job when the pool is full or stopped: false, and
  // `done` is not called (the caller reads itself, or refuses).
  template <class Self>
  [[nodiscard]] bool try_read_then(Self* self, std::function<status()>& job,
                                   std::function<void(const status&)>& done) {
    caf::actor target;
    if (!reserve(&target)) return false;
    auto outcome = std::make_shared<status>();
    self->request(target, caf::infinite, reader_read_atom::value, read_job{std::move(job), outcome})
        .then([outcome, done]() { done(*outcome); }, [done](caf::error& e) { done(to_status(e)); });
    return true;
  }
  // try_read_then(), and when the pool cannot take the job, runs it here and
  // calls done at once: slower for the asking actor, never a refused read.
  template <class Self>
  void read_or_inline(Self* self, std::function<status()> job, std::function<void(const status&)> done) {
    if (!try_read_then(self, job, done)) done(job());
  }

  // Ends every reader; idempotent.
  void stop();

  size_t queued() const { return queued_.load(std::memory_order_relaxed); }

 private:
  // A reader for one more job (counted as queued), or false: full or stopped.
  bool reserve(caf::actor* target);
  // Why a job was not taken.
  status refusal() const;

  reader_options options_;
  std::vector<caf::actor> readers_;
  std::shared_ptr<std::atomic<size_t>> queued_counter_;
  std::atomic<size_t>& queued_;
  std::atomic<size_t> next_{0};
  std::atomic<bool> stopped_{false};
};

}  // namespace skein
