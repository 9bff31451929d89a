#include "bench/progress.hpp"

#include <chrono>
#include <cstdio>
#include <unistd.h>

namespace skein::bench {
namespace {

constexpr int64_t redraw_ns_min = 100'000'000;
constexpr int bar_width = 30;

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

bool progress_wanted(bool quiet) { return !quiet && isatty(STDERR_FILENO) == 1; }

progress::progress(std::string label, uint64_t total, bool enabled)
    : label_(std::move(label)), total_(total), enabled_(enabled) {
  if (!enabled_) return;
  drawn_at_ns_.store(steady_ns(), std::memory_order_relaxed);
  draw(0);
}

progress::~progress() {
  if (enabled_) std::fprintf(stderr, "\r\033[K");
}

void progress::advance(uint64_t n) {
  uint64_t done = done_.fetch_add(n, std::memory_order_relaxed) + n;
  if (!enabled_) return;
  int64_t now = steady_ns();
  int64_t last = drawn_at_ns_.load(std::memory_order_relaxed);
  // Only the caller that wins the exchange draws: one redraw per period at most.
  if (now - last < redraw_ns_min ||
      !drawn_at_ns_.compare_exchange_strong(last, now, std::memory_order_relaxed))
    return;
  draw(done);
}

void progress::draw(uint64_t done) const {
  double fraction = total_ == 0 ? 1.0 : static_cast<double>(done) / static_cast<double>(total_);
  int filled = static_cast<int>(fraction * bar_width);
  std::string bar(static_cast<size_t>(filled), '#');
  bar.resize(bar_width, '.');
  std::fprintf(stderr, "\r\033[K  %-24s [%s] %3d%%  %llu/%llu", label_.c_str(), bar.c_str(),
               static_cast<int>(fraction * 100), static_cast<unsigned long long>(done),
               static_cast<unsigned long long>(total_));
  std::fflush(stderr);
}

}  // namespace skein::bench
