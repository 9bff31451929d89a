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

void run_kernl(size_t threads, size_t runs_per_thread, uint64_t delay_ms, measured_row* row) {
  *row = {};
  row->system = "kernl";
  row->mode = "in-memory";
  std::string dir = SKEIN_SOURCE_DIR "/bench/baselines/kernl";
  if (::access((dir + "/node_modules/kernl/package.json").c_str(), R_OK) != 0) {
    row->skipped = "bench/baselines/kernl/node_modules is missing; to enable: npm ci --prefix bench/baselines/kernl";
    return;
  }
  // Node starts in well under a second and kernl does ~10,000 runs/s: a script still
  // running 120 s per 10,000 runs past the model's delay is hung, not slow.
  double runs = static_cast<double>(threads * runs_per_thread);
  double timeout_s = static_cast<double>(delay_ms * runs_per_thread) / 1000 + 120 * std::max(1.0, runs / 10'000);
  std::string output;
  row->skipped = run_child("kernl.mjs", {"node", dir + "/kernl.mjs", "--threads", std::to_string(threads), "--runs",
                                         std::to_string(runs_per_thread), "--delay-ms", std::to_string(delay_ms)},
                           "", timeout_s, &output);
  // The figures are the last line; kernl's logger may print before it.
  while (!output.empty() && (output.back() == '\n' || output.back() == '\r')) output.pop_back();
  std::string last = output.substr(output.rfind('\n') == std::string::npos ? 0 : output.rfind('\n') + 1);
  if (row->skipped.find(": cannot run node:") != std::string::npos) {
    row->skipped = "node is not on PATH; to enable: install Node.js >= 18, then npm ci --prefix bench/baselines/kernl";
    return;
  }
  if (!row->skipped.empty()) {
    row->skipped += ": " + last;
    return;
  }
  // The figures, which must be of the runs asked for.
  auto parse = [&] {
    json::document doc;
    json::object_reader r;
    SKEIN_TRY(json::parse(last, json_limits{}, "kernl figures", &doc));
    SKEIN_TRY(json::object_reader::open(doc.root(), "kernl figures", &r));
    std::string system, version, node, storage;
    uint64_t got_threads = 0, got_runs_per_thread = 0, got_delay_ms = 0, events = 0, failures = 0;
    const std::pair<const char*, std::string*> texts[] = {
        {"system", &system}, {"version", &version}, {"node", &node}, {"storage", &storage}};
    const std::pair<const char*, uint64_t*> uints[] = {
        {"threads", &got_threads}, {"runs_per_thread", &got_runs_per_thread}, {"delay_ms", &got_delay_ms},
        {"runs", &row->count}, {"events", &events}, {"rss_start_bytes", &row->rss_start_bytes},
        {"rss_peak_bytes", &row->rss_peak_bytes}, {"failures", &failures}};
    const std::pair<const char*, double*> numbers[] = {
        {"seconds", &row->seconds}, {"p50_us", &row->p50_us}, {"p99_us", &row->p99_us}};
    for (auto [key, out] : texts) SKEIN_TRY(r.string(key, out));
    for (auto [key, out] : uints) SKEIN_TRY(r.uint(key, out));
    for (auto [key, out] : numbers) SKEIN_TRY(r.number(key, out));
    if (system != "kernl" || got_threads != threads || got_runs_per_thread != runs_per_thread ||
        got_delay_ms != delay_ms || row->count != threads * runs_per_thread || failures != 0 || row->seconds <= 0)
      return status::corruption("kernl figures are not of " + std::to_string(threads * runs_per_thread) +
                                " completed runs: " + last);
    row->mode = storage + " " + version;  // "in-memory 0.8.2"
    row->note = "kernl " + version + " from npm on Node " + node + ": its default " + storage +
                " storage, the mock model it ships for its tests answering \"ok\" after " +
                std::to_string(delay_ms) + " ms; every thread at once on one event loop, each thread's runs in "
                "turn; " + std::to_string(events / std::max<uint64_t>(1, row->count)) + " events per run";
    return status::ok();
  };
  row->skipped = parse().message();
}

}  // namespace skein::bench
