// The append workload's baselines: the same threads and one-event ticks written by
// the OpenNova design and the Lace design, from 2 x cores host threads, host h
// owning threads h, h + hosts, ... and ticking them round by round (seq 1 of each,
// then seq 2, ...), as the skein rows' actors all tick at once.
//
// Databases: append-opennova-design/ (one file per thread) and
// append-lace-design-<FULL|NORMAL>/lace.db under the bench directory.
#include <algorithm>
#include <cmath>
#include <thread>

#include "bench/baselines/baselines.hpp"
#include "bench/baselines/drive.hpp"
#include "runtime/model/ids.hpp"
#include "runtime/model/json_codec.hpp"
#include "runtime/model/manifest.hpp"

namespace skein::bench {
namespace {

// One fsync or more per event: capped as the rocksdb put-sync baseline is, at about
// this many events at scale 1 (whole rounds, so every thread ends with as many).
constexpr double synced_events_at_scale_1 = 4000;

size_t host_thread_count() {
  return 2 * std::max<size_t>(1, std::thread::hardware_concurrency());
}

// Rounds of one tick per thread: all of the workload's, or as many as fit the cap.
size_t rounds_for(const append_baseline_input& in, bool capped, double scale) {
  if (!capped) return in.ticks;
  auto cap = static_cast<size_t>(std::llround(synced_events_at_scale_1 * scale));
  return std::clamp<size_t>(cap / in.thread_ids.size(), 1, in.ticks);
}

// The manifest skein's append drivers send with tick `seq` of thread `index`.
status manifest_json(const append_baseline_input& in, size_t index, uint64_t seq,
                     int64_t created_at_ms, std::string* out) {
  manifest m;
  m.id = in.thread_ids[index];
  m.agent_id = bench_agent_id;
  m.title = "append bench thread " + std::to_string(index);
  m.status = thread_status::running;
  m.created_at_ms = created_at_ms;
  m.updated_at_ms = now_ms();
  m.last_seq = seq;
  return encode_manifest(m, out);
}

// Runs `rounds` one-event ticks on every thread and fills the row's figures.
status drive_ticks(const append_baseline_input& in, size_t rounds, bool quiet,
                   const std::function<status(size_t index, uint64_t seq)>& tick,
                   append_row* row) {
  size_t threads = in.thread_ids.size();
  drive_outcome out;
  {
    progress bar{row->system + " " + row->mode, threads * rounds, progress_wanted(quiet)};
    SKEIN_TRY(drive_rounds(threads, rounds, row->host_threads, bar,
                           [&](size_t i, size_t round) { return tick(i, round + 1); }, &out));
  }
  row->events = out.latencies_ns.size();
  row->seconds = out.seconds;
  row->p50_us = quantile_us(out.latencies_ns, 0.50);
  row->p99_us = quantile_us(out.latencies_ns, 0.99);
  return status::ok();
}

// Each tick ends a step, and skein's tick carries the manifest in its batch: so
// here each tick appends its event line and rewrites the manifest line.
status run_opennova(const append_baseline_input& in, const bench_options& options,
                    append_row* row) {
  row->system = "opennova-design";
  row->mode = "fdatasync";
  row->host_threads = host_thread_count();
  row->note = "each tick: its event line appended + fdatasync, then the manifest line "
              "rewritten (temp file, fsync, rename); " + std::to_string(row->host_threads) +
              " host threads, one lock per thread";
  size_t rounds = rounds_for(in, true, options.scale);
  std::string dir = options.dir + "/append-opennova-design";
  SKEIN_TRY(fresh_dir(dir));
  opennova_store store{dir};
  int64_t created_at_ms = now_ms();
  std::string json;
  for (size_t i = 0; i < in.thread_ids.size(); ++i) {
    SKEIN_TRY(manifest_json(in, i, 0, created_at_ms, &json));
    SKEIN_TRY(store.create_thread(in.thread_ids[i], json));
  }
  auto tick = [&](size_t i, uint64_t seq) {
    std::string line;
    SKEIN_TRY(in.event_json(i, seq, &line));
    SKEIN_TRY(store.append_event(in.thread_ids[i], line));
    SKEIN_TRY(manifest_json(in, i, seq, created_at_ms, &line));
    return store.end_run(in.thread_ids[i], line);
  };
  if (status s = drive_ticks(in, rounds, options.quiet, tick, row); !s)
    return status{s.code(), "opennova-design: " + s.message()};
  for (const auto& id : in.thread_ids) {
    if (status v = check_opennova_thread(store, id, rounds); !v)
      return status{v.code(), "opennova-design: lost writes: " + v.message()};
  }
  return status::ok();
}

status run_lace(const append_baseline_input& in, lace_sync sync, const bench_options& options,
                append_row* row) {
  row->system = "lace-design";
  row->mode = to_string(sync);
  row->host_threads = host_thread_count();
  row->note = "one transaction per event (INSERT event, UPDATE thread), WAL, one connection "
              "behind a mutex; " + std::to_string(row->host_threads) + " host threads";
  // NORMAL syncs at checkpoints only: cheap enough for every tick.
  size_t rounds = rounds_for(in, sync == lace_sync::full, options.scale);
  std::string dir = options.dir + "/append-lace-design-" + row->mode;
  SKEIN_TRY(fresh_dir(dir));
  std::unique_ptr<lace_store> store;
  SKEIN_TRY(lace_store::open(dir + "/lace.db", sync, &store));
  for (const auto& id : in.thread_ids) {
    SKEIN_TRY(store->create_thread(id, bench_agent_id, now_ms()));
  }
  auto tick = [&](size_t i, uint64_t seq) {
    std::string json;
    SKEIN_TRY(in.event_json(i, seq, &json));
    return store->append_event(in.thread_ids[i], seq, json, now_ms());
  };
  std::string label = "lace-design " + row->mode;
  if (status s = drive_ticks(in, rounds, options.quiet, tick, row); !s)
    return status{s.code(), label + ": " + s.message()};
  for (const auto& id : in.thread_ids) {
    if (status v = check_lace_thread(*store, id, rounds); !v)
      return status{v.code(), label + ": lost writes: " + v.message()};
  }
  return status::ok();
}

}  // namespace

status run_append_baselines(const append_baseline_input& in, const bench_options& options,
                            std::vector<append_row>* rows) {
  SKEIN_TRY(run_opennova(in, options, &rows->emplace_back()));
  SKEIN_TRY(run_lace(in, lace_sync::full, options, &rows->emplace_back()));
  return run_lace(in, lace_sync::normal, options, &rows->emplace_back());
}

}  // namespace skein::bench
