// append: N threads x M one-event ticks committed through the journal, one actor
// per thread with one commit in flight each, in every durability mode; then the
// same events written to RocksDB directly by one writer, with and without fsync;
// then by the designs of bench/baselines/ (baselines.hpp).
//
// Every mode gets a fresh database under the bench directory: append-<mode> and
// append-rocksdb-<put-sync|put-unsynced>.
#include <algorithm>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/stateful_actor.hpp>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <rocksdb/db.h>
#include <string_view>

#include "actors/error.hpp"
#include "actors/journal.hpp"
#include "bench/baselines/baselines.hpp"
#include "bench/workloads.hpp"
#include "persistence/event_log.hpp"
#include "persistence/keys.hpp"
#include "runtime/model/ids.hpp"
#include "runtime/model/json_codec.hpp"

namespace skein::bench {

// What a driver actor hands back when its thread is done (or failed).
struct append_driver_report {
  std::vector<int64_t> latencies_ns;  // send to reply, one per acknowledged commit
  bench_clock::time_point last_ack;
  std::string error;                  // empty: every tick acknowledged
};

}  // namespace skein::bench

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(skein::bench::append_driver_report)

namespace skein::bench {
namespace {

using done_atom = caf::atom_constant<caf::atom("done")>;

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

uint64_t splitmix64(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
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
    out += words[splitmix64(&state) % std::size(words)];
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

// --- skein: one driver actor per thread ----------------------------------------

struct driver_state {
  const thread_plan* plan = nullptr;  // borrowed: the plan outlives every driver
  size_t ticks = 0;
  caf::actor journal;
  caf::actor waiter;
  progress* bar = nullptr;  // borrowed, like the plan
  manifest m;               // resent whole with every tick
  uint64_t acked = 0;       // seq of the last acknowledged tick
  bench_clock::time_point sent;
  append_driver_report report;
};

using driver_actor = caf::stateful_actor<driver_state>;

void finish(driver_actor* self) {
  self->send(self->state.waiter, done_atom::value, std::move(self->state.report));
  self->quit();
}

// Records an ack; false when the journal acknowledged another seq than the one sent.
bool record_ack(driver_actor* self, uint64_t seq, uint64_t last_seq) {
  auto& st = self->state;
  auto now = bench_clock::now();
  st.report.latencies_ns.push_back((now - st.sent).count());
  st.report.last_ack = now;
  st.bar->advance();
  if (last_seq != seq) {
    st.report.error = "thread " + st.plan->thread_id + ": journal acknowledged last_seq " +
                      std::to_string(last_seq) + ", expected " + std::to_string(seq);
    return false;
  }
  st.acked = seq;
  return true;
}

void commit_next(driver_actor* self) {
  auto& st = self->state;
  uint64_t seq = st.acked + 1;
  tick t;
  t.thread_id = st.plan->thread_id;
  t.create = seq == 1;
  t.events.push_back(bench_event(*st.plan, seq));
  st.m.updated_at_ms = t.events.back().ts_ms;
  t.manifest = st.m;
  st.sent = bench_clock::now();
  self->request(st.journal, caf::infinite, commit_atom::value, std::move(t))
      .then(
          [self, seq](uint64_t last_seq) {
            if (!record_ack(self, seq, last_seq) || seq == self->state.ticks) finish(self);
            else commit_next(self);
          },
          [self](caf::error& e) {
            self->state.report.error = to_status(e).to_string();
            finish(self);
          });
}

caf::behavior driver(driver_actor* self, const thread_plan* plan, size_t ticks,
                     caf::actor journal, caf::actor waiter, progress* bar, int64_t now) {
  auto& st = self->state;
  st.plan = plan;
  st.ticks = ticks;
  st.journal = std::move(journal);
  st.waiter = std::move(waiter);
  st.bar = bar;
  st.report.latencies_ns.reserve(ticks);
  st.m.id = plan->thread_id;
  st.m.agent_id = "bench";
  st.m.title = "append bench thread " + std::to_string(plan->index);
  st.m.status = thread_status::running;
  st.m.created_at_ms = st.m.updated_at_ms = now;
  commit_next(self);
  return {};  // no messages of its own: it lives on its pending request
}

struct drive_outcome {
  std::vector<int64_t> latencies_ns;
  bench_clock::time_point last_ack;
  uint64_t failures = 0;
  std::string first_error;
};

void merge(append_driver_report& r, drive_outcome* out) {
  out->latencies_ns.insert(out->latencies_ns.end(), r.latencies_ns.begin(),
                           r.latencies_ns.end());
  out->last_ack = std::max(out->last_ack, r.last_ack);
  if (r.error.empty()) return;
  ++out->failures;
  if (out->first_error.empty()) out->first_error = r.error;
}

// Runs every driver to its end, then closes the journal. The actor system lives
// only in here, so it is gone before the caller's log.
status drive(const append_plan& plan, event_log& log, progress& bar,
             bench_clock::time_point* start, drive_outcome* out) {
  caf::actor_system_config cfg;
  register_skein_types(cfg);
  caf::actor_system sys{cfg};
  auto journal = spawn_journal(sys, log);
  caf::scoped_actor waiter{sys};
  auto waiter_handle = caf::actor_cast<caf::actor>(waiter);
  out->latencies_ns.reserve(plan.total());

  *start = bench_clock::now();
  out->last_ack = *start;
  for (const auto& t : plan.threads) {
    auto d = sys.spawn(driver, &t, plan.ticks, journal, waiter_handle, &bar, plan.created_at_ms);
    waiter->monitor(d);  // a driver killed by an exception must not hang the bench
  }
  size_t finished = 0;
  while (finished < plan.threads.size()) {
    waiter->receive(
        [&](done_atom, append_driver_report& r) {
          merge(r, out);
          ++finished;
        },
        [&](caf::down_msg& d) {
          if (!d.reason) return;  // a normal exit follows the driver's done message
          append_driver_report dead;
          dead.error = "driver actor died: " + sys.render(d.reason);
          merge(dead, out);
          ++finished;
        });
  }
  return journal_close(sys, journal);
}

// Everything acknowledged must be in the log: counters, manifests and events.
status verify(const append_plan& plan, const event_log& log) {
  log_counters c = log.counters();
  if (c.commits != plan.total() || c.events != plan.total() || c.failed != 0 || c.rejected != 0)
    return status::corruption("event log counted " + std::to_string(c.commits) + " commits, " +
                              std::to_string(c.events) + " events, " + std::to_string(c.failed) +
                              " failed, " + std::to_string(c.rejected) + " rejected; expected " +
                              std::to_string(plan.total()) + " commits and events");
  std::vector<event> events;
  for (const auto& t : plan.threads) {
    manifest m;
    SKEIN_TRY(log.read_manifest(t.thread_id, &m));
    if (m.last_seq != plan.ticks)
      return status::corruption("thread " + t.thread_id + ": manifest last_seq " +
                                std::to_string(m.last_seq) + ", expected " +
                                std::to_string(plan.ticks));
    SKEIN_TRY(log.read_events(t.thread_id, 1, 0, &events));
    if (events.size() != plan.ticks || events.back().seq != plan.ticks)
      return status::corruption("thread " + t.thread_id + ": " + std::to_string(events.size()) +
                                " events read back, expected " + std::to_string(plan.ticks));
  }
  return status::ok();
}

// `key`: encrypted at rest under it (the encryption workload); null: plain.
status run_skein(const append_plan& plan, durability mode, const bench_options& options,
                 append_row* row, std::shared_ptr<const master_key> key = nullptr) {
  row->system = "skein";
  row->mode = std::string{to_string(mode)};
  log_options lo;
  lo.path = options.dir + "/append-" + row->mode + (key ? "-encrypted" : "");
  lo.mode = mode;
  lo.encryption = std::move(key);
  SKEIN_TRY(fresh_dir(lo.path));
  std::unique_ptr<event_log> log;
  SKEIN_TRY(event_log::open(lo, &log));

  drive_outcome outcome;
  bench_clock::time_point start;
  status s;
  {
    progress bar{"skein " + row->mode, plan.total(), progress_wanted(options.quiet)};
    s = drive(plan, *log, bar, &start, &outcome);
  }
  row->events = plan.total();
  row->seconds = seconds_since(start, outcome.last_ack);
  row->failures = outcome.failures;
  row->p50_us = quantile_us(outcome.latencies_ns, 0.50);
  row->p99_us = quantile_us(outcome.latencies_ns, 0.99);
  if (options.plot) row->latencies_ns = std::move(outcome.latencies_ns);
  log_counters c = log->counters();
  row->writes = c.writes;
  row->commits = c.commits;
  if (outcome.failures > 0)
    return status::io_error("skein " + row->mode + ": " + std::to_string(outcome.failures) +
                            " thread(s) failed; first: " + outcome.first_error);
  if (!s) return status{s.code(), "skein " + row->mode + ": closing the journal: " + s.message()};
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
                  const bench_options& options, append_row* row) {
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
  row->events = events;
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
                            append_row* row) {
  append_plan plan = make_plan(options.scale);
  return run_skein(plan, mode, options, row, std::move(key));
}

status run_append(const bench_options& options, result* out) {
  append_plan plan = make_plan(options.scale);
  std::string sample;
  SKEIN_TRY(encode_event(bench_event(plan.threads.front(), 1), &sample));
  std::vector<append_row> rows;
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
  const append_row& sync = rows.front();
  for (const auto& r : rows) {
    t.rows.push_back({text(r.system), text(r.mode), num(r.events), num(r.events_per_s()),
                      r.writes > 0 ? num(static_cast<double>(r.commits) / r.writes) : cell{}, num(r.p50_us / 1000),
                      num(r.p99_us / 1000), num(r.failures)});
    std::string name = r.system + " " + r.mode;
    if (!r.note.empty()) t.notes.push_back(name + ": " + r.note);
    if (r.system != "skein")
      t.notes.push_back("skein sync / " + name + ": " + fixed(sync.events_per_s() / r.events_per_s(), 2) + "x");
    if (!options.plot) continue;
    add_bar(out, "throughput-append", "append: throughput (events/s, higher is better)", "events/s", name,
            r.events_per_s());
    add_cdf(out, "latency-append", "append: latency CDF",
            name + (r.system == "skein" ? ": send to ack" : ": one Put"), r.latencies_ns);
  }
  add_target(out, "skein sync events/s", sync.events_per_s(), append_events_per_s_target, "events/s");
  for (const auto& r : rows) {
    std::string name = r.system + " " + r.mode;
    double goal = name == "rocksdb put-unsynced" ? append_ratio_target
                  : name == "lace-design FULL"   ? append_over_lace_full_target
                  : r.system == "opennova-design" ? append_over_opennova_target : 0;
    if (goal > 0)
      add_target(out, "skein sync / " + name, sync.events_per_s() / r.events_per_s(), goal, "x", better::higher, name);
  }
  return status::ok();
}

}  // namespace skein::bench
