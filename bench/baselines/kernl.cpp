// The kernl baseline of the runs and latency workloads: bench/baselines/kernl/kernl.mjs
// run by Node as a child process, whose last line on stdout is its figures as JSON
// (the grammar is at the top of kernl.mjs). The script verifies kernl's store itself
// and exits 1 when anything is missing; here its figures are checked against the runs
// asked for. kernl is optional: any failure skips the row with the reason.
#include <unistd.h>

#include <algorithm>

#include "bench/baselines/baselines.hpp"
#include "bench/plot.hpp"
#include "runtime/model/json_reader.hpp"

namespace skein::bench {
namespace {

constexpr const char* kernl_dir = SKEIN_SOURCE_DIR "/bench/baselines/kernl";
constexpr const char* enable_hint = "to enable: npm ci --prefix bench/baselines/kernl";
// Node starts in well under a second and kernl does ~10,000 runs/s: a script still
// running this long past the model's delay per 10,000 runs is hung, not slow.
constexpr double timeout_s_per_10k_runs = 120;

// Reads the script's figures into `row`; they must be of the runs asked for.
status parse_figures(const std::string& line, kernl_row* row) {
  json::document doc;
  SKEIN_TRY(json::parse(line, json_limits{}, "kernl figures", &doc));
  json::object_reader r;
  SKEIN_TRY(json::object_reader::open(doc.root(), "kernl figures", &r));
  std::string system;
  uint64_t threads = 0, runs_per_thread = 0, delay_ms = 0, failures = 0;
  SKEIN_TRY(r.string("system", &system));
  SKEIN_TRY(r.string("version", &row->version));
  SKEIN_TRY(r.string("node", &row->node));
  SKEIN_TRY(r.string("storage", &row->storage));
  SKEIN_TRY(r.uint("threads", &threads));
  SKEIN_TRY(r.uint("runs_per_thread", &runs_per_thread));
  SKEIN_TRY(r.uint("delay_ms", &delay_ms));
  SKEIN_TRY(r.uint("runs", &row->runs));
  SKEIN_TRY(r.uint("events", &row->events));
  SKEIN_TRY(r.number("seconds", &row->seconds));
  SKEIN_TRY(r.number("runs_per_s", &row->runs_per_s));
  SKEIN_TRY(r.number("p50_us", &row->p50_us));
  SKEIN_TRY(r.number("p99_us", &row->p99_us));
  SKEIN_TRY(r.uint("rss_start_bytes", &row->rss_start_bytes));
  SKEIN_TRY(r.uint("rss_peak_bytes", &row->rss_peak_bytes));
  SKEIN_TRY(r.uint("failures", &failures));
  uint64_t expected = row->threads * row->runs_per_thread;
  if (system != "kernl" || threads != row->threads || runs_per_thread != row->runs_per_thread ||
      delay_ms != row->delay_ms || row->runs != expected || failures != 0 || row->seconds <= 0)
    return status::corruption("kernl figures are not of " + std::to_string(expected) + " completed runs: " + line);
  return status::ok();
}

}  // namespace

void run_kernl(size_t threads, size_t runs_per_thread, uint64_t delay_ms, kernl_row* row) {
  *row = {};
  row->threads = threads;
  row->runs_per_thread = runs_per_thread;
  row->delay_ms = delay_ms;
  std::string dir = kernl_dir;
  if (::access((dir + "/node_modules/kernl/package.json").c_str(), R_OK) != 0) {
    row->skipped = "bench/baselines/kernl/node_modules is missing; " + std::string{enable_hint};
    return;
  }
  double runs = static_cast<double>(threads * runs_per_thread);
  double timeout_s = static_cast<double>(delay_ms * runs_per_thread) / 1000 +
                     timeout_s_per_10k_runs * std::max(1.0, runs / 10'000);
  std::string output;
  row->skipped = run_child("kernl.mjs", {"node", dir + "/kernl.mjs", "--threads", std::to_string(threads), "--runs",
                                         std::to_string(runs_per_thread), "--delay-ms", std::to_string(delay_ms)},
                           "", timeout_s, &output);
  // The figures are the last line; kernl's logger may print before it.
  std::string_view text = output;
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
  std::string last{text.substr(text.rfind('\n') == std::string_view::npos ? 0 : text.rfind('\n') + 1)};
  if (row->skipped.empty()) row->skipped = parse_figures(last, row).message();
  else if (row->skipped.find(": cannot run node:") != std::string::npos)
    row->skipped = "node is not on PATH; to enable: install Node.js >= 20, then npm ci --prefix bench/baselines/kernl";
  else row->skipped += ": " + last;
}

}  // namespace skein::bench
