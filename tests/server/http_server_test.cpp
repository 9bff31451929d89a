// The HTTP server's connection handling on its own, under a plain handler: the
// deadlines of a connection (idle between requests, a body that never ends, an
// answer that takes long), and keep-alive requests sent back to back on one
// connection each getting their own answer.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "tests/support/raw_conn.hpp"
#include "tools/server/http_server.hpp"

using namespace skein;
using namespace std::chrono_literals;

namespace {

using steady = std::chrono::steady_clock;

// The connections of these tests wait up to 8 s for an answer.
struct conn : test::raw_conn {
  explicit conn(uint16_t port, std::chrono::milliseconds timeout = 8s) : raw_conn(port, timeout) {}
};

std::string post(const std::string& target, const std::string& body) {
  return "POST " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nX-Seen: " + target + "\r\n\r\n" + body;
}

// Answers each request with its target, its body and the X-Seen header it was
// sent with; "/slow" answers from another thread after slow_ms.
struct echo_server {
  static constexpr auto slow_ms = 1500ms;
  std::unique_ptr<http::server> srv;
  std::mutex mu;
  std::vector<std::thread> answerers;  // guarded by mu

  explicit echo_server(http::server_limits limits) {
    auto h = [this](http::request& req, std::shared_ptr<http::exchange> ex) {
      http::response r;
      r.content_type = "text/plain";
      r.body = req.target + "|" + req.body + "|" + req.header("x-seen") + "|" + req.header("x-once");
      if (req.target != "/slow") return ex->reply(std::move(r));
      std::lock_guard<std::mutex> lock{mu};
      answerers.emplace_back([ex, r]() mutable {
        std::this_thread::sleep_for(slow_ms);  // the slow work itself, not a wait for an event
        ex->reply(std::move(r));
      });
    };
    REQUIRE(http::server::start("127.0.0.1", 0, limits, h, 2, &srv).is_ok());
  }
  ~echo_server() {
    std::vector<std::thread> all;
    {
      std::lock_guard<std::mutex> lock{mu};
      all.swap(answerers);
    }
    for (auto& t : all) t.join();
    srv->stop();
  }
};

http::server_limits short_limits() {
  http::server_limits l;
  l.idle_timeout = 1s;
  l.body_timeout = 1s;
  return l;
}

}  // namespace

TEST_CASE("http server: a keep-alive connection idle past idle_timeout is closed, not before") {
  echo_server s{short_limits()};
  conn c{s.srv->port()};
  REQUIRE(c.send(post("/a", "x")));
  auto sent = steady::now();
  std::string got;
  REQUIRE(c.read_until_closed(&got));
  auto closed_after = steady::now() - sent;
  CHECK(got.find("/a|x|/a|") != std::string::npos);  // answered first, then closed for idling
  CHECK(closed_after >= 900ms);
  CHECK(closed_after < 6s);
}

TEST_CASE("http server: a body that is announced and never sent is cut off at body_timeout") {
  echo_server s{short_limits()};
  conn c{s.srv->port()};
  REQUIRE(c.send("POST /a HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\nonly this"));
  auto sent = steady::now();
  std::string got;
  REQUIRE(c.read_until_closed(&got));
  CHECK(got.empty());  // the handler never saw it
  CHECK(steady::now() - sent >= 900ms);
  CHECK(s.srv->counters().in_flight == 0);
  CHECK(s.srv->counters().body_bytes_buffered == 0);
}

TEST_CASE("http server: an answer that takes longer than every timeout still reaches the client") {
  echo_server s{short_limits()};
  conn c{s.srv->port()};
  REQUIRE(c.send(post("/slow", "zzz")));
  std::vector<std::string> bodies;
  REQUIRE(c.read_responses(1, &bodies));
  CHECK(bodies[0] == "/slow|zzz|/slow|");
  // And the connection serves the next request.
  REQUIRE(c.send(post("/b", "y")));
  bodies.clear();
  REQUIRE(c.read_responses(1, &bodies));
  CHECK(bodies[0] == "/b|y|/b|");
}

TEST_CASE("http server: requests sent back to back on one connection get their own answers, in order") {
  echo_server s{http::server_limits{}};
  conn c{s.srv->port()};
  // One write holding three requests: the second carries a header the others
  // lack, the third a shorter body than the first; neither may leak.
  std::string burst = post("/one", "first body, the longest") +
                      "POST /two HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Once: yes\r\nContent-Length: 3\r\n\r\nabc" +
                      post("/three", "ok");
  REQUIRE(c.send(burst));
  std::vector<std::string> bodies;
  REQUIRE(c.read_responses(3, &bodies));
  CHECK(bodies[0] == "/one|first body, the longest|/one|");
  CHECK(bodies[1] == "/two|abc||yes");
  CHECK(bodies[2] == "/three|ok|/three|");
}

// Admission and handlers run on handler threads, never on an I/O thread: with
// one I/O thread, a handler and an admission that both wait (as on a hung
// peer) leave it free, and another connection's request is answered while they
// wait. Before, either wait held the only I/O thread and the third request
// waited behind it.
TEST_CASE("http server: a waiting handler or admission holds no I/O thread") {
  std::mutex mu;
  std::condition_variable cv;
  bool released = false;
  int waiting = 0;
  auto wait_for_release = [&] {
    std::unique_lock<std::mutex> lock{mu};
    ++waiting;
    cv.notify_all();
    cv.wait(lock, [&] { return released; });
  };
  http::service svc;
  svc.on_request = [&](http::request& req, std::shared_ptr<http::exchange> ex) {
    if (req.target == "/handler-waits") wait_for_release();
    ex->reply(http::response{200, "text/plain", req.target, {}});
  };
  svc.admit = [&](const http::request& head) {
    if (head.target == "/admission-waits") wait_for_release();
    return http::admission{};
  };
  std::unique_ptr<http::server> srv;
  REQUIRE(http::server::start("127.0.0.1", 0, http::server_limits{}, svc, 1, &srv).is_ok());
  auto release = [&] {
    std::lock_guard<std::mutex> lock{mu};
    released = true;
    cv.notify_all();
  };
  // Released before the server stops, also when a check fails: stop() waits for its handlers.
  std::shared_ptr<void> release_at_exit{nullptr, [&](void*) { release(); }};
  conn handler_waits{srv->port()}, admission_waits{srv->port()}, free_one{srv->port(), 3s};
  REQUIRE(handler_waits.send(post("/handler-waits", "")));
  REQUIRE(admission_waits.send(post("/admission-waits", "")));
  {
    std::unique_lock<std::mutex> lock{mu};
    REQUIRE(cv.wait_for(lock, 5s, [&] { return waiting == 2; }));
  }
  REQUIRE(free_one.send(post("/free", "")));
  std::vector<std::string> bodies;
  CHECK(free_one.read_responses(1, &bodies));  // within its 3 s receive timeout, while both still wait
  CHECK(bodies == std::vector<std::string>{"/free"});
  CHECK(srv->counters().handlers_busy >= 2);
  release();
  std::vector<std::string> handled, admitted;
  CHECK(handler_waits.read_responses(1, &handled));
  CHECK(admission_waits.read_responses(1, &admitted));
  CHECK(handled == std::vector<std::string>{"/handler-waits"});
  CHECK(admitted == std::vector<std::string>{"/admission-waits"});
  srv->stop();
}
