// skein serve against hostile input: huge and malformed fields, bodies that are
// announced and never sent, another agent's ids, out-of-range seqs, events
// larger than a stream's buffer, deleted threads under open streams.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <catch2/catch.hpp>
#include <tuple>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <thread>

#include "tests/support/raw_conn.hpp"
#include "tests/support/runtime_fixture.hpp"
#include "tests/support/server_fixture.hpp"

using namespace skein;
using namespace skein::test;
using namespace std::chrono_literals;

namespace {

constexpr const char* ok_rules = R"({"default":{"reply":"ok"}})";

std::string head(const std::string& method, const std::string& target, const std::string& extra) {
  return method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + extra + "\r\n";
}

const std::string admin = "admin-token-0123456789", alpha = "alpha-token-0123456789", beta = "beta-token-01234567890";
const std::string tokens_file = admin + " admin\n" + alpha + " alpha\n" + beta + " beta\n";

std::string bearer(const std::string& token) { return "Authorization: Bearer " + token + "\r\n"; }

}  // namespace

TEST_CASE("an import with a 60,000-character event type is refused with a short message, and the server lives") {
  server_fixture f;
  f.agent("a", ok_rules);
  std::string id = f.thread("a");
  REQUIRE(f.call("POST", "/v1/threads/" + id + "/entries", R"({"text":"hi","wait":true})").status == 200);
  std::string exported = f.call("GET", "/v1/threads/" + id + "/export").body;
  REQUIRE(f.call("DELETE", "/v1/threads/" + id).status == 204);
  // The second line is the first event: give it a monstrous type.
  auto first_nl = exported.find('\n');
  auto type_at = exported.find(R"("type":")", first_nl) + 8;
  std::string hostile = exported;
  hostile.replace(type_at, exported.find('"', type_at) - type_at, std::string(60000, 'x'));
  auto r = f.call("POST", "/v1/import?format=skein", hostile);
  INFO(r.body.substr(0, 400));
  CHECK(r.status == 400);
  CHECK(error_code(r.body) == "invalid_input");
  CHECK(r.body.size() < 1024);  // the message quotes a bounded part of the input
  CHECK(f.call("GET", "/healthz").status == 200);
  CHECK(f.call("GET", "/v1/threads/" + id).status == 404);  // nothing was imported
}

TEST_CASE("an error's limit and field are the status's own, never read from its message") {
  auto plain = server::error_response(status::invalid_input("text that mentions json_depth_max and from_seq"));
  CHECK(error_limit(plain.body).empty());
  CHECK(plain.body.find(R"("field")") == std::string::npos);
  auto tagged = server::error_response(status::overloaded("busy").with_limit("thread_queue_max").with_field("text"));
  CHECK(tagged.status == 429);
  CHECK(error_limit(tagged.body) == "thread_queue_max");
  CHECK(tagged.body.find(R"("field":"text")") != std::string::npos);
  // A long message is cut; a multi-byte character is never split.
  std::string accents;
  for (int i = 0; i < 2000; ++i) accents += "é";
  auto cut = server::error_response(status::invalid_input(accents));
  CHECK(cut.body.size() < 1024);
  json::document root;
  CHECK(json::parse(cut.body, {}, "body", &root).is_ok());  // still valid UTF-8 and JSON
  CHECK(quote_input(std::string(300, 'q')).size() < 230);
  CHECK(quote_input("short") == "short");
  // Limits checked below the server reach the body as values.
  {
    server_fixture h;
    h.agent("a", ok_rules);
    auto r = h.call("POST", "/v1/threads", R"({"agent_id":"a","title":")" + std::string(100000, 't') + R"("})");
    CHECK(r.status == 400);
    CHECK(error_limit(r.body) == "title_bytes_max");
    CHECK(r.body.find(R"("field":"title")") != std::string::npos);
    r = h.call("GET", "/v1/threads/" + std::string(5000, 'i'));
    CHECK(r.status == 400);
    CHECK(error_limit(r.body) == "id_bytes_max");
    CHECK(r.body.size() < 1024);
  }
  // The limit survives the trip through an actor (thread_queue_max comes from one).
  runtime_options ro;
  ro.thread_queue_max = 1;
  server_fixture g{ro};
  g.agent("slow", R"({"default":{"reply":"ok","latency_ms":2000}})");
  std::string id = g.thread("slow");
  CHECK(g.call("POST", "/v1/threads/" + id + "/entries", R"({"text":"1"})").status == 202);
  CHECK(g.call("POST", "/v1/threads/" + id + "/entries", R"({"text":"2"})").status == 202);
  auto r = g.call("POST", "/v1/threads/" + id + "/entries", R"({"text":"3"})");
  CHECK(r.status == 429);
  CHECK(error_limit(r.body) == "thread_queue_max");
}

TEST_CASE("auth, route, scope and the in-flight limit are decided before a body byte is read") {
  http::server_limits limits;
  limits.requests_in_flight_max = 1;
  server_fixture f{{}, limits, tokens_file};
  f.agent("alpha", ok_rules, admin);
  f.agent("beta", ok_rules, admin);
  std::string b_thread = f.thread("beta", beta);
  const std::string big = "Content-Length: 500000\r\n";

  SECTION("no token: 401 while the body is still unsent") {
    raw_conn c{f.srv->port()};
    REQUIRE(c.send(head("POST", "/v1/threads", big)));
    std::string body;
    CHECK(c.read_response(&body) == 401);
    CHECK(error_code(body) == "unauthorized");
  }
  SECTION("an admin-only route: 403 at once") {
    raw_conn c{f.srv->port()};
    REQUIRE(c.send(head("POST", "/v1/agents", big + bearer(alpha))));
    CHECK(c.read_response() == 403);
  }
  SECTION("another agent's thread: 404 at once, as a missing one") {
    raw_conn c{f.srv->port()};
    REQUIRE(c.send(head("POST", "/v1/threads/" + b_thread + "/entries", big + bearer(alpha))));
    std::string body;
    CHECK(c.read_response(&body) == 404);
    CHECK(error_code(body) == "not_found");
  }
  SECTION("an import for another agent: 403 at once") {
    raw_conn c{f.srv->port()};
    REQUIRE(c.send(head("POST", "/v1/import?agent=beta", big + bearer(alpha))));
    CHECK(c.read_response() == 403);
  }
  SECTION("a path that only starts with /v1/import gets the standard limit") {
    raw_conn c{f.srv->port()};
    REQUIRE(c.send(head("POST", "/v1/importer", "Content-Length: 10000000\r\n" + bearer(admin))));
    std::string body;
    CHECK(c.read_response(&body) == 413);
    CHECK(error_limit(body) == "body_bytes_max");
  }
  SECTION("Expect: 100-continue: leave to send comes only after every check") {
    raw_conn refused{f.srv->port()};
    REQUIRE(refused.send(head("POST", "/v1/threads", "Content-Length: 20\r\nExpect: 100-continue\r\n")));
    CHECK(refused.read_response() == 401);  // and no interim 100 before it
    raw_conn admitted{f.srv->port()};
    const std::string body = R"({"agent_id":"alpha"})";
    REQUIRE(admitted.send(head("POST", "/v1/threads",
                               "Content-Length: " + std::to_string(body.size()) + "\r\nExpect: 100-continue\r\n" +
                                   bearer(alpha))));
    CHECK(admitted.read_response() == 100);
    REQUIRE(admitted.send(body));
    CHECK(admitted.read_response() == 201);
  }
  SECTION("the in-flight limit: 429 at once") {
    f.agent("slow", R"({"default":{"reply":"ok","latency_ms":1500}})", admin);
    std::string slow = f.thread("slow", admin);
    std::thread waiter([&] { f.call_off_thread("POST", "/v1/threads/" + slow + "/entries", R"({"text":"w","wait":true})", admin); });
    REQUIRE(runtime_fixture::eventually([&] { return f.srv->counters().in_flight == 1; }));
    raw_conn c{f.srv->port()};
    REQUIRE(c.send(head("POST", "/v1/threads", big + bearer(admin))));
    std::string body;
    CHECK(c.read_response(&body) == 429);
    CHECK(error_limit(body) == "requests_in_flight_max");
    waiter.join();
  }
  // A body's bytes leave the budget once its handler has run, on its handler
  // thread: that may come just after the client has read the answer.
  CHECK(runtime_fixture::eventually([&] { return f.srv->counters().body_bytes_buffered == 0; }));
  CHECK(f.call("GET", "/healthz").status == 200);
}

TEST_CASE("the client reads an answer sent before its body was all written, from any server") {
  std::string big(16 << 20, 'x');
  SECTION("a peer that answers at the head and resets the connection") {
    // Listens on loopback, reads the head only, answers 413 and closes with the
    // body unread: the kernel resets the connection under the client's write.
    int listener = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(listener >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(listener, 4) == 0);
    socklen_t len = sizeof addr;
    REQUIRE(::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    std::atomic<bool> answered{false};
    std::thread peer([&] {  // no Catch2 macro here: not the test's thread
      int fd = ::accept(listener, nullptr, nullptr);
      if (fd < 0) return;
      std::string in;
      char buf[4096];
      while (in.find("\r\n\r\n") == std::string::npos) {
        ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        in.append(buf, static_cast<size_t>(n));
      }
      static const std::string answer =
          "HTTP/1.1 413 Payload Too Large\r\nContent-Type: application/json\r\nContent-Length: 13\r\n"
          "Connection: close\r\n\r\n{\"e\":\"large\"}";
      answered = ::send(fd, answer.data(), answer.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(answer.size());
      ::close(fd);
    });
    http::client c{{"127.0.0.1", ntohs(addr.sin_port)}, "", 10s};
    http::response r;
    auto s = c.call("POST", "/v1/threads", big, &r);
    peer.join();
    ::close(listener);
    REQUIRE(answered);
    INFO(s.to_string());
    REQUIRE(s.is_ok());
    CHECK(r.status == 413);
    CHECK(r.body == R"({"e":"large"})");
  }
  SECTION("skein serve, which drains a bounded part of a refused body, many times over one client") {
    server_fixture f{{}, {}, tokens_file};
    http::client c{f.endpoint(), alpha};
    for (int i = 0; i < 20; ++i) {
      http::response r;
      auto s = c.call("POST", "/v1/threads", big, &r);
      INFO("attempt " << i << ": " << s.to_string());
      REQUIRE(s.is_ok());
      CHECK(r.status == 413);
      CHECK(error_code(r.body) == "too_large");
      // The same client goes on with a fresh connection.
      REQUIRE(c.call("GET", "/v1/threads", "", &r).is_ok());
      CHECK(r.status == 200);
    }
  }
}

TEST_CASE("body bytes buffered across connections are capped, chunked bodies too, and come back") {
  http::server_limits limits;
  limits.body_bytes_max = 600 << 10;
  limits.import_body_bytes_max = 600 << 10;
  limits.body_bytes_buffered_max = 1 << 20;
  server_fixture f{{}, limits};
  f.agent("a", ok_rules);
  // One client announces 600 KiB, sends a byte and stalls: its reservation stands.
  auto stalled = std::make_unique<raw_conn>(f.srv->port());
  REQUIRE(stalled->send(head("POST", "/v1/threads", "Content-Length: 614400\r\n") + "{"));
  REQUIRE(runtime_fixture::eventually([&] { return f.srv->counters().body_bytes_buffered == 614400; }));

  // A second announced 600 KiB does not fit: refused before its body.
  {
    raw_conn c{f.srv->port()};
    REQUIRE(c.send(head("POST", "/v1/threads", "Content-Length: 614400\r\n")));
    std::string body;
    CHECK(c.read_response(&body) == 429);
    CHECK(error_limit(body) == "body_bytes_buffered_max");
  }
  // A chunked body is counted as it arrives: 64 KiB chunks until it no longer fits.
  {
    raw_conn c{f.srv->port()};
    REQUIRE(c.send(head("POST", "/v1/threads", "Transfer-Encoding: chunked\r\n")));
    std::string chunk = "10000\r\n" + std::string(0x10000, ' ') + "\r\n";
    int code = 0;
    std::string body;
    std::thread reader([&] { code = c.read_response(&body); });
    for (int i = 0; i < 16 && c.send(chunk); ++i) {
    }
    reader.join();
    CHECK(code == 429);
    CHECK(error_limit(body) == "body_bytes_buffered_max");
  }
  // The stalled client leaves: its bytes return, and bodies are read again.
  stalled.reset();
  REQUIRE(runtime_fixture::eventually([&] { return f.srv->counters().body_bytes_buffered == 0; }));
  CHECK(f.call("POST", "/v1/threads", R"({"agent_id":"a"})").status == 201);
  auto metrics = f.call("GET", "/metrics").body;
  CHECK(metrics.find("skein_http_body_bytes_buffered 0\n") != std::string::npos);
  CHECK(metrics.find("skein_http_rejected_total 2\n") != std::string::npos);
}

TEST_CASE("an SSE event larger than stream_buffer_bytes_max reaches an idle client, live and on resume") {
  http::server_limits limits;
  limits.stream_buffer_bytes_max = 16 << 10;
  server_fixture f{{}, limits};
  f.agent("a", ok_rules);
  std::string id = f.thread("a");
  const std::string big(100 << 10, 'b');

  // Live: a follower sees the big user message as it is committed.
  http::client live{f.endpoint()};
  size_t live_biggest = 0;
  std::thread follower([&] {
    int code = 0;
    live.stream("/v1/threads/" + id + "/stream", {},
                [&](const http::sse_event& e) {
                  live_biggest = std::max(live_biggest, e.data.size());
                  return e.event != "signal" || e.data.find("thread.stop") == std::string::npos;
                },
                &code, 20s)
        .ignore();
  });
  REQUIRE(runtime_fixture::eventually([&] { return f.srv->counters().streams == 1; }));
  REQUIRE(f.call("POST", "/v1/threads/" + id + "/entries", R"({"text":")" + big + R"(","wait":true})").status == 200);
  follower.join();
  CHECK(live_biggest > big.size());
  CHECK(f.srv->counters().slow_clients == 0);

  // Resume right before the big event: it comes first, whole.
  std::vector<event> log;
  REQUIRE(f.rt->read(id, history_view::complete, 1, 0, &log).is_ok());
  uint64_t big_seq = 0;
  for (const auto& e : log)
    if (e.text == big) big_seq = e.seq;
  REQUIRE(big_seq > 1);
  http::client resumed{f.endpoint()};
  std::string first_id, first_data;
  int code = 0;
  REQUIRE(resumed
              .stream("/v1/threads/" + id + "/stream", {{"Last-Event-ID", std::to_string(big_seq - 1)}},
                      [&](const http::sse_event& e) {
                        first_id = e.id;
                        first_data = e.data;
                        return false;
                      },
                      &code, 10s)
              .is_ok());
  CHECK(first_id == std::to_string(big_seq));
  event e;
  REQUIRE(decode_event(first_data, &e).is_ok());
  CHECK(e.text == big);
}

TEST_CASE("another agent's thread answers byte for byte as a missing one, on every route") {
  server_fixture f{{}, {}, tokens_file};
  f.agent("alpha", ok_rules, admin);
  f.agent("beta", ok_rules, admin);
  std::string a_thread = f.thread("alpha", alpha);
  REQUIRE(f.call("POST", "/v1/threads/" + a_thread + "/entries", R"({"text":"hi","wait":true})", alpha).status == 200);
  std::string b_thread = f.thread("beta", beta);
  REQUIRE(f.call("POST", "/v1/threads/" + b_thread + "/entries", R"({"text":"hi","wait":true})", beta).status == 200);
  std::string b_before = f.call("GET", "/v1/threads/" + b_thread, "", admin).body;

  // An import of alpha's thread under a new id, claiming B as its parent.
  std::string exported = f.call("GET", "/v1/threads/" + a_thread + "/export", "", alpha).body;
  std::string child = exported;
  auto replace = [&](const std::string& from, const std::string& to) {
    auto at = child.find(from);
    REQUIRE(at != std::string::npos);
    child.replace(at, from.size(), to);
  };
  replace(R"("id":")" + a_thread + "\"", R"("id":"imported-child")");
  replace(R"("parent_kind":"none","parent_id":"")", R"("parent_kind":"thread","parent_id":")" + b_thread + "\"");

  struct probe {
    std::string method, target, body;
  };
  const std::vector<probe> probes = {
      {"GET", "/v1/threads/" + b_thread, ""},
      {"GET", "/v1/threads/" + b_thread + "/entries", ""},
      {"POST", "/v1/threads/" + b_thread + "/entries", R"({"text":"x"})"},
      {"GET", "/v1/threads/" + b_thread + "/stream", ""},
      {"POST", "/v1/threads/" + b_thread + "/cancel", ""},
      {"POST", "/v1/threads/" + b_thread + "/fork", R"({"at_seq":1})"},
      {"GET", "/v1/threads/" + b_thread + "/diagnose", ""},
      {"POST", "/v1/threads/" + b_thread + "/reconcile", ""},
      {"GET", "/v1/threads/" + b_thread + "/export", ""},
      {"DELETE", "/v1/threads/" + b_thread, ""},
      {"POST", "/v1/threads", R"({"agent_id":"alpha","parent_thread_id":")" + b_thread + "\"}"},
      {"POST", "/v1/import?format=skein", child},
  };
  auto answer = [&](const probe& p) {
    auto r = f.call(p.method, p.target, p.body, alpha);
    return std::to_string(r.status) + " " + r.body;
  };
  std::vector<std::string> foreign;
  for (const auto& p : probes) foreign.push_back(answer(p));
  // Nothing of B's changed: not its child counter, not its index, not its log.
  CHECK(f.call("GET", "/v1/threads/" + b_thread, "", admin).body == b_before);
  CHECK(f.call("GET", "/v1/threads?parent=" + b_thread, "", admin).body.find(R"("threads":[])") != std::string::npos);
  CHECK(f.call("GET", "/v1/threads/imported-child", "", admin).status == 404);

  REQUIRE(f.call("DELETE", "/v1/threads/" + b_thread, "", admin).status == 204);
  for (size_t i = 0; i < probes.size(); ++i) {
    INFO(probes[i].method << " " << probes[i].target.substr(0, 60));
    CHECK(answer(probes[i]) == foreign[i]);
    CHECK(foreign[i].substr(0, 3) != "403");
  }
}

TEST_CASE("seq values out of range are 400 naming the field, Last-Event-ID of 2^64-1 replays nothing") {
  server_fixture f;
  f.agent("a", ok_rules);
  std::string id = f.thread("a");
  REQUIRE(f.call("POST", "/v1/threads/" + id + "/entries", R"({"text":"hi","wait":true})").status == 200);

  // Before the fix this replayed the whole history (2^64-1 + 1 wrapped to 0).
  http::client c{f.endpoint(), "", 3s};
  http::response r;
  REQUIRE(c.call("GET", "/v1/threads/" + id + "/stream", "", &r, {{"Last-Event-ID", "18446744073709551615"}}).is_ok());
  CHECK(r.status == 400);
  CHECK(r.body.find(R"("field":"Last-Event-ID")") != std::string::npos);

  for (const std::string route : {"entries", "stream"})
    for (const std::string value : {"-1", "abc", "99999999999999999999999", "1e3", "", "%20"}) {
      INFO(route << " from_seq=" << value);
      auto bad = f.call("GET", "/v1/threads/" + id + "/" + route + "?from_seq=" + value);
      CHECK(bad.status == 400);
      CHECK(bad.body.find(R"("field":"from_seq")") != std::string::npos);
    }
  CHECK(f.call("GET", "/v1/threads/" + id + "/entries?from_seq=18446744073709551615").status == 200);
}

TEST_CASE("deleting a thread ends its open streams with a final frame") {
  server_fixture f;
  f.agent("a", ok_rules);
  std::string id = f.thread("a");
  REQUIRE(f.call("POST", "/v1/threads/" + id + "/entries", R"({"text":"hi","wait":true})").status == 200);
  http::client c{f.endpoint()};
  std::vector<std::string> names;
  std::string last_data;
  int code = 0;
  std::thread follower([&] {
    c.stream("/v1/threads/" + id + "/stream", {},
             [&](const http::sse_event& e) {
               names.push_back(e.event);
               last_data = e.data;
               return true;  // follows until the server ends the stream
             },
             &code, 20s)
        .ignore();
  });
  REQUIRE(runtime_fixture::eventually([&] { return f.srv->counters().streams == 1; }));
  auto start = std::chrono::steady_clock::now();
  REQUIRE(f.call("DELETE", "/v1/threads/" + id).status == 204);
  follower.join();
  CHECK(std::chrono::steady_clock::now() - start < 10s);
  REQUIRE_FALSE(names.empty());
  CHECK(names.back() == "deleted");
  CHECK(field(last_data, "thread_id") == id);
  CHECK(runtime_fixture::eventually([&] { return f.srv->counters().streams == 0; }));
}

TEST_CASE("every route takes the longest, deepest and most malformed input and another agent's token") {
  uint64_t seed = std::random_device{}();
  if (const char* env = std::getenv("SKEIN_SEED")) seed = std::stoull(env);
  std::printf("route sweep seed %llu (SKEIN_SEED replays it)\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng{seed};
  server_fixture f{{}, {}, tokens_file};
  f.agent("alpha", ok_rules, admin);
  f.agent("beta", ok_rules, admin);
  std::string a_thread = f.thread("alpha", alpha);
  std::string b_thread = f.thread("beta", beta);
  REQUIRE(f.call("POST", "/v1/threads/" + a_thread + "/entries", R"({"text":"hi","wait":true})", alpha).status == 200);
  // A schedule of each agent under the id of its thread: the same ids probe the schedule routes.
  for (const auto& [id, agent, token] : {std::tuple{a_thread, "alpha", alpha}, std::tuple{b_thread, "beta", beta}})
    REQUIRE(f.call("POST", "/v1/schedules",
                   std::string(R"({"id":")") + id + R"(","agent_id":")" + agent +
                       R"(","kind":"once","at_ms":4102444800000,"input":{"text":"later"}})",
                   token)
                .status == 201);

  auto random_bytes = [&](size_t n) {
    std::string out(n, '\0');
    for (auto& c : out) c = static_cast<char>(rng() & 0xFF);
    return out;
  };
  const size_t body_max = http::server_limits{}.body_bytes_max;
  const std::string longest_text = R"({"text":")" + std::string(body_max - 64, 'L') + R"(","agent_id":"alpha"})";
  const std::string deepest = std::string(63, '[') + std::string(63, ']');
  const std::string too_deep = std::string(5000, '[') + std::string(5000, ']');
  const std::vector<std::string> bodies = {
      longest_text, deepest, too_deep, random_bytes(4096), "{\"text\":\"\xff\xfe\"}", "{\"text\":",
      R"({"text":"x","agent_id":")" + std::string(60000, 'i') + R"(","parent_thread_id":")" + std::string(60000, 'p') +
          R"(","at_seq":18446744073709551615,"tags":[)" + std::string(1000, '1') + "]}",
      R"({"at_seq":-1,"text":1,"wait":"yes"})"};
  const std::vector<std::string> ids = {a_thread, b_thread, std::string(129, 'x'), std::string(8000, 'y'), "..",
                                        "%00", "a%2Fb"};
  const std::vector<std::pair<std::string, std::string>> routes = {
      {"POST", "/v1/agents"},          {"GET", "/v1/agents/{}"},           {"POST", "/v1/threads"},
      {"GET", "/v1/threads?parent={}"}, {"GET", "/v1/threads/{}"},          {"DELETE", "/v1/threads/{}"},
      {"POST", "/v1/threads/{}/entries"}, {"GET", "/v1/threads/{}/entries?from_seq={}&limit={}"},
      {"GET", "/v1/threads/{}/stream?from_seq={}"}, {"POST", "/v1/threads/{}/cancel"},
      {"POST", "/v1/threads/{}/fork"},  {"GET", "/v1/threads/{}/diagnose"}, {"POST", "/v1/threads/{}/reconcile"},
      {"GET", "/v1/threads/{}/export"}, {"POST", "/v1/import?format=auto&agent={}"}, {"POST", "/v1/prune"},
      {"GET", "/metrics"},             {"POST", "/v1/schedules"},          {"GET", "/v1/schedules?agent={}&cursor={}"},
      {"GET", "/v1/schedules/{}"},     {"DELETE", "/v1/schedules/{}"},     {"POST", "/v1/schedules/{}/pause"},
      {"POST", "/v1/schedules/{}/resume"}, {"GET", "/v1/schedules/{}/history?before={}&limit={}"},
      {"GET", "/v1/schedules/{}/preview?n={}"}, {"POST", "/v1/agents/{}/dm"}, {"GET", "/v1/tasks/{}"},
      {"POST", "/v1/threads/{}/members"}, {"DELETE", "/v1/threads/{}/members/{}"},
      {"GET", "/v1/threads/{}/entries?group={}"}, {"GET", "/v1/cluster"},
      {"POST", "/v1/cluster/nodes/{}/drain"}, {"DELETE", "/v1/cluster/nodes/{}/drain"}};
  size_t calls = 0;
  for (const auto& [method, pattern] : routes)
    for (const auto& id : ids) {
      std::string target = pattern;
      for (size_t at; (at = target.find("{}")) != std::string::npos;) target.replace(at, 2, id);
      const std::string& body = method == "POST" ? bodies[rng() % bodies.size()] : std::string{};
      for (const std::string& token : {alpha, beta}) {
        bool owner = (token == alpha && id == a_thread) || (token == beta && id == b_thread);
        if (method == "DELETE" && owner) continue;  // the threads stay for the rest of the sweep
        INFO(method << " " << target.substr(0, 80) << " body " << body.size() << " bytes");
        http::client c{f.endpoint(), token, 10s};
        http::response r;
        REQUIRE(c.call(method, target, body, &r, {{"Last-Event-ID", std::string(8000, '9')}}).is_ok());
        ++calls;
        CHECK(r.status < 500);
        if (r.status >= 400) {
          CHECK(r.body.size() < 1024);
          CHECK_FALSE(error_code(r.body).empty());
        }
        // Alpha never learns anything of beta's thread, and never touches it.
        if (token == alpha && id == b_thread) {
          CHECK(r.body.find(R"("agent_id":"beta")") == std::string::npos);
          if (r.status == 200) CHECK(r.body.find(R"("threads":[])") != std::string::npos);  // a list, empty
        }
      }
    }
  std::printf("route sweep: %zu calls\n", calls);
  manifest b;
  REQUIRE(f.rt->get_thread(b_thread, &b).is_ok());
  CHECK(b.children_count == 0);
  schedule bs;
  REQUIRE(f.rt->get_schedule(b_thread, &bs).is_ok());  // alpha could not delete or pause beta's schedule
  CHECK_FALSE(bs.paused);
  CHECK(f.call("GET", "/healthz").status == 200);
  CHECK(runtime_fixture::eventually([&] { return f.srv->counters().body_bytes_buffered == 0; }));  // released after the handler
}

TEST_CASE("GET /v1/cluster: admin only and one member when the server is alone") {
  server_fixture f{{}, {}, tokens_file};
  http::response r = f.call("GET", "/v1/cluster", "", alpha);
  CHECK(r.status == 403);
  CHECK(error_code(r.body) == "forbidden");
  r = f.call("GET", "/v1/cluster", "", admin);
  INFO(r.body);
  CHECK(r.status == 200);
  CHECK(r.body.find(R"("members":[{)") != std::string::npos);
  CHECK(r.body.find(R"("state":"self")") != std::string::npos);
  CHECK(r.body.find(R"("state":"up")") == std::string::npos);
  CHECK(f.call("POST", "/v1/cluster", "{}", admin).status == 405);
  CHECK(r.body.find(R"("rebalance":{"phase":"none")") != std::string::npos);
  // A drain: admin only; a server that is no node of a replicated cluster refuses it by name.
  CHECK(f.call("POST", "/v1/cluster/nodes/n1/drain", "", alpha).status == 403);
  CHECK(f.call("DELETE", "/v1/cluster/nodes/n1/drain", "", beta).status == 403);
  r = f.call("POST", "/v1/cluster/nodes/n1/drain", "", admin);
  CHECK(r.status == 400);
  CHECK(r.body.find("replicated cluster") != std::string::npos);
  // A rebalance: admin only; a server alone refuses it by name, whatever the body.
  r = f.call("POST", "/v1/cluster/rebalance", "", alpha);
  CHECK(r.status == 403);
  CHECK(error_code(r.body) == "forbidden");
  r = f.call("POST", "/v1/cluster/rebalance", std::string(1 << 20, '{'), admin);
  INFO(r.body);
  CHECK(r.status == 400);
  CHECK(r.body.find("not a cluster node") != std::string::npos);
  CHECK(f.call("GET", "/v1/cluster/rebalance", "", admin).status == 405);
  CHECK(f.call("POST", "/v1/cluster/rebalance/now", "", admin).status == 404);
}

TEST_CASE("POST entries: the handler trusts admission's check of its own thread only") {
  server_fixture f{{}, {}, tokens_file};
  f.agent("alpha", ok_rules, admin);
  f.agent("beta", ok_rules, admin);
  std::string a_thread = f.thread("alpha", alpha);
  std::string b_thread = f.thread("beta", beta);
  std::string foreign = f.call("POST", "/v1/threads/" + b_thread + "/entries", R"({"text":"x"})", alpha).body;
  auto post = [&](const std::string& thread, const std::string& admitted) {
    http::request req;
    req.method = "POST";
    req.target = "/v1/threads/" + thread + "/entries";
    REQUIRE(http::parse_target(req.target, &req.path, &req.query));
    req.headers["authorization"] = "Bearer " + alpha;
    req.body = R"({"text":"x"})";
    req.admitted_thread = admitted;
    auto ex = std::make_shared<http::captured_reply>();
    f.api->handle(req, ex);
    http::response r;
    REQUIRE(ex->wait_for(std::chrono::seconds(30), &r));
    return r;
  };
  // Admitted for alpha's thread, sent to beta's: the handler checks beta's itself.
  auto r = post(b_thread, a_thread);
  CHECK(r.status == 404);
  CHECK(r.body == foreign);
  CHECK(f.call("GET", "/v1/threads/" + b_thread, "", admin).body.find(R"("last_seq":0)") != std::string::npos);
  // Admitted for its own thread: taken without a second read.
  CHECK(post(a_thread, a_thread).status == 202);
  // Not admitted at all (a handler without admission): checked and taken.
  CHECK(post(a_thread, "").status == 202);
}
