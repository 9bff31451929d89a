// recovery: how long skein takes to come back on a big database, and what each
// run a crash interrupted adds to that.
//
// A database of T threads with E events is built through the event log directly
// (log_builder; timed, but no figure). First open: runtime::open on it — no
// thread is running, nothing to repair — then one run on an existing thread; the
// open is the time until runs can start, the run the time until the first one is
// done. This open also replays the write-ahead log the build left, as a restart
// after a long run replays what was written since RocksDB last flushed; so it is
// opened a second time (clean reopen), with no WAL to speak of, for the cost of
// the open alone. Interrupted: the same database after `count` runs were left
// mid-way, as a crash leaves them (thread.start and a tool call without its
// result written, manifest status running, written with the event log
// directly); the open now repairs them. Its extra time over the clean reopen —
// the open with as little WAL — per interrupted run is the cost of one repair.
#include <algorithm>
#include <set>

#include "bench/log_builder.hpp"
#include "bench/workloads.hpp"
#include "runtime/model/ids.hpp"

namespace skein::bench {
namespace {

// One runtime::open of the database and the run after it.
struct recovery_open {
  uint64_t interrupted = 0;       // runs left mid-way in the database before the open
  uint64_t repaired = 0;          // repaired_at_open().size()
  uint64_t wal_bytes = 0;         // write-ahead log files the open found (and replayed)
  double open_seconds = 0;        // runtime::open: until runs can start
  double first_run_seconds = 0;   // then one run on an existing thread, send to completion
};

struct recovery_figures {
  recovery_open first_open;       // right after the build: replays the WAL the build left
  recovery_open clean;            // opened again: next to no WAL
  recovery_open after_repair;     // with interrupted runs to repair, next to no WAL
  double interrupt_seconds = 0;   // writing the interrupted runs: not part of any figure
};

constexpr double recovery_ready_seconds_max = 1.0;
constexpr double recovery_per_interrupted_ms_max = 1.0;
constexpr size_t threads_at_scale_1 = 1'000'000;
constexpr uint64_t events_per_thread = 10;
constexpr size_t interrupted_at_scale_1 = 1000;
// Threads whose whole log is read back after the first open.
constexpr size_t log_sample = 64;
// Repaired threads whose repair events are checked one by one.
constexpr size_t repair_sample = 16;
// What an interrupted run wrote: user message, thread.start, assistant text, tool call.
constexpr uint64_t interrupted_events = 4;
// What repair adds: the tool call's error result, thread.interrupted, thread.stop.
constexpr uint64_t repair_events = 3;
constexpr const char* interrupted_call_id = "call_interrupted";

// `n` indices of [0, size) spread evenly, the first and last among them.
std::vector<size_t> spread(size_t n, size_t size) {
  std::vector<size_t> out;
  n = std::min(n, size);
  for (size_t k = 0; k < n; ++k) out.push_back(n == 1 ? 0 : k * (size - 1) / (n - 1));
  return out;
}

status build(const std::string& path, const std::vector<std::string>& ids, bool quiet,
             build_stats* stats) {
  std::unique_ptr<event_log> log;
  SKEIN_TRY(open_build_log(path, true, &log));
  SKEIN_TRY(log->put_agent(bench_agent_config()));
  return build_threads(*log, bench_agent_id, ids, events_per_thread, quiet, stats);
}

// Opens a runtime on `path`, times the open and one run on `thread` after it.
// The runtime stays open in *rt for the checks that follow.
status open_and_run(const std::string& path, const std::string& thread, uint64_t first_seq,
                    recovery_open* f, std::unique_ptr<runtime>* rt) {
  runtime_options ro;
  ro.data_dir = path;
  ro.mode = durability::sync;
  f->wal_bytes = wal_bytes(path);
  auto start = bench_clock::now();
  SKEIN_TRY(runtime::open(std::move(ro), rt));
  f->open_seconds = seconds_since(start, bench_clock::now());
  int64_t run_ns = 0;
  status s = run_checked(**rt, thread, "first run after the open", {.first_seq = first_seq}, &run_ns);
  f->first_run_seconds = static_cast<double>(run_ns) / 1e9;
  f->repaired = (*rt)->repaired_at_open().size();
  return s;
}

// The tick a crash leaves: the run began and called a tool, nothing after.
status interrupted_tick(const event_log& log, const std::string& id, tick* t) {
  SKEIN_TRY(log.read_manifest(id, &t->manifest));
  int64_t now = now_ms();
  std::string run_id = new_run_id();
  t->thread_id = id;
  t->events.push_back(make_message(message_role::user, "Look the failed deploy up."));
  t->events.push_back(make_signal("thread.start", "{\"run_id\":\"" + run_id + "\"}"));
  t->events.push_back(make_assistant_text("Looking it up."));
  t->events.push_back(make_tool_call(interrupted_call_id, "lookup", "{\"q\":\"deploy\"}"));
  uint64_t seq = t->manifest.last_seq;
  for (auto& e : t->events) {
    e.seq = ++seq;
    e.ts_ms = now;
    e.run_id = run_id;
  }
  t->manifest.status = thread_status::running;
  t->manifest.updated_at_ms = t->manifest.heartbeat_at_ms = now;
  return status::ok();
}

status interrupt(const std::string& path, const std::vector<std::string>& ids, double* seconds) {
  auto start = bench_clock::now();
  std::unique_ptr<event_log> log;
  SKEIN_TRY(open_build_log(path, false, &log));
  std::vector<tick> ticks(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) SKEIN_TRY(interrupted_tick(*log, ids[i], &ticks[i]));
  SKEIN_TRY(commit_all(*log, ticks));
  log.reset();  // closed, as a crashed process leaves it
  *seconds = seconds_since(start, bench_clock::now());
  return status::ok();
}

status expect_event(const std::string& id, const event& e, event_type type, std::string_view name,
                    std::string_view what) {
  if (e.type == type && (name.empty() || e.name == name)) return status::ok();
  return status::corruption("repaired thread " + id + ": seq " + std::to_string(e.seq) + " is " +
                            std::string{to_string(e.type)} + " '" + e.name + "', expected " +
                            std::string{what});
}

// The repair of `id`: after the interrupted run's events, an error result for its
// tool call, thread.interrupted and thread.stop failed, all of that run; status failed.
status check_repaired(runtime& rt, const std::string& id) {
  manifest m;
  SKEIN_TRY(rt.get_thread(id, &m));
  std::vector<event> log;
  uint64_t from = events_per_thread + 1;
  SKEIN_TRY(rt.read(id, history_view::complete, from, 0, &log));
  if (m.status != thread_status::failed || log.size() != interrupted_events + repair_events)
    return status::corruption("repaired thread " + id + ": status " +
                              std::string{to_string(m.status)} + " with " +
                              std::to_string(log.size()) + " events from seq " +
                              std::to_string(from) + ", expected failed with " +
                              std::to_string(interrupted_events + repair_events));
  const event& result = log[interrupted_events];
  SKEIN_TRY(expect_event(id, result, event_type::tool_result, "", "the tool call's result"));
  if (result.call_id != interrupted_call_id || !result.is_error)
    return status::corruption("repaired thread " + id + ": tool result for call '" +
                              result.call_id + "' is_error " + std::to_string(result.is_error) +
                              ", expected an error for " + interrupted_call_id);
  SKEIN_TRY(expect_event(id, log[interrupted_events + 1], event_type::signal,
                         "thread.interrupted", "signal thread.interrupted"));
  const event& stop = log[interrupted_events + 2];
  SKEIN_TRY(expect_event(id, stop, event_type::signal, "thread.stop", "signal thread.stop"));
  if (stop.json.find("\"outcome\":\"failed\"") == std::string::npos)
    return status::corruption("repaired thread " + id + ": thread.stop " + stop.json +
                              " does not say outcome failed");
  for (const auto& e : log) {
    if (e.run_id != log.front().run_id)
      return status::corruption("repaired thread " + id + ": seq " + std::to_string(e.seq) +
                                " belongs to run " + e.run_id + ", not the interrupted one");
  }
  return status::ok();
}

// Repair closed exactly the interrupted threads, each as it should, and left
// none running.
status verify_repairs(runtime& rt, const std::vector<std::string>& interrupted) {
  const auto& repaired = rt.repaired_at_open();
  std::set<std::string> want(interrupted.begin(), interrupted.end());
  std::set<std::string> got(repaired.begin(), repaired.end());
  if (repaired.size() != interrupted.size() || got != want)
    return status::corruption("recovery repaired " + std::to_string(repaired.size()) +
                              " threads, expected exactly the " +
                              std::to_string(interrupted.size()) + " interrupted ones");
  // interrupted[0] ran again after the open: its log goes on past the repair.
  for (size_t i : spread(repair_sample, interrupted.size() - 1))
    SKEIN_TRY(check_repaired(rt, interrupted[i + 1]));
  thread_query q;
  q.index = thread_query::by::status;
  q.value = std::string{to_string(thread_status::running)};
  thread_page page;
  SKEIN_TRY(rt.list_threads(q, &page));
  if (!page.threads.empty())
    return status::corruption("thread " + page.threads.front().id + " still running after recovery");
  return status::ok();
}

// Both clean opens run on the last thread, which is never interrupted; the first
// open also reads back a sample of the others whole.
status clean_opens(const std::string& path, const std::vector<std::string>& ids,
                   recovery_figures* f) {
  for (recovery_open* o : {&f->first_open, &f->clean}) {
    std::unique_ptr<runtime> rt;
    uint64_t runs_before = o == &f->first_open ? 0 : 1;
    SKEIN_TRY(open_and_run(path, ids.back(),
                           events_per_thread + runs_before * scripted_events_per_run + 1, o, &rt));
    if (o->repaired != 0)
      return status::corruption("recovery repaired " + std::to_string(o->repaired) +
                                " threads of a database without an interrupted run");
    if (o == &f->first_open) {
      std::vector<std::string> sample;
      for (size_t i : spread(log_sample, ids.size() - 1)) sample.push_back(ids[i]);
      SKEIN_TRY(check_thread_logs(*rt, sample, sample.size(), {events_per_thread, 1}));
    }
    SKEIN_TRY(rt->close());
  }
  return status::ok();
}

status interrupted_open(const std::string& path, const std::vector<std::string>& interrupted,
                        recovery_figures* f) {
  std::unique_ptr<runtime> rt;
  f->after_repair.interrupted = interrupted.size();
  uint64_t first_seq = events_per_thread + interrupted_events + repair_events + 1;
  SKEIN_TRY(open_and_run(path, interrupted.front(), first_seq, &f->after_repair, &rt));
  SKEIN_TRY(verify_repairs(*rt, interrupted));
  return rt->close();
}

}  // namespace

status run_recovery(const bench_options& options, result* out) {
  const std::string path = options.dir + "/recovery";
  recovery_figures f;
  uint64_t events_target = static_cast<uint64_t>(threads_at_scale_1) * events_per_thread;
  // At least two interrupted runs (one is run again, one is checked) and a thread
  // that is never interrupted, however small the scale.
  size_t count = std::max<size_t>(2, scaled_count(interrupted_at_scale_1, options.scale));
  size_t threads = std::max(count + 1, scaled_count(threads_at_scale_1, options.scale));
  std::vector<std::string> ids = bench_thread_ids(threads, 1);
  build_stats built;
  SKEIN_TRY(build(path, ids, options.quiet, &built));
  uint64_t db_bytes = directory_bytes(path);

  SKEIN_TRY(clean_opens(path, ids, &f));
  // Spread over every thread but the last, which the clean open ran on.
  std::vector<std::string> interrupted;
  for (size_t i : spread(count, ids.size() - 1)) interrupted.push_back(ids[i]);
  SKEIN_TRY(interrupt(path, interrupted, &f.interrupt_seconds));
  SKEIN_TRY(interrupted_open(path, interrupted, &f));

  table& t = add_table(
      out,
      "recovery: " + with_commas(built.threads) + " threads, " + with_commas(built.events) + " events (" +
          fixed(static_cast<double>(db_bytes) / (1 << 20), 1) + " MB on disk), durability sync\n"
          "built through the event log (durability flush) in " + fixed(built.seconds, 1) + " s (" +
          with_commas(built.writes) + " writes) and " + with_commas(interrupted.size()) +
          " interrupted runs written in " + fixed(f.interrupt_seconds, 2) + " s:\nneither is part of any figure",
      {col("open"), col("interrupted runs"), col("repaired"), col("WAL at open", "MB", 1),
       col("runtime::open", "ms", 1), col("first run", "ms", 2), col("open + run", "ms", 1)});
  const char* names[] = {"first, after the build", "clean reopen", "after interrupted runs"};
  const recovery_open* opens[] = {&f.first_open, &f.clean, &f.after_repair};
  for (size_t i = 0; i < 3; ++i) {
    const recovery_open& o = *opens[i];
    t.rows.push_back({text(names[i]), num(o.interrupted), num(o.repaired),
                      num(static_cast<double>(o.wal_bytes) / (1 << 20)), num(o.open_seconds * 1000),
                      num(o.first_run_seconds * 1000), num((o.open_seconds + o.first_run_seconds) * 1000)});
  }
  t.notes.push_back(
      "runtime::open: RocksDB open (with the replay of the WAL it finds), recovery, agents, actors: then runs\n"
      "can be sent. first run: one run (scripted engine at 0 ms) on an existing passive thread right after\n"
      "the open, send to completion. The page cache holds the database (just written).\n"
      "The first open replays the WAL the build left, as a restart after a long run replays what was written\n"
      "since RocksDB last flushed its memtables; the clean reopen finds next to none. per interrupted run:\n"
      "(open after interrupted runs - clean reopen) / interrupted runs.\n"
      "repairs: every interrupted run was repaired, and " +
      std::to_string(std::min(repair_sample, interrupted.size() - 1)) +
      " repaired threads checked event by event\n(tool_result error, thread.interrupted, thread.stop failed, "
      "status failed).");
  std::string at = built.events == events_target ? "" : " (at " + with_commas(events_target) + " events)";
  add_target(out, "ready, first open after the build" + at, f.first_open.open_seconds, recovery_ready_seconds_max,
             "s", better::lower);
  add_target(out, "ready, clean reopen" + at, f.clean.open_seconds, recovery_ready_seconds_max, "s", better::lower);
  double per = (f.after_repair.open_seconds - f.clean.open_seconds) * 1000 / static_cast<double>(interrupted.size());
  add_target(out, "per interrupted run", per, recovery_per_interrupted_ms_max, "ms", better::lower);
  return status::ok();
}

}  // namespace skein::bench
