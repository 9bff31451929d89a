// schedules: one-shot schedules due within one minute of the runtime's test clock,
// each firing a new trigger thread. The clock advances in 100 ms steps, each
// followed by fire_due_schedules() (returns once every firing is durable); lag is
// the step's lateness on the test clock plus the wall time of its fire call. The
// trigger threads' runs share the cores meanwhile; every schedule must fire once.
#include <algorithm>
#include <atomic>

#include "bench/workloads.hpp"

namespace skein::bench {

status run_schedules(const bench_options& options, result* out) {
  const size_t n = scaled_count(100'000, options.scale);
  const int64_t start_ms = 1790000000000, window_ms = 60000, step_ms = 100;  // any fixed start does
  auto now = std::make_shared<std::atomic<int64_t>>(start_ms);
  runtime_options ro;
  ro.clock = [now] { return now->load(); };
  ro.schedule_wake_ms = 0;  // only the steps fire
  ro.effects.titles = ro.effects.embeddings = ro.effects.compaction = false;
  agent_config agent;
  agent.id = bench_agent_id;
  agent.engine_config = R"({"default":{"reply":"ok"}})";
  std::unique_ptr<runtime> rt;
  SKEIN_TRY(open_bench_runtime(options, "schedules", ro, agent, &rt));

  // Due times spread evenly over the window, 1 ms after the start at the earliest.
  auto due_of = [&](size_t i) { return start_ms + 1 + static_cast<int64_t>(i) * (window_ms - 1) / int64_t(n); };
  auto created_start = bench_clock::now();
  // 16 creators share the journal's fsyncs.
  SKEIN_TRY(on_host_threads(n, 16, [&](size_t i) {
    schedule s;
    s.id = "bs" + std::to_string(i);
    s.agent_id = bench_agent_id;
    s.kind = schedule_kind::once;
    s.at_ms = due_of(i);
    s.input_text = "scheduled " + std::to_string(i);
    return rt->create_schedule(std::move(s));
  }));
  double create_s = seconds_since(created_start, bench_clock::now());

  std::vector<int64_t> lag_ns;
  size_t fired = 0, next_due = 0;
  double fire_s = 0;
  for (int64_t t = start_ms + step_ms; t <= start_ms + window_ms + step_ms; t += step_ms) {
    now->store(t);
    auto start = bench_clock::now();
    size_t step_fired = 0;
    SKEIN_TRY(rt->fire_due_schedules(&step_fired));
    int64_t wall_ns = (bench_clock::now() - start).count();
    fire_s += static_cast<double>(wall_ns) / 1e9;
    fired += step_fired;
    for (; next_due < n && due_of(next_due) <= t; ++next_due)
      lag_ns.push_back((t - due_of(next_due)) * 1000000 + wall_ns);
  }
  const uint64_t rss = rss_bytes();
  if (fired != n)
    return status::corruption("schedules: " + std::to_string(fired) + " firings of " + std::to_string(n) +
                              " schedules due");
  // Exactly once: every sampled schedule fired once and none is due again.
  for (size_t i = 0; i < n; i += std::max<size_t>(1, n / 1000)) {
    schedule s;
    SKEIN_TRY(rt->get_schedule("bs" + std::to_string(i), &s));
    if (s.fire_count != 1 || s.next_fire_at_ms != 0)
      return status::corruption("schedules: bs" + std::to_string(i) + " fired " + std::to_string(s.fire_count) +
                                " times");
  }
  SKEIN_TRY(rt->close());

  table& t = add_table(out,
                       "schedules: " + with_commas(static_cast<double>(n)) + " one-shot schedules due within " +
                           std::to_string(window_ms / 1000) + " s of test clock, steps of " + std::to_string(step_ms) +
                           " ms",
                       {col("figure"), col("value", "", 1)});
  t.rows = {{text("creations/s"), num(n / create_s)},
            {text("firings/s"), num(n / fire_s)},
            {text("lag p50 ms"), num(ms_at(lag_ns, 0.5))},
            {text("lag p99 ms"), num(ms_at(lag_ns, 0.99))},
            {text("lag max ms"), num(ms_at(lag_ns, 1.0))},
            {text("RSS after firing MiB"), num(rss / 1048576.0)}};
  return status::ok();
}

}  // namespace skein::bench
