// The kernl baseline of the runs workload: bench/baselines/kernl/runs.mjs run by
// Node as a child process, whose last line on stdout is its figures as JSON (the
// grammar is at the top of runs.mjs). The script verifies kernl's store itself and
// exits 1 when anything is missing; here its figures are checked against the runs
// asked for. Any failure skips the row with the reason: kernl is optional.
#include <algorithm>
#include <unistd.h>

#include "bench/baselines/baselines.hpp"
#include "bench/baselines/child_process.hpp"
#include "runtime/model/json_reader.hpp"

namespace skein::bench {
namespace {

constexpr const char* kernl_dir = SKEIN_SOURCE_DIR "/bench/baselines/kernl";
constexpr const char* enable_hint = "to enable: npm ci --prefix bench/baselines/kernl";
// Node starts in well under a second and kernl does ~10,000 runs/s: a script still
// running after this long is hung, not slow.
constexpr double timeout_s_at_scale_1 = 120;

// Reads the script's figures into `row`; they must be of the runs asked for.
status parse_figures(const std::string& line, const runs_baseline_input& in,
                     runs_baseline_row* row) {
  json::document doc;
  SKEIN_TRY(json::parse(line, json_limits{}, "kernl figures", &doc));
  json::object_reader r;
  SKEIN_TRY(json::object_reader::open(doc.root(), "kernl figures", &r));
  std::string system, version, storage, node;
  uint64_t threads = 0, runs_per_thread = 0, failures = 0;
  SKEIN_TRY(r.string("system", &system));
  SKEIN_TRY(r.string("version", &version));
  SKEIN_TRY(r.string("storage", &storage));
  SKEIN_TRY(r.string("node", &node));
  SKEIN_TRY(r.uint("threads", &threads));
  SKEIN_TRY(r.uint("runs_per_thread", &runs_per_thread));
  SKEIN_TRY(r.uint("runs", &row->runs));
  SKEIN_TRY(r.uint("events", &row->events));
  SKEIN_TRY(r.number("seconds", &row->seconds));
  SKEIN_TRY(r.number("p50_us", &row->p50_us));
  SKEIN_TRY(r.number("p99_us", &row->p99_us));
  SKEIN_TRY(r.uint("failures", &failures));
  uint64_t expected = in.threads * in.runs_per_thread;
  if (system != "kernl" || threads != in.threads || runs_per_thread != in.runs_per_thread ||
      row->runs != expected || failures != 0 || row->seconds <= 0)
    return status::corruption("kernl figures are not of " + std::to_string(expected) +
                              " completed runs: " + line);
  row->mode = storage + " " + version;  // "in-memory 0.8.2"
  row->threads = in.threads;
  row->note = "kernl " + version + " from npm on Node " + node + ": its default " + storage +
              " storage, the mock model it ships for its tests answering \"ok\"; every "
              "thread at once on one event loop, each thread's runs in turn; " +
              std::to_string(row->events / std::max<uint64_t>(1, row->runs)) +
              " events per run";
  return status::ok();
}

// Runs the script and reads its figures into `row`: "", or why there are none.
std::string measure(const std::string& node, const std::string& script,
                    const runs_baseline_input& in, double scale, runs_baseline_row* row) {
  child_outcome out;
  double timeout_s = timeout_s_at_scale_1 * std::max(1.0, scale);
  std::string error = run_child({node, script, "--threads", std::to_string(in.threads), "--runs",
                                 std::to_string(in.runs_per_thread)},
                                timeout_s, &out);
  if (!error.empty()) return error;
  std::string last = last_line(out.output);
  if (out.timed_out)
    return "runs.mjs still running after " + std::to_string(static_cast<int>(timeout_s)) +
           " s: killed";
  if (out.exit_code < 0) return "runs.mjs ended by a signal: " + last;
  if (out.exit_code != 0) return "runs.mjs exited " + std::to_string(out.exit_code) + ": " + last;
  return parse_figures(last, in, row).message();
}

}  // namespace

void run_kernl_runs(const runs_baseline_input& in, double scale, runs_baseline_row* row) {
  row->system = "kernl";
  row->mode = "in-memory";
  row->host_threads = 1;  // Node's event loop
  std::string node = find_on_path("node");
  std::string dir = kernl_dir;
  if (node.empty())
    row->skipped = "node is not on PATH; to enable: install Node.js >= 20, then npm ci "
                   "--prefix bench/baselines/kernl";
  else if (::access((dir + "/node_modules/kernl/package.json").c_str(), R_OK) != 0)
    row->skipped = "bench/baselines/kernl/node_modules is missing; " + std::string{enable_hint};
  else
    row->skipped = measure(node, dir + "/runs.mjs", in, scale, row);
}

}  // namespace skein::bench
