// recovery: how long runtime::open takes on a big database built through the event
// log, and what each run a crash interrupted adds. The first open also replays the
// WAL the build left, as a restart after a long run would; the clean reopen finds
// next to none. Then runs are left mid-way as a crash leaves them (thread.start and
// a tool call without its result, status running) and the open repairs them: its
// extra time over the clean reopen, per interrupted run, is the cost of one repair.
#include <algorithm>
#include <set>

#include "bench/log_builder.hpp"
#include "bench/workloads.hpp"
#include "runtime/model/ids.hpp"

namespace skein::bench {
namespace {

constexpr size_t threads_at_scale_1 = 1'000'000;
constexpr uint64_t events_per_thread = 10;
// What an interrupted run wrote: user message, thread.start, assistant text, tool call.
constexpr uint64_t interrupted_events = 4;
// What repair adds: the tool call's error result, thread.interrupted, thread.stop.
constexpr uint64_t repair_events = 3;
constexpr size_t repair_sample = 16;  // repaired threads checked event by event
constexpr const char* interrupted_call_id = "call_interrupted";

// One runtime::open of the database and the run after it.
struct recovery_open {
  uint64_t interrupted = 0;  // runs left mid-way in the database before the open
  uint64_t repaired = 0;     // repaired_at_open().size()
  uint64_t wal_bytes = 0;    // write-ahead log files the open found (and replayed)
  double open_seconds = 0;   // runtime::open: until runs can start
  double first_run_seconds = 0;
};

// Opens a runtime on `path` and times the open and one run on `thread` after it;
// the runtime stays open in *rt for the checks that follow.
status open_and_run(const std::string& path, const std::string& thread, uint64_t first_seq, recovery_open* f,
                    std::unique_ptr<runtime>* rt) {
  runtime_options ro;
  ro.data_dir = path;
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

// Writes on each of `ids` the tick a crash leaves: the run began and called a
// tool, nothing after; the log is then closed, as a crashed process leaves it.
status interrupt(const std::string& path, const std::vector<std::string>& ids) {
  std::unique_ptr<event_log> log;
  SKEIN_TRY(open_build_log(path, false, &log));
  std::vector<tick> ticks(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    tick& t = ticks[i];
    SKEIN_TRY(log->read_manifest(ids[i], &t.manifest));
    int64_t now = now_ms();
    std::string run_id = new_run_id();
    t.thread_id = ids[i];
    t.events = {make_message(message_role::user, "Look the failed deploy up."),
                make_signal("thread.start", "{\"run_id\":\"" + run_id + "\"}"), make_assistant_text("Looking it up."),
                make_tool_call(interrupted_call_id, "lookup", "{\"q\":\"deploy\"}")};
    uint64_t seq = t.manifest.last_seq;
    for (auto& e : t.events) {
      e.seq = ++seq;
      e.ts_ms = now;
      e.run_id = run_id;
    }
    t.manifest.status = thread_status::running;
    t.manifest.updated_at_ms = t.manifest.heartbeat_at_ms = now;
  }
  return commit_all(*log, ticks);
}

// The repair of `id`: after the interrupted run's events, an error result for its
// tool call, thread.interrupted and thread.stop failed, all of that run; status failed.
status check_repaired(runtime& rt, const std::string& id) {
  manifest m;
  SKEIN_TRY(rt.get_thread(id, &m));
  std::vector<event> log;
  SKEIN_TRY(rt.read(id, history_view::complete, events_per_thread + 1, 0, &log));
  auto wrong = [&](const std::string& what) { return status::corruption("repaired thread " + id + ": " + what); };
  if (m.status != thread_status::failed || log.size() != interrupted_events + repair_events)
    return wrong("status " + std::string{to_string(m.status)} + " with " + std::to_string(log.size()) +
                 " events after the build, expected failed with " + std::to_string(interrupted_events + repair_events));
  const event& result = log[interrupted_events];
  const event& signal = log[interrupted_events + 1];
  const event& stop = log[interrupted_events + 2];
  if (result.type != event_type::tool_result || result.call_id != interrupted_call_id || !result.is_error)
    return wrong("seq " + std::to_string(result.seq) + " is no error result for " + interrupted_call_id);
  if (signal.type != event_type::signal || signal.name != "thread.interrupted")
    return wrong("seq " + std::to_string(signal.seq) + " is '" + signal.name + "', expected thread.interrupted");
  if (stop.type != event_type::signal || stop.name != "thread.stop" ||
      stop.json.find("\"outcome\":\"failed\"") == std::string::npos)
    return wrong("seq " + std::to_string(stop.seq) + " is '" + stop.name + "' " + stop.json +
                 ", expected thread.stop with outcome failed");
  for (const auto& e : log)
    if (e.run_id != log.front().run_id)
      return wrong("seq " + std::to_string(e.seq) + " belongs to run " + e.run_id + ", not the interrupted one");
  return status::ok();
}

}  // namespace

status run_recovery(const bench_options& options, result* out) {
  const std::string path = options.dir + "/recovery";
  // At least two interrupted runs (one is run again, one is checked) and a thread
  // that is never interrupted, however small the scale.
  size_t count = std::max<size_t>(2, scaled_count(1000, options.scale));
  size_t threads = std::max(count + 1, scaled_count(threads_at_scale_1, options.scale));
  std::vector<std::string> ids = bench_thread_ids(threads, 1);
  build_stats built;
  {
    std::unique_ptr<event_log> log;
    SKEIN_TRY(open_build_log(path, true, &log));
    SKEIN_TRY(log->put_agent(bench_agent_config()));
    SKEIN_TRY(build_threads(*log, bench_agent_id, ids, events_per_thread, options.quiet, &built));
  }
  uint64_t db_bytes = directory_bytes(path);

  // Both clean opens run on the last thread, which is never interrupted; the first
  // also reads back 64 others whole.
  recovery_open opens[3];
  for (int i = 0; i < 2; ++i) {
    std::unique_ptr<runtime> rt;
    SKEIN_TRY(open_and_run(path, ids.back(), events_per_thread + i * scripted_events_per_run + 1, &opens[i], &rt));
    if (opens[i].repaired != 0)
      return status::corruption("recovery repaired " + std::to_string(opens[i].repaired) +
                                " threads of a database without an interrupted run");
    std::vector<std::string> sample;
    for (size_t k : spread(i == 0 ? 64 : 0, ids.size() - 1)) sample.push_back(ids[k]);
    SKEIN_TRY(check_thread_logs(*rt, sample, sample.size(), {events_per_thread, 1}));
    SKEIN_TRY(rt->close());
  }

  // Spread over every thread but the last, which the clean opens ran on.
  std::vector<std::string> interrupted;
  for (size_t k : spread(count, ids.size() - 1)) interrupted.push_back(ids[k]);
  auto start = bench_clock::now();
  SKEIN_TRY(interrupt(path, interrupted));
  double interrupt_seconds = seconds_since(start, bench_clock::now());
  {
    std::unique_ptr<runtime> rt;
    opens[2].interrupted = interrupted.size();
    uint64_t first_seq = events_per_thread + interrupted_events + repair_events + 1;
    SKEIN_TRY(open_and_run(path, interrupted.front(), first_seq, &opens[2], &rt));
    // Repair closed exactly the interrupted threads, each as it should, and left none running.
    const auto& repaired = rt->repaired_at_open();
    if (std::set<std::string>(repaired.begin(), repaired.end()) !=
            std::set<std::string>(interrupted.begin(), interrupted.end()) || repaired.size() != interrupted.size())
      return status::corruption("recovery repaired " + std::to_string(repaired.size()) +
                                " threads, expected exactly the " + std::to_string(interrupted.size()) +
                                " interrupted ones");
    // interrupted[0] ran again after the open: its log goes on past the repair.
    for (size_t k : spread(repair_sample, interrupted.size() - 1)) SKEIN_TRY(check_repaired(*rt, interrupted[k + 1]));
    thread_query q;
    q.index = thread_query::by::status;
    q.value = std::string{to_string(thread_status::running)};
    thread_page page;
    SKEIN_TRY(rt->list_threads(q, &page));
    if (!page.threads.empty())
      return status::corruption("thread " + page.threads.front().id + " still running after recovery");
    SKEIN_TRY(rt->close());
  }

  table& t = add_table(
      out,
      "recovery: " + with_commas(built.threads) + " threads, " + with_commas(built.events) + " events (" +
          fixed(static_cast<double>(db_bytes) / (1 << 20), 1) + " MB on disk), durability sync\n"
          "built through the event log (durability flush) in " + fixed(built.seconds, 1) + " s (" +
          with_commas(built.writes) + " writes) and " + with_commas(interrupted.size()) +
          " interrupted runs written in " + fixed(interrupt_seconds, 2) + " s:\nneither is part of any figure",
      {col("open"), col("interrupted runs"), col("repaired"), col("WAL at open", "MB", 1),
       col("runtime::open", "ms", 1), col("first run", "ms", 2), col("open + run", "ms", 1)});
  const char* names[] = {"first, after the build", "clean reopen", "after interrupted runs"};
  for (int i = 0; i < 3; ++i) {
    const recovery_open& o = opens[i];
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
  uint64_t events_target = threads_at_scale_1 * events_per_thread;
  std::string at = built.events == events_target ? "" : " (at " + with_commas(events_target) + " events)";
  add_target(out, "ready, first open after the build" + at, opens[0].open_seconds, 1.0, "s", better::lower);
  add_target(out, "ready, clean reopen" + at, opens[1].open_seconds, 1.0, "s", better::lower);
  double per = (opens[2].open_seconds - opens[1].open_seconds) * 1000 / static_cast<double>(interrupted.size());
  add_target(out, "per interrupted run", per, 1.0, "ms", better::lower);
  return status::ok();
}

}  // namespace skein::bench
