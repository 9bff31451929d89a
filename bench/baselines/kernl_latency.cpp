// The kernl baseline of the latency workload: bench/baselines/kernl/latency.mjs run
// by Node as a child process, whose last line on stdout is its figures as JSON (the
// grammar is at the top of latency.mjs). The script verifies kernl's store itself
// and exits 1 when anything is missing; here its figures are checked against the
// runs asked for. As in kernl_runs.cpp, any failure skips the row with the reason.
#include "bench/baselines/kernl_latency.hpp"

#include <algorithm>
#include <unistd.h>

#include "bench/baselines/child_process.hpp"
#include "runtime/model/json_reader.hpp"

namespace skein::bench {
namespace {

constexpr const char* kernl_dir = SKEIN_SOURCE_DIR "/bench/baselines/kernl";
constexpr const char* enable_hint = "to enable: npm ci --prefix bench/baselines/kernl";
// 10,000 runs at once take kernl about a second of CPU past the model's delay: a
// script still running after this long (plus the delay) is hung, not slow.
constexpr double timeout_s_per_10k_runs = 120;
constexpr size_t runs_max = 10'000'000;  // latency.mjs's own limit

// Reads the script's figures into `row`; they must be of the runs asked for.
status parse_figures(const std::string& line, kernl_latency_row* row) {
  json::document doc;
  SKEIN_TRY(json::parse(line, json_limits{}, "kernl figures", &doc));
  json::object_reader r;
  SKEIN_TRY(json::object_reader::open(doc.root(), "kernl figures", &r));
  std::string system;
  uint64_t runs = 0, delay_ms = 0, completed = 0, failures = 0;
  SKEIN_TRY(r.string("system", &system));
  SKEIN_TRY(r.string("version", &row->version));
  SKEIN_TRY(r.string("node", &row->node));
  SKEIN_TRY(r.uint("runs", &runs));
  SKEIN_TRY(r.uint("delay_ms", &delay_ms));
  SKEIN_TRY(r.uint("completed", &completed));
  SKEIN_TRY(r.number("seconds", &row->seconds));
  SKEIN_TRY(r.number("runs_per_s", &row->runs_per_s));
  SKEIN_TRY(r.number("p50_us", &row->p50_us));
  SKEIN_TRY(r.number("p99_us", &row->p99_us));
  SKEIN_TRY(r.uint("rss_start_bytes", &row->rss_start_bytes));
  SKEIN_TRY(r.uint("rss_peak_bytes", &row->rss_peak_bytes));
  SKEIN_TRY(r.uint("failures", &failures));
  if (system != "kernl" || runs != row->runs || delay_ms != row->engine_ms || completed != row->runs ||
      failures != 0 || row->seconds <= 0)
    return status::corruption("kernl figures are not of " + std::to_string(row->runs) + " completed runs: " + line);
  return status::ok();
}

// Runs the script and reads its figures into `row`: "", or why there are none.
std::string measure(const std::string& node, const std::string& script, kernl_latency_row* row) {
  child_outcome out;
  double timeout_s = static_cast<double>(row->engine_ms) / 1000 +
                     timeout_s_per_10k_runs * std::max(1.0, static_cast<double>(row->runs) / 10'000);
  std::string error = run_child(
      {node, script, "--runs", std::to_string(row->runs), "--delay-ms", std::to_string(row->engine_ms)}, timeout_s,
      &out);
  if (!error.empty()) return error;
  std::string last = last_line(out.output);
  if (out.timed_out)
    return "latency.mjs still running after " + std::to_string(static_cast<int>(timeout_s)) + " s: killed";
  if (out.exit_code < 0) return "latency.mjs ended by a signal: " + last;
  if (out.exit_code != 0) return "latency.mjs exited " + std::to_string(out.exit_code) + ": " + last;
  return parse_figures(last, row).message();
}

}  // namespace

status run_kernl_latency(size_t runs, uint64_t engine_ms, kernl_latency_row* out) {
  if (runs == 0 || runs > runs_max)
    return status::invalid_input("kernl latency: runs must be in [1, " + std::to_string(runs_max) + "]");
  *out = {};
  out->runs = runs;
  out->engine_ms = engine_ms;
  std::string node = find_on_path("node");
  std::string dir = kernl_dir;
  if (node.empty())
    out->skipped = "node is not on PATH; to enable: install Node.js >= 20, then npm ci --prefix bench/baselines/kernl";
  else if (::access((dir + "/node_modules/kernl/package.json").c_str(), R_OK) != 0)
    out->skipped = "bench/baselines/kernl/node_modules is missing; " + std::string{enable_hint};
  else
    out->skipped = measure(node, dir + "/latency.mjs", out);
  return status::ok();
}

}  // namespace skein::bench
