// cancel_token: tells a tool call that its run no longer wants its answer —
// the run was cancelled or ended, or the call timed out.
//
// Thread-safe: the thread actor cancels it on its own thread while the tool
// reads it or registers callbacks on any other. Cancelled once, never reset.
// Callbacks run exactly once: on cancel(), or at once in on_cancel() if the
// token is cancelled already; they run under no lock and must not block.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace skein {

class cancel_token {
 public:
  cancel_token() = default;
  cancel_token(const cancel_token&) = delete;
  cancel_token& operator=(const cancel_token&) = delete;

  bool cancelled() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return cancelled_;
  }

  // Registers `fn` to run when the token is cancelled (now, if it is).
  void on_cancel(std::function<void()> fn) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!cancelled_) {
        callbacks_.push_back(std::move(fn));
        return;
      }
    }
    fn();
  }

  // Idempotent: the first call runs the callbacks.
  void cancel() {
    std::vector<std::function<void()>> run;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (cancelled_) return;
      cancelled_ = true;
      run.swap(callbacks_);
    }
    for (auto& fn : run) fn();
  }

 private:
  mutable std::mutex mutex_;  // guards cancelled_ and callbacks_
  bool cancelled_ = false;
  std::vector<std::function<void()>> callbacks_;
};

}  // namespace skein
