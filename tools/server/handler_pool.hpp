// handler_pool: the threads that run a service's admission and handlers, so that
// no HTTP I/O thread ever waits on what a handler waits on (an actor's answer,
// the disk, another node of a cluster). A request whose handler waits holds one
// of these threads for as long, and nothing else: a hung peer costs the requests
// for its own threads, each answered when its own call times out, while every
// other request runs on another thread.
//
// The pool grows by a thread whenever work arrives and no thread is idle, up to
// threads_max; past it work queues in arrival order. A thread idle for idle_exit
// leaves, down to threads_min. Thread-safe; the destructor (or stop()) runs
// what is queued and waits for every thread to finish its work.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>

namespace skein::http {

struct handler_pool_counters {
  size_t threads = 0;  // alive now
  size_t busy = 0;     // running work now
  size_t queued = 0;   // waiting for a thread
};

class handler_pool {
 public:
  handler_pool(size_t threads_min, size_t threads_max, std::chrono::milliseconds idle_exit);
  ~handler_pool();
  handler_pool(const handler_pool&) = delete;
  handler_pool& operator=(const handler_pool&) = delete;

  // Runs `work` on a pool thread. An exception it throws is caught and dropped:
  // the caller's work answers for itself. After stop(), `work` runs on the
  // calling thread (nothing is lost, and nothing outlives stop()).
  void post(std::function<void()> work);
  // Runs what is queued, then waits until every thread has left. Idempotent.
  void stop();
  handler_pool_counters counters() const;

 private:
  struct state;
  static void run(std::shared_ptr<state> s);  // one thread's loop
  std::shared_ptr<state> state_;  // shared with the threads, which may outlive a stop() by their exit
};

}  // namespace skein::http
