// work: work items at scale: create_item with dedup against 10,000 and 100,000
// open items (a new item scans them all; a duplicate is found and touched),
// session_start with 10,000 items, and sweeps: over 1,000,000 work rows with
// nothing due, and over 10,000 items all dormant (one transition each, through
// their thread actors). The items are written straight into the event log first;
// the runtime's open rebuilds its index from them (timed too).
#include <random>

#include "bench/log_builder.hpp"
#include "bench/workloads.hpp"
#include "persistence/work_rows.hpp"
#include "runtime/model/hashing_embedder.hpp"
#include "runtime/model/ids.hpp"

namespace skein::bench {
namespace {

constexpr int64_t clock_start_ms = 1790000000000;
constexpr uint64_t seed = 13;

// Eight words of a 400-word vocabulary: two such texts are far apart (cosine well
// below the dedup threshold) unless they share most words.
std::string random_text(std::mt19937_64& rng) {
  std::string t = "task";
  for (int i = 0; i < 8; ++i) t += " w" + std::to_string(rng() % 400);
  return t;
}

// A fresh database at `path` holding `n` open items of bench_agent_id, created at
// clock_start_ms, with threads or as work rows alone (in empty-thread ticks),
// written 1,000 ticks at a time; then a runtime opened on it on the test clock
// `now`, *open_ms the time of the open.
status build_and_open(const std::string& path, size_t n, bool with_threads,
                      const std::shared_ptr<std::atomic<int64_t>>& now, std::vector<std::string>* texts,
                      std::unique_ptr<runtime>* rt, double* open_ms) {
  {
    std::unique_ptr<event_log> log;
    SKEIN_TRY(open_build_log(path, true, &log));
    SKEIN_TRY(log->put_agent(bench_agent()));
    std::mt19937_64 rng{seed};
    for (size_t from = 0; from < n; from += 1000) {
      std::vector<tick> ticks(with_threads ? 0 : 1);
      for (size_t i = from; i < std::min(n, from + 1000); ++i) {
        work_item w;
        w.text = random_text(rng);
        w.cls = classify_work(w.text);
        w.created_at_ms = w.last_touched_at_ms = clock_start_ms;
        if (texts != nullptr) texts->push_back(w.text);
        std::string id = new_thread_id(clock_start_ms, i + 1);
        tick& t = with_threads ? ticks.emplace_back() : ticks.back();
        t.side_rows.push_back(
            work_row_put({bench_agent_id, id, w, with_threads ? hash_embed(w.text) : std::vector<float>{}}));
        if (!with_threads) continue;
        t.thread_id = t.manifest.id = id;
        t.create = true;
        t.manifest.agent_id = bench_agent_id;
        t.manifest.title = w.text;
        t.manifest.created_at_ms = t.manifest.updated_at_ms = clock_start_ms;
        t.manifest.work = w;
        event e = make_signal("work.created", "{}");
        e.seq = 1;
        e.ts_ms = clock_start_ms;
        t.events.push_back(e);
        for (auto& r : triple_rows({"agent:" + std::string{bench_agent_id}, "created_thread", "thread:" + id,
                                    bench_agent_id, id, 1, clock_start_ms}))
          t.side_rows.push_back(std::move(r));
      }
      SKEIN_TRY(commit_all(*log, ticks));
    }
  }
  runtime_options ro;
  ro.data_dir = path;
  ro.clock = [now] { return now->load(); };
  ro.work_sweep_interval_ms = 0;
  ro.schedule_wake_ms = 0;
  ro.effects.titles = ro.effects.embeddings = ro.effects.compaction = false;
  auto start = bench_clock::now();
  SKEIN_TRY(runtime::open(std::move(ro), rt));
  *open_ms = seconds_since(start, bench_clock::now()) * 1000;
  return status::ok();
}

}  // namespace

status run_work(const bench_options& options, result* out) {
  auto now = std::make_shared<std::atomic<int64_t>>(clock_start_ms + 1000);
  table& t = add_table(out, "work: create_item with dedup (hashing, 384 dims, durability sync), session_start",
                       {col("figure"), col("small", "", 1), col("large", "", 1)});
  for (const char* figure : {"open items", "runtime open (index rebuild) ms", "create, new item p50 us",
                             "create, new item p99 us", "create, duplicate found p50 us",
                             "create, duplicate found p99 us", "session_start p50 ms"})
    t.rows.push_back({text(figure)});
  // 200 fresh and 200 duplicate creates timed per index size (not scaled); 5
  // session_starts on the small one.
  for (bool small : {true, false}) {
    size_t n = scaled_count(small ? 10'000 : 100'000, options.scale);
    std::vector<std::string> texts;
    std::unique_ptr<runtime> rt;
    double open_ms = 0;
    SKEIN_TRY(build_and_open(options.dir + (small ? "/work-10k" : "/work-100k"), n, true, now, &texts, &rt, &open_ms));
    std::mt19937_64 rng{seed + 1};
    std::vector<int64_t> fresh, dup, starts;
    for (size_t i = 0; i < 200; ++i) {
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
    for (size_t i = 0; small && i < 5; ++i) {
      work_session_start in;
      in.agent_id = bench_agent_id;
      work_session_started started;
      SKEIN_TRY(timed(&starts, [&] { return rt->session_start(in, &started); }));
      if (started.items.size() < n)
        return status::corruption("work: session_start listed " + std::to_string(started.items.size()) + " items");
    }
    cell column[] = {num(n), num(open_ms), num(quantile_us(fresh, 0.5)), num(quantile_us(fresh, 0.99)),
                     num(quantile_us(dup, 0.5)), num(quantile_us(dup, 0.99)),
                     small ? num(ms_at(starts, 0.5)) : cell{}};
    for (size_t i = 0; i < t.rows.size(); ++i) t.rows[i].push_back(column[i]);
    SKEIN_TRY(rt->close());
  }

  // Sweeps of 1,000,000 work rows (nothing due), then of 10,000 items with threads,
  // all dormant by the clock (each sweep records one transition).
  table& sweeps = add_table(out, "work: sweeps", {col("figure"), col("value")});
  for (bool dormant : {false, true}) {
    size_t items = scaled_count(dormant ? 10'000 : 1'000'000, options.scale);
    if (dormant) now->store(clock_start_ms + 60 * 24LL * 3600 * 1000);  // 60 days on
    std::unique_ptr<runtime> rt;
    double open_ms = 0;
    SKEIN_TRY(build_and_open(options.dir + (dormant ? "/work-dormant" : "/work-sweep"), items, dormant, now, nullptr,
                             &rt, &open_ms));
    work_sweep_options o;
    o.agent_id = bench_agent_id;
    work_sweep_result r;
    std::vector<int64_t> ns;
    SKEIN_TRY(timed(&ns, [&] { return rt->sweep_items(o, &r); }));
    if (!dormant && (r.examined != items || !r.dormant.empty()))
      return status::corruption("work: the sweep examined " + std::to_string(r.examined));
    if (dormant && r.dormant.size() != items)
      return status::corruption("work: the sweep recorded " + std::to_string(r.dormant.size()));
    double per_s = static_cast<double>(items) / (static_cast<double>(ns[0]) / 1e9);
    sweeps.rows.push_back(
        {text(dormant ? "sweep: items made dormant" : "sweep: open items (nothing due)"), num(items)});
    sweeps.rows.push_back({text(dormant ? "sweep: dormancy recorded/s" : "sweep: items assessed/s"), num(per_s)});
    SKEIN_TRY(rt->close());
  }
  return status::ok();
}

}  // namespace skein::bench
