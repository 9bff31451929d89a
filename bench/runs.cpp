// runs: end-to-end runs through skein::runtime — send, engine, durable commits,
// result — with the scripted engine answering at once, so that the runtime and
// the log are all that is measured. N threads x R runs, durability sync, sent
// from two host threads that keep every thread busy. Then the same runs on the
// designs of bench/baselines/ (baselines.hpp).
//
// Also defines what the runtime workloads share (workloads.hpp).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string_view>
#include <thread>

#include "bench/baselines/baselines.hpp"
#include "bench/plot.hpp"
#include "bench/progress.hpp"
#include "bench/report.hpp"
#include "bench/workloads.hpp"

namespace skein::bench {

// --- shared by the runtime workloads --------------------------------------------

size_t scaled_count(size_t n, double scale) {
  return std::max<size_t>(1, static_cast<size_t>(std::llround(static_cast<double>(n) * scale)));
}

double seconds_since(bench_clock::time_point from, bench_clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

merged_outcome drive_round_robin(
    const std::vector<std::string>& ids, size_t hosts,
    const std::function<void(const std::vector<std::string>& mine, host_outcome* out)>& drive) {
  std::vector<host_outcome> outcomes(hosts);
  std::vector<std::thread> threads;
  for (size_t h = 0; h < hosts; ++h) {
    threads.emplace_back([&, h] {
      std::vector<std::string> mine;
      for (size_t i = h; i < ids.size(); i += hosts) mine.push_back(ids[i]);
      drive(mine, &outcomes[h]);
    });
  }
  for (auto& t : threads) t.join();
  return merge_outcomes(outcomes);
}

merged_outcome merge_outcomes(const std::vector<host_outcome>& outcomes) {
  merged_outcome m;
  if (outcomes.empty()) return m;
  auto first = outcomes.front().first_send;
  auto last = outcomes.front().last_done;
  for (const auto& o : outcomes) {
    first = std::min(first, o.first_send);
    last = std::max(last, o.last_done);
    m.completed += o.completed;
    m.failures += o.failures;
    if (m.first_error.empty()) m.first_error = o.first_error;
    m.latencies_ns.insert(m.latencies_ns.end(), o.latencies_ns.begin(), o.latencies_ns.end());
  }
  m.seconds = seconds_since(first, last);
  return m;
}

double quantile_us(std::vector<int64_t>& ns, double q) {
  if (ns.empty()) return 0;
  auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(ns.size())));
  auto nth = ns.begin() + static_cast<ptrdiff_t>(std::clamp<size_t>(rank, 1, ns.size()) - 1);
  std::nth_element(ns.begin(), nth, ns.end());
  return static_cast<double>(*nth) / 1000.0;
}

uint64_t rss_bytes() {
  std::ifstream in{"/proc/self/status"};
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("VmRSS:")) return std::strtoull(line.c_str() + 6, nullptr, 10) * 1024;
  }
  return 0;
}

status open_bench_runtime(const bench_options& options, const std::string& name,
                          runtime_options ro, const agent_config& agent,
                          std::unique_ptr<runtime>* out) {
  ro.data_dir = options.dir + "/" + name;
  std::error_code ec;
  std::filesystem::remove_all(ro.data_dir, ec);
  if (ec) return status::io_error("cannot clear " + ro.data_dir + ": " + ec.message());
  SKEIN_TRY(runtime::open(std::move(ro), out));
  return (*out)->create_agent(agent);
}

// Host h takes i = h, h + hosts, ...
status on_host_threads(size_t n, size_t hosts, const std::function<status(size_t)>& fn) {
  std::atomic<bool> failed{false};
  std::vector<status> results(hosts);
  std::vector<std::thread> threads;
  for (size_t h = 0; h < hosts; ++h) {
    threads.emplace_back([&, h] {
      for (size_t i = h; i < n && !failed.load(std::memory_order_relaxed); i += hosts) {
        results[h] = fn(i);
        if (!results[h]) failed = true;
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& r : results) SKEIN_TRY(r);
  return status::ok();
}

namespace {

// Creation blocks on an fsync: this many creators let the journal group them.
constexpr size_t creator_threads = 16;

}  // namespace

status create_bench_threads(runtime& rt, const std::string& agent_id, size_t n, bool quiet,
                            std::vector<std::string>* ids) {
  ids->assign(n, {});
  progress bar{"creating threads", n, progress_wanted(quiet)};
  return on_host_threads(n, creator_threads, [&](size_t i) {
    thread_options o;
    o.agent_id = agent_id;
    manifest m;
    SKEIN_TRY(rt.create_thread(o, &m));
    (*ids)[i] = m.id;  // each host writes its own elements only
    bar.advance();
    return status::ok();
  });
}

namespace {

// Counts the runs a complete log records; a run that ended otherwise than
// completed is an error naming it.
status count_completed(const std::string& id, const std::vector<event>& events, uint64_t* out) {
  *out = 0;
  for (const auto& e : events) {
    if (e.type != event_type::result) continue;
    if (e.outcome != "completed")
      return status::corruption("thread " + id + ": run " + e.run_id + " ended " + e.outcome);
    ++*out;
  }
  return status::ok();
}

status check_thread_log(runtime& rt, const std::string& id, const log_expectation& want) {
  manifest m;
  SKEIN_TRY(rt.get_thread(id, &m));
  std::vector<event> events;
  SKEIN_TRY(rt.read(id, history_view::complete, 1, 0, &events));
  auto what = [&](std::string_view field, uint64_t got, uint64_t expected) {
    return status::corruption("thread " + id + ": " + std::string{field} + " " +
                              std::to_string(got) + ", expected " + std::to_string(expected));
  };
  if (m.last_seq != want.events) return what("manifest last_seq", m.last_seq, want.events);
  if (events.size() != want.events) return what("events read back", events.size(), want.events);
  for (size_t i = 0; i < events.size(); ++i) {
    if (events[i].seq != i + 1)
      return what("seq at position " + std::to_string(i), events[i].seq, i + 1);
  }
  uint64_t completed = 0;
  SKEIN_TRY(count_completed(id, events, &completed));
  if (completed != want.completed_runs)
    return what("completed runs", completed, want.completed_runs);
  return status::ok();
}

}  // namespace

status check_thread_logs(runtime& rt, const std::vector<std::string>& ids, size_t sample,
                         const log_expectation& want) {
  size_t n = std::min(sample, ids.size());
  for (size_t k = 0; k < n; ++k) {
    // Evenly spread: the first and the last thread are always among them.
    size_t i = n == 1 ? 0 : k * (ids.size() - 1) / (n - 1);
    SKEIN_TRY(check_thread_log(rt, ids[i], want));
  }
  return status::ok();
}

status check_scripted_run(const std::string& where, const run_result& r) {
  if (r.outcome != run_outcome::completed)
    return status::io_error(where + "ended " + std::string{to_string(r.outcome)} + ": " + r.error);
  if (r.text != "ok") return status::corruption(where + "replied '" + r.text + "', expected 'ok'");
  uint64_t expected = r.first_seq == 1 ? scripted_events_per_run + 1 : scripted_events_per_run;
  if (r.first_seq == 0 || r.last_seq + 1 - r.first_seq != expected)
    return status::corruption(where + "events " + std::to_string(r.first_seq) + ".." +
                              std::to_string(r.last_seq) + ", expected " +
                              std::to_string(expected));
  return status::ok();
}

namespace {

// A run that did not complete as scripted is a failure, whatever wait() said.
status check_run(const run_handle& h, const status& waited, const run_result& r) {
  std::string where = "thread " + h.thread_id() + " run " + h.run_id() + ": ";
  if (!waited) return status{waited.code(), where + waited.message()};
  return check_scripted_run(where, r);
}

struct in_flight {
  size_t thread = 0;  // index into the host's threads
  run_handle handle;
  bench_clock::time_point sent;
};

// Sends R runs to each of `threads`, window_per_thread at a time, and waits for
// them in send order. A run that finished before the one waited on is recorded
// late, which overstates its latency by at most the wait for its predecessors;
// with two runs in flight per thread and runs of equal cost that stays small.
void drive_host(runtime& rt, const std::vector<std::string>& threads, size_t runs_per_thread,
                size_t window_per_thread, const std::string& padding, progress& bar, host_outcome* out) {
  std::deque<in_flight> window;
  std::vector<size_t> sent(threads.size(), 0);
  auto send_next = [&](size_t i) {
    run_input in;
    in.text = "run " + std::to_string(sent[i]++);
    if (!padding.empty()) in.text += " " + padding;
    auto at = bench_clock::now();
    window.push_back({i, rt.send(threads[i], std::move(in)), at});
  };
  out->latencies_ns.reserve(threads.size() * runs_per_thread);
  out->first_send = bench_clock::now();
  out->last_done = out->first_send;
  for (size_t k = 0; k < window_per_thread; ++k) {
    for (size_t i = 0; i < threads.size(); ++i) {
      if (sent[i] < runs_per_thread) send_next(i);
    }
  }
  while (!window.empty()) {
    in_flight f = std::move(window.front());
    window.pop_front();
    run_result r;
    status waited = f.handle.wait(&r);
    out->last_done = bench_clock::now();
    out->latencies_ns.push_back((out->last_done - f.sent).count());
    bar.advance();
    if (status s = check_run(f.handle, waited, r); !s) {
      if (out->failures++ == 0) out->first_error = s.to_string();
    } else {
      ++out->completed;
    }
    if (sent[f.thread] < runs_per_thread) send_next(f.thread);
  }
}

}  // namespace

void drive_runs_host(runtime& rt, const std::vector<std::string>& threads, size_t runs, size_t window,
                     const std::string& padding, progress& bar, host_outcome* out) {
  drive_host(rt, threads, runs, window, padding, bar, out);
}

// --- the runs workload -----------------------------------------------------------

namespace {

constexpr size_t threads_at_scale_1 = 1000;
// Fixed, not scaled: the queue of one thread must stay under thread_queue_max.
constexpr size_t runs_per_thread = 10;
constexpr size_t host_threads = 2;
// One run executing and one queued behind it: a thread never idles while its host
// thread is busy waiting on another thread's run. Far below thread_queue_max (64).
constexpr size_t window_per_thread = 2;
constexpr const char* runs_engine_config = R"({"default":{"reply":"ok","latency_ms":0}})";


// Runs every host thread over its half of the threads and merges what they saw.
void drive(runtime& rt, const std::vector<std::string>& ids, bool quiet, runs_figures* f,
           std::vector<int64_t>* latencies_ns, std::string* first_error) {
  merged_outcome m;
  {
    progress bar{"runs", ids.size() * runs_per_thread, progress_wanted(quiet)};
    m = drive_round_robin(ids, host_threads,
                          [&](const std::vector<std::string>& mine, host_outcome* out) { drive_host(rt, mine, runs_per_thread, window_per_thread, "", bar, out); });
  }
  f->runs += m.completed;
  f->failures += m.failures;
  if (first_error->empty()) *first_error = m.first_error;
  latencies_ns->insert(latencies_ns->end(), m.latencies_ns.begin(), m.latencies_ns.end());
  f->seconds = m.seconds;
}

// The log must hold exactly what the completed runs wrote, nothing failed or refused.
status verify_runs(runtime& rt, const std::vector<std::string>& ids, const runs_figures& f,
                   const std::string& first_error) {
  uint64_t runs = ids.size() * runs_per_thread;
  if (f.failures > 0)
    return status::io_error(std::to_string(f.failures) + " of " + std::to_string(runs) +
                            " runs failed; first: " + first_error);
  if (f.runs != runs)
    return status::corruption(std::to_string(f.runs) + " runs completed, expected " +
                              std::to_string(runs));
  log_expectation want{1 + scripted_events_per_run * runs_per_thread, runs_per_thread};
  SKEIN_TRY(check_thread_logs(rt, ids, ids.size(), want));
  runtime_stats st;
  SKEIN_TRY(rt.stats(&st));
  if (st.log.failed != 0 || st.log.rejected != 0 || st.log.events != want.events * ids.size())
    return status::corruption("event log counted " + std::to_string(st.log.events) + " events, " +
                              std::to_string(st.log.failed) + " failed and " +
                              std::to_string(st.log.rejected) + " rejected ticks; expected " +
                              std::to_string(want.events * ids.size()) + " events");
  return status::ok();
}

}  // namespace

status measure_runs(const bench_options& options, std::shared_ptr<const master_key> key, runs_figures* out) {
  runtime_options ro;
  ro.mode = durability::sync;
  ro.encryption = key;
  agent_config agent;
  agent.id = bench_agent_id;
  agent.system_prompt = "Be brief.";
  agent.engine_config = runs_engine_config;
  std::unique_ptr<runtime> rt;
  SKEIN_TRY(open_bench_runtime(options, key ? "runs-encrypted" : "runs", ro, agent, &rt));
  std::vector<std::string> ids;
  SKEIN_TRY(create_bench_threads(*rt, agent.id, scaled_count(threads_at_scale_1, options.scale),
                                 options.quiet, &ids));

  runs_figures& f = *out;
  f.threads = ids.size();
  f.runs_per_thread = runs_per_thread;
  f.host_threads = host_threads;
  f.window_per_thread = window_per_thread;
  runtime_stats before;
  SKEIN_TRY(rt->stats(&before));
  std::vector<int64_t> latencies_ns;
  std::string first_error;
  drive(*rt, ids, options.quiet, &f, &latencies_ns, &first_error);
  f.p50_us = quantile_us(latencies_ns, 0.50);
  f.p99_us = quantile_us(latencies_ns, 0.99);
  if (options.plot != nullptr)
    options.plot->latency("runs", "skein sync: send to completion", latencies_ns);
  runtime_stats after;
  SKEIN_TRY(rt->stats(&after));
  f.commits = after.log.commits - before.log.commits;
  f.writes = after.log.writes - before.log.writes;
  SKEIN_TRY(verify_runs(*rt, ids, f, first_error));
  return rt->close();
}

status run_runs(const bench_options& options, std::string* json) {
  runs_figures f;
  SKEIN_TRY(measure_runs(options, nullptr, &f));
  SKEIN_TRY(run_runs_baselines({f.threads, f.runs_per_thread, f.host_threads}, options,
                               &f.baselines));
  if (options.plot != nullptr) {
    options.plot->throughput("runs", "skein sync", f.runs_per_s(), "runs/s");
    for (const auto& b : f.baselines) {
      if (b.skipped.empty())
        options.plot->throughput("runs", b.system + " " + b.mode, b.runs_per_s(), "runs/s");
    }
  }

  print_runs(f, stdout);
  std::fflush(stdout);
  json_writer w{json};
  write_runs_json(f, w);
  return status::ok();
}

}  // namespace skein::bench
