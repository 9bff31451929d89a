// append: N threads x M one-event ticks through the journal, one actor per thread
// with one commit in flight each, in every durability mode; then the same events
// written to RocksDB directly by one writer, with and without fsync; then by the
// baselines (baselines.hpp). A fresh database per row under the bench directory.
#include <algorithm>
#include <cmath>
#include <rocksdb/db.h>
#include <string_view>

#include "bench/baselines/baselines.hpp"
#include "bench/log_builder.hpp"
#include "bench/workloads.hpp"
#include "persistence/event_log.hpp"
#include "persistence/keys.hpp"
#include "runtime/model/ids.hpp"
#include "runtime/model/json_codec.hpp"

namespace skein::bench {
namespace {

constexpr size_t text_bytes = 300;

// The threads of every row: their manifests as the first tick sends them, and the
// run each thread's events belong to.
struct append_plan {
  size_t ticks = 0;  // per thread
  std::vector<manifest> threads;
  std::vector<std::string> run_ids;

  explicit append_plan(double scale) : ticks(scaled_count(200, scale)) {
    int64_t created_at_ms = now_ms();
    threads.resize(scaled_count(256, scale));
    for (size_t i = 0; i < threads.size(); ++i) {
      manifest& m = threads[i];
      // An odd multiplier is a bijection on the 60 id bits: distinct, yet spread
      // over the key space like random ids.
      m.id = new_thread_id(created_at_ms, (i + 1) * 0x9e3779b97f4a7c15ull);
      m.agent_id = bench_agent_id;
      m.title = "append bench thread " + std::to_string(i);
      m.status = thread_status::running;
      m.created_at_ms = m.updated_at_ms = created_at_ms;
      run_ids.push_back(new_run_id());
    }
  }

  uint64_t total() const { return static_cast<uint64_t>(threads.size()) * ticks; }

  // Event `seq` of thread `i`: prose that differs from event to event, as user
  // messages do, so that the WAL, compression and filters see realistic input
  // rather than one repeated string.
  event make_event(size_t i, uint64_t seq) const {
    static constexpr std::string_view words[] = {
        "please",  "summarize", "the",     "latest",  "build",      "failure", "and",     "suggest", "a",
        "fix",     "for",       "flaky",   "test",    "in",         "module",  "payments", "logs",   "show",
        "timeout", "after",     "retry",   "when",    "database",   "is",      "under",   "load",    "check",
        "config",  "compare",   "with",    "last",    "week's",     "release", "branch",  "then",    "open",
        "pull",    "request",   "describing", "root", "cause",      "impact"};
    uint64_t state = (static_cast<uint64_t>(i) << 32) ^ seq;
    std::string text;
    while (text.size() < text_bytes) {
      if (!text.empty()) text.push_back(' ');
      text += words[splitmix64(state) % std::size(words)];
      state += 0x9e3779b97f4a7c15ull;
    }
    text.resize(text_bytes);
    event e = make_message(message_role::user, std::move(text));
    e.seq = seq;
    e.ts_ms = now_ms();
    e.run_id = run_ids[i];
    return e;
  }
};

// Every thread's ticks to their end through the journal (drive_ticks); then
// everything acknowledged must be in the log: counters, manifests and events.
// `key`: encrypted at rest under it (the encryption workload); null: plain.
status run_skein(const append_plan& plan, durability mode, std::shared_ptr<const master_key> key,
                 const bench_options& options, measured_row* row) {
  row->system = "skein";
  row->mode = std::string{to_string(mode)};
  log_options lo;
  lo.path = options.dir + "/append-" + row->mode + (key ? "-encrypted" : "");
  lo.mode = mode;
  lo.encryption = std::move(key);
  SKEIN_TRY(fresh_dir(lo.path));
  std::unique_ptr<event_log> log;
  SKEIN_TRY(event_log::open(lo, &log));
  std::vector<manifest> threads = plan.threads;
  std::vector<int64_t> latencies_ns;
  latencies_ns.reserve(plan.total());
  status s = with_journal(*log, plan.total(), [&](caf::actor_system& sys, const journal_actor& journal) {
    progress bar{"skein " + row->mode, plan.total(), options.quiet};
    return drive_ticks(sys, journal, threads.data(), threads.size(), plan.ticks,
                       [&plan](size_t i, uint64_t seq) { return plan.make_event(i, seq); }, &bar, &latencies_ns,
                       &row->seconds);
  });
  if (!s) return status{s.code(), "skein " + row->mode + ": " + s.message()};
  row->count = plan.total();
  row->take_latencies(std::move(latencies_ns), options.plot);
  row->writes = log->counters().writes;
  row->commits = log->counters().commits;
  std::vector<event> events;
  for (size_t i = 0; s && i < threads.size(); ++i) {
    manifest m;
    s = log->read_manifest(threads[i].id, &m);
    if (s) s = log->read_events(threads[i].id, 1, 0, &events);
    if (s && (m.last_seq != plan.ticks || events.size() != plan.ticks || events.back().seq != plan.ticks))
      s = status::corruption("thread " + threads[i].id + ": manifest last_seq " + std::to_string(m.last_seq) + " and " +
                             std::to_string(events.size()) + " events read back, expected " +
                             std::to_string(plan.ticks));
  }
  if (!s) return status{s.code(), "skein " + row->mode + ": lost writes: " + s.message()};
  return status::ok();
}

// RocksDB directly: one writer, one Put per event, `events` of them in the arrival
// order of the concurrent run (seq 1 of every thread, then seq 2, ...); then every
// key must read back.
status run_direct(const append_plan& plan, bool sync, uint64_t events, const bench_options& options,
                  measured_row* row) {
  row->system = "rocksdb";
  row->mode = sync ? "put-sync" : "put-unsynced";
  std::string path = options.dir + "/append-rocksdb-" + row->mode;
  SKEIN_TRY(fresh_dir(path));
  // Options as close to the event log's as one column family allows.
  rocksdb::Options o;
  o.create_if_missing = true;
  o.max_background_jobs = 2;
  o.bytes_per_sync = 1 << 20;
  o.write_buffer_size = 64 << 20;
  rocksdb::DB* raw = nullptr;
  if (auto s = rocksdb::DB::Open(o, path, &raw); !s.ok())
    return status::io_error("open rocksdb at " + path + ": " + s.ToString());
  auto close = [](rocksdb::DB* db) {
    db->Close().PermitUncheckedError();
    delete db;
  };
  std::unique_ptr<rocksdb::DB, decltype(close)> db{raw, close};
  rocksdb::WriteOptions wo;
  wo.sync = sync;
  std::vector<int64_t> latencies_ns;
  latencies_ns.reserve(events);
  std::string value;
  {
    progress bar{"rocksdb " + row->mode, events, options.quiet};
    auto start = bench_clock::now();
    for (uint64_t i = 0; i < events; ++i) {
      size_t t = i % plan.threads.size();
      uint64_t seq = i / plan.threads.size() + 1;
      SKEIN_TRY(encode_event(plan.make_event(t, seq), &value));
      std::string key = keys::event_key(plan.threads[t].id, seq);
      auto sent = bench_clock::now();
      auto s = db->Put(wo, key, value);
      latencies_ns.push_back((bench_clock::now() - sent).count());
      if (!s.ok()) return status::io_error("rocksdb " + row->mode + ": put: " + s.ToString());
      bar.advance();
    }
    row->seconds = seconds_since(start, bench_clock::now());
  }
  row->count = events;
  row->take_latencies(std::move(latencies_ns), options.plot);
  std::unique_ptr<rocksdb::Iterator> it{db->NewIterator(rocksdb::ReadOptions())};
  uint64_t n = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next()) ++n;
  if (!it->status().ok()) return status::io_error("rocksdb " + row->mode + ": scan: " + it->status().ToString());
  if (n != events)
    return status::corruption("rocksdb " + row->mode + ": lost writes: " + std::to_string(n) +
                              " keys read back, expected " + std::to_string(events));
  return status::ok();
}

}  // namespace

status measure_append_skein(const bench_options& options, durability mode, std::shared_ptr<const master_key> key,
                            measured_row* row) {
  return run_skein(append_plan{options.scale}, mode, std::move(key), options, row);
}

status run_append(const bench_options& options, result* out) {
  append_plan plan{options.scale};
  std::vector<measured_row> rows;
  for (durability mode : {durability::sync, durability::flush, durability::memory})
    SKEIN_TRY(run_skein(plan, mode, nullptr, options, &rows.emplace_back()));
  // One fsync per Put: capped, or the naive baseline alone would take minutes.
  uint64_t synced = std::clamp<uint64_t>(std::llround(4000 * options.scale), 1, plan.total());
  SKEIN_TRY(run_direct(plan, true, synced, options, &rows.emplace_back()));
  SKEIN_TRY(run_direct(plan, false, plan.total(), options, &rows.emplace_back()));
  auto event_json = [&plan](size_t i, uint64_t seq, std::string* json) {
    return encode_event(plan.make_event(i, seq), json);
  };
  SKEIN_TRY(run_append_baselines(plan.threads, plan.ticks, event_json, options, &rows));

  std::string sample;
  SKEIN_TRY(encode_event(plan.make_event(0, 1), &sample));
  table& t = add_table(out,
                       "append: " + std::to_string(plan.threads.size()) + " threads x " + std::to_string(plan.ticks) +
                           " ticks, one event per tick (" + std::to_string(text_bytes) + "-byte message, " +
                           std::to_string(sample.size()) + "-byte stored value)",
                       {col("system"), col("mode"), col("events"), col("events/s", "events/s"),
                        col("commits/write", "", 1), col("p50", "ms", 3), col("p99", "ms", 3), col("failures")});
  double sync = rows.front().per_s();
  for (const auto& r : rows) {
    std::string name = r.system + " " + r.mode;
    // A failure is an error, never a row: the column is 0 when there is a table.
    t.rows.push_back({text(r.system), text(r.mode), num(r.count), num(r.per_s()),
                      r.writes > 0 ? num(static_cast<double>(r.commits) / r.writes) : cell{}, num(r.p50_us / 1000),
                      num(r.p99_us / 1000), num(0)});
    if (!r.note.empty()) t.notes.push_back(name + ": " + r.note);
    if (r.system != "skein") t.notes.push_back("skein sync / " + name + ": " + fixed(sync / r.per_s(), 2) + "x");
    if (!options.plot) continue;
    add_bar(out, "throughput-append", "append: throughput (events/s, higher is better)", "events/s", name,
            r.per_s());
    add_cdf(out, "latency-append", "append: latency CDF",
            name + (r.system == "skein" ? ": send to ack" : ": one Put"), r.latencies_ns);
  }
  add_target(out, "skein sync events/s", sync, 100'000, "events/s");
  // skein sync against RocksDB without fsync, and the designs of other agent tools.
  for (const auto& r : rows) {
    std::string name = r.system + " " + r.mode;
    double goal = name == "rocksdb put-unsynced" ? 0.8
                  : name == "lace-design FULL" || r.system == "opennova-design" ? 20 : 0;
    if (goal > 0) add_target(out, "skein sync / " + name, sync / r.per_s(), goal, "x", better::higher, name);
  }
  return status::ok();
}

}  // namespace skein::bench
