// The append and runs workloads' baselines (baselines.hpp) on the OpenNova design and
// the Lace design: the same threads written step by step from host threads, host h
// owning threads h, h + hosts, ... and going round by round (step 0 of each of its
// threads, then step 1, ...), as skein's threads all step at once. A step of append
// is one tick (one event); a step of runs is one run: user message, thread.start,
// assistant message "ok", result, thread.stop, as skein's scripted run writes. Their
// calls block, so a host thread has one step in flight. The OpenNova design rewrites
// its manifest after each step: skein's tick carries the manifest in its batch.
//
// Databases: <workload>-opennova-design/ (one file per thread) and
// <workload>-lace-design-<FULL|NORMAL>/lace.db under the bench directory.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>

#include "bench/baselines/baselines.hpp"
#include "bench/baselines/lace_design.hpp"
#include "bench/baselines/opennova_design.hpp"
#include "runtime/model/ids.hpp"
#include "runtime/model/json_codec.hpp"
#include "runtime/model/manifest.hpp"

namespace skein::bench {
namespace {

// One fsync or more per event: capped as the rocksdb put-sync baseline is, at about
// this many events (append: whole rounds, so every thread ends with as many) or runs
// (runs: whole threads, each with every one of its runs, so files grow as skein's
// logs do) at scale 1.
constexpr double synced_events_at_scale_1 = 4000;
constexpr double synced_runs_at_scale_1 = 2000;

struct design_spec {
  const char* system;
  lace_sync sync;  // lace-design only
  bool capped;     // NORMAL syncs at checkpoints only: cheap enough for every step
  const char* tick_note;
  const char* run_note;
};

constexpr design_spec designs[] = {
    {"opennova-design", lace_sync::full, true,
     "each tick: its event line appended + fdatasync, then the manifest line rewritten (temp file, fsync, rename)",
     "a run: 5 event lines, each appended + fdatasync, then the manifest line rewritten (temp file, fsync, rename)"},
    {"lace-design", lace_sync::full, true,
     "one transaction per event (INSERT event, UPDATE thread), WAL, one connection behind a mutex",
     "a run: 5 transactions (INSERT event, UPDATE thread), WAL, one connection behind a mutex"},
    {"lace-design", lace_sync::normal, false,
     "one transaction per event (INSERT event, UPDATE thread), WAL, one connection behind a mutex",
     "a run: 5 transactions (INSERT event, UPDATE thread), WAL, one connection behind a mutex"},
};

bool is_nova(const design_spec& d) { return d.system == std::string_view{"opennova-design"}; }
std::string mode_of(const design_spec& d) { return is_nova(d) ? "fdatasync" : to_string(d.sync); }

// One design opened fresh in its directory.
struct design {
  std::unique_ptr<opennova_store> nova;
  std::unique_ptr<lace_store> lace;

  status open(const design_spec& spec, const std::string& dir) {
    SKEIN_TRY(fresh_dir(dir));
    if (is_nova(spec)) {
      nova = std::make_unique<opennova_store>(dir);
      return status::ok();
    }
    return lace_store::open(dir + "/lace.db", spec.sync, &lace);
  }

  status create(const manifest& m) {
    if (!nova) return lace->create_thread(m.id, bench_agent_id, m.created_at_ms);
    std::string json;
    SKEIN_TRY(encode_manifest(m, &json));
    return nova->create_thread(m.id, json);
  }

  // The events of one step (seqs first_seq, ...); OpenNova then rewrites the manifest.
  status step(manifest m, uint64_t first_seq, const std::vector<std::string>& events) {
    for (size_t k = 0; k < events.size(); ++k)
      SKEIN_TRY(nova ? nova->append_event(m.id, events[k]) : lace->append_event(m.id, first_seq + k, events[k], now_ms()));
    if (!nova) return status::ok();
    m.updated_at_ms = now_ms();
    m.last_seq = first_seq + events.size() - 1;
    std::string json;
    SKEIN_TRY(encode_manifest(m, &json));
    return nova->end_run(m.id, json);
  }

  // The thread must hold exactly seqs 1..events (OpenNova: and its manifest at last_seq events).
  status check(const std::string& id, uint64_t events) {
    auto wrong = [&](const std::string& what) {
      return status::corruption("thread " + id + ": " + what + ", expected seqs 1.." + std::to_string(events));
    };
    if (lace) {
      lace_thread_counts c;
      SKEIN_TRY(lace->read_thread(id, &c));
      if (c.events != events || c.distinct_seqs != events || c.min_seq != (events > 0 ? 1 : 0) ||
          c.max_seq != events || c.last_seq != events)
        return wrong(std::to_string(c.events) + " event rows, " + std::to_string(c.distinct_seqs) +
                     " distinct seqs from " + std::to_string(c.min_seq) + " to " + std::to_string(c.max_seq) +
                     ", threads.last_seq " + std::to_string(c.last_seq));
      return status::ok();
    }
    std::string manifest_line;
    std::vector<std::string> lines;
    SKEIN_TRY(nova->read_thread(id, &manifest_line, &lines));
    manifest m;
    SKEIN_TRY(decode_manifest(manifest_line, &m));
    if (m.id != id || m.last_seq != events || lines.size() != events)
      return wrong("manifest of " + m.id + " at last_seq " + std::to_string(m.last_seq) + " over " +
                   std::to_string(lines.size()) + " event lines");
    for (size_t k = 0; k < lines.size(); ++k) {
      event e;
      SKEIN_TRY(decode_event(lines[k], &e));
      if (e.seq != k + 1) return wrong("line " + std::to_string(k + 2) + " holds seq " + std::to_string(e.seq));
    }
    return status::ok();
  }
};

struct pass_figures {
  std::vector<int64_t> latencies_ns;  // one per step
  double seconds = 0;                 // first step to the last host's end
};

// The events of step `round` of thread `i` (its first seq follows the earlier steps').
using step_events = std::function<status(size_t i, size_t round, std::vector<std::string>* events)>;

// Creates `threads` on the design at `dir`, runs `rounds` steps of `per_step` events
// on each from `hosts` host threads, then reads every thread back. The first failure
// stops every host.
status drive_design(const design_spec& spec, const std::string& dir, const std::vector<manifest>& threads,
                    size_t rounds, uint64_t per_step, size_t hosts, bool quiet, const step_events& make,
                    pass_figures* out) {
  std::string label = std::string{spec.system} + " " + mode_of(spec);
  auto failed = [&](const status& s, const char* what) { return status{s.code(), label + ": " + what + s.message()}; };
  design d;
  if (status s = d.open(spec, dir); !s) return failed(s, "");
  for (const auto& m : threads)
    if (status s = d.create(m); !s) return failed(s, "");
  std::vector<std::vector<int64_t>> ns(hosts);
  std::atomic<bool> stop{false};
  progress bar{label, threads.size() * rounds, progress_wanted(quiet)};
  auto start = bench_clock::now();
  status s = on_host_threads(hosts, hosts, [&](size_t h) {
    std::vector<std::string> events;
    for (size_t round = 0; round < rounds; ++round) {
      for (size_t i = h; i < threads.size() && !stop.load(std::memory_order_relaxed); i += hosts) {
        auto sent = bench_clock::now();
        status called = make(i, round, &events);
        if (called) called = d.step(threads[i], round * per_step + 1, events);
        ns[h].push_back((bench_clock::now() - sent).count());
        bar.advance();
        if (!called) {
          stop = true;
          return called;
        }
      }
    }
    return status::ok();
  });
  out->seconds = seconds_since(start, bench_clock::now());
  if (!s) return failed(s, "");
  for (auto& n : ns) out->latencies_ns.insert(out->latencies_ns.end(), n.begin(), n.end());
  for (const auto& m : threads)
    if (status v = d.check(m.id, rounds * per_step); !v) return failed(v, "lost writes: ");
  return status::ok();
}

std::string thread_id(size_t index, int64_t created_at_ms) {
  // An odd multiplier spreads the ids as random ones would, without repeats.
  return new_thread_id(created_at_ms, (index + 1) * 0x9e3779b97f4a7c15ull);
}

size_t capped(double at_scale_1, double scale, size_t per_unit, size_t max) {
  return std::clamp<size_t>(static_cast<size_t>(std::llround(at_scale_1 * scale)) / per_unit, 1, max);
}

}  // namespace

status run_append_baselines(const append_baseline_input& in, const bench_options& options,
                            std::vector<measured_row>* rows) {
  size_t hosts = 2 * std::max<size_t>(1, std::thread::hardware_concurrency());
  int64_t created_at_ms = now_ms();
  std::vector<manifest> threads(in.thread_ids.size());
  for (size_t i = 0; i < threads.size(); ++i) {
    // The manifest skein's append drivers send with their ticks.
    manifest& m = threads[i];
    m.id = in.thread_ids[i];
    m.agent_id = bench_agent_id;
    m.title = "append bench thread " + std::to_string(i);
    m.status = thread_status::running;
    m.created_at_ms = m.updated_at_ms = created_at_ms;
  }
  for (const auto& spec : designs) {
    size_t rounds = spec.capped ? capped(synced_events_at_scale_1, options.scale, threads.size(), in.ticks) : in.ticks;
    pass_figures f;
    SKEIN_TRY(drive_design(spec, options.dir + "/append-" + spec.system + (is_nova(spec) ? "" : "-" + mode_of(spec)),
                           threads, rounds, 1, hosts, options.quiet,
                           [&](size_t i, size_t round, std::vector<std::string>* events) {
                             events->resize(1);
                             return in.event_json(i, round + 1, &events->front());
                           },
                           &f));
    measured_row& row = rows->emplace_back();
    row.system = spec.system;
    row.mode = mode_of(spec);
    row.host_threads = hosts;
    row.note = std::string{spec.tick_note} + "; " + std::to_string(hosts) + " host threads" +
               (is_nova(spec) ? ", one lock per thread" : "");
    row.count = f.latencies_ns.size();
    row.seconds = f.seconds;
    row.p50_us = quantile_us(f.latencies_ns, 0.50);
    row.p99_us = quantile_us(f.latencies_ns, 0.99);
  }
  return status::ok();
}

status run_runs_baselines(const runs_baseline_input& in, const bench_options& options,
                          std::vector<measured_row>* rows) {
  int64_t created_at_ms = now_ms();
  for (const auto& spec : designs) {
    size_t n = spec.capped ? capped(synced_runs_at_scale_1, options.scale, in.runs_per_thread, in.threads) : in.threads;
    std::vector<manifest> threads(n);
    for (size_t i = 0; i < n; ++i) {
      threads[i].id = thread_id(i, created_at_ms);
      threads[i].agent_id = bench_agent_id;
      threads[i].status = thread_status::open;  // where a chat thread rests between runs
      threads[i].created_at_ms = threads[i].updated_at_ms = created_at_ms;
    }
    pass_figures f;
    SKEIN_TRY(drive_design(spec, options.dir + "/runs-" + spec.system + (is_nova(spec) ? "" : "-" + mode_of(spec)),
                           threads, in.runs_per_thread, scripted_events_per_run, in.host_threads, options.quiet,
                           [](size_t, size_t round, std::vector<std::string>* out) {
                             std::string run_id = new_run_id();
                             event events[] = {make_message(message_role::user, "run " + std::to_string(round)),
                                               make_signal("thread.start"), make_message(message_role::assistant, "ok"),
                                               make_result({}, 0, 0, 1, "completed"), make_signal("thread.stop")};
                             static_assert(std::size(events) == scripted_events_per_run);
                             out->assign(std::size(events), {});
                             for (size_t k = 0; k < std::size(events); ++k) {
                               events[k].seq = round * scripted_events_per_run + k + 1;
                               events[k].ts_ms = now_ms();
                               events[k].run_id = run_id;
                               SKEIN_TRY(encode_event(events[k], &(*out)[k]));
                             }
                             return status::ok();
                           },
                           &f));
    measured_row& row = rows->emplace_back();
    row.system = spec.system;
    row.mode = mode_of(spec);
    row.threads = n;
    row.host_threads = in.host_threads;
    row.note = std::string{spec.run_note} + "; " +
               (n == in.threads ? "all " + std::to_string(n) + " threads"
                                : std::to_string(n) + " of the " + std::to_string(in.threads) + " threads (capped)") +
               ", " + std::to_string(in.host_threads) + " host threads with one run in flight each";
    row.count = f.latencies_ns.size();
    row.events = row.count * scripted_events_per_run;
    row.seconds = f.seconds;
    row.p50_us = quantile_us(f.latencies_ns, 0.50);
    row.p99_us = quantile_us(f.latencies_ns, 0.99);
  }
  // kernl: every thread at once on Node's one event loop; never fails the workload.
  kernl_row k;
  run_kernl(in.threads, in.runs_per_thread, 0, &k);
  measured_row& row = rows->emplace_back();
  row.system = "kernl";
  row.mode = "in-memory";
  row.host_threads = 1;
  row.skipped = k.skipped;
  if (!k.skipped.empty()) return status::ok();
  row.mode = k.storage + " " + k.version;  // "in-memory 0.8.2"
  row.threads = in.threads;
  row.count = k.runs;
  row.events = k.events;
  row.seconds = k.seconds;
  row.p50_us = k.p50_us;
  row.p99_us = k.p99_us;
  row.note = "kernl " + k.version + " from npm on Node " + k.node + ": its default " + k.storage +
             " storage, the mock model it ships for its tests answering \"ok\"; every thread at once on one "
             "event loop, each thread's runs in turn; " +
             std::to_string(k.events / std::max<uint64_t>(1, k.runs)) + " events per run";
  return status::ok();
}

}  // namespace skein::bench
