#include "tools/server/handler_pool.hpp"

#include <algorithm>
#include <cassert>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace skein::http {

struct handler_pool::state {
  size_t threads_min, threads_max;
  std::chrono::milliseconds idle_exit;

  std::mutex mu;  // guards everything below
  std::condition_variable work_cv;  // work queued, or stopping
  std::condition_variable done_cv;  // the last thread left
  std::deque<std::function<void()>> queue;
  size_t threads = 0;  // alive: counted from the spawn to the thread's last use of this state
  size_t idle = 0;     // waiting on work_cv: each takes one queued work when woken
  size_t busy = 0;
  bool stopping = false;
};

namespace {

void run_one(std::function<void()>& work) {
  try {
    work();
  } catch (...) {
    // The work answers for itself (an HTTP exchange replies 500 when dropped).
  }
  work = nullptr;  // its captures (a session, a request) go now, not under the lock
}

}  // namespace

handler_pool::handler_pool(size_t threads_min, size_t threads_max, std::chrono::milliseconds idle_exit)
    : state_(std::make_shared<state>()) {
  assert(threads_max >= 1 && "a pool with no thread would never run its work");
  state_->threads_max = std::max<size_t>(1, threads_max);
  state_->threads_min = std::min(threads_min, state_->threads_max);
  state_->idle_exit = idle_exit;
}

handler_pool::~handler_pool() { stop(); }

void handler_pool::post(std::function<void()> work) {
  state& s = *state_;
  std::unique_lock lock{s.mu};
  if (s.stopping) {
    lock.unlock();
    run_one(work);
    return;
  }
  s.queue.push_back(std::move(work));
  // Each idle thread takes one queued work: a thread more when they cannot all be served.
  if (s.queue.size() > s.idle && s.threads < s.threads_max) {
    ++s.threads;
    std::thread{[p = state_] { run(p); }}.detach();
  }
  if (s.idle > 0) s.work_cv.notify_one();
}

void handler_pool::stop() {
  state& s = *state_;
  std::unique_lock lock{s.mu};
  s.stopping = true;
  s.work_cv.notify_all();
  s.done_cv.wait(lock, [&] { return s.threads == 0; });
  assert(s.queue.empty() && "the last thread to leave ran what was queued");
}

handler_pool_counters handler_pool::counters() const {
  std::lock_guard lock{state_->mu};
  return {state_->threads, state_->busy, state_->queue.size()};
}

void handler_pool::run(std::shared_ptr<state> p) {
  state& s = *p;
  std::unique_lock lock{s.mu};
  for (;;) {
    while (!s.queue.empty()) {
      auto work = std::move(s.queue.front());
      s.queue.pop_front();
      ++s.busy;
      lock.unlock();
      run_one(work);
      lock.lock();
      --s.busy;
    }
    if (s.stopping) break;
    ++s.idle;
    bool woken = s.work_cv.wait_for(lock, s.idle_exit, [&] { return !s.queue.empty() || s.stopping; });
    --s.idle;
    if (!woken && s.threads > s.threads_min) break;
  }
  --s.threads;
  if (s.threads == 0) s.done_cv.notify_all();
  // `p` keeps the mutex alive until this thread has released it.
}

}  // namespace skein::http
