// Shared by the fault sweeps: how many faults to inject and a summary of what
// happened under them.
//
// SKEIN_FAULT_SWEEP=full sweeps every n of every operation kind; otherwise a
// sweep takes at most `quick_points` values of n per kind, spread evenly over
// the range (always the first and the last), to keep `make test` short.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/fault_fs.hpp"

namespace skein::test {

inline bool full_sweep() {
  const char* v = std::getenv("SKEIN_FAULT_SWEEP");
  return v != nullptr && std::string{v} == "full";
}

// The values of n to try for an operation seen `total` times in a clean run:
// 1..total, plus total+1 (the fault lands after the workload, in close or a
// background job) — every one in a full sweep, else at most `quick_points`.
inline std::vector<uint64_t> sweep_points(uint64_t total, size_t quick_points) {
  std::vector<uint64_t> out;
  uint64_t last = total + 1;
  if (full_sweep() || last <= quick_points) {
    for (uint64_t n = 1; n <= last; ++n) out.push_back(n);
    return out;
  }
  for (size_t i = 0; i < quick_points; ++i) {
    uint64_t n = 1 + (last - 1) * i / (quick_points - 1);
    if (out.empty() || out.back() != n) out.push_back(n);
  }
  return out;
}

inline const char* kind_name(fault_fs::kind k) {
  switch (k) {
    case fault_fs::kind::append: return "write";
    case fault_fs::kind::sync: return "sync";
    case fault_fs::kind::read: return "read";
    case fault_fs::kind::rename: return "rename";
    case fault_fs::kind::power_loss: return "power-loss";
    case fault_fs::kind::count: break;
  }
  return "?";
}

// Outcomes of the runs of one sweep, for the printed summary.
struct sweep_tally {
  uint64_t runs = 0;
  uint64_t open_refused = 0;   // the faulted session could not open the database
  uint64_t writes_failed = 0;  // a commit or a read of the faulted session failed
  uint64_t unaffected = 0;     // everything was acknowledged
  uint64_t acked = 0;          // acknowledged ticks or runs checked after reopening
};

// Aborts the process with a message if it is not destroyed within `limit`: a
// hang inside RocksDB or the actors cannot be unwound, and a test that hangs
// says nothing.
class watchdog {
 public:
  watchdog(std::string what, std::chrono::seconds limit) : what_(std::move(what)) {
    thread_ = std::thread([this, limit] {
      std::unique_lock<std::mutex> lock{mu_};
      if (!cv_.wait_for(lock, limit, [this] { return done_; })) {
        std::fprintf(stderr, "watchdog: %s did not finish within %lld s\n", what_.c_str(),
                     static_cast<long long>(limit.count()));
        std::abort();
      }
    });
  }
  ~watchdog() {
    {
      std::lock_guard<std::mutex> lock{mu_};
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  watchdog(const watchdog&) = delete;
  watchdog& operator=(const watchdog&) = delete;

 private:
  std::string what_;
  std::mutex mu_;  // guards done_
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace skein::test
