// namespaces: a listing in one namespace among many. `threads` threads spread
// evenly over `namespaces` namespaces — each namespace its own database, built
// straight into its event log by log_builder — against the same threads in one
// shared database, one agent per would-be namespace (what a namespace column in
// shared keys would give). Figures: a page of one namespace's newest threads
// (one agent's in the shared database) p50/p99, the cold open of one
// namespace's runtime against the open of the shared database, and the open of
// the namespace set itself (the registry; no database is opened until used).
#include <filesystem>

#include "bench/log_builder.hpp"
#include "bench/workloads.hpp"
#include "runtime/namespaces.hpp"

namespace skein::bench {
namespace {

constexpr size_t threads_at_scale_1 = 1000000;
constexpr size_t namespaces_at_scale_1 = 100;
constexpr size_t page = 100;
constexpr size_t listings = 200;

std::string ns_name(size_t i) { return "ns-" + std::to_string(i); }

struct listing_figures {
  double open_ms = 0;
  double p50_us = 0, p99_us = 0;
  size_t page_threads = 0;
};

// Pages of `q` on `rt`, each timed; every page must hold `want` threads.
status time_listings(runtime& rt, thread_query q, size_t want, listing_figures* f) {
  std::vector<int64_t> ns;
  for (size_t i = 0; i < listings; ++i) {
    thread_page p;
    auto start = bench_clock::now();
    SKEIN_TRY(rt.list_threads(q, &p));
    ns.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(bench_clock::now() - start).count());
    if (p.threads.size() != want)
      return status::corruption("a page of " + std::to_string(p.threads.size()) + " threads, expected " +
                                std::to_string(want));
    f->page_threads = p.threads.size();
  }
  f->p50_us = quantile_us(ns, 0.5);
  f->p99_us = quantile_us(ns, 0.99);
  return status::ok();
}

}  // namespace

status run_namespaces(const bench_options& options, result* out) {
  namespace fs = std::filesystem;
  const size_t spaces = std::max<size_t>(2, scaled_count(namespaces_at_scale_1, options.scale));
  const size_t per_space = std::max<size_t>(page, scaled_count(threads_at_scale_1, options.scale) / spaces);
  const size_t target = spaces / 2;
  fs::path set_dir = fs::path(options.dir) / "namespaces-set";
  fs::path shared_dir = fs::path(options.dir) / "namespaces-shared";
  std::error_code ec;
  fs::remove_all(set_dir, ec);
  fs::remove_all(shared_dir, ec);

  // One database per namespace.
  build_stats built;
  {
    namespace_set_options so;
    so.data_dir = set_dir.string();
    std::unique_ptr<namespace_set> set;
    SKEIN_TRY(namespace_set::open(std::move(so), &set));
    for (size_t i = 0; i < spaces; ++i) {
      SKEIN_TRY(set->create(ns_name(i), {}));
      std::unique_ptr<event_log> log;
      SKEIN_TRY(open_build_log(set->database_dir(ns_name(i)), true, &log));
      SKEIN_TRY(log->put_agent(bench_agent_config()));
      build_stats one;
      SKEIN_TRY(build_threads(*log, bench_agent_id, bench_thread_ids(per_space, i), history_events_min, true, &one));
      built.threads += one.threads;
      built.events += one.events;
      if (!options.quiet && i % 10 == 0) std::fprintf(stderr, "namespaces: built %zu of %zu databases\r", i + 1, spaces);
    }
    SKEIN_TRY(set->close());
  }
  // The same threads in one database, one agent per namespace.
  {
    std::unique_ptr<event_log> log;
    SKEIN_TRY(open_build_log(shared_dir.string(), true, &log));
    for (size_t i = 0; i < spaces; ++i) {
      agent_config a = bench_agent_config();
      a.id = ns_name(i);
      SKEIN_TRY(log->put_agent(a));
      build_stats one;
      SKEIN_TRY(build_threads(*log, a.id, bench_thread_ids(per_space, i), history_events_min, true, &one));
    }
  }

  thread_query newest;
  newest.index = thread_query::by::updated;
  newest.limit = page;
  listing_figures own, shared;
  double set_open_ms = 0;
  {
    namespace_set_options so;
    so.data_dir = set_dir.string();
    so.runtime.mode = durability::sync;
    std::unique_ptr<namespace_set> set;
    auto start = bench_clock::now();
    SKEIN_TRY(namespace_set::open(std::move(so), &set));
    auto opened = bench_clock::now();
    set_open_ms = seconds_since(start, opened) * 1000;
    std::shared_ptr<runtime> rt;
    SKEIN_TRY(set->runtime_of(ns_name(target), &rt));
    own.open_ms = seconds_since(opened, bench_clock::now()) * 1000;
    SKEIN_TRY(time_listings(*rt, newest, page, &own));
    rt.reset();
    SKEIN_TRY(set->close());
  }
  {
    runtime_options ro;
    ro.data_dir = shared_dir.string();
    ro.mode = durability::sync;
    std::unique_ptr<runtime> rt;
    auto start = bench_clock::now();
    SKEIN_TRY(runtime::open(std::move(ro), &rt));
    shared.open_ms = seconds_since(start, bench_clock::now()) * 1000;
    thread_query by_agent;
    by_agent.index = thread_query::by::agent;
    by_agent.value = ns_name(target);
    by_agent.limit = page;
    SKEIN_TRY(time_listings(*rt, by_agent, page, &shared));
    SKEIN_TRY(rt->close());
  }

  table& t = add_table(out,
                       "namespaces: a page of " + std::to_string(page) + " threads in one of " +
                           std::to_string(spaces) + " namespaces (" + with_commas(static_cast<double>(per_space)) +
                           " threads each, " + with_commas(static_cast<double>(built.threads)) + " in all)",
                       {col("figure"), col("own database", "", 1), col("one shared", "", 1), col("ratio", "", 2)});
  auto row = [&](const char* what, double own_v, double shared_v) {
    t.rows.push_back({text(what), num(own_v), num(shared_v), num(shared_v > 0 ? own_v / shared_v : 0)});
  };
  row("open ms (namespace runtime / shared runtime)", own.open_ms, shared.open_ms);
  row("page p50 us", own.p50_us, shared.p50_us);
  row("page p99 us", own.p99_us, shared.p99_us);
  t.rows.push_back({text("namespace set open ms (registry only)"), num(set_open_ms), cell{}, cell{}});
  return status::ok();
}

}  // namespace skein::bench
