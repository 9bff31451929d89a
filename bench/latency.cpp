// latency: every run in flight at once. N threads get one run each, all sent
// before any completes, against a scripted engine that answers after 1 s: the
// runtime must hold N runs (actors, timers, pending commits) and finish them all
// close to the engine's own latency, within a memory budget.
#include <algorithm>
#include <condition_variable>
#include <malloc.h>
#include <mutex>
#include <thread>

#include "bench/baselines/kernl_latency.hpp"
#include "bench/plot.hpp"
#include "bench/progress.hpp"
#include "bench/report.hpp"
#include "bench/workloads.hpp"

namespace skein::bench {
namespace {

constexpr size_t runs_at_scale_1 = 10'000;
constexpr uint64_t engine_latency_ms = 1000;
constexpr size_t host_threads = 2;
constexpr auto rss_sample_period = std::chrono::milliseconds(50);
// system prompt, user message, thread.start, assistant message, result, thread.stop
constexpr uint64_t events_per_thread = 6;

// Samples VmRSS every rss_sample_period on its own thread until stop().
class rss_sampler {
 public:
  rss_sampler() : peak_(rss_bytes()), thread_([this] { loop(); }) {}
  ~rss_sampler() { stop(); }
  rss_sampler(const rss_sampler&) = delete;
  rss_sampler& operator=(const rss_sampler&) = delete;

  // Joins the thread and takes a last sample; idempotent.
  void stop() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock{mu_};
      stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
    sample();
  }

  uint64_t peak() const { return peak_; }
  uint64_t samples() const { return samples_; }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock{mu_};
    while (!cv_.wait_for(lock, rss_sample_period, [this] { return stopping_; })) sample();
  }

  void sample() {
    peak_ = std::max(peak_, rss_bytes());
    ++samples_;
  }

  std::mutex mu_;  // guards stopping_; peak_ and samples_ belong to the sampling thread until join
  std::condition_variable cv_;
  bool stopping_ = false;
  uint64_t peak_;
  uint64_t samples_ = 0;
  std::thread thread_;
};

// A run that did not wait out the engine, or did not complete as scripted, fails.
status check_run(const run_handle& h, const status& waited, const run_result& r) {
  std::string where = "thread " + h.thread_id() + " run " + h.run_id() + ": ";
  if (!waited) return status{waited.code(), where + waited.message()};
  if (r.outcome != run_outcome::completed)
    return status::io_error(where + "ended " + std::string{to_string(r.outcome)} + ": " + r.error);
  if (r.text != "ok") return status::corruption(where + "replied '" + r.text + "', expected 'ok'");
  if (r.duration_ms < engine_latency_ms)
    return status::corruption(where + "took " + std::to_string(r.duration_ms) +
                              " ms, less than the engine's " + std::to_string(engine_latency_ms));
  if (r.first_seq != 1 || r.last_seq != events_per_thread)
    return status::corruption(where + "events " + std::to_string(r.first_seq) + ".." +
                              std::to_string(r.last_seq) + ", expected 1.." +
                              std::to_string(events_per_thread));
  return status::ok();
}

// Sends one run to each of `threads`, then waits for them in send order: a run
// that ended before an earlier one is recorded when that one ends. They all end
// about engine_latency_ms after their send, so the overstatement stays small.
void drive_host(runtime& rt, const std::vector<std::string>& threads, progress& bar,
                host_outcome* out) {
  std::vector<std::pair<run_handle, bench_clock::time_point>> sent;
  sent.reserve(threads.size());
  out->first_send = bench_clock::now();
  for (const auto& id : threads) {
    run_input in;
    in.text = "hello";
    auto at = bench_clock::now();
    sent.emplace_back(rt.send(id, std::move(in)), at);
  }
  out->latencies_ns.reserve(sent.size());
  out->last_done = out->first_send;
  for (auto& [handle, at] : sent) {
    run_result r;
    status waited = handle.wait(&r);
    out->last_done = bench_clock::now();
    out->latencies_ns.push_back((out->last_done - at).count());
    bar.advance();
    if (status s = check_run(handle, waited, r); !s) {
      if (out->failures++ == 0) out->first_error = s.to_string();
    } else {
      ++out->completed;
    }
  }
}

// Runs the host threads under the RSS sampler and merges what they saw.
void drive(runtime& rt, const std::vector<std::string>& ids, bool quiet, latency_figures* f,
           std::vector<int64_t>* latencies_ns, std::string* first_error) {
  // Heap that earlier workloads freed but malloc kept would otherwise sit under the peak.
  ::malloc_trim(0);
  f->rss_start_bytes = rss_bytes();
  rss_sampler sampler;
  merged_outcome m;
  {
    progress bar{"latency", ids.size(), progress_wanted(quiet)};
    m = drive_round_robin(ids, host_threads,
                          [&](const std::vector<std::string>& mine, host_outcome* out) { drive_host(rt, mine, bar, out); });
  }
  sampler.stop();
  f->rss_peak_bytes = sampler.peak();
  f->rss_samples = sampler.samples();
  f->completed += m.completed;
  f->failures += m.failures;
  if (first_error->empty()) *first_error = m.first_error;
  latencies_ns->insert(latencies_ns->end(), m.latencies_ns.begin(), m.latencies_ns.end());
  f->seconds = m.seconds;
}

status verify(runtime& rt, const std::vector<std::string>& ids, const latency_figures& f,
              const std::string& first_error) {
  if (f.failures > 0)
    return status::io_error(std::to_string(f.failures) + " of " + std::to_string(f.runs) +
                            " runs failed; first: " + first_error);
  if (f.completed != f.runs)
    return status::corruption(std::to_string(f.completed) + " runs completed, expected " +
                              std::to_string(f.runs));
  return check_thread_logs(rt, ids, ids.size(), {events_per_thread, 1});
}

// Temporary, until the merge moves it onto the ported latency workload: kernl's
// figures for the same runs, one line under skein's table.
void print_kernl_latency(const kernl_latency_row& k, std::FILE* out) {
  if (!k.skipped.empty()) {
    std::fprintf(out, "kernl: skipped: %s\n", k.skipped.c_str());
    return;
  }
  std::fprintf(out,
               "kernl %s (in-memory, Node %s, mock model delayed %llu ms): %zu runs at once, %.2f s, "
               "%.0f runs/s, p50 %.3f ms, p99 %.3f ms, RSS at start %.1f MB, peak RSS %.1f MB (ru_maxrss)\n",
               k.version.c_str(), k.node.c_str(), static_cast<unsigned long long>(k.engine_ms), k.runs, k.seconds,
               k.runs_per_s, k.p50_us / 1000, k.p99_us / 1000, static_cast<double>(k.rss_start_bytes) / (1 << 20),
               static_cast<double>(k.rss_peak_bytes) / (1 << 20));
}

}  // namespace

status run_latency(const bench_options& options, std::string* json) {
  runtime_options ro;
  ro.mode = durability::sync;
  agent_config agent;
  agent.id = bench_agent_id;
  agent.system_prompt = "Be brief.";
  agent.engine_config =
      R"({"default":{"reply":"ok","latency_ms":)" + std::to_string(engine_latency_ms) + "}}";
  std::unique_ptr<runtime> rt;
  SKEIN_TRY(open_bench_runtime(options, "latency", ro, agent, &rt));
  std::vector<std::string> ids;
  SKEIN_TRY(create_bench_threads(*rt, agent.id, scaled_count(runs_at_scale_1, options.scale),
                                 options.quiet, &ids));

  latency_figures f;
  f.runs = ids.size();
  f.engine_latency_ms = engine_latency_ms;
  std::vector<int64_t> latencies_ns;
  std::string first_error;
  rss_recorder rss{options.plot, "latency"};
  drive(*rt, ids, options.quiet, &f, &latencies_ns, &first_error);
  rss.finish();
  f.p50_us = quantile_us(latencies_ns, 0.50);
  f.p99_us = quantile_us(latencies_ns, 0.99);
  if (options.plot != nullptr) {
    options.plot->latency("latency", "skein sync, 1 s engine: send to completion", latencies_ns);
    options.plot->throughput("latency", "skein sync", f.runs_per_s(), "runs/s");
  }
  SKEIN_TRY(verify(*rt, ids, f, first_error));
  SKEIN_TRY(rt->close());

  print_latency(f, stdout);
  std::fflush(stdout);
  kernl_latency_row kernl;
  SKEIN_TRY(run_kernl_latency(f.runs, engine_latency_ms, &kernl));
  print_kernl_latency(kernl, stdout);
  std::fflush(stdout);
  json_writer w{json};
  write_latency_json(f, w);
  return status::ok();
}

}  // namespace skein::bench
