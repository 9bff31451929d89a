// namespaces: a page of one namespace's newest threads among many namespaces (a
// database each), against the same threads in one shared database with an agent
// per would-be namespace; the cold open of one namespace's runtime against the
// shared one's, and the open of the namespace set alone (its registry).
#include <filesystem>

#include "bench/log_builder.hpp"
#include "bench/workloads.hpp"
#include "runtime/namespaces/namespaces.hpp"

namespace skein::bench {
namespace {

constexpr size_t page = 100;

std::string ns_name(size_t i) { return "ns-" + std::to_string(i); }

// 200 pages of `q`, each timed and holding `page` threads: {p50 us, p99 us}.
status time_listings(runtime& rt, const thread_query& q, double* p50_us, double* p99_us) {
  std::vector<int64_t> ns;
  for (size_t i = 0; i < 200; ++i) {
    thread_page p;
    SKEIN_TRY(timed(&ns, [&] { return rt.list_threads(q, &p); }));
    if (p.threads.size() != page)
      return status::corruption("a page of " + std::to_string(p.threads.size()) + " threads, expected " +
                                std::to_string(page));
  }
  *p50_us = quantile_us(ns, 0.5);
  *p99_us = quantile_us(ns, 0.99);
  return status::ok();
}

}  // namespace

status run_namespaces(const bench_options& options, result* out) {
  const size_t spaces = std::max<size_t>(2, scaled_count(100, options.scale));
  const size_t per_space = std::max<size_t>(page, scaled_count(1'000'000, options.scale) / spaces);
  const size_t target = spaces / 2;
  namespace_set_options so;
  so.data_dir = options.dir + "/namespaces-set";
  so.runtime.mode = durability::sync;
  const std::string shared_dir = options.dir + "/namespaces-shared";
  std::error_code ec;
  std::filesystem::remove_all(so.data_dir, ec);

  // One database per namespace, and the same threads in one database, one agent per namespace.
  std::unique_ptr<namespace_set> set;
  SKEIN_TRY(namespace_set::open(so, &set));
  std::unique_ptr<event_log> shared_log;
  SKEIN_TRY(open_build_log(shared_dir, true, &shared_log));
  for (size_t i = 0; i < spaces; ++i) {
    SKEIN_TRY(set->create(ns_name(i), {}));
    std::unique_ptr<event_log> log;
    SKEIN_TRY(open_build_log(set->database_dir(ns_name(i)), true, &log));
    agent_config a = bench_agent_config();
    for (event_log* l : {log.get(), shared_log.get()}) {
      SKEIN_TRY(l->put_agent(a));
      build_stats one;
      SKEIN_TRY(build_threads(*l, a.id, bench_thread_ids(per_space, i), history_events_min, true, &one));
      a.id = ns_name(i);  // the shared database's agent
    }
    if (!options.quiet && i % 10 == 0) std::fprintf(stderr, "namespaces: built %zu of %zu databases\r", i + 1, spaces);
  }
  shared_log.reset();
  SKEIN_TRY(set->close());
  set.reset();

  double set_open_ms = 0, open_ms[2] = {}, p50_us[2] = {}, p99_us[2] = {};  // [own database, one shared]
  thread_query q;
  q.limit = page;
  {
    auto start = bench_clock::now();
    SKEIN_TRY(namespace_set::open(so, &set));
    auto opened = bench_clock::now();
    set_open_ms = seconds_since(start, opened) * 1000;
    std::shared_ptr<runtime> rt;
    SKEIN_TRY(set->runtime_of(ns_name(target), &rt));
    open_ms[0] = seconds_since(opened, bench_clock::now()) * 1000;
    q.index = thread_query::by::updated;
    SKEIN_TRY(time_listings(*rt, q, &p50_us[0], &p99_us[0]));
    rt.reset();
    SKEIN_TRY(set->close());
  }
  {
    runtime_options ro;
    ro.data_dir = shared_dir;
    std::unique_ptr<runtime> rt;
    auto start = bench_clock::now();
    SKEIN_TRY(runtime::open(std::move(ro), &rt));
    open_ms[1] = seconds_since(start, bench_clock::now()) * 1000;
    q.index = thread_query::by::agent;
    q.value = ns_name(target);
    SKEIN_TRY(time_listings(*rt, q, &p50_us[1], &p99_us[1]));
    SKEIN_TRY(rt->close());
  }

  table& t = add_table(out,
                       "namespaces: a page of " + std::to_string(page) + " threads in one of " +
                           std::to_string(spaces) + " namespaces (" + with_commas(static_cast<double>(per_space)) +
                           " threads each, " + with_commas(static_cast<double>(spaces * per_space)) + " in all)",
                       {col("figure"), col("own database", "", 1), col("one shared", "", 1), col("ratio", "", 2)});
  std::pair<const char*, const double*> figures[] = {
      {"open ms (namespace runtime / shared runtime)", open_ms}, {"page p50 us", p50_us}, {"page p99 us", p99_us}};
  for (auto [what, v] : figures) t.rows.push_back({text(what), num(v[0]), num(v[1]), num(v[1] > 0 ? v[0] / v[1] : 0)});
  t.rows.push_back({text("namespace set open ms (registry only)"), num(set_open_ms), cell{}, cell{}});
  return status::ok();
}

}  // namespace skein::bench
