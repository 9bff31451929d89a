// Three `skein serve` processes as one cluster on loopback: a client of any
// node reaches every thread; SSE through a node that does not own the thread
// resumes from Last-Event-ID; SIGKILL of one node right after acknowledgements:
// the others keep serving theirs, the dead node's threads answer 503
// `unavailable` within the timeout, and after its restart every acknowledged
// entry is there, an input acknowledged just before the kill included; a
// stopped peer (SIGSTOP) answers 503 within the timeout, never a hang.
#include <catch2/catch.hpp>

#include <csignal>
#include <fstream>
#include <thread>

#include "runtime/model/cluster.hpp"
#include "runtime/model/json_codec.hpp"
#include "runtime/model/json_reader.hpp"
#include "tests/support/answers.hpp"
#include "tests/support/runtime_fixture.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/free_port.hpp"
#include "tests/support/temp_dir.hpp"
#include "tools/client/http_client.hpp"

using namespace skein;
using namespace skein::test;
using namespace std::chrono_literals;

namespace {

// A node: skein serve with its id and the cluster file.
std::unique_ptr<serve_process> start_node(const std::string& id, const std::string& cluster, const std::string& data) {
  return std::make_unique<serve_process>(SKEIN_BINARY, data, "sync", 60s,
                                         std::vector<std::string>{"--node-id", id, "--cluster", cluster,
                                                                  "--cluster-timeout-ms", "2000"});
}

std::string string_of(const std::string& body, const char* field) {
  json::document doc;
  json::object_reader o;
  std::string value;
  INFO(body);
  REQUIRE(json::parse(body, {}, "answer", &doc).is_ok());
  REQUIRE(json::object_reader::open(doc.root(), "answer", &o).is_ok());
  REQUIRE(o.string(field, &value).is_ok());
  return value;
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
  std::unique_ptr<serve_process> nodes[n];
  for (size_t i = 0; i < n; ++i) nodes[i] = start_node(ids[i], file, data(i));
  auto client = [&](size_t i) { return std::make_unique<http::client>(http::endpoint{"127.0.0.1", nodes[i]->port()}, "", 20s); };

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
    std::string id = manifest_of(r.body).id;
    REQUIRE(!id.empty());
    REQUIRE(client((k + 1) % n)->call("POST", "/v1/threads/" + id + "/entries", R"({"text":"hi","wait":true})", &r).is_ok());
    INFO(r.body);
    REQUIRE(r.status == 200);
    acks.push_back({id, last_seq_of(r.body)});
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
      CHECK(manifest_of(r.body).last_seq == a.last_seq);
      ++served;
    }
  }
  CHECK(unavailable > 0);
  CHECK(served > 0);
  REQUIRE(client(2)->call("GET", "/v1/cluster", "", &r).is_ok());
  CHECK(r.body.find(R"("state":"down")") != std::string::npos);

  // n2 again, same data and link port: every acknowledged entry is there.
  nodes[1] = start_node(ids[1], file, data(1));
  for (const auto& a : acks) {
    bool ok = runtime_fixture::eventually(
        [&] { return client(2)->call("GET", "/v1/threads/" + a.thread, "", &r).is_ok() && r.status == 200; }, 30s);
    INFO(a.thread << ": " << r.status << " " << r.body);
    REQUIRE(ok);
    CHECK(manifest_of(r.body).last_seq == a.last_seq);
  }

  rendezvous ring{{ids[0], ids[1], ids[2]}};
  auto first_owned_by = [&](size_t i) {
    for (const auto& a : acks)
      if (ring.owner_id(cluster_key(a.thread)) == ids[i]) return a;
    FAIL("no thread of " << ids[i]);
    return ack{};
  };
  auto get = [&](size_t via, const std::string& thread) {
    REQUIRE(client(via)->call("GET", "/v1/threads/" + thread, "", &r).is_ok());
    return r.status;
  };

  // An input acknowledged (202) through n1 for a thread of n2, n2 SIGKILLed at
  // once: it was durable in n2's inbox, so it runs once n2 is back.
  const ack queued = first_owned_by(1);
  REQUIRE(client(0)->call("POST", "/v1/threads/" + queued.thread + "/entries", R"({"text":"after"})", &r).is_ok());
  INFO(r.body);
  REQUIRE(r.status == 202);
  const std::string run_id = string_of(r.body, "run_id");
  nodes[1]->kill();
  nodes[1] = start_node(ids[1], file, data(1));
  CHECK(runtime_fixture::eventually(
      [&] {
        if (get(0, queued.thread) != 200) return false;
        manifest m = manifest_of(r.body);
        return m.status != thread_status::running && m.last_seq > queued.last_seq;
      },
      30s));
  REQUIRE(client(2)->call("GET", "/v1/threads/" + queued.thread + "/entries", "", &r).is_ok());
  CHECK(r.body.find(run_id) != std::string::npos);

  // A peer that stops answering (SIGSTOP): its threads answer 503 within the
  // timeout over the link that exists, and over a fresh one (n1 restarted,
  // where the handshake itself gets no answer), never a hang; the others serve.
  const ack slow = first_owned_by(2);
  auto timed_status = [&](size_t via, const std::string& thread) {
    auto start = std::chrono::steady_clock::now();
    int status = get(via, thread);
    CHECK(std::chrono::steady_clock::now() - start < 3s);
    return status;
  };
  REQUIRE(::kill(nodes[2]->child().pid(), SIGSTOP) == 0);
  auto stopped_peer = [&](const char* when) {
    int status = timed_status(0, slow.thread);
    INFO(when << ": thread " << slow.thread << " via n1: " << status << " " << r.body);
    CHECK(status == 503);
    CHECK(r.body.find("n3") != std::string::npos);
  };
  stopped_peer("over the existing link");
  REQUIRE(::kill(nodes[2]->child().pid(), SIGCONT) == 0);

  // A run forwarded through n1 to n3 that is under way when n3 stops: the link
  // stays up, so only the liveness ask ends the wait — 503 "stopped answering"
  // within about twice the timeout, never the client's 20 s.
  {
    REQUIRE(client(2)->call("POST", "/v1/agents", R"({"id":"slow","engine_config":{"default":{"reply":"ok","latency_ms":8000}}})", &r).is_ok());
    REQUIRE(r.status < 300);
    REQUIRE(client(2)->call("POST", "/v1/threads", R"({"agent_id":"slow"})", &r).is_ok());
    REQUIRE(r.status == 201);
    const std::string long_run = manifest_of(r.body).id;  // minted by n3: n3's
    http::response sent;
    std::chrono::steady_clock::duration took{};
    std::thread sender([&] {
      auto start = std::chrono::steady_clock::now();
      client(0)->call("POST", "/v1/threads/" + long_run + "/entries", R"({"text":"long","wait":true})", &sent).ignore();
      took = std::chrono::steady_clock::now() - start;
    });
    bool running = runtime_fixture::eventually([&] {
      return get(1, long_run) == 200 && manifest_of(r.body).status == thread_status::running;
    }, 10s);
    REQUIRE(::kill(nodes[2]->child().pid(), SIGSTOP) == 0);
    sender.join();
    CHECK(running);
    INFO(sent.status << " " << sent.body);
    CHECK(sent.status == 503);
    CHECK(sent.body.find("n3 stopped answering") != std::string::npos);
    CHECK(took < 8s);
  }
  nodes[0]->kill();
  nodes[0] = start_node(ids[0], file, data(0));
  stopped_peer("over a fresh link");
  CHECK(timed_status(0, first_owned_by(1).thread) == 200);
  REQUIRE(::kill(nodes[2]->child().pid(), SIGCONT) == 0);
  // n3 is back: it serves its thread through a node whose link to it predates
  // the stop at once, and through n1 once n1's link answers. A link opened to
  // a stopped node can stay unanswered after the node resumes (CAF 0.17's
  // middleman, seen about 1 run in 10 here under load; docs/cluster.md, "What a client
  // sees"): it answers again once either end restarts.
  CHECK(runtime_fixture::eventually([&] { return get(1, slow.thread) == 200; }, 30s));
  CHECK(manifest_of(r.body).last_seq == slow.last_seq);
  if (!runtime_fixture::eventually([&] { return get(0, slow.thread) == 200; }, 10s)) {
    std::printf("cluster serve test: n1's link opened while n3 was stopped stays unanswered: n1 restarts\n");
    nodes[0]->kill();
    nodes[0] = start_node(ids[0], file, data(0));
  }
  CHECK(runtime_fixture::eventually([&] { return get(0, slow.thread) == 200; }, 30s));
  CHECK(manifest_of(r.body).last_seq == slow.last_seq);
}

// A hung node (SIGSTOP) costs only the requests for its own threads: 20
// requests at once through n1 with the default two I/O threads, 8 of them for
// the stopped node's threads, answer each by itself — the healthy ones (reads,
// a listing of entries, waited runs) at once, the stopped node's 503 within the
// cluster timeout, never a multiple of it. Before handlers left the I/O
// threads, each forwarded call held one: the healthy requests waited behind
// them for seconds and the hung ones answered at 2, 2, 4, 4, ... s.
TEST_CASE("cluster serve: a stopped node costs only the requests for its own threads") {
  temp_dir dir;
  const size_t n = 3;
  std::string ids[n] = {"n1", "n2", "n3"};
  std::string file = dir.str("cluster");
  {
    std::ofstream out{file};
    for (size_t i = 0; i < n; ++i) out << ids[i] << " 127.0.0.1:" << free_port() << "\n";
  }
  std::unique_ptr<serve_process> nodes[n];
  for (size_t i = 0; i < n; ++i) nodes[i] = start_node(ids[i], file, dir.str(ids[i]));
  auto client = [&](size_t i) { return std::make_unique<http::client>(http::endpoint{"127.0.0.1", nodes[i]->port()}, "", 20s); };
  http::response r;
  REQUIRE(client(0)->call("POST", "/v1/agents", R"({"id":"a","engine_config":{"default":{"reply":"ok"}}})", &r).is_ok());
  REQUIRE(r.status < 300);
  // Four threads on each node (a node mints the ids it owns), each with a run,
  // each read once through n1 so that n1 has its links.
  std::vector<std::string> owned[n];
  for (size_t i = 0; i < n; ++i)
    for (int k = 0; k < 4; ++k) {
      REQUIRE(client(i)->call("POST", "/v1/threads", R"({"agent_id":"a"})", &r).is_ok());
      REQUIRE(r.status == 201);
      owned[i].push_back(manifest_of(r.body).id);
      REQUIRE(client(0)->call("POST", "/v1/threads/" + owned[i].back() + "/entries", R"({"text":"hi","wait":true})", &r).is_ok());
      INFO(r.body);
      REQUIRE(r.status == 200);
    }

  struct probe {
    std::string method, target, body;
    bool hung;  // a thread of the stopped node
    int status = 0;
    std::chrono::milliseconds took{};
    std::string answer;
  };
  std::vector<probe> probes;
  for (const auto& id : owned[2]) {
    probes.push_back({"GET", "/v1/threads/" + id, "", true});
    probes.push_back({"GET", "/v1/threads/" + id + "/entries", "", true});
  }
  for (size_t i = 0; i < 2; ++i)
    for (const auto& id : owned[i]) {
      probes.push_back({"GET", "/v1/threads/" + id + "/entries", "", false});
      if (&id == &owned[i].front())
        probes.push_back({"POST", "/v1/threads/" + id + "/entries", R"({"text":"again","wait":true})", false});
      else
        probes.push_back({"GET", "/v1/threads/" + id, "", false});
    }
  REQUIRE(probes.size() == 24);

  REQUIRE(::kill(nodes[2]->child().pid(), SIGSTOP) == 0);
  std::vector<std::thread> callers;
  for (auto& p : probes)
    callers.emplace_back([&p, port = nodes[0]->port()] {
      http::client c{http::endpoint{"127.0.0.1", port}, "", 20s};
      http::response answer;
      auto start = std::chrono::steady_clock::now();
      if (c.call(p.method, p.target, p.body, &answer).is_ok()) {
        p.status = answer.status;
        p.answer = answer.body;
      }
      p.took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
    });
  for (auto& t : callers) t.join();
  REQUIRE(::kill(nodes[2]->child().pid(), SIGCONT) == 0);

  for (const auto& p : probes) {
    INFO(p.method << " " << p.target << ": " << p.status << " after " << p.took.count() << " ms: " << p.answer);
    if (p.hung) {
      CHECK(p.status == 503);
      CHECK(p.answer.find("unavailable") != std::string::npos);
      CHECK(p.took < 3000ms);  // the cluster timeout (2 s) and slack, never twice it
    } else {
      CHECK(p.status == 200);
      CHECK(p.took < 1000ms);  // before: 2 to 6 s, behind the hung requests
    }
  }
}

// A fourth process joins: every node gets the new cluster file (SIGHUP),
// `skein cluster rebalance` moves the threads the new member owns, and then
// every node serves every thread with every acknowledged entry — the new
// node too after a SIGKILL right after the rebalance.
TEST_CASE("cluster serve: a fourth process joins through SIGHUP and skein cluster rebalance") {
  temp_dir dir;
  std::vector<std::string> ids = {"n1", "n2", "n3", "n4"};
  std::vector<uint16_t> links;
  for (size_t i = 0; i < ids.size(); ++i) links.push_back(free_port());
  std::string file = dir.str("cluster");
  auto write_file = [&](size_t members) {
    std::ofstream out{file + ".tmp"};
    for (size_t i = 0; i < members; ++i) out << ids[i] << " 127.0.0.1:" << links[i] << "\n";
    out.close();
    REQUIRE(std::rename((file + ".tmp").c_str(), file.c_str()) == 0);
  };
  write_file(3);
  auto data = [&](size_t i) { return dir.str(ids[i]); };
  std::vector<std::unique_ptr<serve_process>> nodes;
  for (size_t i = 0; i < 3; ++i) nodes.push_back(start_node(ids[i], file, data(i)));
  auto client = [&](size_t i) {
    return std::make_unique<http::client>(http::endpoint{"127.0.0.1", nodes[i]->port()}, "", 20s);
  };
  http::response r;
  REQUIRE(client(0)->call("POST", "/v1/agents", R"({"id":"a","engine_config":{"default":{"reply":"ok"}}})", &r).is_ok());
  REQUIRE(r.status < 300);
  std::vector<std::pair<std::string, uint64_t>> acks;  // thread, last seq
  for (size_t k = 0; k < 40; ++k) {
    REQUIRE(client(k % 3)->call("POST", "/v1/threads", R"({"agent_id":"a"})", &r).is_ok());
    REQUIRE(r.status == 201);
    std::string id = manifest_of(r.body).id;
    REQUIRE(client((k + 1) % 3)->call("POST", "/v1/threads/" + id + "/entries", R"({"text":"hi","wait":true})", &r).is_ok());
    INFO(r.body);
    REQUIRE(r.status == 200);
    acks.emplace_back(id, last_seq_of(r.body));
  }

  // Without a changed file there is nothing to move.
  child_process idle{{SKEIN_BINARY, "cluster", "rebalance", "--server",
                      "http://127.0.0.1:" + std::to_string(nodes[0]->port())}};
  idle.read_until(30s);
  CHECK(idle.stop(0) == 0);
  CHECK(idle.output().find("committed: 0 threads moved") != std::string::npos);

  // A file that does not parse, reloaded: refused by name, nothing changes.
  {
    std::ofstream bad{file};
    bad << "n1 127.0.0.1:" << links[0] << "\nn2 127.0.0.1:99999\n";
  }
  REQUIRE(::kill(nodes[0]->child().pid(), SIGHUP) == 0);
  const std::string& said = nodes[0]->child().read_until(
      10s, [](const std::string& o) { return o.find("not reloaded") != std::string::npos; });
  CHECK(said.find("not reloaded, nothing changed") != std::string::npos);
  CHECK(said.find("port") != std::string::npos);
  REQUIRE(client(0)->call("GET", "/v1/cluster", "", &r).is_ok());
  CHECK(r.body.find(R"("role":"member")") != std::string::npos);
  CHECK(r.body.find(R"("role":"joining")") == std::string::npos);
  CHECK(r.body.find(R"("role":"leaving")") == std::string::npos);

  write_file(4);
  nodes.push_back(start_node(ids[3], file, data(3)));
  for (size_t i = 0; i < 3; ++i) REQUIRE(::kill(nodes[i]->child().pid(), SIGHUP) == 0);
  for (size_t i = 0; i < 4; ++i)
    CHECK(runtime_fixture::eventually(
        [&] {
          return client(i)->call("GET", "/v1/cluster", "", &r).is_ok() &&
                 r.body.find(R"("role":"joining")") != std::string::npos;
        },
        10s));
  // A token-less client of a node with tokens would be refused; this one has
  // none, so the CLI runs as admin.
  child_process cli{{SKEIN_BINARY, "cluster", "rebalance", "--server",
                     "http://127.0.0.1:" + std::to_string(nodes[1]->port())}};
  const std::string& out = cli.read_until(60s);
  int exit_status = cli.stop(0);
  INFO(out);
  REQUIRE(WIFEXITED(exit_status));
  CHECK(WEXITSTATUS(exit_status) == 0);
  CHECK(out.find("committed:") != std::string::npos);

  rendezvous four{{ids[0], ids[1], ids[2], ids[3]}};
  size_t on_n4 = 0;
  for (const auto& [thread, seq] : acks) on_n4 += four.owner_id(cluster_key(thread)) == "n4";
  CHECK(on_n4 > 0);
  REQUIRE(client(3)->call("GET", "/v1/cluster", "", &r).is_ok());
  INFO(r.body);
  CHECK(r.body.find(R"("role":"joining")") == std::string::npos);
  CHECK(r.body.find(R"("id":"n4","address":"127.0.0.1:)" + std::to_string(links[3]) + R"(","state":"self","role":"member","self":true,"threads":)" +
                    std::to_string(on_n4)) != std::string::npos);

  // SIGKILL of the new node right after: what it adopted is durable.
  nodes[3]->kill();
  nodes[3] = start_node(ids[3], file, data(3));
  for (size_t k = 0; k < acks.size(); ++k) {
    const std::string& thread = acks[k].first;  // not a structured binding: a lambda captures it
    const uint64_t seq = acks[k].second;
    bool ok = runtime_fixture::eventually(
        [&] { return client(k % 4)->call("GET", "/v1/threads/" + thread, "", &r).is_ok() && r.status == 200; }, 30s);
    INFO(thread << " via n" << k % 4 + 1 << ": " << r.status << " " << r.body);
    REQUIRE(ok);
    CHECK(manifest_of(r.body).last_seq == seq);
  }
  // The new members hold after restarts: n1 again, from its stored members.
  nodes[0]->kill();
  nodes[0] = start_node(ids[0], file, data(0));
  for (const auto& [thread, seq] : acks) {
    REQUIRE(client(0)->call("GET", "/v1/threads/" + thread, "", &r).is_ok());
    INFO(thread << ": " << r.body);
    CHECK(r.status == 200);
  }
}
