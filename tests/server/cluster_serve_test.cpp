// Three `skein serve` processes as one cluster on loopback: a client of any
// node reaches every thread; SSE through a node that does not own the thread
// resumes from Last-Event-ID; SIGKILL of one node right after acknowledgements:
// the others keep serving theirs, the dead node's threads answer 503
// `unavailable` within the timeout, and after its restart every acknowledged
// entry is there.
#include <catch2/catch.hpp>

#include <csignal>
#include <fcntl.h>
#include <fstream>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/model/json_codec.hpp"
#include "tests/support/runtime_fixture.hpp"
#include "tests/support/free_port.hpp"
#include "tests/support/temp_dir.hpp"
#include "tools/client/http_client.hpp"

using namespace skein;
using namespace skein::test;
using namespace std::chrono_literals;

namespace {


struct node_process {
  pid_t pid = -1;
  uint16_t port = 0;  // HTTP

  node_process(const std::string& id, const std::string& cluster, const std::string& data,
               const std::string& port_file) {
    ::unlink(port_file.c_str());
    pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      int null = ::open("/dev/null", O_WRONLY);
      ::dup2(null, 1);
      ::execl(SKEIN_BINARY, SKEIN_BINARY, "serve", "--listen", "127.0.0.1:0", "--data", data.c_str(), "--port-file",
              port_file.c_str(), "--durability", "sync", "--node-id", id.c_str(), "--cluster", cluster.c_str(),
              "--cluster-timeout-ms", "2000", nullptr);
      std::_Exit(127);
    }
    REQUIRE(runtime_fixture::eventually(
        [&] {
          std::ifstream in{port_file};
          unsigned p = 0;
          if (in >> p) port = static_cast<uint16_t>(p);
          return port != 0;
        },
        60s));
  }
  void kill() {
    ::kill(pid, SIGKILL);
    int st = 0;
    ::waitpid(pid, &st, 0);
    pid = -1;
  }
  ~node_process() {
    if (pid > 0) kill();
  }
};

std::string field(const std::string& body, const std::string& name) {
  auto p = body.find("\"" + name + "\":\"");
  if (p == std::string::npos) return "";
  p += name.size() + 4;
  return body.substr(p, body.find('"', p) - p);
}

uint64_t number(const std::string& body, const std::string& name) {
  auto p = body.find("\"" + name + "\":");
  return p == std::string::npos ? 0 : std::stoull(body.substr(p + name.size() + 3));
}

}  // namespace

TEST_CASE("cluster serve: three processes and one SIGKILL") {
  temp_dir dir;
  const size_t n = 3;
  std::string ids[n] = {"n1", "n2", "n3"};
  uint16_t links[n];
  std::string file = dir.str("cluster");
  {
    std::ofstream out{file};
    out << "# three nodes on loopback\n";
    for (size_t i = 0; i < n; ++i) {
      links[i] = free_port();
      out << ids[i] << " 127.0.0.1:" << links[i] << "\n";
    }
  }
  auto data = [&](size_t i) { return dir.str(ids[i]); };
  auto port_file = [&](size_t i) { return dir.str(ids[i] + ".port"); };
  std::unique_ptr<node_process> nodes[n];
  for (size_t i = 0; i < n; ++i) nodes[i] = std::make_unique<node_process>(ids[i], file, data(i), port_file(i));
  auto client = [&](size_t i) { return std::make_unique<http::client>(http::endpoint{"127.0.0.1", nodes[i]->port}, "", 20s); };

  http::response r;
  REQUIRE(client(2)->call("POST", "/v1/agents", R"({"id":"a","engine_config":{"default":{"reply":"ok"}}})", &r).is_ok());
  INFO(r.body);
  REQUIRE(r.status < 300);

  struct ack {
    std::string thread;
    uint64_t last_seq = 0;
  };
  std::vector<ack> acks;
  for (size_t k = 0; k < 12; ++k) {
    REQUIRE(client(k % n)->call("POST", "/v1/threads", R"({"agent_id":"a"})", &r).is_ok());
    INFO(r.body);
    REQUIRE(r.status == 201);
    std::string id = field(r.body, "id");
    REQUIRE(!id.empty());
    REQUIRE(client((k + 1) % n)->call("POST", "/v1/threads/" + id + "/entries", R"({"text":"hi","wait":true})", &r).is_ok());
    INFO(r.body);
    REQUIRE(r.status == 200);
    acks.push_back({id, number(r.body, "last_seq")});
    CHECK(acks.back().last_seq > 0);
  }

  // SSE through a node that does not own the thread, resumed after event 2.
  {
    const std::string& id = acks[0].thread;
    std::vector<std::string> seen;
    int http_status = 0;
    for (size_t via = 0; via < n; ++via) {
      seen.clear();
      status s = client(via)->stream("/v1/threads/" + id + "/stream", {{"Last-Event-ID", "2"}},
                                     [&](const http::sse_event& e) {
                                       if (!e.id.empty()) seen.push_back(e.id);
                                       return seen.size() < acks[0].last_seq - 2;
                                     },
                                     &http_status, 10s);
      INFO("via node " << via << ": " << s.to_string());
      CHECK(http_status == 200);
      REQUIRE(!seen.empty());
      CHECK(seen.front() == "3");
      CHECK(seen.size() == acks[0].last_seq - 2);
    }
  }

  REQUIRE(client(0)->call("GET", "/v1/cluster", "", &r).is_ok());
  INFO(r.body);
  CHECK(r.status == 200);
  CHECK(r.body.find(R"("state":"up")") != std::string::npos);
  CHECK(r.body.find(R"("state":"down")") == std::string::npos);

  // SIGKILL n2 right after the acknowledgements.
  nodes[1]->kill();
  size_t unavailable = 0, served = 0;
  for (const auto& a : acks) {
    auto start = std::chrono::steady_clock::now();
    REQUIRE(client(0)->call("GET", "/v1/threads/" + a.thread, "", &r).is_ok());
    auto took = std::chrono::steady_clock::now() - start;
    INFO(a.thread << ": " << r.status << " " << r.body);
    CHECK(took < 3s);  // the cluster timeout is 2 s: never a hang
    if (r.status == 503) {
      CHECK(r.body.find("unavailable") != std::string::npos);
      CHECK(r.body.find("n2") != std::string::npos);
      ++unavailable;
    } else {
      CHECK(r.status == 200);
      CHECK(number(r.body, "last_seq") == a.last_seq);
      ++served;
    }
  }
  CHECK(unavailable > 0);
  CHECK(served > 0);
  REQUIRE(client(2)->call("GET", "/v1/cluster", "", &r).is_ok());
  CHECK(r.body.find(R"("state":"down")") != std::string::npos);

  // n2 again, same data and link port: every acknowledged entry is there.
  nodes[1] = std::make_unique<node_process>(ids[1], file, data(1), port_file(1));
  for (const auto& a : acks) {
    bool ok = runtime_fixture::eventually(
        [&] { return client(2)->call("GET", "/v1/threads/" + a.thread, "", &r).is_ok() && r.status == 200; }, 30s);
    INFO(a.thread << ": " << r.status << " " << r.body);
    REQUIRE(ok);
    CHECK(number(r.body, "last_seq") == a.last_seq);
  }
}
