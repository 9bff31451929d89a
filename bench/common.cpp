// The helpers every workload shares (workloads.hpp), one copy each.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>

#include "bench/workloads.hpp"

namespace skein::bench {

status fresh_dir(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  if (!ec) std::filesystem::create_directories(path, ec);
  if (ec) return status::io_error("cannot make a fresh " + path + ": " + ec.message());
  return status::ok();
}

size_t scaled_count(size_t n, double scale) {
  return std::max<size_t>(1, static_cast<size_t>(std::llround(static_cast<double>(n) * scale)));
}

double seconds_since(bench_clock::time_point from, bench_clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

double quantile_us(std::vector<int64_t>& ns, double q) {
  if (ns.empty()) return 0;
  auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(ns.size())));
  auto nth = ns.begin() + static_cast<ptrdiff_t>(std::clamp<size_t>(rank, 1, ns.size()) - 1);
  std::nth_element(ns.begin(), nth, ns.end());
  return static_cast<double>(*nth) / 1000.0;
}

std::string proc_field(const char* file, std::string_view key) {
  std::ifstream in{file};
  for (std::string line; std::getline(in, line);) {
    size_t value = line.find_first_not_of(" \t", line.find(':') + 1);
    if (line.starts_with(key) && line.find(':') != std::string::npos && value != std::string::npos)
      return line.substr(value);
  }
  return "unknown";
}

uint64_t rss_bytes() { return std::strtoull(proc_field("/proc/self/status", "VmRSS").c_str(), nullptr, 10) * 1024; }

std::vector<size_t> spread(size_t n, size_t size) {
  std::vector<size_t> out;
  n = std::min(n, size);
  for (size_t k = 0; k < n; ++k) out.push_back(n == 1 ? 0 : k * (size - 1) / (n - 1));
  return out;
}

agent_config bench_agent(std::string engine_config) {
  agent_config agent;
  agent.id = bench_agent_id;
  agent.system_prompt = "Be brief.";
  agent.engine_config = std::move(engine_config);
  return agent;
}

status open_bench_runtime(const bench_options& options, const std::string& name, runtime_options ro,
                          const agent_config& agent, std::unique_ptr<runtime>* out, size_t threads,
                          std::vector<std::string>* ids) {
  ro.data_dir = options.dir + "/" + name;
  std::error_code ec;
  std::filesystem::remove_all(ro.data_dir, ec);
  if (ec) return status::io_error("cannot clear " + ro.data_dir + ": " + ec.message());
  SKEIN_TRY(runtime::open(std::move(ro), out));
  SKEIN_TRY((*out)->create_agent(agent));
  return threads > 0 ? create_bench_threads(**out, agent.id, threads, options.quiet, ids) : status::ok();
}

status open_built_runtime(const std::string& path, std::unique_ptr<runtime>* out) {
  runtime_options ro;
  ro.data_dir = path;
  ro.effects.titles = ro.effects.embeddings = ro.effects.compaction = false;
  SKEIN_TRY(runtime::open(std::move(ro), out));
  if (!(*out)->repaired_at_open().empty())
    return status::corruption("recovery repaired " + std::to_string((*out)->repaired_at_open().size()) +
                              " threads of a database without an interrupted run");
  return status::ok();
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

status create_bench_threads(runtime& rt, const std::string& agent_id, size_t n, bool quiet,
                            std::vector<std::string>* ids) {
  ids->assign(n, {});
  progress bar{"creating threads", n, quiet};
  size_t calls = (n + create_threads_max - 1) / create_threads_max;
  // Two creators: while one waits for its group's fsync, the other's creations
  // already fill the journal's next group.
  return on_host_threads(calls, 2, [&](size_t call) {
    size_t first = call * create_threads_max;
    size_t count = std::min(create_threads_max, n - first);
    thread_options o;
    o.agent_id = agent_id;
    std::vector<manifest> created;
    SKEIN_TRY(rt.create_threads(std::vector<thread_options>(count, o), &created));
    for (size_t k = 0; k < count; ++k) (*ids)[first + k] = std::move(created[k].id);  // each call its own range
    bar.advance(count);
    return status::ok();
  });
}

status check_thread_logs(runtime& rt, const std::vector<std::string>& ids, size_t sample,
                         const log_expectation& want) {
  for (size_t k : spread(sample, ids.size())) {
    const std::string& id = ids[k];
    manifest m;
    SKEIN_TRY(rt.get_thread(id, &m));
    std::vector<event> events;
    SKEIN_TRY(rt.read(id, history_view::complete, 1, 0, &events));
    auto wrong = [&](const std::string& field, uint64_t got, uint64_t expected) {
      return status::corruption("thread " + id + ": " + field + " " + std::to_string(got) + ", expected " +
                                std::to_string(expected));
    };
    if (m.last_seq != want.events) return wrong("manifest last_seq", m.last_seq, want.events);
    if (events.size() != want.events) return wrong("events read back", events.size(), want.events);
    uint64_t completed = 0;
    for (size_t i = 0; i < events.size(); ++i) {
      const event& e = events[i];
      if (e.seq != i + 1) return wrong("seq at position " + std::to_string(i), e.seq, i + 1);
      if (e.type != event_type::result) continue;
      if (e.outcome != "completed")
        return status::corruption("thread " + id + ": run " + e.run_id + " ended " + e.outcome);
      ++completed;
    }
    if (completed != want.completed_runs) return wrong("completed runs", completed, want.completed_runs);
  }
  return status::ok();
}

status check_log_clean(runtime& rt) {
  runtime_stats st;
  SKEIN_TRY(rt.stats(&st));
  if (st.log.failed != 0 || st.log.rejected != 0)
    return status::corruption("the event log failed " + std::to_string(st.log.failed) + " and rejected " +
                              std::to_string(st.log.rejected) + " ticks");
  return status::ok();
}

status time_cold(runtime& rt, const std::string& id, const std::string& text, const scripted_expect& want,
                 int64_t* activate_ns, int64_t* run_ns) {
  auto start = bench_clock::now();
  bool cancelled = false;
  SKEIN_TRY(rt.cancel(id, &cancelled));
  *activate_ns = (bench_clock::now() - start).count();
  if (cancelled) return status::corruption("thread " + id + ": cancel() found a run");
  return run_checked(rt, id, text, want, run_ns);
}

status run_checked(runtime& rt, const std::string& id, std::string text, const scripted_expect& want,
                   int64_t* took_ns) {
  run_input in;
  in.text = std::move(text);
  auto start = bench_clock::now();
  run_handle h = rt.send(id, std::move(in));
  run_result r;
  status waited = h.wait(&r);
  if (took_ns != nullptr) *took_ns = (bench_clock::now() - start).count();
  return check_waited_run(h, waited, r, want);
}

status check_scripted_run(const std::string& where, const run_result& r, const scripted_expect& want) {
  if (r.outcome != run_outcome::completed)
    return status::io_error(where + "ended " + std::string{to_string(r.outcome)} + ": " + r.error);
  if (r.text != want.reply || (want.turns != 0 && r.turns != want.turns))
    return status::corruption(where + "replied '" + r.text + "' in " + std::to_string(r.turns) + " turns, expected '" +
                              want.reply + "'" + (want.turns != 0 ? " in " + std::to_string(want.turns) : ""));
  if (r.duration_ms < want.duration_ms_min)
    return status::corruption(where + "took " + std::to_string(r.duration_ms) + " ms, less than the engine's " +
                              std::to_string(want.duration_ms_min));
  uint64_t expected = r.first_seq == 1 ? want.events + 1 : want.events;
  if (r.first_seq == 0 || r.last_seq + 1 - r.first_seq != expected ||
      (want.first_seq != 0 && r.first_seq != want.first_seq))
    return status::corruption(where + "events " + std::to_string(r.first_seq) + ".." + std::to_string(r.last_seq) +
                              ", expected " + std::to_string(expected) +
                              (want.first_seq != 0 ? " from seq " + std::to_string(want.first_seq) : ""));
  return status::ok();
}

status check_waited_run(const run_handle& h, const status& waited, const run_result& r, const scripted_expect& want) {
  std::string where = "thread " + h.thread_id() + " run " + h.run_id() + ": ";
  if (!waited) return status{waited.code(), where + waited.message()};
  return check_scripted_run(where, r, want);
}

status drive_round_robin(const std::vector<std::string>& ids, size_t hosts, uint64_t expected,
                         const std::function<void(const std::vector<std::string>& mine, host_outcome* out)>& drive,
                         host_outcome* all) {
  std::vector<host_outcome> outcomes(hosts);
  std::vector<std::thread> threads;
  for (size_t h = 0; h < hosts; ++h) {
    threads.emplace_back([&, h] {
      std::vector<std::string> mine;
      for (size_t i = h; i < ids.size(); i += hosts) mine.push_back(ids[i]);
      outcomes[h].first_send = outcomes[h].last_done = bench_clock::now();
      drive(mine, &outcomes[h]);
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& o : outcomes) {
    all->first_send = std::min(all->first_send, o.first_send);
    all->last_done = std::max(all->last_done, o.last_done);
    all->completed += o.completed;
    all->failures += o.failures;
    if (all->first_error.empty()) all->first_error = o.first_error;
    all->latencies_ns.insert(all->latencies_ns.end(), o.latencies_ns.begin(), o.latencies_ns.end());
  }
  if (all->failures > 0)
    return status::io_error(std::to_string(all->failures) + " of " + std::to_string(expected) +
                            " runs failed; first: " + all->first_error);
  if (all->completed != expected)
    return status::corruption(std::to_string(all->completed) + " runs completed, expected " +
                              std::to_string(expected));
  return status::ok();
}

// Each host thread waits for its runs in send order. A run that finished before the
// one waited on is recorded late, which overstates its latency by at most the wait
// for its predecessors; with runs of equal cost that stays small.
status drive_runs(runtime& rt, const std::vector<std::string>& ids, size_t runs, size_t window,
                  const std::string& padding, const scripted_expect& want, const std::string& label, bool quiet,
                  host_outcome* out) {
  struct in_flight {
    size_t thread = 0;  // index into the host's threads
    run_handle handle;
    bench_clock::time_point sent;
  };
  progress bar{label, ids.size() * runs, quiet};
  auto host = [&](const std::vector<std::string>& mine, host_outcome* o) {
    std::deque<in_flight> flying;
    std::vector<size_t> sent(mine.size(), 0);
    auto send_next = [&](size_t i) {
      run_input in;
      in.text = "run " + std::to_string(sent[i]++);
      if (!padding.empty()) in.text += " " + padding;
      auto at = bench_clock::now();
      flying.push_back({i, rt.send(mine[i], std::move(in)), at});
    };
    for (size_t k = 0; k < window; ++k) {
      for (size_t i = 0; i < mine.size(); ++i) {
        if (sent[i] < runs) send_next(i);
      }
    }
    while (!flying.empty()) {
      in_flight f = std::move(flying.front());
      flying.pop_front();
      run_result r;
      status waited = f.handle.wait(&r);
      auto done = bench_clock::now();
      o->record(f.sent, done, check_waited_run(f.handle, waited, r, want));
      bar.advance();
      if (sent[f.thread] < runs) send_next(f.thread);
    }
  };
  return drive_round_robin(ids, run_hosts, ids.size() * runs, host, out);
}

// --- progress and rss_recorder ------------------------------------------------------

namespace {

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(bench_clock::now().time_since_epoch()).count();
}

void draw(const std::string& label, uint64_t done, uint64_t total) {
  double fraction = total == 0 ? 1.0 : static_cast<double>(done) / static_cast<double>(total);
  std::string bar(static_cast<size_t>(fraction * 30), '#');
  bar.resize(30, '.');
  std::fprintf(stderr, "\r\033[K  %-24s [%s] %3d%%  %llu/%llu", label.c_str(), bar.c_str(),
               static_cast<int>(fraction * 100), static_cast<unsigned long long>(done),
               static_cast<unsigned long long>(total));
  std::fflush(stderr);
}

}  // namespace

progress::progress(std::string label, uint64_t total, bool quiet)
    : label_(std::move(label)), total_(total), enabled_(!quiet && isatty(STDERR_FILENO) == 1) {
  if (!enabled_) return;
  drawn_at_ns_.store(steady_ns(), std::memory_order_relaxed);
  draw(label_, 0, total_);
}

progress::~progress() {
  if (enabled_) std::fprintf(stderr, "\r\033[K");
}

void progress::advance(uint64_t n) {
  uint64_t done = done_.fetch_add(n, std::memory_order_relaxed) + n;
  if (!enabled_) return;
  int64_t now = steady_ns();
  int64_t last = drawn_at_ns_.load(std::memory_order_relaxed);
  // Only the caller that wins the exchange draws: one redraw per 100 ms at most.
  if (now - last < 100'000'000 || !drawn_at_ns_.compare_exchange_strong(last, now, std::memory_order_relaxed))
    return;
  draw(label_, done, total_);
}

rss_recorder::rss_recorder(bool enabled) {
  if (!enabled) return;
  std::lock_guard<std::mutex> lock{mu_};
  sample();
  thread_ = std::thread([this] {
    std::unique_lock<std::mutex> lock{mu_};
    while (!cv_.wait_for(lock, std::chrono::milliseconds(50), [this] { return stopping_; })) sample();
  });
}

void rss_recorder::mark(std::string label) {
  if (!thread_.joinable()) return;
  std::lock_guard<std::mutex> lock{mu_};
  sample();  // the line then meets the curve where the phase begins
  marks_.emplace_back(samples_[samples_.size() - 2], std::move(label));
}

void rss_recorder::finish() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock{mu_};
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
  std::lock_guard<std::mutex> lock{mu_};
  sample();
}

void rss_recorder::sample() {
  uint64_t bytes = rss_bytes();
  peak_ = std::max(peak_, bytes);
  samples_.push_back(seconds_since(start_, bench_clock::now()));
  samples_.push_back(static_cast<double>(bytes) / (1 << 20));
}

void rss_recorder::add_chart(result* r, const std::string& name, const std::string& title) const {
  if (samples_.empty()) return;
  r->charts.push_back({chart::kind::over_time, name, title, "MiB", {"VmRSS of the whole process, sampled every 50 ms"},
                       {}, {samples_}, marks_});
}

}  // namespace skein::bench
