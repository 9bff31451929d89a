// http: the cost of the HTTP layer. The runs of `runs` posted to the server in this
// process from 64 client threads with a keep-alive connection each, then the same
// runs embedded (runtime::send().wait()) from as many threads on a fresh database:
// both hold as many runs in flight, so their ratio is what HTTP costs. Also defines
// bench_server and post_run for the other HTTP workloads.
#include <algorithm>
#include <optional>

#include "bench/workloads.hpp"
#include "runtime/model/json_reader.hpp"
#include "tools/client/http_client.hpp"
#include "tools/server/api.hpp"
#include "tools/server/http_server.hpp"

namespace skein::bench {

status bench_server::start(runtime& rt, const http::server_limits& limits, size_t io_threads,
                           std::unique_ptr<bench_server>* out) {
  auto s = std::make_unique<bench_server>();
  // No counters for /metrics: no workload reads it.
  s->api = std::make_unique<server::api>(rt, server::token_store{}, server::api_options{});
  // The service, admission included, as skein serve runs it.
  SKEIN_TRY(http::server::start("127.0.0.1", 0, limits, s->api->service(), io_threads, &s->listener));
  *out = std::move(s);
  return status::ok();
}

bench_server::~bench_server() {
  if (listener) listener->stop();
}

status post_run(http::client& client, const std::string& id, size_t n, const std::string& where,
                const scripted_expect& want, bench_clock::time_point* answered) {
  std::string body = R"({"text":"run )" + std::to_string(n) + R"(","wait":true})";
  http::response res;
  status called = client.call("POST", "/v1/threads/" + id + "/entries", body, &res);
  *answered = bench_clock::now();
  if (called && res.status != 200) called = status::io_error("HTTP " + std::to_string(res.status) + ": " + res.body);
  if (!called) return status{called.code(), where + called.message()};
  // The run_result inside the {"run":{...}} answer, as far as check_scripted_run reads it.
  run_result out;
  auto decode = [&] {
    json::document doc;
    json::dom::element run;
    json::object_reader top, r;
    SKEIN_TRY(json::parse_object(res.body, {}, "response", &doc, &top));
    SKEIN_TRY(top.element("run", &run));
    SKEIN_TRY(json::object_reader::open(run, "response.run", &r));
    std::string outcome;
    SKEIN_TRY(r.string("outcome", &outcome));
    auto parsed = parse_run_outcome(outcome);
    if (!parsed) return status::corruption("response.run.outcome: unknown '" + outcome + "'");
    out.outcome = *parsed;
    SKEIN_TRY(r.string("text", &out.text));
    SKEIN_TRY(r.string("error", &out.error));
    SKEIN_TRY(r.uint("first_seq", &out.first_seq));
    return r.uint("last_seq", &out.last_seq);
  };
  if (status s = decode(); !s) return status{s.code(), where + s.message() + " in " + res.body};
  return check_scripted_run(where, out, want);
}

status run_http(const bench_options& options, result* out) {
  // Fixed, as in the runs workload: 10,000 runs at scale 1.
  constexpr size_t runs_per_thread = 10;
  constexpr size_t io_threads = 2;  // skein serve's default http_threads
  size_t threads = scaled_count(1000, options.scale);
  // At a small scale there are fewer threads than clients; a client without a
  // thread would measure nothing.
  size_t clients = std::min<size_t>(64, threads);
  host_outcome paths[2];  // http, embedded
  for (bool over_http : {true, false}) {
    const char* path = over_http ? "http" : "embedded";
    host_outcome& o = paths[over_http ? 0 : 1];
    std::unique_ptr<runtime> rt;
    std::vector<std::string> ids;
    SKEIN_TRY(open_bench_runtime(options, over_http ? "http" : "http-embedded", {}, bench_agent(), &rt, threads, &ids));
    std::unique_ptr<bench_server> srv;
    if (over_http) SKEIN_TRY(bench_server::start(*rt, http::server_limits{}, io_threads, &srv));
    status driven;
    {
      progress bar{path, ids.size() * runs_per_thread, options.quiet};
      // Round by round over the client's threads, one run at a time: a thread never
      // has two runs at once, so no run waits in a thread's queue and the latency is
      // the path's own. An http::client is not thread-safe: one per client thread.
      auto client_thread = [&](const std::vector<std::string>& mine, host_outcome* mo) {
        std::optional<http::client> client;
        if (srv) client.emplace(http::endpoint{"127.0.0.1", srv->listener->port()});
        for (size_t n = 0; n < runs_per_thread; ++n) {
          for (const auto& id : mine) {
            std::string where = "thread " + id + " run " + std::to_string(n) + ": ";
            bench_clock::time_point sent = bench_clock::now(), answered;
            status s = client ? post_run(*client, id, n, where, {}, &answered)
                              : run_checked(*rt, id, "run " + std::to_string(n));
            mo->record(sent, client ? answered : bench_clock::now(), s);
            bar.advance();
          }
        }
      };
      driven = drive_round_robin(ids, clients, ids.size() * runs_per_thread, client_thread, &o);
    }
    srv.reset();
    if (!driven) return status{driven.code(), std::string{path} + ": " + driven.message()};
    SKEIN_TRY(check_thread_logs(*rt, ids, ids.size(),
                                {1 + scripted_events_per_run * runs_per_thread, runs_per_thread}));
    SKEIN_TRY(check_log_clean(*rt));
    SKEIN_TRY(rt->close());
  }

  std::string n = std::to_string(clients);
  table& t = add_table(
      out,
      "http: " + with_commas(static_cast<double>(threads)) + " threads x " + std::to_string(runs_per_thread) +
          " runs, scripted engine at 0 ms, durability sync, each path on a fresh database;\n"
          "http: POST /v1/threads/{id}/entries {\"wait\":true} from " + n +
          " client threads (one keep-alive connection each)\nto the server in this process on 127.0.0.1 (" +
          std::to_string(io_threads) + " I/O threads); embedded: runtime::send().wait() from " + n + " host threads",
      {col("path"), col("runs"), col("seconds", "s", 2), col("runs/s", "runs/s"), col("p50", "ms", 3),
       col("p99", "ms", 3), col("failures")});
  for (size_t k = 0; k < 2; ++k) {
    host_outcome& o = paths[k];
    t.rows.push_back({text(k == 0 ? "http" : "embedded"), num(o.completed), num(o.seconds()), num(o.per_s()),
                      num(ms_at(o.latencies_ns, 0.50)), num(ms_at(o.latencies_ns, 0.99)),
                      num(o.failures)});
    if (options.plot)
      add_bar(out, "throughput-http", "http: throughput (runs/s, higher is better)", "runs/s",
              k == 0 ? "skein through HTTP" : "skein embedded", o.per_s());
  }
  t.notes.push_back("latency: http, request written to response read; embedded, send to completion. Each client has\n"
                    "one run in flight, so both paths hold the same " + n + " runs at once.");
  add_target(out, "http / embedded runs/s", paths[0].per_s() / paths[1].per_s(), 0.85, "x", better::higher,
             "skein embedded");
  return status::ok();
}

}  // namespace skein::bench
