// SIGKILLs `skein serve` during a stream of runs from several clients, starts
// it again on the same data, and checks that every acknowledged entry is there
// and every log is gapless with whole runs.
#include <atomic>
#include <catch2/catch.hpp>
#include <csignal>
#include <fstream>
#include <mutex>
#include <random>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "tests/support/runtime_fixture.hpp"
#include "tests/support/server_fixture.hpp"

using namespace skein;
using namespace skein::test;
using namespace std::chrono_literals;

namespace {

struct server_process {
  pid_t pid = -1;
  uint16_t port = 0;

  server_process(const std::string& data, const std::string& port_file) {
    ::unlink(port_file.c_str());
    pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::execl(SKEIN_BINARY, SKEIN_BINARY, "serve", "--listen", "127.0.0.1:0", "--data", data.c_str(), "--port-file",
              port_file.c_str(), "--durability", "sync", nullptr);
      std::_Exit(127);
    }
    REQUIRE(runtime_fixture::eventually(
        [&] {
          std::ifstream in{port_file};
          unsigned p = 0;
          if (in >> p) port = static_cast<uint16_t>(p);
          return port != 0;
        },
        30s));
  }

  int stop(int signal) {
    ::kill(pid, signal);
    int st = 0;
    ::waitpid(pid, &st, 0);
    pid = -1;
    return st;
  }

  ~server_process() {
    if (pid > 0) stop(SIGKILL);
  }
};

struct ack {
  std::string thread, run_id;
  uint64_t last_seq;
};

std::string run_id_of(const std::string& body) {
  auto p = body.find(R"("run_id":")");
  return p == std::string::npos ? "" : body.substr(p + 10, body.find('"', p + 10) - p - 10);
}

uint64_t last_seq_of(const std::string& body) {
  auto p = body.find(R"("last_seq":)");
  return p == std::string::npos ? 0 : std::stoull(body.substr(p + 11));
}

}  // namespace

TEST_CASE("acknowledged entries survive a SIGKILL of the server, logs stay gapless") {
  const uint64_t seed = std::random_device{}();
  std::printf("server durability test: seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng{seed};
  temp_dir dir;
  std::string data = dir.str("data"), port_file = dir.str("port");
  std::vector<std::string> threads;
  std::vector<ack> acks;
  std::mutex mu;
  {
    server_process srv{data, port_file};
    http::client admin{{"127.0.0.1", srv.port}};
    http::response r;
    REQUIRE(admin.call("POST", "/v1/agents", R"({"id":"a","engine_config":{"default":{"reply":"ok","latency_ms":2}}})", &r).is_ok());
    REQUIRE(r.status == 201);
    for (int i = 0; i < 8; ++i) {
      REQUIRE(admin.call("POST", "/v1/threads", R"({"agent_id":"a"})", &r).is_ok());
      threads.push_back(field(r.body, "id"));
    }
    std::atomic<bool> stop{false};
    std::vector<std::thread> clients;
    for (int c = 0; c < 4; ++c) {
      clients.emplace_back([&, c] {
        http::client client{{"127.0.0.1", srv.port}, "", 5s};
        for (int i = 0; !stop; ++i) {
          const std::string& t = threads[(c * 2 + i % 2) % threads.size()];
          http::response res;
          if (!client.call("POST", "/v1/threads/" + t + "/entries", R"({"text":"n","wait":true})", &res).is_ok()) return;
          if (res.status != 200) continue;
          std::lock_guard<std::mutex> lock{mu};
          acks.push_back({t, run_id_of(res.body), last_seq_of(res.body)});
        }
      });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300 + rng() % 1200));  // a random moment to kill at
    srv.stop(SIGKILL);
    stop = true;
    for (auto& c : clients) c.join();
  }
  INFO("seed " << seed << ", " << acks.size() << " acknowledged runs");
  REQUIRE_FALSE(acks.empty());

  server_process again{data, port_file};
  http::client client{{"127.0.0.1", again.port}};
  std::map<std::string, std::vector<event>> logs;
  for (const auto& t : threads) {
    http::response r;
    REQUIRE(client.call("GET", "/v1/threads/" + t + "/export", "", &r).is_ok());
    REQUIRE(r.status == 200);
    std::vector<event>& log = logs[t];
    size_t start = r.body.find('\n') + 1;  // the first line is the manifest
    while (start < r.body.size()) {
      size_t nl = r.body.find('\n', start);
      event e;
      REQUIRE(decode_event(r.body.substr(start, nl - start), &e).is_ok());
      log.push_back(e);
      start = nl + 1;
    }
    check_runs(log);
  }
  for (const auto& a : acks) {
    INFO("acked run " << a.run_id << " on " << a.thread << " at seq " << a.last_seq);
    const auto& log = logs[a.thread];
    REQUIRE(log.size() >= a.last_seq);
    const event& stop = log[a.last_seq - 1];
    CHECK(stop.name == "thread.stop");
    CHECK(stop.run_id == a.run_id);
  }
  CHECK(WIFEXITED(again.stop(SIGTERM)));
}
