// scale: what a thread costs in memory, active and passivated, and how long a
// passive thread with a long history takes to come back.
//
// N threads are created, then every one is activated with cancel() (there is no
// run to cancel: the call only resolves the thread actor), and the process RSS is
// read while all N are active; then the idle timers passivate them all and the
// RSS is read again. Cold activation is timed on forks of one thread with H events
// of history — forks are written whole and never activated — and, for contrast,
// on passivated threads without history.
#include <algorithm>
#include <malloc.h>
#include <thread>

#include "bench/workloads.hpp"

namespace skein::bench {
namespace {

constexpr size_t threads_at_scale_1 = 100'000;
constexpr size_t threads_target = 1'000'000;
// cancel() waits for two round trips through the actors: many callers at once
// keep the directory busy instead of waiting on context switches.
constexpr size_t touch_hosts = 16;
// Every thread must still be active when the last is touched: the idle timeout
// grows with N, at 150 us per thread, about three times the 52 us one touch took
// on a 2-core machine. Too short, and measure_active() says so. The floor covers
// small runs (make test's smoke run) on a machine busy with other builds or under
// sanitizers, where 5,000 touches took over 2 s.
constexpr double idle_passivate_us_per_thread = 150;
constexpr uint64_t idle_passivate_ms_min = 4000;
constexpr auto poll_period = std::chrono::milliseconds(50);
// Past the idle timeout of the last thread touched.
constexpr auto passivate_wait_max = std::chrono::seconds(120);

// Each history run: user message, thread.start, assistant text and two tool calls,
// two tool results, assistant message, result, thread.stop.
constexpr uint64_t events_per_run = 10;
// 10,001 events with the system prompt. Not scaled up: every run reads the whole
// log, so building a history costs its length squared.
constexpr size_t history_runs_at_scale_1 = 1000;
constexpr size_t history_window = 4;              // queued on the thread at once
constexpr size_t cold_samples = 32;
constexpr double scale_active_bytes_max = 16 * 1024;
constexpr double scale_passivated_bytes_max = 2 * 1024;
constexpr double creations_per_s_target = 30'000;

struct scale_figures {
  uint64_t idle_passivate_ms = 0;
  double create_seconds = 0;
  double touch_seconds = 0;         // cancel() on every thread
  double passivate_seconds = 0;     // last touch until no thread actor was left
  uint64_t rss_baseline_bytes = 0;  // runtime open, agent created, no thread; after malloc_trim
  uint64_t rss_created_bytes = 0;   // threads created, none active
  uint64_t rss_active_bytes = 0;    // every thread active
  uint64_t rss_passivated_bytes = 0;  // every thread passivated again
  uint64_t rss_trimmed_bytes = 0;   // the same after malloc_trim(0)
  std::vector<std::vector<cell>> cold;  // rows of the cold activation table
};

constexpr const char* scale_engine_config = R"({
  "rules": [{"turn": 1, "reply": "looking it up",
             "tool_calls": [{"name": "lookup", "arguments": {"q": "a"}},
                            {"name": "lookup", "arguments": {"q": "b"}}]}],
  "default": {"reply": "done"}})";

std::shared_ptr<tool> lookup_tool() {
  tool_spec spec{"lookup", "Looks a word up", R"({"type":"object"})"};
  return make_function_tool(spec,
                            [](const tool_invocation&) { return tool_output{"found", false}; });
}

// A history run goes through both turns to the scripted reply.
constexpr scripted_expect history_run{.reply = "done", .events = events_per_run, .turns = 2};

// --- memory ------------------------------------------------------------------------

status active_threads(runtime& rt, uint64_t* out) {
  runtime_stats st;
  SKEIN_TRY(rt.stats(&st));
  *out = st.active_threads;
  return status::ok();
}

// Activates every thread; cancel() finds no run on a new thread.
status touch_all(runtime& rt, const std::vector<std::string>& ids, bool quiet) {
  progress bar{"activating threads", ids.size(), progress_wanted(quiet)};
  return on_host_threads(ids.size(), touch_hosts, [&](size_t i) {
    bool cancelled = false;
    SKEIN_TRY(rt.cancel(ids[i], &cancelled));
    if (cancelled) return status::corruption("thread " + ids[i] + ": cancel() found a run");
    bar.advance();
    return status::ok();
  });
}

// Reads the RSS while every thread actor is alive: the count is checked on both
// sides of the reading.
status measure_active(runtime& rt, size_t n, uint64_t idle_ms, uint64_t* rss) {
  uint64_t before = 0, after = 0;
  SKEIN_TRY(active_threads(rt, &before));
  *rss = rss_bytes();
  SKEIN_TRY(active_threads(rt, &after));
  if (before != n || after != n)
    return status::io_error(std::to_string(std::min(before, after)) + " of " + std::to_string(n) +
                            " thread actors active when the RSS was read (idle_passivate_ms " +
                            std::to_string(idle_ms) + " too short for touching them all?)");
  return status::ok();
}

// Passivation has no event to wait on: polls the directory's count, bounded.
status wait_passivated(runtime& rt, uint64_t idle_ms) {
  auto deadline = bench_clock::now() + std::chrono::milliseconds(idle_ms) + passivate_wait_max;
  uint64_t active = 0;
  for (;;) {
    SKEIN_TRY(active_threads(rt, &active));
    if (active == 0) return status::ok();
    if (bench_clock::now() >= deadline) break;
    std::this_thread::sleep_for(poll_period);
  }
  return status::io_error(std::to_string(active) + " thread actors still active " +
                          std::to_string(passivate_wait_max.count()) +
                          " s past idle_passivate_ms (" + std::to_string(idle_ms) +
                          ") after the last touch");
}

status measure_memory(runtime& rt, const std::vector<std::string>& ids, bool quiet,
                      rss_recorder& rss, scale_figures* f) {
  auto start = bench_clock::now();
  rss.mark("touching every thread");
  SKEIN_TRY(touch_all(rt, ids, quiet));
  f->touch_seconds = seconds_since(start, bench_clock::now());
  SKEIN_TRY(measure_active(rt, ids.size(), f->idle_passivate_ms, &f->rss_active_bytes));
  rss.mark("all active; waiting for passivation");
  auto touched = bench_clock::now();
  SKEIN_TRY(wait_passivated(rt, f->idle_passivate_ms));
  f->passivate_seconds = seconds_since(touched, bench_clock::now());
  f->rss_passivated_bytes = rss_bytes();
  rss.mark("all passivated; malloc_trim(0), then a long history and cold activations");
  // What malloc holds free but has not returned: shown apart, not hidden.
  ::malloc_trim(0);
  f->rss_trimmed_bytes = rss_bytes();
  return status::ok();
}

// --- cold activation -----------------------------------------------------------------

// Gives `id` `runs` runs, history_window at a time, each checked.
status build_history(runtime& rt, const std::string& id, size_t runs, bool quiet) {
  progress bar{"building history", runs, progress_wanted(quiet)};
  std::vector<run_handle> window;
  size_t sent = 0, done = 0;
  while (done < runs) {
    while (sent < runs && sent - done < history_window) {
      run_input in;
      in.text = "history " + std::to_string(sent++);
      window.push_back(rt.send(id, std::move(in)));
    }
    run_result r;
    status waited = window[done].wait(&r);
    SKEIN_TRY(check_waited_run(window[done], waited, r, history_run));
    window[done++] = run_handle{};  // releases the finished run's state
    bar.advance();
  }
  return status::ok();
}


status time_cold_threads(runtime& rt, const std::vector<std::string>& ids, std::string label,
                         uint64_t history_events, std::vector<cell>* row) {
  std::vector<int64_t> cancel_ns(ids.size()), run_ns(ids.size());
  for (size_t i = 0; i < ids.size(); ++i)
    SKEIN_TRY(time_cold(rt, ids[i], "after the cold start", history_run, &cancel_ns[i], &run_ns[i]));
  *row = {text(std::move(label)), num(history_events), num(ids.size()),
          num(quantile_us(cancel_ns, 0.50) / 1000), num(quantile_us(cancel_ns, 0.99) / 1000),
          num(quantile_us(run_ns, 0.50) / 1000), num(quantile_us(run_ns, 0.99) / 1000)};
  return status::ok();
}

// Builds one long thread and forks it cold_samples times at its last event.
status make_forks(runtime& rt, size_t history_runs, bool quiet, std::vector<std::string>* forks,
                  uint64_t* history_events) {
  thread_options o;
  o.agent_id = bench_agent_id;
  manifest source;
  SKEIN_TRY(rt.create_thread(o, &source));
  SKEIN_TRY(build_history(rt, source.id, history_runs, quiet));
  SKEIN_TRY(rt.get_thread(source.id, &source));
  *history_events = 1 + events_per_run * history_runs;
  if (source.last_seq != *history_events)
    return status::corruption("history thread " + source.id + ": last_seq " +
                              std::to_string(source.last_seq) + ", expected " +
                              std::to_string(*history_events));
  for (size_t i = 0; i < cold_samples; ++i) {
    manifest fork;
    SKEIN_TRY(rt.fork(source.id, source.last_seq, &fork));
    forks->push_back(fork.id);
  }
  return status::ok();
}

// Times cold activation on forks of a long thread and on passivated new threads,
// and checks that each cold thread was activated exactly once.
status measure_cold(runtime& rt, const std::vector<std::string>& fresh, size_t history_runs,
                    bool quiet, scale_figures* f, std::vector<std::string>* forks) {
  uint64_t history_events = 0;
  SKEIN_TRY(make_forks(rt, history_runs, quiet, forks, &history_events));
  runtime_stats before, after;
  SKEIN_TRY(rt.stats(&before));
  SKEIN_TRY(time_cold_threads(rt, *forks, "forks of a long thread", history_events,
                              &f->cold.emplace_back()));
  SKEIN_TRY(time_cold_threads(rt, fresh, "passivated, no history", 0, &f->cold.emplace_back()));
  SKEIN_TRY(rt.stats(&after));
  uint64_t expected = forks->size() + fresh.size();
  if (after.activations - before.activations != expected)
    return status::corruption(std::to_string(after.activations - before.activations) +
                              " activations for " + std::to_string(expected) + " cold threads");
  return status::ok();
}

// --- the workload ----------------------------------------------------------------------

status verify(runtime& rt, const std::vector<std::string>& activated_only,
              const std::vector<std::string>& fresh, const std::vector<std::string>& forks,
              size_t history_runs) {
  // Activation alone writes nothing: the log of a touched thread stays empty.
  SKEIN_TRY(check_thread_logs(rt, activated_only, 1000, {0, 0}));
  SKEIN_TRY(check_thread_logs(rt, fresh, fresh.size(), {1 + events_per_run, 1}));
  return check_thread_logs(rt, forks, forks.size(),
                           {1 + events_per_run * (history_runs + 1), history_runs + 1});
}

runtime_options scale_runtime_options(size_t threads) {
  runtime_options ro;
  ro.mode = durability::sync;
  ro.active_threads_max = 2 * threads + 2 * cold_samples;  // never the reason to passivate
  ro.idle_passivate_ms = std::max<uint64_t>(
      idle_passivate_ms_min,
      static_cast<uint64_t>(idle_passivate_us_per_thread * static_cast<double>(threads) / 1000));
  ro.tools.push_back(lookup_tool());
  return ro;
}

double per_thread(uint64_t after, uint64_t before, size_t threads) {
  return (static_cast<double>(after) - static_cast<double>(before)) / static_cast<double>(threads);
}

void report(const scale_figures& f, size_t n, result* out) {
  double mb = 1 << 20;
  double active = per_thread(f.rss_active_bytes, f.rss_created_bytes, n);
  double passivated = per_thread(f.rss_passivated_bytes, f.rss_baseline_bytes, n);
  double trimmed = per_thread(f.rss_trimmed_bytes, f.rss_baseline_bytes, n);
  double created_per_s = static_cast<double>(n) / f.create_seconds;
  table& t = add_table(
      out,
      "scale: " + with_commas(static_cast<double>(n)) + " threads, idle_passivate_ms " +
          with_commas(static_cast<double>(f.idle_passivate_ms)) + " (the targets are set for " +
          with_commas(threads_target) + " threads; --scale " + fixed(static_cast<double>(threads_target) / threads_at_scale_1, 0) +
          " creates them)\ncreated in " + fixed(f.create_seconds, 1) + " s (" + with_commas(created_per_s) +
          " threads/s, durable), every thread touched with cancel() in " + fixed(f.touch_seconds, 1) +
          " s, all passivated " + fixed(f.passivate_seconds, 1) + " s after the last touch",
      {col("state"), col("RSS", "MB", 1), col("bytes/thread")});
  t.rows = {{text("baseline: runtime open, no thread (trimmed)"), num(f.rss_baseline_bytes / mb), cell{}},
            {text("threads created, none active"), num(f.rss_created_bytes / mb), cell{}},
            {text("every thread active"), num(f.rss_active_bytes / mb), num(active)},
            {text("every thread passivated"), num(f.rss_passivated_bytes / mb), num(std::max(0.0, passivated))},
            {text("  the same after malloc_trim(0)"), num(f.rss_trimmed_bytes / mb), num(std::max(0.0, trimmed))}};
  t.notes = {"active: RSS over 'threads created', per thread actor: the directory's entry, the actor, its idle timer\n"
             "and the RocksDB blocks its activation read.\n"
             "passivated: RSS over the baseline, per thread: RocksDB memtables and block cache count here, and so\n"
             "does heap that malloc keeps after the actors are gone (the malloc_trim row shows how much was free)."};
  table& cold = add_table(out, "scale: cold activation",
                          {col("cold threads"), col("history events"), col("samples"), col("cancel() p50", "ms", 3),
                           col("p99", "ms", 3), col("first run p50", "ms", 3), col("p99", "ms", 3)});
  cold.rows = f.cold;
  cold.notes = {"cancel() on a passive thread activates its actor from the manifest alone; the history is read\n"
                "by the thread's first run, which is why that run is timed too. RocksDB's caches are warm."};
  add_target(out, "active bytes/thread", active, scale_active_bytes_max, "bytes", better::lower);
  add_target(out, "passivated bytes/thread", passivated, scale_passivated_bytes_max, "bytes", better::lower);
  add_target(out, "thread creations/s (durable)", created_per_s, creations_per_s_target, "threads/s");
}

}  // namespace

status run_scale(const bench_options& options, result* out) {
  size_t n = scaled_count(threads_at_scale_1, options.scale);
  size_t history_runs = scaled_count(history_runs_at_scale_1, std::min(options.scale, 1.0));
  runtime_options ro = scale_runtime_options(n);
  scale_figures f;
  f.idle_passivate_ms = ro.idle_passivate_ms;
  agent_config agent = bench_agent(scale_engine_config);
  agent.tools = {"lookup"};
  std::unique_ptr<runtime> rt;
  SKEIN_TRY(open_bench_runtime(options, "scale", std::move(ro), agent, &rt));

  std::vector<std::string> ids;
  ids.reserve(n);  // before the baseline; the ids' own heap (~48 B each) counts below
  // Heap that earlier workloads freed but malloc kept must not hide in the baseline.
  ::malloc_trim(0);
  f.rss_baseline_bytes = rss_bytes();
  rss_recorder rss{options.plot};
  rss.mark("creating threads");
  auto start = bench_clock::now();
  SKEIN_TRY(create_bench_threads(*rt, agent.id, n, options.quiet, &ids));
  f.create_seconds = seconds_since(start, bench_clock::now());
  f.rss_created_bytes = rss_bytes();
  SKEIN_TRY(measure_memory(*rt, ids, options.quiet, rss, &f));

  // The last few threads, passivated now, are the cold threads without history.
  size_t k = std::min(cold_samples, ids.size());
  std::vector<std::string> fresh(ids.end() - static_cast<ptrdiff_t>(k), ids.end());
  ids.resize(ids.size() - k);
  std::vector<std::string> forks;
  SKEIN_TRY(measure_cold(*rt, fresh, history_runs, options.quiet, &f, &forks));
  rss.finish();
  SKEIN_TRY(verify(*rt, ids, fresh, forks, history_runs));
  SKEIN_TRY(rt->close());
  report(f, n, out);
  if (options.plot) rss.add_chart(out, "rss-scale", "scale: resident set size over time");
  return status::ok();
}

}  // namespace skein::bench
