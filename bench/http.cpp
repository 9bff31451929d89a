// http: the cost of the HTTP layer. The runs of the runs workload posted as
// POST /v1/threads/{id}/entries {"wait":true} to the server in this process, from
// 64 client threads with one keep-alive connection each; then the same runs
// embedded, runtime::send().wait() from as many host threads, on a fresh
// database. Both paths hold the same number of runs in flight, so their ratio is
// what the HTTP layer (parsing, routing, JSON, loopback TCP) costs.
//
// Also defines bench_server, the in-process server of the HTTP workloads.
#include <algorithm>

#include "bench/workloads.hpp"
#include "runtime/model/json_reader.hpp"
#include "tools/client/http_client.hpp"
#include "tools/server/api.hpp"
#include "tools/server/http_server.hpp"

namespace skein::bench {

// --- bench_server ------------------------------------------------------------------

status bench_server::start(runtime& rt, const http::server_limits& limits, size_t io_threads,
                           std::unique_ptr<bench_server>* out) {
  std::unique_ptr<bench_server> s{new bench_server};
  // No counters for /metrics: no workload reads it.
  s->api_ = std::make_unique<server::api>(rt, server::token_store{}, server::api_options{});
  // The service, admission included, as skein serve runs it.
  SKEIN_TRY(http::server::start("127.0.0.1", 0, limits, s->api_->service(), io_threads, &s->http_));
  *out = std::move(s);
  return status::ok();
}

bench_server::~bench_server() {
  if (http_) http_->stop();
}

uint16_t bench_server::port() const { return http_->port(); }

// --- the http workload ---------------------------------------------------------------

namespace {

// The run_result inside a {"run":{...}} answer, as far as check_scripted_run reads it.
status decode_run(const std::string& body, run_result* out) {
  json::document doc;
  json::dom::element run;
  json::object_reader top, r;
  SKEIN_TRY(json::parse(body, {}, "response", &doc));
  SKEIN_TRY(json::object_reader::open(doc.root(), "response", &top));
  SKEIN_TRY(top.element("run", &run));
  SKEIN_TRY(json::object_reader::open(run, "response.run", &r));
  std::string outcome;
  SKEIN_TRY(r.string("outcome", &outcome));
  auto parsed = parse_run_outcome(outcome);
  if (!parsed) return status::corruption("response.run.outcome: unknown '" + outcome + "'");
  out->outcome = *parsed;
  SKEIN_TRY(r.string("text", &out->text));
  SKEIN_TRY(r.string("error", &out->error));
  SKEIN_TRY(r.uint("first_seq", &out->first_seq));
  return r.uint("last_seq", &out->last_seq);
}

}  // namespace

status post_run(http::client& client, const std::string& id, size_t n, run_result* out,
                bench_clock::time_point* answered) {
  std::string body = R"({"text":"run )" + std::to_string(n) + R"(","wait":true})";
  http::response res;
  status called = client.call("POST", "/v1/threads/" + id + "/entries", body, &res);
  if (answered != nullptr) *answered = bench_clock::now();
  SKEIN_TRY(called);
  if (res.status != 200) return status::io_error("HTTP " + std::to_string(res.status) + ": " + res.body);
  if (status s = decode_run(res.body, out); !s) return status{s.code(), s.message() + " in " + res.body};
  return status::ok();
}

namespace {

constexpr double http_over_embedded_min = 0.85;
constexpr size_t threads_at_scale_1 = 1000;
// Fixed, as in the runs workload: 10,000 runs at scale 1.
constexpr size_t runs_per_thread = 10;
constexpr size_t clients_max = 64;
// skein serve's default http_threads.
constexpr size_t io_threads = 2;
constexpr const char* engine_config = R"({"default":{"reply":"ok","latency_ms":0}})";

// Sends run `n` of thread `id` and waits for its end; sets *answered when the
// answer came, before it is checked. An error names the run.
using run_fn = std::function<status(const std::string& id, size_t n, bench_clock::time_point* answered)>;

std::string run_where(const std::string& id, size_t n) { return "thread " + id + " run " + std::to_string(n) + ": "; }

// A run through the server. Its client is this sender's own: one per client thread.
run_fn http_sender(uint16_t port) {
  auto client = std::make_shared<http::client>(http::endpoint{"127.0.0.1", port});
  return [client](const std::string& id, size_t n, bench_clock::time_point* answered) {
    run_result r;
    if (status s = post_run(*client, id, n, &r, answered); !s) return status{s.code(), run_where(id, n) + s.message()};
    return check_scripted_run(run_where(id, n), r);
  };
}

run_fn embedded_sender(runtime& rt) {
  return [&rt](const std::string& id, size_t n, bench_clock::time_point* answered) {
    run_input in;
    in.text = "run " + std::to_string(n);
    run_result r;
    status waited = rt.send(id, std::move(in)).wait(&r);
    *answered = bench_clock::now();
    if (!waited) return status{waited.code(), run_where(id, n) + waited.message()};
    return check_scripted_run(run_where(id, n), r);
  };
}

// Round by round over `threads`, one run at a time: a thread never has two runs
// at once, so no run waits in a thread's queue and the latency is the path's own.
void drive_client(const std::vector<std::string>& threads, const run_fn& send, progress& bar, host_outcome* out) {
  out->first_send = out->last_done = bench_clock::now();
  for (size_t n = 0; n < runs_per_thread; ++n) {
    for (const auto& id : threads) {
      auto sent = bench_clock::now();
      status s = send(id, n, &out->last_done);
      out->latencies_ns.push_back((out->last_done - sent).count());
      bar.advance();
      if (s) ++out->completed;
      else if (out->failures++ == 0) out->first_error = s.to_string();
    }
  }
}

// One path on its own fresh database: through the server when `over_http`. Client
// k takes threads k, k + clients, ...; its sender is made on the client's own
// thread, since an http::client is not thread-safe. Every run must have answered
// 200 and completed, and every thread's log must hold them all.
status run_path(const bench_options& options, bool over_http, size_t threads, size_t clients, measured_row* row) {
  row->system = over_http ? "http" : "embedded";
  runtime_options ro;
  ro.mode = durability::sync;
  agent_config agent = bench_agent(engine_config);
  std::unique_ptr<runtime> rt;
  SKEIN_TRY(open_bench_runtime(options, over_http ? "http" : "http-embedded", ro, agent, &rt));
  std::vector<std::string> ids;
  SKEIN_TRY(create_bench_threads(*rt, agent.id, threads, options.quiet, &ids));
  std::unique_ptr<bench_server> srv;
  std::function<run_fn()> make_sender = [&rt] { return embedded_sender(*rt); };
  if (over_http) {
    SKEIN_TRY(bench_server::start(*rt, http::server_limits{}, io_threads, &srv));
    make_sender = [port = srv->port()] { return http_sender(port); };
  }
  merged_outcome m;
  {
    progress bar{row->system, ids.size() * runs_per_thread, progress_wanted(options.quiet)};
    m = drive_round_robin(ids, clients, [&](const std::vector<std::string>& mine, host_outcome* o) {
      drive_client(mine, make_sender(), bar, o);
    });
  }
  srv.reset();
  row->count = m.completed;
  row->seconds = m.seconds;
  row->p50_us = quantile_us(m.latencies_ns, 0.50);
  row->p99_us = quantile_us(m.latencies_ns, 0.99);
  if (status s = check_outcome(m, ids.size() * runs_per_thread); !s)
    return status{s.code(), row->system + ": " + s.message()};
  SKEIN_TRY(check_thread_logs(*rt, ids, ids.size(), {1 + scripted_events_per_run * runs_per_thread, runs_per_thread}));
  SKEIN_TRY(check_log_clean(*rt));
  return rt->close();
}

}  // namespace

status run_http(const bench_options& options, result* out) {
  size_t threads = scaled_count(threads_at_scale_1, options.scale);
  // At a small scale there are fewer threads than clients; a client without a
  // thread would measure nothing.
  size_t clients = std::min(clients_max, threads);
  measured_row http, embedded;
  SKEIN_TRY(run_path(options, true, threads, clients, &http));
  SKEIN_TRY(run_path(options, false, threads, clients, &embedded));

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
  for (const measured_row* r : {&http, &embedded}) {
    t.rows.push_back({text(r->system), num(r->count), num(r->seconds), num(r->per_s()), num(r->p50_us / 1000),
                      num(r->p99_us / 1000), num(r->failures)});
    if (options.plot)
      add_bar(out, "throughput-http", "http: throughput (runs/s, higher is better)", "runs/s",
              r == &http ? "skein through HTTP" : "skein embedded", r->per_s());
  }
  t.notes.push_back("latency: http, request written to response read; embedded, send to completion. Each client has\n"
                    "one run in flight, so both paths hold the same " + n + " runs at once.");
  add_target(out, "http / embedded runs/s", http.per_s() / embedded.per_s(), http_over_embedded_min, "x",
             better::higher, "skein embedded");
  return status::ok();
}

}  // namespace skein::bench
