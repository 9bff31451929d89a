// The runs workload's baselines: the runs of the skein row, on the OpenNova design
// and the Lace design, driven from as many host threads as the skein row. A run
// writes what skein's scripted run writes: user message, thread.start, assistant
// message "ok", result, thread.stop; the OpenNova design then rewrites the manifest
// once, as a run's end. Their calls block, so a host thread has one run in flight.
//
// Databases: runs-opennova-design/ and runs-lace-design-<FULL|NORMAL>/lace.db under
// the bench directory.
#include <algorithm>
#include <cmath>

#include "bench/baselines/baselines.hpp"
#include "bench/baselines/drive.hpp"
#include "runtime/model/ids.hpp"
#include "runtime/model/json_codec.hpp"
#include "runtime/model/manifest.hpp"

namespace skein::bench {
namespace {

// Five fsyncs or more per run: capped at about this many runs at scale 1 (whole
// threads, each with every one of its runs, so files grow as skein's logs do).
constexpr double synced_runs_at_scale_1 = 2000;

// The runs baselines' threads: as many as the workload's, or as fit the cap.
size_t threads_for(const runs_baseline_input& in, bool capped, double scale) {
  if (!capped) return in.threads;
  auto cap = static_cast<size_t>(std::llround(synced_runs_at_scale_1 * scale));
  return std::clamp<size_t>(cap / in.runs_per_thread, 1, in.threads);
}

// "200 of the 1000 threads (capped), 2 host threads with one run in flight each"
std::string shape_note(const runs_baseline_input& in, size_t threads) {
  std::string note = threads == in.threads
                         ? "all " + std::to_string(threads) + " threads"
                         : std::to_string(threads) + " of the " + std::to_string(in.threads) +
                               " threads (capped)";
  return note + ", " + std::to_string(in.host_threads) +
         " host threads with one run in flight each";
}

std::string thread_id(size_t index, int64_t created_at_ms) {
  // An odd multiplier spreads the ids as random ones would, without repeats.
  return new_thread_id(created_at_ms, (index + 1) * 0x9e3779b97f4a7c15ull);
}

// The JSON of the events of run `run` (from 0) of a thread, seqs following the
// earlier runs'.
status run_events(size_t run, std::vector<std::string>* out) {
  std::string run_id = new_run_id();
  event events[] = {make_message(message_role::user, "run " + std::to_string(run)),
                    make_signal("thread.start"), make_message(message_role::assistant, "ok"),
                    make_result({}, 0, 0, 1, "completed"), make_signal("thread.stop")};
  static_assert(std::size(events) == scripted_events_per_run);
  out->assign(std::size(events), {});
  for (size_t k = 0; k < std::size(events); ++k) {
    events[k].seq = run * scripted_events_per_run + k + 1;
    events[k].ts_ms = now_ms();
    events[k].run_id = run_id;
    SKEIN_TRY(encode_event(events[k], &(*out)[k]));
  }
  return status::ok();
}

status manifest_json(const std::string& id, uint64_t last_seq, int64_t created_at_ms,
                     std::string* out) {
  manifest m;
  m.id = id;
  m.agent_id = bench_agent_id;
  m.status = thread_status::open;  // where a chat thread rests between runs
  m.created_at_ms = created_at_ms;
  m.updated_at_ms = now_ms();
  m.last_seq = last_seq;
  return encode_manifest(m, out);
}

// Runs every run of `threads` threads and fills the row's figures.
status drive_runs(const runs_baseline_input& in, size_t threads, bool quiet,
                  const std::function<status(size_t thread, size_t run)>& one_run,
                  runs_baseline_row* row) {
  drive_outcome out;
  {
    progress bar{row->system + " " + row->mode, threads * in.runs_per_thread,
                 progress_wanted(quiet)};
    SKEIN_TRY(drive_rounds(threads, in.runs_per_thread, in.host_threads, bar, one_run, &out));
  }
  row->runs = out.latencies_ns.size();
  row->threads = threads;
  row->host_threads = in.host_threads;
  row->seconds = out.seconds;
  row->p50_us = quantile_us(out.latencies_ns, 0.50);
  row->p99_us = quantile_us(out.latencies_ns, 0.99);
  row->events = row->runs * scripted_events_per_run;
  return status::ok();
}

status run_opennova(const runs_baseline_input& in, const bench_options& options,
                    runs_baseline_row* row) {
  row->system = "opennova-design";
  row->mode = "fdatasync";
  size_t threads = threads_for(in, true, options.scale);
  row->note = "a run: 5 event lines, each appended + fdatasync, then the manifest line "
              "rewritten (temp file, fsync, rename); " + shape_note(in, threads);
  std::string dir = options.dir + "/runs-opennova-design";
  SKEIN_TRY(fresh_dir(dir));
  opennova_store store{dir};
  int64_t created_at_ms = now_ms();
  std::vector<std::string> ids;
  std::string json;
  for (size_t i = 0; i < threads; ++i) {
    ids.push_back(thread_id(i, created_at_ms));
    SKEIN_TRY(manifest_json(ids.back(), 0, created_at_ms, &json));
    SKEIN_TRY(store.create_thread(ids.back(), json));
  }
  auto one_run = [&](size_t i, size_t run) {
    std::vector<std::string> lines;
    SKEIN_TRY(run_events(run, &lines));
    for (const auto& line : lines) SKEIN_TRY(store.append_event(ids[i], line));
    std::string m;
    SKEIN_TRY(manifest_json(ids[i], (run + 1) * scripted_events_per_run, created_at_ms, &m));
    return store.end_run(ids[i], m);
  };
  if (status s = drive_runs(in, threads, options.quiet, one_run, row); !s)
    return status{s.code(), "opennova-design: " + s.message()};
  for (const auto& id : ids) {
    if (status v = check_opennova_thread(store, id, in.runs_per_thread * scripted_events_per_run);
        !v)
      return status{v.code(), "opennova-design: lost writes: " + v.message()};
  }
  return status::ok();
}

status run_lace(const runs_baseline_input& in, lace_sync sync, const bench_options& options,
                runs_baseline_row* row) {
  row->system = "lace-design";
  row->mode = to_string(sync);
  // NORMAL syncs at checkpoints only: cheap enough for every run.
  size_t threads = threads_for(in, sync == lace_sync::full, options.scale);
  row->note = "a run: 5 transactions (INSERT event, UPDATE thread), WAL, one connection "
              "behind a mutex; " + shape_note(in, threads);
  std::string dir = options.dir + "/runs-lace-design-" + row->mode;
  SKEIN_TRY(fresh_dir(dir));
  std::unique_ptr<lace_store> store;
  SKEIN_TRY(lace_store::open(dir + "/lace.db", sync, &store));
  int64_t created_at_ms = now_ms();
  std::vector<std::string> ids;
  for (size_t i = 0; i < threads; ++i) {
    ids.push_back(thread_id(i, created_at_ms));
    SKEIN_TRY(store->create_thread(ids.back(), bench_agent_id, created_at_ms));
  }
  auto one_run = [&](size_t i, size_t run) {
    std::vector<std::string> lines;
    SKEIN_TRY(run_events(run, &lines));
    for (size_t k = 0; k < lines.size(); ++k) {
      uint64_t seq = run * scripted_events_per_run + k + 1;
      SKEIN_TRY(store->append_event(ids[i], seq, lines[k], now_ms()));
    }
    return status::ok();
  };
  std::string label = "lace-design " + row->mode;
  if (status s = drive_runs(in, threads, options.quiet, one_run, row); !s)
    return status{s.code(), label + ": " + s.message()};
  for (const auto& id : ids) {
    if (status v = check_lace_thread(*store, id, in.runs_per_thread * scripted_events_per_run);
        !v)
      return status{v.code(), label + ": lost writes: " + v.message()};
  }
  return status::ok();
}

}  // namespace

status run_runs_baselines(const runs_baseline_input& in, const bench_options& options,
                          std::vector<runs_baseline_row>* rows) {
  SKEIN_TRY(run_opennova(in, options, &rows->emplace_back()));
  SKEIN_TRY(run_lace(in, lace_sync::full, options, &rows->emplace_back()));
  SKEIN_TRY(run_lace(in, lace_sync::normal, options, &rows->emplace_back()));
  run_kernl_runs(in, options.scale, &rows->emplace_back());
  return status::ok();
}

}  // namespace skein::bench
