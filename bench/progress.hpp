// progress: a one-line bar on stderr for a long measurement.
//
// Drawn only when enabled (the caller passes whether stderr is a terminal), and
// redrawn at most every 100 ms so that drawing never shows up in the figures.
// Thread-safe: advance() may be called from any thread, e.g. by every actor.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace skein::bench {

// True when a bar would be seen: not --quiet and stderr is a terminal (not a CI log).
bool progress_wanted(bool quiet);

class progress {
 public:
  progress(std::string label, uint64_t total, bool enabled);
  ~progress();  // clears the line, so the table that follows starts clean
  progress(const progress&) = delete;
  progress& operator=(const progress&) = delete;

  void advance(uint64_t n = 1);

 private:
  void draw(uint64_t done) const;

  std::string label_;
  uint64_t total_;
  bool enabled_;
  std::atomic<uint64_t> done_{0};
  std::atomic<int64_t> drawn_at_ns_{0};
};

}  // namespace skein::bench
