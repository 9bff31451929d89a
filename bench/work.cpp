// work: work items (runtime/work_service.hpp) at scale. Figures:
//  - create_item with dedup against 10,000 and 100,000 open items of one agent
//    (hashing embedder, 384 dims, durability sync): p50/p99 µs of a create that
//    scans every open item and writes a new one, and of one that finds its
//    duplicate and touches it;
//  - session_start of an agent with 10,000 open items (the sweep, the listing with
//    every manifest read, the session row): p50 ms;
//  - the sweep over 1,000,000 open items (nothing due: it assesses each): items/s,
//    and the sweep that records dormancy for 10,000 items through their thread
//    actors: items/s.
// Every count is multiplied by --scale. The open items are written beforehand
// straight into the event log (the item's creation tick: manifest, work.created,
// work row with its vector, created_thread triple), in batches; the runtime then
// opens on them and rebuilds its index from the work column family (its time is
// reported too). The sweep's 1,000,000 items are work rows alone, without thread
// rows: the sweep reads only its index, and nothing is due, so none is written.
#include <algorithm>
#include <filesystem>
#include <random>

#include "bench/workloads.hpp"
#include "persistence/event_log.hpp"
#include "persistence/work_rows.hpp"
#include "runtime/model/hashing_embedder.hpp"
#include "runtime/model/ids.hpp"

namespace skein::bench {
namespace {

constexpr size_t small_items_at_scale_1 = 10000;
constexpr size_t large_items_at_scale_1 = 100000;
constexpr size_t sweep_items_at_scale_1 = 1000000;
constexpr size_t dormant_items_at_scale_1 = 10000;
constexpr size_t creates_measured = 200;     // fresh creates timed per index size (not scaled)
constexpr size_t session_starts_measured = 5;
constexpr size_t batch_ticks = 1000;         // ticks per commit_all while building
constexpr int64_t clock_start_ms = 1790000000000;
constexpr int64_t day_ms = 24LL * 3600 * 1000;
constexpr uint64_t seed = 13;

// Eight words of a 400-word vocabulary: two such texts are far apart (cosine well
// below the dedup threshold) unless they share most words.
std::string random_text(std::mt19937_64& rng) {
  std::string t = "task";
  for (int i = 0; i < 8; ++i) t += " w" + std::to_string(rng() % 400);
  return t;
}

// Writes `n` open items of `agent` into a fresh database at `path`, with threads
// (with_threads) or as work rows alone.
status build_items(const std::string& path, const std::string& agent, size_t n, bool with_threads,
                   int64_t at_ms, std::vector<std::string>* texts) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  log_options lo;
  lo.path = path;
  lo.mode = durability::flush;  // the build is setup, not measured
  std::unique_ptr<event_log> log;
  SKEIN_TRY(event_log::open(lo, &log));
  agent_config a;
  a.id = agent;
  a.system_prompt = "bench";
  a.engine_config = R"({"default":{"reply":"ok"}})";
  SKEIN_TRY(log->put_agent(a));
  std::mt19937_64 rng{seed};
  for (size_t from = 0; from < n; from += batch_ticks) {
    std::vector<tick> ticks;
    for (size_t i = from; i < std::min(n, from + batch_ticks); ++i) {
      std::string text = random_text(rng);
      if (texts != nullptr) texts->push_back(text);
      work_item w;
      w.text = text;
      w.cls = classify_work(text);
      w.created_at_ms = w.last_touched_at_ms = at_ms;
      std::string id = new_thread_id(at_ms, i + 1);
      tick t;
      t.thread_id = id;
      t.create = true;
      t.manifest.id = id;
      t.manifest.agent_id = agent;
      t.manifest.title = text;
      t.manifest.created_at_ms = t.manifest.updated_at_ms = at_ms;
      t.manifest.work = w;
      event e = make_signal("work.created", "{}");
      e.seq = 1;
      e.ts_ms = at_ms;
      t.events.push_back(e);
      t.side_rows.push_back(work_row_put({agent, id, w, with_threads ? hash_embed(text) : std::vector<float>{}}));
      if (with_threads) {
        for (auto& r : triple_rows({"agent:" + agent, "created_thread", "thread:" + id, agent, id, 1, at_ms}))
          t.side_rows.push_back(std::move(r));
        ticks.push_back(std::move(t));
      } else {
        // Work rows alone: an empty-thread tick carries them.
        if (ticks.empty()) ticks.emplace_back();
        ticks.back().side_rows.push_back(std::move(t.side_rows.back()));
      }
    }
    std::vector<tick*> ptrs;
    for (auto& t : ticks) ptrs.push_back(&t);
    if (with_threads) {
      SKEIN_TRY(log->commit_all(ptrs));
    } else {  // a rows-alone tick (no thread): commit_group takes it
      std::vector<status> results(ptrs.size());
      log->commit_group(ptrs, results);
      for (auto& r : results) SKEIN_TRY(r);
    }
  }
  return status::ok();
}

status open_on(const std::string& path, const std::shared_ptr<std::atomic<int64_t>>& now,
               std::unique_ptr<runtime>* out, double* open_ms) {
  runtime_options ro;
  ro.data_dir = path;
  ro.clock = [now] { return now->load(); };
  ro.work_sweep_interval_ms = 0;
  ro.schedule_wake_ms = 0;
  ro.effects.titles = ro.effects.embeddings = ro.effects.compaction = false;
  auto start = bench_clock::now();
  SKEIN_TRY(runtime::open(std::move(ro), out));
  *open_ms = seconds_since(start, bench_clock::now()) * 1000;
  return status::ok();
}

// Calls fn() and appends its time to *ns.
status timed(std::vector<int64_t>* ns, const std::function<status()>& fn) {
  auto start = bench_clock::now();
  status s = fn();
  ns->push_back((bench_clock::now() - start).count());
  return s;
}

// One index size: its column of the dedup table (session_start on the small one only).
status measure_dedup(const bench_options& options, const std::string& name, size_t n, bool session_starts,
                     std::vector<cell>* column) {
  const std::string path = options.dir + "/" + name;
  std::vector<std::string> texts;
  SKEIN_TRY(build_items(path, bench_agent_id, n, true, clock_start_ms, &texts));
  auto now = std::make_shared<std::atomic<int64_t>>(clock_start_ms + 1000);
  std::unique_ptr<runtime> rt;
  double open_ms = 0;
  SKEIN_TRY(open_on(path, now, &rt, &open_ms));
  std::mt19937_64 rng{seed + 1};
  std::vector<int64_t> fresh, dup, starts;
  for (size_t i = 0; i < creates_measured; ++i) {
    work_create c;
    c.agent_id = bench_agent_id;
    c.text = "fresh " + random_text(rng);
    work_create_result r;
    SKEIN_TRY(timed(&fresh, [&] { return rt->create_item(c, &r); }));
    if (r.deduplicated) return status::corruption("work: a fresh text was taken for a duplicate of " + r.thread.id);
    c.text = texts[(i * 7919) % texts.size()];
    SKEIN_TRY(timed(&dup, [&] { return rt->create_item(c, &r); }));
    if (!r.deduplicated) return status::corruption("work: a stored text was not found as a duplicate");
  }
  for (size_t i = 0; session_starts && i < session_starts_measured; ++i) {
    work_session_start in;
    in.agent_id = bench_agent_id;
    work_session_started started;
    SKEIN_TRY(timed(&starts, [&] { return rt->session_start(in, &started); }));
    if (started.items.size() < n)
      return status::corruption("work: session_start listed " + std::to_string(started.items.size()) + " items");
  }
  *column = {num(n), num(open_ms), num(quantile_us(fresh, 0.5)), num(quantile_us(fresh, 0.99)),
             num(quantile_us(dup, 0.5)), num(quantile_us(dup, 0.99)),
             session_starts ? num(quantile_us(starts, 0.5) / 1000) : cell{}};
  return rt->close();
}

// Sweeps `n` items (work rows alone, nothing due) and then `dormant_n` items with
// threads, all dormant by the clock (each sweep records one transition): items/s.
status measure_sweeps(const bench_options& options, size_t n, size_t dormant_n, table* t) {
  auto now = std::make_shared<std::atomic<int64_t>>(clock_start_ms + 1000);
  work_sweep_options o;
  o.agent_id = bench_agent_id;
  for (bool dormant : {false, true}) {
    const std::string path = options.dir + (dormant ? "/work-dormant" : "/work-sweep");
    size_t items = dormant ? dormant_n : n;
    SKEIN_TRY(build_items(path, bench_agent_id, items, dormant, clock_start_ms, nullptr));
    if (dormant) now->store(clock_start_ms + 60 * day_ms);
    std::unique_ptr<runtime> rt;
    double open_ms = 0;
    SKEIN_TRY(open_on(path, now, &rt, &open_ms));
    work_sweep_result r;
    std::vector<int64_t> ns;
    SKEIN_TRY(timed(&ns, [&] { return rt->sweep_items(o, &r); }));
    if (!dormant && (r.examined != items || !r.dormant.empty()))
      return status::corruption("work: the sweep examined " + std::to_string(r.examined));
    if (dormant && r.dormant.size() != items)
      return status::corruption("work: the sweep recorded " + std::to_string(r.dormant.size()));
    double per_s = static_cast<double>(items) / (static_cast<double>(ns[0]) / 1e9);
    if (dormant) t->rows.insert(t->rows.end(), {{text("sweep: items made dormant"), num(items)},
                                                {text("sweep: dormancy recorded/s"), num(per_s)}});
    else t->rows.insert(t->rows.end(), {{text("sweep: open items (nothing due)"), num(items)},
                                        {text("sweep: items assessed/s"), num(per_s)}});
    SKEIN_TRY(rt->close());
  }
  return status::ok();
}

}  // namespace

status run_work(const bench_options& options, result* out) {
  std::vector<cell> small, large;
  SKEIN_TRY(measure_dedup(options, "work-10k", scaled_count(small_items_at_scale_1, options.scale), true, &small));
  SKEIN_TRY(measure_dedup(options, "work-100k", scaled_count(large_items_at_scale_1, options.scale), false, &large));
  table& t = add_table(out, "work: create_item with dedup (hashing, 384 dims, durability sync), session_start",
                       {col("figure"), col("small", "", 1), col("large", "", 1)});
  const char* figures[] = {"open items", "runtime open (index rebuild) ms", "create, new item p50 us",
                           "create, new item p99 us", "create, duplicate found p50 us",
                           "create, duplicate found p99 us", "session_start p50 ms"};
  for (size_t i = 0; i < std::size(figures); ++i) t.rows.push_back({text(figures[i]), small[i], large[i]});
  table sweeps{"work: sweeps", {col("figure"), col("value")}, {}, {}};
  SKEIN_TRY(measure_sweeps(options, scaled_count(sweep_items_at_scale_1, options.scale),
                           scaled_count(dormant_items_at_scale_1, options.scale), &sweeps));
  out->tables.push_back(std::move(sweeps));
  return status::ok();
}

}  // namespace skein::bench
