// scale: what a thread costs in memory, active and passivated, and how long a
// passive thread with a long history takes to come back. Every thread is activated
// with cancel() (no run to cancel: it only resolves the thread actor) and the RSS
// read while all are active, then again once the idle timers passivated them all.
// Cold activation is timed on forks of one long thread (written whole, never
// activated) and, for contrast, on passivated threads without history.
#include <malloc.h>

#include <algorithm>
#include <thread>

#include "bench/workloads.hpp"

namespace skein::bench {
namespace {

constexpr size_t threads_at_scale_1 = 100'000;
constexpr size_t threads_target = 1'000'000;
constexpr size_t cold_samples = 32;
// Each history run: user message, thread.start, assistant text and two tool calls,
// two tool results, assistant message, result, thread.stop; through both turns.
constexpr uint64_t events_per_run = 10;
constexpr scripted_expect history_run{.reply = "done", .events = events_per_run, .turns = 2};

status active_threads(runtime& rt, uint64_t* out) {
  runtime_stats st;
  SKEIN_TRY(rt.stats(&st));
  *out = st.active_threads;
  return status::ok();
}

// A thread of `history_runs` runs (4 queued at once, each checked) forked
// cold_samples times at its last event; then the cold activation and first run of
// each fork and of each of `fresh`, a row each, every cold thread activated once.
status measure_cold(runtime& rt, const std::vector<std::string>& fresh, size_t history_runs, bool quiet,
                    table* cold, std::vector<std::string>* forks) {
  thread_options o;
  o.agent_id = bench_agent_id;
  manifest source;
  SKEIN_TRY(rt.create_thread(o, &source));
  {
    progress bar{"building history", history_runs, quiet};
    std::vector<run_handle> window;
    for (size_t sent = 0, done = 0; done < history_runs; ++done) {
      for (; sent < history_runs && sent - done < 4; ++sent) {
        run_input in;
        in.text = "history " + std::to_string(sent);
        window.push_back(rt.send(source.id, std::move(in)));
      }
      run_result r;
      status waited = window[done].wait(&r);
      SKEIN_TRY(check_waited_run(window[done], waited, r, history_run));
      window[done] = run_handle{};  // releases the finished run's state
      bar.advance();
    }
  }
  SKEIN_TRY(rt.get_thread(source.id, &source));
  uint64_t history_events = 1 + events_per_run * history_runs;
  if (source.last_seq != history_events)
    return status::corruption("history thread " + source.id + ": last_seq " + std::to_string(source.last_seq) +
                              ", expected " + std::to_string(history_events));
  for (size_t i = 0; i < cold_samples; ++i) {
    manifest fork;
    SKEIN_TRY(rt.fork(source.id, source.last_seq, &fork));
    forks->push_back(fork.id);
  }
  runtime_stats before, after;
  SKEIN_TRY(rt.stats(&before));
  const std::vector<std::string>* sets[] = {forks, &fresh};
  for (const auto* ids : sets) {
    std::vector<int64_t> cancel_ns(ids->size()), run_ns(ids->size());
    for (size_t i = 0; i < ids->size(); ++i)
      SKEIN_TRY(time_cold(rt, (*ids)[i], "after the cold start", history_run, &cancel_ns[i], &run_ns[i]));
    bool forked = ids == forks;
    cold->rows.push_back({text(forked ? "forks of a long thread" : "passivated, no history"),
                          num(forked ? history_events : 0), num(ids->size()), num(ms_at(cancel_ns, 0.50)),
                          num(ms_at(cancel_ns, 0.99)), num(ms_at(run_ns, 0.50)),
                          num(ms_at(run_ns, 0.99))});
  }
  SKEIN_TRY(rt.stats(&after));
  if (after.activations - before.activations != forks->size() + fresh.size())
    return status::corruption(std::to_string(after.activations - before.activations) + " activations for " +
                              std::to_string(forks->size() + fresh.size()) + " cold threads");
  return status::ok();
}

}  // namespace

status run_scale(const bench_options& options, result* out) {
  size_t n = scaled_count(threads_at_scale_1, options.scale);
  // 10,001 events with the system prompt. Not scaled up: every run reads the whole
  // log, so building a history costs its length squared.
  size_t history_runs = scaled_count(1000, std::min(options.scale, 1.0));
  runtime_options ro;
  ro.active_threads_max = 2 * n + 2 * cold_samples;  // never the reason to passivate
  // Every thread must still be active when the last is touched: the idle timeout
  // grows with N, at 150 us per thread, about three times the 52 us one touch took
  // on a 2-core machine (too short, and the active count says so). The floor covers
  // small runs on a machine busy with other builds or under sanitizers, where 5,000
  // touches took over 2 s.
  ro.idle_passivate_ms = std::max<uint64_t>(4000, 150 * n / 1000);
  const uint64_t idle_ms = ro.idle_passivate_ms;
  ro.tools.push_back(make_function_tool({"lookup", "Looks a word up", R"({"type":"object"})"},
                                        [](const tool_invocation&) { return tool_output{"found", false}; }));
  agent_config agent = bench_agent(R"({
    "rules": [{"turn": 1, "reply": "looking it up",
               "tool_calls": [{"name": "lookup", "arguments": {"q": "a"}},
                              {"name": "lookup", "arguments": {"q": "b"}}]}],
    "default": {"reply": "done"}})");
  agent.tools = {"lookup"};
  std::unique_ptr<runtime> rt;
  SKEIN_TRY(open_bench_runtime(options, "scale", std::move(ro), agent, &rt));

  std::vector<std::string> ids;
  ids.reserve(n);  // before the baseline; the ids' own heap (~48 B each) counts below
  ::malloc_trim(0);  // heap that earlier workloads freed but malloc kept must not hide in the baseline
  uint64_t rss_baseline = rss_bytes();
  rss_recorder rss{options.plot};
  rss.mark("creating threads");
  auto start = bench_clock::now();
  SKEIN_TRY(create_bench_threads(*rt, agent.id, n, options.quiet, &ids));
  double create_s = seconds_since(start, bench_clock::now());
  uint64_t rss_created = rss_bytes();

  rss.mark("touching every thread");
  start = bench_clock::now();
  {
    progress bar{"activating threads", n, options.quiet};
    // cancel() waits for two round trips through the actors: many callers at once
    // keep the directory busy instead of waiting on context switches.
    SKEIN_TRY(on_host_threads(n, 16, [&](size_t i) {
      bool cancelled = false;
      SKEIN_TRY(rt->cancel(ids[i], &cancelled));
      bar.advance();
      return cancelled ? status::corruption("thread " + ids[i] + ": cancel() found a run") : status::ok();
    }));
  }
  double touch_s = seconds_since(start, bench_clock::now());
  // The RSS is read while every thread actor is alive: the count is checked on both sides.
  uint64_t active_before = 0, active = 0;
  SKEIN_TRY(active_threads(*rt, &active_before));
  uint64_t rss_active = rss_bytes();
  SKEIN_TRY(active_threads(*rt, &active));
  if (active_before != n || active != n)
    return status::io_error(std::to_string(std::min(active_before, active)) + " of " + std::to_string(n) +
                            " thread actors active when the RSS was read (idle_passivate_ms " +
                            std::to_string(idle_ms) + " too short for touching them all?)");
  rss.mark("all active; waiting for passivation");
  auto touched = bench_clock::now();
  // Passivation has no event to wait on: the directory's count is polled, bounded.
  for (auto deadline = touched + std::chrono::milliseconds(idle_ms) + std::chrono::seconds(120);;) {
    SKEIN_TRY(active_threads(*rt, &active));
    if (active == 0) break;
    if (bench_clock::now() >= deadline)
      return status::io_error(std::to_string(active) + " thread actors still active 120 s past idle_passivate_ms (" +
                              std::to_string(idle_ms) + ") after the last touch");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  double passivate_s = seconds_since(touched, bench_clock::now());
  uint64_t rss_passivated = rss_bytes();
  rss.mark("all passivated; malloc_trim(0), then a long history and cold activations");
  ::malloc_trim(0);  // what malloc holds free but has not returned: shown apart, not hidden
  uint64_t rss_trimmed = rss_bytes();

  // The last few threads, passivated now, are the cold threads without history.
  size_t k = std::min(cold_samples, ids.size());
  std::vector<std::string> fresh(ids.end() - static_cast<ptrdiff_t>(k), ids.end()), forks;
  ids.resize(ids.size() - k);
  table cold{"scale: cold activation",
             {col("cold threads"), col("history events"), col("samples"), col("cancel() p50", "ms", 3),
              col("p99", "ms", 3), col("first run p50", "ms", 3), col("p99", "ms", 3)},
             {},
             {"cancel() on a passive thread activates its actor from the manifest alone; the history is read\n"
              "by the thread's first run, which is why that run is timed too. RocksDB's caches are warm."}};
  SKEIN_TRY(measure_cold(*rt, fresh, history_runs, options.quiet, &cold, &forks));
  rss.finish();
  SKEIN_TRY(check_thread_logs(*rt, ids, 1000, {0, 0}));  // activation alone writes nothing
  SKEIN_TRY(check_thread_logs(*rt, fresh, fresh.size(), {1 + events_per_run, 1}));
  SKEIN_TRY(check_thread_logs(*rt, forks, forks.size(),
                              {1 + events_per_run * (history_runs + 1), history_runs + 1}));
  SKEIN_TRY(rt->close());

  double mb = 1 << 20, threads = static_cast<double>(n);
  double active_per = (static_cast<double>(rss_active) - static_cast<double>(rss_created)) / threads;
  double passivated_per = (static_cast<double>(rss_passivated) - static_cast<double>(rss_baseline)) / threads;
  double trimmed_per = (static_cast<double>(rss_trimmed) - static_cast<double>(rss_baseline)) / threads;
  table& t = add_table(
      out,
      "scale: " + with_commas(threads) + " threads, idle_passivate_ms " + with_commas(static_cast<double>(idle_ms)) +
          " (the targets are set for " + with_commas(threads_target) + " threads; --scale " +
          fixed(static_cast<double>(threads_target) / threads_at_scale_1, 0) + " creates them)\ncreated in " +
          fixed(create_s, 1) + " s (" + with_commas(threads / create_s) +
          " threads/s, durable), every thread touched with cancel() in " + fixed(touch_s, 1) +
          " s, all passivated " + fixed(passivate_s, 1) + " s after the last touch",
      {col("state"), col("RSS", "MB", 1), col("bytes/thread")});
  t.rows = {{text("baseline: runtime open, no thread (trimmed)"), num(rss_baseline / mb), cell{}},
            {text("threads created, none active"), num(rss_created / mb), cell{}},
            {text("every thread active"), num(rss_active / mb), num(active_per)},
            {text("every thread passivated"), num(rss_passivated / mb), num(std::max(0.0, passivated_per))},
            {text("  the same after malloc_trim(0)"), num(rss_trimmed / mb), num(std::max(0.0, trimmed_per))}};
  t.notes = {"active: RSS over 'threads created', per thread actor: the directory's entry, the actor, its idle timer\n"
             "and the RocksDB blocks its activation read.\n"
             "passivated: RSS over the baseline, per thread: RocksDB memtables and block cache count here, and so\n"
             "does heap that malloc keeps after the actors are gone (the malloc_trim row shows how much was free)."};
  out->tables.push_back(std::move(cold));
  add_target(out, "active bytes/thread", active_per, 16 * 1024, "bytes", better::lower);
  add_target(out, "passivated bytes/thread", passivated_per, 2 * 1024, "bytes", better::lower);
  add_target(out, "thread creations/s (durable)", threads / create_s, 30'000, "threads/s");
  if (options.plot) rss.add_chart(out, "rss-scale", "scale: resident set size over time");
  return status::ok();
}

}  // namespace skein::bench
