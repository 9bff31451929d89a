// skein serve's API through real HTTP on an ephemeral loopback port.
#include <atomic>
#include <catch2/catch.hpp>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "tests/support/runtime_fixture.hpp"
#include "tests/support/server_fixture.hpp"
#include "runtime/model/hashing_embedder.hpp"
#include "tools/io/import_export.hpp"

using namespace skein;
using namespace skein::test;
using namespace std::chrono_literals;

namespace {

constexpr const char* ok_rules = R"({"default":{"reply":"ok"}})";

std::vector<event> events_of(const std::string& body) {
  std::vector<std::string> items;
  json::document doc;
  json::dom::element evs;
  json::object_reader o;
  json::dom::array arr;
  if (json::parse(body, {}, "body", &doc).is_ok() && json::object_reader::open(doc.root(), "body", &o).is_ok() &&
      o.element("events", &evs).is_ok() && evs.get(arr) == simdjson::SUCCESS)
    for (json::dom::element e : arr) items.push_back(simdjson::minify(e));
  std::vector<event> out;
  for (const auto& text : items) {
    event e;
    REQUIRE(decode_event(text, &e).is_ok());
    out.push_back(e);
  }
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("every endpoint answers its happy path") {
  server_fixture f;
  CHECK(f.call("GET", "/healthz").body == R"({"status":"ok"})");
  f.agent("a", ok_rules);
  CHECK(f.call("GET", "/v1/agents").body.find(R"("id":"a")") != std::string::npos);
  CHECK(f.call("GET", "/v1/agents/a").status == 200);

  auto created = f.call("POST", "/v1/threads", R"({"agent_id":"a","title":"t","tags":["x"]})");
  REQUIRE(created.status == 201);
  std::string id = field(created.body, "id");
  CHECK(f.call("GET", "/v1/threads?agent=a").body.find(id) != std::string::npos);
  CHECK(f.call("GET", "/v1/threads?tag=x").body.find(id) != std::string::npos);
  CHECK(f.call("GET", "/v1/threads/" + id).status == 200);

  auto run = f.call("POST", "/v1/threads/" + id + "/entries", R"({"text":"hi","wait":true})");
  REQUIRE(run.status == 200);
  CHECK(run.body.find(R"("outcome":"completed")") != std::string::npos);
  auto submitted = f.call("POST", "/v1/threads/" + id + "/entries", R"({"text":"again"})");
  REQUIRE(submitted.status == 202);
  CHECK_FALSE(field(submitted.body, "run_id").empty());

  auto entries = f.call("GET", "/v1/threads/" + id + "/entries?from_seq=1&limit=3");
  REQUIRE(entries.status == 200);
  CHECK(events_of(entries.body).size() == 3);
  CHECK(f.call("GET", "/v1/threads/" + id + "/entries?view=working").status == 200);

  CHECK(f.call("POST", "/v1/threads/" + id + "/cancel").status == 200);
  CHECK(f.call("GET", "/v1/threads/" + id + "/diagnose").body.find(R"("stage")") != std::string::npos);
  CHECK(f.call("POST", "/v1/threads/" + id + "/reconcile").body.find(R"("reconciled":false)") != std::string::npos);
  CHECK(f.call("POST", "/v1/prune").body == R"({"reconciled":[]})");
  auto forked = f.call("POST", "/v1/threads/" + id + "/fork", R"({"at_seq":6})");
  CHECK(forked.status == 201);
  auto exported = f.call("GET", "/v1/threads/" + id + "/export");
  CHECK(exported.status == 200);
  CHECK(exported.content_type == "application/x-ndjson");
  auto metrics = f.call("GET", "/metrics");
  CHECK(metrics.body.find("skein_log_commits_total") != std::string::npos);
  // Every tick writes at least its event's key; a tick that only appends may leave
  // the manifest row behind, so rows written never exceed ticks committed.
  auto counter = [&](const std::string& name) {
    size_t at = metrics.body.find("\n" + name + " ");
    return at == std::string::npos ? -1.0 : std::stod(metrics.body.substr(at + name.size() + 2));
  };
  double commits = counter("skein_log_commits_total"), keys = counter("skein_log_keys_total"),
         manifests = counter("skein_log_manifests_total");
  INFO(metrics.body);
  CHECK(commits > 0);
  CHECK(keys >= commits);
  CHECK(manifests > 0);
  CHECK(manifests <= commits);
  CHECK(metrics.body.find("skein_http_requests_total") != std::string::npos);
  CHECK(metrics.body.find("skein_effect_backlog{effect=\"titles\"}") != std::string::npos);
  CHECK(metrics.body.find("skein_effect_lag_seconds{effect=\"embeddings\",quantile=\"0.99\"}") != std::string::npos);
  CHECK(metrics.body.find("skein_effect_done_total{effect=\"embeddings\"}") != std::string::npos);
  CHECK(metrics.body.find("skein_effect_failed_total{effect=\"titles\"}") != std::string::npos);
  auto titled = f.call("PATCH", "/v1/threads/" + id, R"({"title":"Set by hand"})");
  REQUIRE(titled.status == 200);
  CHECK(field(titled.body, "title") == "Set by hand");
  CHECK(field(f.call("GET", "/v1/threads/" + id).body, "title") == "Set by hand");
  CHECK(f.call("PATCH", "/v1/threads/" + id, R"({"title":""})").status == 400);
  CHECK(f.call("PATCH", "/v1/threads/" + id, R"({"name":"x"})").status == 400);
  CHECK(f.call("DELETE", "/v1/threads/" + id).status == 204);
  CHECK(f.call("DELETE", "/v1/threads/" + id).status == 204);
  CHECK(f.call("GET", "/v1/threads/" + id).status == 404);
}

TEST_CASE("errors carry the right status and a body naming the code and the limit") {
  http::server_limits limits;
  limits.body_bytes_max = 4096;
  server_fixture f{{}, limits};
  f.agent("a", ok_rules);
  f.agent("r", R"({"default":{"reply":"ok","latency_ms":5000}})", "", R"(,"policy":"reject")");
  std::string id = f.thread("a");

  auto r = f.call("POST", "/v1/threads", "{not json");
  CHECK(r.status == 400);
  CHECK(error_code(r.body) == "invalid_input");
  r = f.call("POST", "/v1/threads", R"({"agent_id":"a b"})");
  CHECK(r.status == 400);
  CHECK(r.body.find("agent_id") != std::string::npos);
  r = f.call("POST", "/v1/threads/" + id + "/entries", R"({"wait":true})");
  CHECK(r.status == 400);
  CHECK(r.body.find("body.text: missing") != std::string::npos);
  r = f.call("GET", "/v1/threads?limit=5000");
  CHECK(r.status == 400);
  CHECK(error_limit(r.body) == "list_limit_max");
  r = f.call("POST", "/v1/threads/" + id + "/entries", R"({"text":")" + std::string(5000, 'x') + R"("})");
  CHECK(r.status == 413);
  CHECK(error_limit(r.body) == "body_bytes_max");
  std::string deep = std::string(100, '[') + std::string(100, ']');
  r = f.call("POST", "/v1/threads", deep);
  CHECK(r.status == 400);
  CHECK(error_limit(r.body) == "json_depth_max");

  CHECK(f.call("GET", "/v1/threads/nope").status == 404);
  CHECK(f.call("GET", "/v1/nothing").status == 404);
  CHECK(f.call("PUT", "/v1/threads/" + id).status == 405);
  r = f.call("POST", "/v1/agents", R"({"id":"a","system_prompt":"other"})");
  CHECK(r.status == 409);

  // Mid-run policy reject: 409 while a run goes on.
  std::string rid = f.thread("r");
  CHECK(f.call("POST", "/v1/threads/" + rid + "/entries", R"({"text":"one"})").status == 202);
  r = f.call("POST", "/v1/threads/" + rid + "/entries", R"({"text":"two"})");
  CHECK(r.status == 409);
  CHECK(error_code(r.body) == "conflict");

  // The HTTP status of every skein error code.
  CHECK(server::http_status(errc::not_found) == 404);
  CHECK(server::http_status(errc::invalid_input) == 400);
  CHECK(server::http_status(errc::conflict) == 409);
  CHECK(server::http_status(errc::overloaded) == 429);
  CHECK(server::http_status(errc::io_error) == 503);
  CHECK(server::http_status(errc::no_space) == 507);
  CHECK(server::http_status(errc::corruption) == 500);
  auto e = server::error_response(status::no_space("disk full: max_allowed_space_max reached"));
  CHECK(e.status == 507);
  CHECK(error_code(e.body) == "no_space");
}

TEST_CASE("a full queue and too many requests in flight answer 429 naming the limit") {
  runtime_options ro;
  ro.thread_queue_max = 1;
  http::server_limits limits;
  limits.requests_in_flight_max = 2;
  server_fixture f{ro, limits};
  f.agent("slow", R"({"default":{"reply":"ok","latency_ms":3000}})");
  std::string id = f.thread("slow");
  CHECK(f.call("POST", "/v1/threads/" + id + "/entries", R"({"text":"1"})").status == 202);  // running
  CHECK(f.call("POST", "/v1/threads/" + id + "/entries", R"({"text":"2"})").status == 202);  // queued
  auto r = f.call("POST", "/v1/threads/" + id + "/entries", R"({"text":"3"})");
  CHECK(r.status == 429);
  CHECK(error_limit(r.body) == "thread_queue_max");

  // Two waiting requests fill the server; the third is refused at the door.
  std::string other = f.thread("slow"), third = f.thread("slow");
  std::vector<std::thread> waiters;
  std::atomic<int> answered{0};
  for (const auto& t : {other, third})
    waiters.emplace_back([&, t] {
      if (f.call_off_thread("POST", "/v1/threads/" + t + "/entries", R"({"text":"w","wait":true})").status == 200)
        ++answered;
    });
  REQUIRE(runtime_fixture::eventually([&] { return f.srv->counters().in_flight == 2; }));
  r = f.call("GET", "/v1/agents");
  CHECK(r.status == 429);
  CHECK(error_limit(r.body) == "requests_in_flight_max");
  for (auto& w : waiters) w.join();
  CHECK(answered == 2);
}

TEST_CASE("auth matrix: no token, a wrong one, another agent's, admin") {
  const std::string tokens =
      "admin-token-0123456789 admin\n"
      "alpha-token-0123456789 alpha\n"
      "# a comment\n"
      "beta-token-01234567890 beta\n";
  server_fixture f{{}, {}, tokens};
  const std::string admin = "admin-token-0123456789", alpha = "alpha-token-0123456789", beta = "beta-token-01234567890";
  CHECK(f.call("GET", "/healthz").status == 200);
  CHECK(f.call("GET", "/v1/agents").status == 401);
  CHECK(f.call("GET", "/v1/agents", "", "wrong-token-0123456789").status == 401);
  CHECK(f.call("POST", "/v1/agents", R"({"id":"alpha"})", alpha).status == 403);  // admin only
  f.agent("alpha", ok_rules, admin);
  f.agent("beta", ok_rules, admin);
  std::string a_thread = f.thread("alpha", alpha);
  CHECK(f.call("POST", "/v1/threads", R"({"agent_id":"alpha"})", beta).status == 403);
  // Another agent's thread answers as a missing one (hardening_test compares the bytes).
  for (const auto& [method, suffix] : std::vector<std::pair<std::string, std::string>>{
           {"GET", ""}, {"GET", "/entries"}, {"POST", "/cancel"}, {"GET", "/export"}, {"GET", "/stream"}}) {
    INFO(method << " " << suffix);
    auto r = f.call(method, "/v1/threads/" + a_thread + suffix, "", beta);
    CHECK(r.status == 404);
    CHECK(error_code(r.body) == "not_found");
  }
  CHECK(f.call("DELETE", "/v1/threads/" + a_thread, "", beta).status == 204);  // as if missing: nothing deleted
  CHECK(f.call("GET", "/v1/threads/" + a_thread, "", alpha).status == 200);
  CHECK(f.call("GET", "/v1/threads/" + a_thread, "", admin).status == 200);
  // A scoped token lists only its agent's threads.
  std::string b_thread = f.thread("beta", beta);
  auto listed = f.call("GET", "/v1/threads", "", alpha);
  CHECK(listed.body.find(a_thread) != std::string::npos);
  CHECK(listed.body.find(b_thread) == std::string::npos);
  CHECK(f.call("GET", "/v1/threads?agent=beta", "", alpha).status == 403);
  auto agents = f.call("GET", "/v1/agents", "", alpha);
  CHECK(agents.body.find(R"("id":"beta")") == std::string::npos);
  CHECK(f.call("GET", "/metrics", "", alpha).status == 403);
  CHECK(f.call("GET", "/metrics", "", admin).status == 200);
  CHECK(f.call("POST", "/v1/prune", "", alpha).status == 403);

  server::token_store bad;
  CHECK_THAT(server::token_store::parse("short admin\n", &bad).message(), Catch::Contains("token_bytes_min"));
  CHECK_THAT(server::token_store::parse("long-enough-token-123\n", &bad).message(), Catch::Contains("no scope"));
}

TEST_CASE("SSE: follow, disconnect, resume by Last-Event-ID with no gap and no duplicate") {
  server_fixture f;
  f.agent("a", R"({"default":{"reply":"ok","deltas":["o","k"],"latency_ms":20}})");
  std::string id = f.thread("a");
  for (int i = 0; i < 3; ++i) f.call("POST", "/v1/threads/" + id + "/entries", R"({"text":"x","wait":true})");
  manifest m;
  REQUIRE(f.rt->get_thread(id, &m).is_ok());
  const uint64_t total_first = m.last_seq;

  // First connection: read part of the history, then hang up.
  http::client c1{f.endpoint()};
  std::vector<uint64_t> seen;
  int status_code = 0;
  REQUIRE(c1.stream("/v1/threads/" + id + "/stream?from_seq=1", {},
                    [&](const http::sse_event& e) {
                      if (e.event == "delta") return true;
                      seen.push_back(std::stoull(e.id));
                      return seen.size() < 7;  // disconnect mid-stream
                    },
                    &status_code)
              .is_ok());
  CHECK(status_code == 200);
  REQUIRE(seen.size() == 7);

  // More runs while disconnected, then resume from the last id seen.
  std::thread writer([&] {
    for (int i = 0; i < 3; ++i) f.call_off_thread("POST", "/v1/threads/" + id + "/entries", R"({"text":"y","wait":true})");
  });
  http::client c2{f.endpoint()};
  std::vector<std::string> deltas;
  uint64_t target = total_first + 3 * 5;  // three more runs of five events each
  REQUIRE(c2.stream("/v1/threads/" + id + "/stream", {{"Last-Event-ID", std::to_string(seen.back())}},
                    [&](const http::sse_event& e) {
                      if (e.event == "delta") {
                        deltas.push_back(e.data);
                        return true;
                      }
                      event ev;
                      REQUIRE(decode_event(e.data, &ev).is_ok());
                      REQUIRE(std::to_string(ev.seq) == e.id);
                      REQUIRE(std::string{to_string(ev.type)} == e.event);
                      seen.push_back(ev.seq);
                      return ev.seq < target;
                    },
                    &status_code, 30s)
              .is_ok());
  writer.join();
  REQUIRE(seen.size() == target);
  for (size_t i = 0; i < seen.size(); ++i) CHECK(seen[i] == i + 1);
  CHECK(deltas.size() >= 2);  // live runs streamed their deltas
  CHECK(runtime_fixture::eventually([&] { return f.srv->counters().streams == 0; }));
}

TEST_CASE("a slow SSE reader is disconnected and never stalls the runtime") {
  http::server_limits limits;
  limits.stream_buffer_bytes_max = 64 << 10;
  server_fixture f{{}, limits};
  // Deltas reach subscribers only (never stored), so big ones load the stream
  // without growing the conversation.
  std::string big(64 << 10, 'z'), deltas;
  for (int i = 0; i < 8; ++i) deltas += (i ? ",\"" : "\"") + big + "\"";
  f.agent("a", R"({"default":{"reply":"ok","latency_ms":1,"deltas":[)" + deltas + "]}}");
  std::string id = f.thread("a");

  // A client that asks for the stream and then never reads.
  http::client stalled{f.endpoint()};
  std::atomic<bool> stop{false};
  std::thread reader([&] {
    int code = 0;
    // Reads the first event, then blocks inside the callback: the socket fills up.
    stalled.stream("/v1/threads/" + id + "/stream", {},
                   [&](const http::sse_event&) {
                     while (!stop) std::this_thread::sleep_for(10ms);
                     return false;
                   },
                   &code)
        .ignore();
  });
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 200 && f.srv->counters().slow_clients == 0; ++i)
    REQUIRE(f.call("POST", "/v1/threads/" + id + "/entries", R"({"text":"go","wait":true})").status == 200);
  auto took = std::chrono::steady_clock::now() - start;
  CHECK(f.srv->counters().slow_clients >= 1);
  stop = true;
  reader.join();
  // The runs went on at full speed: none waited for the stalled reader.
  CHECK(took < 60s);
  CHECK(runtime_fixture::eventually([&] { return f.srv->counters().streams == 0; }));
  CHECK(f.call("POST", "/v1/threads/" + id + "/entries", R"({"text":"after","wait":true})").status == 200);
}

TEST_CASE("idempotent retries of entries return the first run") {
  server_fixture f;
  f.agent("a", ok_rules);
  std::string id = f.thread("a");
  auto first = f.call("POST", "/v1/threads/" + id + "/entries", R"({"text":"pay","idempotency_key":"order-17","wait":true})");
  auto retry = f.call("POST", "/v1/threads/" + id + "/entries", R"({"text":"pay","wait":true})", "",
                      {{"Idempotency-Key", "order-17"}});
  auto third = f.call("POST", "/v1/threads/" + id + "/entries", R"({"text":"pay","idempotency_key":"order-17"})");
  REQUIRE(first.status == 200);
  REQUIRE(retry.status == 200);
  REQUIRE(third.status == 202);
  auto run_of = [](const std::string& body) {
    auto p = body.find(R"("run_id":")");
    return body.substr(p + 10, body.find('"', p + 10) - p - 10);
  };
  CHECK(run_of(first.body) == run_of(retry.body));
  CHECK(run_of(third.body) == run_of(first.body));
  std::vector<event> log;
  REQUIRE(f.rt->read(id, history_view::complete, 1, 0, &log).is_ok());
  CHECK(check_runs(log) == 1);
}

TEST_CASE("reconcile of a stale running thread with a test-controlled clock") {
  std::atomic<int64_t> now{1'900'000'000'000};
  runtime_options ro;
  ro.clock = [&] { return now.load(); };
  server_fixture f{ro};
  f.agent("a", R"({"default":{"reply":"late","latency_ms":3600000}})");
  std::string id = f.thread("a");
  REQUIRE(f.call("POST", "/v1/threads/" + id + "/entries", R"({"text":"go"})").status == 202);
  REQUIRE(runtime_fixture::eventually([&] {
    return f.call("GET", "/v1/threads/" + id).body.find(R"("status":"running")") != std::string::npos;
  }));
  CHECK(f.call("GET", "/v1/threads/" + id + "/diagnose").body.find(R"("stage":"running")") != std::string::npos);
  now += 91'000;  // no heartbeat for longer than 90 s
  CHECK(f.call("GET", "/v1/threads/" + id + "/diagnose").body.find(R"("stage":"stalled")") != std::string::npos);
  auto shown = f.call("GET", "/v1/threads/" + id);  // reconcile on read
  CHECK(shown.body.find(R"("status":"open")") != std::string::npos);
  auto log = events_of(f.call("GET", "/v1/threads/" + id + "/entries?limit=1000").body);
  REQUIRE(log.size() >= 2);
  CHECK(log[log.size() - 2].name == "thread.orphaned");
  CHECK(log.back().name == "thread.stop");
  CHECK(f.call("GET", "/v1/threads/" + id + "/diagnose").body.find(R"("stage":"failed")") != std::string::npos);
  CHECK(f.call("POST", "/v1/threads/" + id + "/reconcile").body.find(R"("reconciled":false)") != std::string::npos);
}

TEST_CASE("import of a fixture of every format, and export -> import round trip") {
  server_fixture f;
  for (const char* agent : {"imported", "a"}) f.agent(agent, ok_rules);
  struct fixture_file {
    const char* file;
    const char* format;
  };
  for (const auto& [file, format] : {fixture_file{"skein.jsonl", "skein"}, {"opennova.jsonl", "opennova"},
                                     {"lace.jsonl", "lace"}, {"gitmem_threads.json", "gitmem"}}) {
    INFO(file);
    std::string body = read_file(std::string(SKEIN_IO_FIXTURES) + "/" + file);
    REQUIRE_FALSE(body.empty());
    import_result parsed;
    REQUIRE(parse_import(body, import_format::auto_detect, "imported", &parsed).is_ok());
    for (auto& t : parsed.threads) f.agent(t.manifest.agent_id, ok_rules);
    auto r = f.call("POST", std::string("/v1/import?format=auto&agent=imported"), body);
    INFO(r.body);
    REQUIRE(r.status == 201);
    CHECK(r.body.find(std::string(R"("format":")") + format + "\"") != std::string::npos);
    // Ids the source lacked are minted on import: follow the server's answer.
    std::vector<std::string> items;
    {
      json::document doc;
      json::dom::element threads;
      json::object_reader o;
      json::dom::array arr;
      REQUIRE(json::parse(r.body, {}, "body", &doc).is_ok());
      REQUIRE(json::object_reader::open(doc.root(), "body", &o).is_ok());
      REQUIRE(o.element("threads", &threads).is_ok());
      REQUIRE(threads.get(arr) == simdjson::SUCCESS);
      for (json::dom::element t : arr) items.push_back(simdjson::minify(t));
    }
    REQUIRE(items.size() == parsed.threads.size());
    for (size_t i = 0; i < items.size(); ++i) {
      manifest m;
      REQUIRE(decode_manifest(items[i], &m).is_ok());
      CHECK(f.call("GET", "/v1/threads/" + m.id).status == 200);
      std::vector<event> log;
      REQUIRE(f.rt->read(m.id, history_view::complete, 1, 0, &log).is_ok());
      CHECK(log.size() == parsed.threads[i].events.size());
      for (size_t k = 0; k < log.size(); ++k) CHECK(log[k].text == parsed.threads[i].events[k].text);
    }
    // Importing the same ids again is a conflict, and writes nothing.
    if (std::string{format} != "gitmem") CHECK(f.call("POST", "/v1/import", body).status == 409);
  }

  std::string id = f.thread("a");
  f.call("POST", "/v1/threads/" + id + "/entries", R"({"text":"héllo \"quoted\" 🙂","wait":true})");
  auto exported = f.call("GET", "/v1/threads/" + id + "/export").body;
  REQUIRE(f.call("DELETE", "/v1/threads/" + id).status == 204);
  auto r = f.call("POST", "/v1/import?format=skein", exported);
  REQUIRE(r.status == 201);
  CHECK(f.call("GET", "/v1/threads/" + id + "/export").body == exported);

  // A bad line in the middle imports nothing and names the line.
  std::string broken = exported;
  auto second_nl = broken.find('\n', broken.find('\n') + 1);
  broken.insert(second_nl + 1, "{oops\n");
  REQUIRE(f.call("DELETE", "/v1/threads/" + id).status == 204);
  r = f.call("POST", "/v1/import?format=skein", broken);
  CHECK(r.status == 400);
  CHECK(r.body.find("line 3") != std::string::npos);
  CHECK(f.call("GET", "/v1/threads/" + id).status == 404);
}

TEST_CASE("the client's timeout ends a call and a stream on time, and a timed-out call is not resent") {
  server_fixture f;
  f.agent("slow", R"({"default":{"reply":"late","latency_ms":1500}})");
  std::string id = f.thread("slow");
  http::client c{f.endpoint(), "", 300ms};
  http::response r;
  auto start = std::chrono::steady_clock::now();
  auto s = c.call("POST", "/v1/threads/" + id + "/entries", R"({"text":"go","wait":true})", &r);
  auto took = std::chrono::steady_clock::now() - start;
  CHECK(s.code() == errc::io_error);
  CHECK_THAT(s.message(), Catch::Contains("no answer within 300 ms"));
  CHECK(took < 1200ms);
  // The run goes on once, on the server: the call was not sent a second time.
  REQUIRE(runtime_fixture::eventually([&] {
    manifest m;
    return f.rt->get_thread(id, &m).is_ok() && m.status == thread_status::open && m.last_seq > 3;
  }));
  std::vector<event> log;
  REQUIRE(f.rt->read(id, history_view::complete, 1, 0, &log).is_ok());
  CHECK(check_runs(log) == 1);

  int code = 0;
  start = std::chrono::steady_clock::now();
  REQUIRE(c.stream("/v1/threads/" + id + "/stream?from_seq=1000", {}, [](const http::sse_event&) { return true; }, &code,
                   300ms)
              .is_ok());
  CHECK(code == 200);
  CHECK(std::chrono::steady_clock::now() - start < 2s);
}

TEST_CASE("memory search route: hits for the agent's token, 400 naming q or k, 403, 404") {
  using namespace scoped;
  server_fixture f{{}, {}, tokens};
  f.agent("alpha", ok_rules, admin);
  f.agent("beta", ok_rules, admin);
  const std::string planted = "the spare key to the lighthouse is under the blue frog";
  thread_import t;
  t.manifest.id = "remembered";
  t.manifest.agent_id = "alpha";
  t.events.push_back(make_message(message_role::user, "hello"));
  t.events.push_back(make_message(message_role::user, planted));
  t.events[0].seq = 1;
  t.events[1].seq = 2;
  std::vector<manifest> out;
  REQUIRE(f.rt->import_threads({t}, &out).is_ok());
  REQUIRE(f.rt->memory().add("remembered", 1, {"alpha", false, hash_embed("hello")}).is_ok());
  REQUIRE(f.rt->memory().add("remembered", 2, {"alpha", false, hash_embed(planted)}).is_ok());

  auto r = f.call("GET", "/v1/agents/alpha/memory?q=lighthouse%20key%20frog&k=1", "", alpha);
  INFO(r.body);
  REQUIRE(r.status == 200);
  CHECK_THAT(r.body, Catch::StartsWith(R"({"hits":[{"thread_id":"remembered","seq":2,"role":"user","score":)"));
  CHECK_THAT(r.body, Catch::Contains(planted));
  CHECK(f.call("GET", "/v1/agents/alpha/memory?q=frog", "", beta).status == 403);
  r = f.call("GET", "/v1/agents/alpha/memory?k=3", "", alpha);
  CHECK(r.status == 400);
  CHECK_THAT(r.body, Catch::Contains(R"("field":"q")"));
  r = f.call("GET", "/v1/agents/alpha/memory?q=frog&k=many", "", alpha);
  CHECK(r.status == 400);
  CHECK_THAT(r.body, Catch::Contains(R"("field":"k")"));
  r = f.call("GET", "/v1/agents/alpha/memory?q=frog&k=101", "", alpha);
  CHECK(r.status == 400);
  CHECK_THAT(r.body, Catch::Contains(R"("limit":"memory_search_k_max")"));
  CHECK(f.call("GET", "/v1/agents/ghost/memory?q=frog", "", admin).status == 404);
  CHECK(f.call("POST", "/v1/agents/alpha/memory?q=frog", "", admin).status == 405);
  CHECK_THAT(f.call("GET", "/metrics", "", admin).body, Catch::Contains("skein_memory_rows 2\n"));
}

// Stored bytes are wire bytes: GET entries, export and the SSE backlog serve the
// stored JSON without re-encoding it, and must stay byte-identical to encoding
// each decoded event — and SSE frames, coalesced into fewer socket writes, must
// keep their boundaries and resume by Last-Event-ID.
TEST_CASE("entries, export and SSE serve the stored bytes, frames whole, resumable") {
  server_fixture f;
  f.agent("a", R"({"default":{"reply":"ok"}})");
  manifest m;
  m.id = "wire";
  m.agent_id = "a";
  m.created_at_ms = m.updated_at_ms = 1700000000000;
  std::vector<event> events;
  const size_t n = 1500;
  for (size_t i = 1; i <= n; ++i) {
    event e;
    switch (i % 7) {
      case 0: e = make_message(message_role::user, "q \"" + std::to_string(i) + "\"\n\xc3\xbc"); break;
      case 1: e = make_thinking("think " + std::to_string(i)); break;
      case 2: e = make_tool_call("c" + std::to_string(i), "echo", R"({"n":)" + std::to_string(i) + R"(,"s":"a\"b"})"); break;
      case 3: e = make_tool_result("c" + std::to_string(i - 1), "echo", "out\t" + std::to_string(i), i % 2 == 0); break;
      case 4: e = make_assistant_text("text " + std::to_string(i)); break;
      case 5: e = make_result(token_usage{i, 2 * i, 0, 1}, 0.001 * static_cast<double>(i), i, 1, "completed"); break;
      default: e = make_signal("note", R"({"i":)" + std::to_string(i) + "}"); break;
    }
    e.seq = i;
    e.ts_ms = 1700000000000 + static_cast<int64_t>(i);
    e.run_id = "r" + std::to_string(i / 10);
    events.push_back(std::move(e));
  }
  manifest stored;
  REQUIRE(f.rt->import_thread(m, events, &stored).is_ok());
  std::vector<std::string> wire;  // what encoding each event gives: the API's bytes before
  for (const auto& e : events) {
    std::string json;
    REQUIRE(encode_event(e, &json).is_ok());
    wire.push_back(std::move(json));
  }

  // GET entries: a page of the stored bytes, byte for byte.
  auto r = f.call("GET", "/v1/threads/wire/entries?from_seq=3&limit=50");
  REQUIRE(r.status == 200);
  std::string expected = R"({"events":[)";
  for (size_t i = 2; i < 52; ++i) expected += (i > 2 ? "," : "") + wire[i];
  expected += R"(],"next_seq":53,"last_seq":)" + std::to_string(n) + "}";
  CHECK(r.body == expected);
  // A group filter keeps the seqs it reads past.
  r = f.call("GET", "/v1/threads/wire/entries?from_seq=1&limit=14&group=chat");
  REQUIRE(r.status == 200);
  CHECK_THAT(r.body, Catch::Contains(R"("next_seq":15)"));
  CHECK_THAT(r.body, Catch::Contains(wire[6]) && Catch::Contains(wire[13]));
  CHECK_THAT(r.body, !Catch::Contains(wire[1]));  // a tool call is not chat

  // Export: the manifest line, then the stored bytes; it imports back equal.
  r = f.call("GET", "/v1/threads/wire/export");
  REQUIRE(r.status == 200);
  std::string lines;
  for (const auto& w : wire) lines += w + "\n";
  REQUIRE(r.body.size() > lines.size());
  CHECK(r.body.substr(r.body.size() - lines.size()) == lines);
  import_result parsed;
  REQUIRE(parse_import(r.body, import_format::skein, "", &parsed).is_ok());
  REQUIRE(parsed.threads.size() == 1);
  CHECK(parsed.threads[0].events == events);

  // SSE from Last-Event-ID: every frame whole, in order, with the stored bytes.
  const uint64_t resume_after = 17;
  http::client c{f.endpoint()};
  std::vector<http::sse_event> frames;
  int code = 0;
  REQUIRE(c.stream("/v1/threads/wire/stream", {{"Last-Event-ID", std::to_string(resume_after)}},
                   [&](const http::sse_event& e) {
                     frames.push_back(e);
                     return e.id != std::to_string(n);
                   },
                   &code, 30s)
              .is_ok());
  CHECK(code == 200);
  REQUIRE(frames.size() == n - resume_after);
  for (size_t k = 0; k < frames.size(); ++k) {
    const size_t seq = resume_after + 1 + k;
    if (frames[k].id != std::to_string(seq) || frames[k].data != wire[seq - 1] ||
        frames[k].event != to_string(events[seq - 1].type)) {
      FAIL_CHECK("frame " << k << ": id " << frames[k].id << " event " << frames[k].event << " data "
                          << frames[k].data << " expected seq " << seq << " " << wire[seq - 1]);
      break;
    }
  }
}
