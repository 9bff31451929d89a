// delegation: parent runs that each ask one child agent through ask_agent: the
// parent's tool call, the child's creation and whole run, the tool result and the
// parent's closing step; send to result is the round trip. Plain runs on other
// threads of the same runtime, driven the same way (a closed loop per host
// thread), give the cost without delegation.
#include <algorithm>

#include "bench/workloads.hpp"

namespace skein::bench {

status run_delegation(const bench_options& options, result* out) {
  const size_t n = scaled_count(2000, options.scale), hosts = 16;
  runtime_options ro;
  ro.effects.titles = ro.effects.embeddings = ro.effects.compaction = false;
  agent_config parent = bench_agent(
      R"({"rules":[{"match":"^go$","turn":1,"tool_calls":[{"name":"ask_agent","id":"a1",)"
      R"("arguments":{"agent":"bench_child","question":"hello"}}]}],"default":{"reply":"got: {tool_result}"}})");
  parent.system_prompt.clear();
  parent.delegation.agents = {"bench_child"};
  std::unique_ptr<runtime> rt;
  SKEIN_TRY(open_bench_runtime(options, "delegation", ro, parent, &rt));
  for (const char* id : {"bench_child", "bench_plain"}) {
    agent_config a;
    a.id = id;
    a.engine_config = R"({"default":{"reply":"ok"}})";
    SKEIN_TRY(rt->create_agent(a));
  }
  std::vector<std::string> parents, plains;
  SKEIN_TRY(create_bench_threads(*rt, bench_agent_id, n, options.quiet, &parents));
  SKEIN_TRY(create_bench_threads(*rt, "bench_plain", n, options.quiet, &plains));

  table& t = add_table(out,
                       "delegation: " + with_commas(static_cast<double>(n)) +
                           " parent runs, each asking one child (scripted 0 ms, sync), " + std::to_string(hosts) +
                           " host threads",
                       {col("runs"), col("runs/s", "runs/s"), col("p50", "ms", 2), col("p99", "ms", 2)});
  // One run on each thread, over `hosts` host threads; each run's text must be `want`.
  std::pair<const char*, const std::vector<std::string>*> kinds[] = {{"plain (no delegation)", &plains},
                                                                      {"delegated (round trip)", &parents}};
  for (auto [label, threads] : kinds) {
    std::string want = threads == &plains ? "ok" : "got: ok";
    std::vector<int64_t> ns(n);
    auto start = bench_clock::now();
    SKEIN_TRY(on_host_threads(n, hosts, [&](size_t i) -> status {
      const std::string& id = (*threads)[i];
      run_input in;
      in.text = "go";
      auto sent = bench_clock::now();
      run_result r;
      SKEIN_TRY(rt->send(id, std::move(in)).wait(&r));
      ns[i] = (bench_clock::now() - sent).count();
      if (r.outcome != run_outcome::completed || r.text != want)
        return status::corruption("delegation: run of " + id + " ended " + std::string{to_string(r.outcome)} +
                                  " with '" + r.text + "' (" + r.error + ")");
      return status::ok();
    }));
    double seconds = seconds_since(start, bench_clock::now());
    // The delegated row comes first.
    t.rows.insert(t.rows.begin(), std::vector<cell>{text(label), num(n / seconds), num(ms_at(ns, 0.5)),
                                                    num(ms_at(ns, 0.99))});
  }
  for (size_t i = 0; i < n; i += std::max<size_t>(1, n / 100)) {
    manifest m;
    SKEIN_TRY(rt->get_thread(parents[i] + ".1", &m));
    if (m.status != thread_status::completed || m.depth != 1)
      return status::corruption("delegation: child " + m.id + " is " + std::string{to_string(m.status)});
  }
  return rt->close();
}

}  // namespace skein::bench
