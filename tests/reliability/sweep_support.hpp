// Shared by the fault sweeps: how many faults to inject, one faulted run and
// the count of a clean one, and a summary of what happened under them.
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
#include <filesystem>
#include <map>
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

// The sweeps' environments (`Env`) hold `dir` (a temp_dir), `template_db` (the
// database every run starts from, copied), `fs` (the fault_fs under RocksDB)
// and `run_counter`, and say what a session is: `faulted_session(db, tally)`
// returns what it had acknowledged, `verify(db, acknowledged, tally)` checks
// that against the database reopened without faults.

// One run of a sweep (`what`: "log sweep", "runtime sweep"), under a watchdog
// of `limit`: a fresh copy of the template, the fault armed for the session on
// it, the unsynced writes dropped after a power loss, then verified and removed.
template <class Env>
void sweep_run(Env& env, const char* what, fault_fs::kind k, uint64_t n, fault_fs::fault f,
               std::chrono::seconds limit, sweep_tally* tally) {
  watchdog guard{std::string{what} + ", " + kind_name(k) + " fault at n=" + std::to_string(n), limit};
  std::string db = env.dir.str("run" + std::to_string(env.run_counter++));
  std::filesystem::copy(env.template_db, db, std::filesystem::copy_options::recursive);
  env.fs->arm(k, n, f);
  auto acknowledged = env.faulted_session(db, tally);
  if (k == fault_fs::kind::power_loss) env.fs->drop_unsynced();
  env.fs->disarm();
  env.verify(db, acknowledged, tally);
  ++tally->runs;
  std::error_code ec;
  std::filesystem::remove_all(db, ec);
}

// The operations of each kind one clean session performs, on a copy of the template.
template <class Env>
std::map<fault_fs::kind, uint64_t> count_clean_session(Env& env) {
  std::string db = env.dir.str("count");
  std::filesystem::copy(env.template_db, db, std::filesystem::copy_options::recursive);
  env.fs->arm(fault_fs::kind::append, fault_fs::never, fault_fs::fault::once);
  sweep_tally t;
  env.faulted_session(db, &t);
  std::map<fault_fs::kind, uint64_t> out;
  for (auto k : {fault_fs::kind::append, fault_fs::kind::sync, fault_fs::kind::read, fault_fs::kind::rename,
                 fault_fs::kind::power_loss})
    out[k] = env.fs->count(k);
  env.fs->disarm();
  std::error_code ec;
  std::filesystem::remove_all(db, ec);
  return out;
}

// The summary line of one sweep (`sweep`: "log fault sweep"; `what`: the fault
// kind swept; `failures`: what a faulted session's failures are, "writes";
// `acknowledged`: what was checked after reopening, "ticks").
inline void print_sweep_tally(const char* sweep, const char* what, const char* failures, const char* acknowledged,
                              const sweep_tally& t, double seconds) {
  std::printf("%s, %s: %llu runs in %.1f s: %llu open refused, %llu with failed %s, "
              "%llu unaffected; %llu acknowledged %s checked\n",
              sweep, what, static_cast<unsigned long long>(t.runs), seconds,
              static_cast<unsigned long long>(t.open_refused), static_cast<unsigned long long>(t.writes_failed),
              failures, static_cast<unsigned long long>(t.unaffected), static_cast<unsigned long long>(t.acked),
              acknowledged);
}

}  // namespace skein::test
