// Host code the runtime calls: guarded, and a subscription's sink actor.
// Internal to the runtime (includes CAF).
#pragma once

#include <atomic>
#include <caf/actor.hpp>
#include <caf/fwd.hpp>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <mutex>

#include "runtime/runtime.hpp"

namespace skein {

// Host code (callbacks given to the runtime) runs on the runtime's threads: an
// exception from it is caught here, counted and reported, never let into an
// actor where it would end the actor and leave later requests hanging.
template <class F>
void guard_host_call(const std::shared_ptr<std::atomic<uint64_t>>& failures, const char* what, F&& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    if (failures) failures->fetch_add(1, std::memory_order_relaxed);
    std::fprintf(stderr, "skein: %s threw: %.200s\n", what, e.what());
  } catch (...) {
    if (failures) failures->fetch_add(1, std::memory_order_relaxed);
    std::fprintf(stderr, "skein: %s threw a non-standard exception\n", what);
  }
}

// What stands between a subscription's sink actor and the host's callbacks
// (runtime::unsubscribe). After close() returns, none of them runs again and
// one running on another thread has returned: the host may then free what its
// callbacks use (its locals, often). Called from inside one of the callbacks
// (the sink actor's own thread), close() returns at once — the lock is
// recursive — and no callback follows that one. Thread-safe.
class sink_gate {
 public:
  sink_gate() = default;
  sink_gate(const sink_gate&) = delete;
  sink_gate& operator=(const sink_gate&) = delete;

  // Runs `fn` (a callback) unless closed.
  template <class F>
  void pass(F&& fn) {
    std::lock_guard lock{mu_};
    if (open_) fn();
  }
  void close() {
    std::lock_guard lock{mu_};
    open_ = false;
  }

 private:
  std::recursive_mutex mu_;  // guards open_; held while a callback runs
  bool open_ = true;
};

// Puts each callback `sink` has through a new gate, which it returns.
std::shared_ptr<sink_gate> gate_sink(event_sink* sink);

// The actor that calls a subscription's `sink`, one message at a time, in order:
//   (event_atom, thread, published_ptr)                 from the thread actor here
//   (event_atom, thread, uint64 seq, uint8 type, json)  relayed from the owner node
//   (delta_atom, thread, run id, delta)
//   (caf::close_atom, thread, reason)                    the thread ended it
// An event that does not decode ends it "unreadable" (an on_event sink only).
// `watch`, when given (the owner node's edge), going down ends it "unavailable".
caf::actor spawn_sink(caf::actor_system& sys, event_sink sink, std::shared_ptr<std::atomic<uint64_t>> failures,
                      caf::actor watch = {});

}  // namespace skein
