// append: N threads x M one-event ticks committed through the journal, one actor
// per thread with one commit in flight each, in every durability mode; then the
// same events written to RocksDB directly by one writer, with and without fsync;
// then by the designs of bench/baselines/ (baselines.hpp).
//
// Every mode gets a fresh database under the bench directory: append-<mode> and
// append-rocksdb-<put-sync|put-unsynced>.
#include <algorithm>
#include <caf/actor_system.hpp>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <rocksdb/db.h>
#include <string_view>

#include "actors/error.hpp"
#include "actors/journal.hpp"
#include "bench/baselines/baselines.hpp"
#include "bench/log_builder.hpp"
#include "bench/workloads.hpp"
#include "persistence/event_log.hpp"
#include "persistence/keys.hpp"
#include "runtime/model/ids.hpp"
#include "runtime/model/json_codec.hpp"

namespace skein::bench {
namespace {

constexpr size_t threads_at_scale_1 = 256;
constexpr size_t ticks_at_scale_1 = 200;
constexpr size_t text_bytes = 300;
// One fsync per Put: capped, or the naive baseline alone would take minutes.
constexpr double sync_puts_at_scale_1 = 4000;
// skein sync against RocksDB without fsync, absolute throughput, and the designs
// of other agent tools (bench/baselines/).
constexpr double append_ratio_target = 0.8;
constexpr double append_events_per_s_target = 100'000;
constexpr double append_over_lace_full_target = 20;
constexpr double append_over_opennova_target = 20;

struct thread_plan {
  size_t index = 0;
  std::string thread_id;
  std::string run_id;
};

struct append_plan {
  size_t ticks = 0;  // per thread
  int64_t created_at_ms = 0;
  std::vector<thread_plan> threads;

  uint64_t total() const { return static_cast<uint64_t>(threads.size()) * ticks; }
};

append_plan make_plan(double scale) {
  append_plan p;
  p.ticks = scaled_count(ticks_at_scale_1, scale);
  p.created_at_ms = now_ms();
  p.threads.resize(scaled_count(threads_at_scale_1, scale));
  for (size_t i = 0; i < p.threads.size(); ++i) {
    auto& t = p.threads[i];
    t.index = i;
    // An odd multiplier is a bijection on the 60 id bits: distinct, yet spread
    // over the key space like random ids.
    t.thread_id = new_thread_id(p.created_at_ms, (i + 1) * 0x9e3779b97f4a7c15ull);
    t.run_id = new_run_id();
  }
  return p;
}

// Prose that differs from event to event, as user messages do, so that the WAL,
// compression and filters see realistic input rather than one repeated string.
std::string message_text(size_t thread, uint64_t seq) {
  static constexpr std::string_view words[] = {
      "please",   "summarize", "the",     "latest",  "build",    "failure",  "and",
      "suggest",  "a",         "fix",     "for",     "flaky",    "test",     "in",
      "module",   "payments",  "logs",    "show",    "timeout",  "after",    "retry",
      "when",     "database",  "is",      "under",   "load",     "check",    "config",
      "compare",  "with",      "last",    "week's",  "release",  "branch",   "then",
      "open",     "pull",      "request", "describing", "root", "cause",    "impact"};
  uint64_t state = (static_cast<uint64_t>(thread) << 32) ^ seq;
  std::string out;
  out.reserve(text_bytes + 16);
  while (out.size() < text_bytes) {
    if (!out.empty()) out.push_back(' ');
    out += words[splitmix64(state) % std::size(words)];
    state += 0x9e3779b97f4a7c15ull;
  }
  out.resize(text_bytes);
  return out;
}

event bench_event(const thread_plan& t, uint64_t seq) {
  event e = make_message(message_role::user, message_text(t.index, seq));
  e.seq = seq;
  e.ts_ms = now_ms();
  e.run_id = t.run_id;
  return e;
}

// --- skein: one driver actor per thread (drive_ticks) --------------------------

// Every thread's ticks to their end through the journal; then everything
// acknowledged must be in the log: counters, manifests and events.
status drive(const append_plan& plan, event_log& log, progress& bar, std::vector<int64_t>* latencies_ns,
             double* seconds) {
  std::vector<manifest> threads(plan.threads.size());
  for (size_t i = 0; i < threads.size(); ++i) {
    manifest& m = threads[i];
    m.id = plan.threads[i].thread_id;
    m.agent_id = bench_agent_id;
    m.title = "append bench thread " + std::to_string(i);
    m.status = thread_status::running;
    m.created_at_ms = m.updated_at_ms = plan.created_at_ms;
  }
  latencies_ns->reserve(plan.total());
  SKEIN_TRY(with_journal(log, [&](caf::actor_system& sys, const caf::actor& journal) {
    return drive_ticks(sys, journal, threads.data(), threads.size(), plan.ticks,
                       [&plan](size_t i, uint64_t seq) { return bench_event(plan.threads[i], seq); }, &bar,
                       latencies_ns, seconds);
  }));
  return status::ok();
}

status verify(const append_plan& plan, const event_log& log) {
  SKEIN_TRY(check_log_counters(log, plan.total()));
  std::vector<event> events;
  for (const auto& t : plan.threads) {
    manifest m;
    SKEIN_TRY(log.read_manifest(t.thread_id, &m));
    SKEIN_TRY(log.read_events(t.thread_id, 1, 0, &events));
    if (m.last_seq != plan.ticks || events.size() != plan.ticks || events.back().seq != plan.ticks)
      return status::corruption("thread " + t.thread_id + ": manifest last_seq " + std::to_string(m.last_seq) +
                                " and " + std::to_string(events.size()) + " events read back, expected " +
                                std::to_string(plan.ticks));
  }
  return status::ok();
}

// `key`: encrypted at rest under it (the encryption workload); null: plain.
status run_skein(const append_plan& plan, durability mode, const bench_options& options,
                 measured_row* row, std::shared_ptr<const master_key> key = nullptr) {
  row->system = "skein";
  row->mode = std::string{to_string(mode)};
  log_options lo;
  lo.path = options.dir + "/append-" + row->mode + (key ? "-encrypted" : "");
  lo.mode = mode;
  lo.encryption = std::move(key);
  SKEIN_TRY(fresh_dir(lo.path));
  std::unique_ptr<event_log> log;
  SKEIN_TRY(event_log::open(lo, &log));

  std::vector<int64_t> latencies_ns;
  status s;
  {
    progress bar{"skein " + row->mode, plan.total(), progress_wanted(options.quiet)};
    s = drive(plan, *log, bar, &latencies_ns, &row->seconds);
  }
  if (!s) return status{s.code(), "skein " + row->mode + ": " + s.message()};
  row->count = plan.total();
  row->p50_us = quantile_us(latencies_ns, 0.50);
  row->p99_us = quantile_us(latencies_ns, 0.99);
  if (options.plot) row->latencies_ns = std::move(latencies_ns);
  log_counters c = log->counters();
  row->writes = c.writes;
  row->commits = c.commits;
  if (status v = verify(plan, *log); !v)
    return status{v.code(), "skein " + row->mode + ": lost writes: " + v.message()};
  return status::ok();
}

// --- RocksDB directly: one writer, one Put per event ----------------------------

struct rocks_db {
  std::unique_ptr<rocksdb::DB> db;
  ~rocks_db() {
    if (db) db->Close().PermitUncheckedError();
  }
};

// Options as close to the event log's as one column family allows.
status open_direct(const std::string& path, rocks_db* out) {
  rocksdb::Options o;
  o.create_if_missing = true;
  o.max_background_jobs = 2;
  o.bytes_per_sync = 1 << 20;
  o.write_buffer_size = 64 << 20;
  rocksdb::DB* raw = nullptr;
  auto s = rocksdb::DB::Open(o, path, &raw);
  if (!s.ok()) return status::io_error("open rocksdb at " + path + ": " + s.ToString());
  out->db.reset(raw);
  return status::ok();
}

status count_keys(rocksdb::DB* db, uint64_t expected) {
  std::unique_ptr<rocksdb::Iterator> it{db->NewIterator(rocksdb::ReadOptions())};
  uint64_t n = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next()) ++n;
  if (!it->status().ok()) return status::io_error("scan: " + it->status().ToString());
  if (n != expected)
    return status::corruption(std::to_string(n) + " keys read back, expected " +
                              std::to_string(expected));
  return status::ok();
}

// Events in arrival order of the concurrent run: seq 1 of every thread, then seq 2, ...
status run_direct(const append_plan& plan, bool sync, uint64_t events,
                  const bench_options& options, measured_row* row) {
  row->system = "rocksdb";
  row->mode = sync ? "put-sync" : "put-unsynced";
  std::string path = options.dir + "/append-rocksdb-" + row->mode;
  SKEIN_TRY(fresh_dir(path));
  rocks_db rdb;
  SKEIN_TRY(open_direct(path, &rdb));
  rocksdb::WriteOptions wo;
  wo.sync = sync;

  std::vector<int64_t> latencies_ns;
  latencies_ns.reserve(events);
  std::string value;
  progress bar{"rocksdb " + row->mode, events, progress_wanted(options.quiet)};
  auto start = bench_clock::now();
  for (uint64_t i = 0; i < events; ++i) {
    const thread_plan& t = plan.threads[i % plan.threads.size()];
    uint64_t seq = i / plan.threads.size() + 1;
    SKEIN_TRY(encode_event(bench_event(t, seq), &value));
    std::string key = keys::event_key(t.thread_id, seq);
    auto sent = bench_clock::now();
    auto s = rdb.db->Put(wo, key, value);
    latencies_ns.push_back((bench_clock::now() - sent).count());
    if (!s.ok()) {
      row->failures = 1;
      return status::io_error("rocksdb " + row->mode + ": put: " + s.ToString());
    }
    bar.advance();
  }
  row->seconds = seconds_since(start, bench_clock::now());
  row->count = events;
  row->p50_us = quantile_us(latencies_ns, 0.50);
  row->p99_us = quantile_us(latencies_ns, 0.99);
  if (options.plot) row->latencies_ns = std::move(latencies_ns);
  if (status v = count_keys(rdb.db.get(), events); !v)
    return status{v.code(), "rocksdb " + row->mode + ": lost writes: " + v.message()};
  return status::ok();
}

// The same threads and events, for the baselines: event `seq` of a thread as the
// rocksdb rows store it.
append_baseline_input baseline_input(const append_plan& plan) {
  append_baseline_input in;
  in.ticks = plan.ticks;
  for (const auto& t : plan.threads) in.thread_ids.push_back(t.thread_id);
  in.event_json = [&plan](size_t index, uint64_t seq, std::string* json) {
    return encode_event(bench_event(plan.threads[index], seq), json);
  };
  return in;
}

}  // namespace

status measure_append_skein(const bench_options& options, durability mode, std::shared_ptr<const master_key> key,
                            measured_row* row) {
  append_plan plan = make_plan(options.scale);
  return run_skein(plan, mode, options, row, std::move(key));
}

status run_append(const bench_options& options, result* out) {
  append_plan plan = make_plan(options.scale);
  std::string sample;
  SKEIN_TRY(encode_event(bench_event(plan.threads.front(), 1), &sample));
  std::vector<measured_row> rows;
  for (durability mode : {durability::sync, durability::flush, durability::memory})
    SKEIN_TRY(run_skein(plan, mode, options, &rows.emplace_back()));
  auto sync_cap = static_cast<uint64_t>(std::llround(sync_puts_at_scale_1 * options.scale));
  uint64_t sync_events = std::clamp<uint64_t>(sync_cap, 1, plan.total());
  SKEIN_TRY(run_direct(plan, true, sync_events, options, &rows.emplace_back()));
  SKEIN_TRY(run_direct(plan, false, plan.total(), options, &rows.emplace_back()));
  SKEIN_TRY(run_append_baselines(baseline_input(plan), options, &rows));

  table& t = add_table(out,
                       "append: " + std::to_string(plan.threads.size()) + " threads x " + std::to_string(plan.ticks) +
                           " ticks, one event per tick (" + std::to_string(text_bytes) + "-byte message, " +
                           std::to_string(sample.size()) + "-byte stored value)",
                       {col("system"), col("mode"), col("events"), col("events/s", "events/s"),
                        col("commits/write", "", 1), col("p50", "ms", 3), col("p99", "ms", 3), col("failures")});
  const measured_row& sync = rows.front();
  for (const auto& r : rows) {
    t.rows.push_back({text(r.system), text(r.mode), num(r.count), num(r.per_s()),
                      r.writes > 0 ? num(static_cast<double>(r.commits) / r.writes) : cell{}, num(r.p50_us / 1000),
                      num(r.p99_us / 1000), num(r.failures)});
    std::string name = r.system + " " + r.mode;
    if (!r.note.empty()) t.notes.push_back(name + ": " + r.note);
    if (r.system != "skein")
      t.notes.push_back("skein sync / " + name + ": " + fixed(sync.per_s() / r.per_s(), 2) + "x");
    if (!options.plot) continue;
    add_bar(out, "throughput-append", "append: throughput (events/s, higher is better)", "events/s", name,
            r.per_s());
    add_cdf(out, "latency-append", "append: latency CDF",
            name + (r.system == "skein" ? ": send to ack" : ": one Put"), r.latencies_ns);
  }
  add_target(out, "skein sync events/s", sync.per_s(), append_events_per_s_target, "events/s");
  for (const auto& r : rows) {
    std::string name = r.system + " " + r.mode;
    double goal = name == "rocksdb put-unsynced" ? append_ratio_target
                  : name == "lace-design FULL"   ? append_over_lace_full_target
                  : r.system == "opennova-design" ? append_over_opennova_target : 0;
    if (goal > 0)
      add_target(out, "skein sync / " + name, sync.per_s() / r.per_s(), goal, "x", better::higher, name);
  }
  return status::ok();
}

}  // namespace skein::bench
