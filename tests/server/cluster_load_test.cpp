// Three `skein serve` processes linked by TLS (certificates of one cluster CA),
// 3 × 1,000 threads, clients on every node, and a SIGKILL under load: every
// thread is stored once, on its owner; listing pages over all of them through
// any node; while one node is dead only its threads answer 503 (within the
// timeout) and the others keep serving; after its restart every acknowledged
// run is in its thread's log, once, and every log is gapless.
#include <catch2/catch.hpp>

#include <atomic>
#include <csignal>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "runtime/model/cluster.hpp"
#include "runtime/model/json_codec.hpp"
#include "runtime/model/json_reader.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/free_port.hpp"
#include "tests/support/runtime_fixture.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/tls_cert.hpp"
#include "tools/client/http_client.hpp"

using namespace skein;
using namespace skein::test;
using namespace std::chrono_literals;

namespace {

constexpr size_t nodes_n = 3;
constexpr size_t threads_per_node = 1000;

// Fields of a JSON object body; empty when absent.
struct body_reader {
  json::document doc;
  json::object_reader o;
  bool ok = false;
  explicit body_reader(const std::string& body) {
    ok = json::parse(body, {}, "body", &doc).is_ok() && json::object_reader::open(doc.root(), "body", &o).is_ok();
  }
};

std::vector<event> events_of(const std::string& body) {
  body_reader r{body};
  json::dom::element evs;
  json::dom::array arr;
  std::vector<event> out;
  INFO(body.substr(0, 300));
  REQUIRE(r.ok);
  REQUIRE(r.o.element("events", &evs).is_ok());
  REQUIRE(evs.get(arr) == simdjson::SUCCESS);
  for (json::dom::element e : arr) {
    event ev;
    REQUIRE(decode_event(simdjson::minify(e), &ev).is_ok());
    out.push_back(std::move(ev));
  }
  return out;
}

struct ack {
  std::string thread;
  std::string run_id;
  uint64_t last_seq = 0;
};

}  // namespace

TEST_CASE("cluster serve: three TLS processes under load with 3 x 1000 threads and one SIGKILL") {
  temp_dir dir;
  tls_authority ca{dir.path().string(), "cluster"};
  std::string ids[nodes_n] = {"n1", "n2", "n3"};
  std::string file = dir.str("cluster");
  {
    std::ofstream out{file};
    for (size_t i = 0; i < nodes_n; ++i) out << ids[i] << " 127.0.0.1:" << free_port() << "\n";
  }
  cluster_tls certs[nodes_n];
  for (size_t i = 0; i < nodes_n; ++i) certs[i] = ca.node(ids[i]);
  auto start = [&](size_t i) {
    return std::make_unique<serve_process>(
        SKEIN_BINARY, dir.str(ids[i]), "sync", 60s,
        std::vector<std::string>{"--node-id", ids[i], "--cluster", file, "--cluster-timeout-ms", "2000",
                                 "--cluster-cert", certs[i].certificate, "--cluster-key", certs[i].key,
                                 "--cluster-ca", certs[i].ca});
  };
  std::unique_ptr<serve_process> nodes[nodes_n];
  for (size_t i = 0; i < nodes_n; ++i) nodes[i] = start(i);
  for (size_t i = 0; i < nodes_n; ++i) {
    const std::string& said = nodes[i]->child().read_until(0ms);
    INFO(said);
    CHECK(said.find("TLS, peers verified against the cluster CA") != std::string::npos);
  }
  auto client = [&](size_t i) {
    return std::make_unique<http::client>(http::endpoint{"127.0.0.1", nodes[i]->port()}, "", 20s);
  };
  rendezvous ring{{ids[0], ids[1], ids[2]}};
  auto owner = [&](const std::string& thread) { return ring.owner(cluster_key(thread)); };

  http::response r;
  REQUIRE(client(1)->call("POST", "/v1/agents", R"({"id":"a","engine_config":{"default":{"reply":"ok"}}})", &r).is_ok());
  REQUIRE(r.status < 300);

  // 3 × 1,000 threads, created through every node at once.
  std::vector<std::string> threads;
  {
    std::mutex mu;
    std::vector<std::thread> creators;
    std::atomic<size_t> failed{0};
    for (size_t c = 0; c < 6; ++c)
      creators.emplace_back([&, c] {
        auto http = client(c % nodes_n);
        for (size_t k = 0; k < nodes_n * threads_per_node / 6; ++k) {
          http::response cr;
          if (!http->call("POST", "/v1/threads", R"({"agent_id":"a"})", &cr).is_ok() || cr.status != 201) {
            ++failed;
            continue;
          }
          manifest m;
          if (!decode_manifest(cr.body, &m).is_ok()) ++failed;
          std::lock_guard lock{mu};
          threads.push_back(m.id);
        }
      });
    for (auto& t : creators) t.join();
    REQUIRE(failed == 0);
  }
  REQUIRE(threads.size() == nodes_n * threads_per_node);
  std::set<std::string> all(threads.begin(), threads.end());
  REQUIRE(all.size() == threads.size());
  size_t owned[nodes_n] = {};
  for (const auto& t : threads) ++owned[owner(t)];

  // Each node stores exactly its own threads.
  auto stored_counts = [&](size_t via) {
    std::map<std::string, uint64_t> out;
    REQUIRE(client(via)->call("GET", "/v1/cluster", "", &r).is_ok());
    REQUIRE(r.status == 200);
    for (size_t i = 0; i < nodes_n; ++i) {
      auto p = r.body.find(R"("id":")" + ids[i] + "\"");
      REQUIRE(p != std::string::npos);
      auto q = r.body.find(R"("threads":)", p);
      REQUIRE(q != std::string::npos);
      out[ids[i]] = std::stoull(r.body.substr(q + 10));
    }
    return out;
  };
  for (size_t via = 0; via < nodes_n; ++via) {
    auto counts = stored_counts(via);
    for (size_t i = 0; i < nodes_n; ++i) CHECK(counts[ids[i]] == owned[i]);
  }

  // Listing through each node pages over all 3,000, each once.
  auto list_all = [&](size_t via) {
    std::vector<std::string> seen;
    std::string cursor;
    for (int page = 0; page < 100; ++page) {
      REQUIRE(client(via)->call("GET", "/v1/threads?agent=a&limit=256" + (cursor.empty() ? "" : "&cursor=" + cursor),
                                "", &r).is_ok());
      INFO(r.body.substr(0, 300));
      REQUIRE(r.status == 200);
      body_reader b{r.body};
      REQUIRE(b.ok);
      json::dom::element list;
      json::dom::array arr;
      REQUIRE(b.o.element("threads", &list).is_ok());
      REQUIRE(list.get(arr) == simdjson::SUCCESS);
      for (json::dom::element e : arr) {
        manifest m;
        REQUIRE(decode_manifest(simdjson::minify(e), &m).is_ok());
        seen.push_back(m.id);
      }
      cursor.clear();
      b.o.string("next_cursor", &cursor).ignore();
      if (cursor.empty()) break;
    }
    return seen;
  };
  for (size_t via = 0; via < nodes_n; ++via) {
    auto seen = list_all(via);
    CHECK(seen.size() == threads.size());
    CHECK(std::set<std::string>(seen.begin(), seen.end()) == all);
  }

  // Load: two clients per node send to random threads and wait for each run.
  const uint64_t seed = std::random_device{}();
  std::printf("cluster load test: seed %llu\n", static_cast<unsigned long long>(seed));
  std::mutex mu;
  std::vector<ack> acks;
  std::atomic<bool> killed{false}, stop{false};
  std::atomic<size_t> refused_dead{0}, refused_other{0}, served_after_kill{0}, slow_refusals{0}, odd{0};
  std::vector<std::string> odd_bodies;
  std::vector<std::thread> load;
  for (size_t c = 0; c < 2 * nodes_n; ++c)
    load.emplace_back([&, c] {
      std::mt19937_64 rng{seed + c};
      size_t via = c % nodes_n == 1 ? 0 : c % nodes_n;  // n2 is killed: its clients use n1
      auto http = client(via);
      while (!stop) {
        const std::string& t = threads[rng() % threads.size()];
        bool after_kill = killed;
        auto began = std::chrono::steady_clock::now();
        http::response sr;
        status s = http->call("POST", "/v1/threads/" + t + "/entries", R"({"text":"load","wait":true})", &sr);
        auto took = std::chrono::steady_clock::now() - began;
        if (s && sr.status == 200) {
          body_reader b{sr.body};
          json::dom::element run;
          json::object_reader rr;
          ack a{t, "", 0};
          if (b.ok && b.o.element("run", &run).is_ok() && json::object_reader::open(run, "run", &rr).is_ok() &&
              rr.string("run_id", &a.run_id).is_ok() && rr.uint("last_seq", &a.last_seq).is_ok()) {
            std::lock_guard lock{mu};
            acks.push_back(a);
          } else {
            ++odd;
          }
          if (after_kill) ++served_after_kill;
        } else if (s && sr.status == 503) {
          if (took > 3s) ++slow_refusals;
          // Only the dead node's threads, and only once it is dead.
          if (killed && owner(t) == 1 && sr.body.find("n2") != std::string::npos) ++refused_dead;
          else {
            ++refused_other;
            std::lock_guard lock{mu};
            odd_bodies.push_back(t + ": " + sr.body);
          }
        } else {
          ++odd;
          std::lock_guard lock{mu};
          odd_bodies.push_back(t + ": " + std::to_string(sr.status) + " " + sr.body + " " + s.to_string());
        }
      }
    });
  auto acked = [&] {
    std::lock_guard lock{mu};
    return acks.size();
  };
  CHECK(runtime_fixture::eventually([&] { return acked() >= 300; }, 60s));
  size_t at_kill = acked();
  killed = true;     // before the signal: a refusal may come back before kill() returns
  nodes[1]->kill();  // SIGKILL, right after acknowledgements
  CHECK(runtime_fixture::eventually(
      [&] { return acked() >= at_kill + 150 && refused_dead >= 20; }, 60s));
  stop = true;
  for (auto& t : load) t.join();
  {
    std::lock_guard lock{mu};
    for (const auto& b : odd_bodies) std::printf("cluster load test: unexpected answer: %s\n", b.c_str());
  }
  CHECK(odd == 0);
  CHECK(refused_other == 0);
  CHECK(slow_refusals == 0);
  CHECK(served_after_kill > 0);
  CHECK(refused_dead >= 20);
  std::printf("cluster load test: %zu runs acknowledged, %zu after the kill; %zu refused for the dead node\n", acked(),
              acked() - at_kill, refused_dead.load());

  // n2 again, same data: served through every node, nothing lost, nothing twice.
  nodes[1] = start(1);
  for (size_t via = 0; via < nodes_n; ++via) {
    bool back = runtime_fixture::eventually([&] {
      for (const auto& t : threads)
        if (owner(t) == 1) return client(via)->call("GET", "/v1/threads/" + t, "", &r).is_ok() && r.status == 200;
      return false;
    }, 30s);
    CHECK(back);
  }
  std::map<std::string, std::vector<ack>> by_thread;
  for (const auto& a : acks) by_thread[a.thread].push_back(a);
  size_t checked = 0;
  for (const auto& [t, runs] : by_thread) {
    size_t via = checked++ % nodes_n;
    REQUIRE(client(via)->call("GET", "/v1/threads/" + t + "/entries?limit=1000&view=complete", "", &r).is_ok());
    INFO(t << " via " << ids[via] << ": " << r.status);
    REQUIRE(r.status == 200);
    std::vector<event> log = events_of(r.body);
    check_runs(log);  // gapless from 1; each run between its own start and stop
    for (const auto& a : runs) {
      size_t starts = std::count_if(log.begin(), log.end(), [&](const event& e) {
        return e.type == event_type::signal && e.name == "thread.start" && e.run_id == a.run_id;
      });
      INFO("run " << a.run_id);
      CHECK(starts == 1);
      CHECK(log.size() >= a.last_seq);
    }
  }
  for (size_t via = 0; via < nodes_n; ++via) {
    auto counts = stored_counts(via);
    for (size_t i = 0; i < nodes_n; ++i) CHECK(counts[ids[i]] == owned[i]);
  }
  auto seen = list_all(2);
  CHECK(std::set<std::string>(seen.begin(), seen.end()) == all);
}
