// Three `skein serve` processes as one replicated cluster over a real
// nats-server (`--cluster nats://…`, no member file): agents written through
// one node are everyone's; threads created and written through any node;
// SIGKILL of the leader of a thread's partition: the partition is served by
// another node (failover time printed), every acknowledged entry is there,
// seqs go on without a gap; the killed node restarts on its disk and catches
// up; after a planned stop of all three every node's disk holds the same
// events for every thread.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <map>
#include <thread>

#include "persistence/event_log.hpp"
#include "runtime/model/cluster.hpp"
#include "runtime/model/json_codec.hpp"
#include "runtime/model/json_reader.hpp"
#include "runtime/replication/placement.hpp"
#include "tests/support/answers.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/eventually.hpp"
#include "tests/support/nats_cluster.hpp"
#include "tests/support/temp_dir.hpp"
#include "tools/client/http_client.hpp"

using namespace skein;
using namespace skein::test;
using namespace std::chrono_literals;

namespace {

constexpr uint32_t partitions = 8;

// `nats`: the servers' URLs, comma-separated; `log_replicas`: copies of the
// log among them.
std::unique_ptr<serve_process> start_node(const std::string& id, const std::string& nats, const std::string& data,
                                          int log_replicas = 1) {
  return std::make_unique<serve_process>(
      SKEIN_BINARY, data, "sync", 60s,
      std::vector<std::string>{"--node-id", id, "--cluster", nats, "--cluster-partitions", std::to_string(partitions),
                               "--cluster-replicas", "3", "--cluster-log-replicas", std::to_string(log_replicas),
                               "--cluster-lease-ttl-ms", "900", "--cluster-member-ttl-ms", "900",
                               "--cluster-timeout-ms", "8000"});
}

// The leader of each partition, as one node's GET /v1/cluster shows it; ""
// where it shows none.
std::map<uint32_t, std::string> leaders_of(const std::string& body) {
  std::map<uint32_t, std::string> out;
  json::document doc;
  json::dom::array parts;
  if (!json::parse(body, {}, "cluster", &doc) ||
      doc.root().at_pointer("/replication/partitions").get_array().get(parts) != simdjson::SUCCESS)
    return out;
  for (json::dom::element p : parts) {
    json::object_reader o;
    uint64_t n = 0;
    std::string leader;
    if (!json::object_reader::open(p, "partition", &o).is_ok() || !o.uint("partition", &n).is_ok() ||
        !o.string("leader", &leader).is_ok())
      continue;
    out[static_cast<uint32_t>(n)] = leader;
  }
  return out;
}

// Every stored event of a thread through `c`, page by page (its JSON bodies
// concatenated); "" when a page is refused.
std::string all_entries(http::client& c, const std::string& thread) {
  std::string all;
  for (uint64_t from = 1;;) {
    http::response r;
    if (!c.call("GET", "/v1/threads/" + thread + "/entries?limit=1000&from_seq=" + std::to_string(from), "", &r).is_ok() ||
        r.status != 200)
      return "";
    all += r.body;
    json::document doc;
    json::object_reader o;
    uint64_t next = 0, last = 0;
    if (!json::parse(r.body, {}, "page", &doc) || !json::object_reader::open(doc.root(), "page", &o) ||
        !o.uint("next_seq", &next) || !o.uint("last_seq", &last))
      return "";
    if (next > last || next <= from) return all;
    from = next;
  }
}

struct ack {
  std::string thread;
  uint64_t last_seq = 0;
};

// After a planned stop of every node: each node's disk holds each thread's
// events, the same on all of them.
void check_disks_equal(const std::vector<std::string>& dirs, const std::vector<ack>& acks) {
  for (const auto& a : acks) {
    std::vector<event> first;
    for (size_t i = 0; i < dirs.size(); ++i) {
      log_options lo;
      lo.path = dirs[i];
      std::unique_ptr<event_log> log;
      REQUIRE(event_log::open(lo, &log).is_ok());
      std::vector<event> events;
      REQUIRE(log->read_events(a.thread, 1, 10000, &events).is_ok());
      INFO("disk " << dirs[i] << " thread " << a.thread);
      CHECK(events.size() == a.last_seq);
      if (i == 0) first = events;
      else CHECK(events == first);
    }
  }
}

// One nats-server and three nodes over it, n1 to n3, each with its own data directory.
// On a machine without nats-server none starts and ready() is false: the
// test skips itself with a hint.
struct replicated_nodes {
  static constexpr size_t n = 3;
  std::unique_ptr<nats_cluster> servers;
  temp_dir dir;
  const std::string ids[n] = {"n1", "n2", "n3"};
  std::unique_ptr<serve_process> nodes[n];
  http::response r;

  // `servers_count` nats-servers (one, or a cluster of three holding the log at replicas 3).
  explicit replicated_nodes(int servers_count = 1) {
    if (nats_cluster::binary().empty()) return;
    servers = std::make_unique<nats_cluster>(servers_count);
    for (size_t i = 0; i < n; ++i) nodes[i] = start_node(ids[i], url(), data(i), servers_count);
  }
  bool ready() const {
    if (!servers) WARN("skipped: no nats-server (apt-get install nats-server; packages.txt lists it)");
    return servers != nullptr;
  }
  std::string url() const {
    std::string all;
    for (const auto& u : servers->urls()) all += (all.empty() ? "" : ",") + u;
    return all;
  }
  std::string data(size_t i) const { return dir.str(ids[i]); }
  // Whether every node shows a leader for every partition.
  bool all_led() {
    for (size_t i = 0; i < n; ++i) {
      if (!client(i)->call("GET", "/v1/cluster", "", &r).is_ok() || r.status != 200) return false;
      auto l = leaders_of(r.body);
      if (l.size() != partitions || std::any_of(l.begin(), l.end(), [](const auto& e) { return e.second.empty(); }))
        return false;
    }
    return true;
  }
  std::unique_ptr<http::client> client(size_t i) const {
    return std::make_unique<http::client>(http::endpoint{"127.0.0.1", nodes[i]->port()}, "", 20s);
  }
};

}  // namespace

TEST_CASE_METHOD(replicated_nodes, "replicated serve: three nodes over nats-server, the leader of a partition SIGKILLed") {
  if (!ready()) return;

  // Every partition led, by the same node as every node sees it.
  auto converged = [&](const std::vector<size_t>& alive) {
    std::map<uint32_t, std::string> first;
    for (size_t i : alive) {
      if (!client(i)->call("GET", "/v1/cluster", "", &r).is_ok() || r.status != 200) return false;
      auto l = leaders_of(r.body);
      if (l.size() != partitions) return false;
      for (auto& [p, leader] : l)
        if (leader.empty()) return false;
      if (first.empty()) first = l;
      else if (l != first) return false;
    }
    return true;
  };
  REQUIRE(eventually([&] { return converged({0, 1, 2}); }, 60s));

  REQUIRE(client(2)->call("POST", "/v1/agents", R"({"id":"a","engine_config":{"default":{"reply":"ok"}}})", &r).is_ok());
  INFO(r.body);
  REQUIRE(r.status < 300);
  // The same agent again through another node: the cluster's, a no-op; another one: a conflict.
  REQUIRE(client(0)->call("POST", "/v1/agents", R"({"id":"a","engine_config":{"default":{"reply":"ok"}}})", &r).is_ok());
  CHECK(r.status < 300);
  REQUIRE(client(1)->call("POST", "/v1/agents", R"({"id":"a","engine_config":{"default":{"reply":"no"}}})", &r).is_ok());
  CHECK(r.status == 409);

  std::vector<ack> acks;
  for (size_t k = 0; k < 12; ++k) {
    REQUIRE(client(k % n)->call("POST", "/v1/threads", R"({"agent_id":"a"})", &r).is_ok());
    INFO(r.body);
    REQUIRE(r.status == 201);
    std::string id = manifest_of(r.body).id;
    REQUIRE(client((k + 1) % n)->call("POST", "/v1/threads/" + id + "/entries", R"({"text":"hi","wait":true})", &r).is_ok());
    INFO(r.body);
    REQUIRE(r.status == 200);
    acks.push_back({id, last_seq_of(r.body)});
  }
  // Listed once each, through any node.
  REQUIRE(client(1)->call("GET", "/v1/threads?agent_id=a&limit=100", "", &r).is_ok());
  for (const auto& a : acks) {
    const std::string id = "\"id\":\"" + a.thread + "\"";
    size_t at = r.body.find(id), again = r.body.find(id, at + 1);
    CHECK(at != std::string::npos);
    CHECK(again == std::string::npos);
  }

  // Prometheus metrics of the replication, on every node.
  REQUIRE(client(1)->call("GET", "/metrics", "", &r).is_ok());
  REQUIRE(r.status == 200);
  CHECK(r.body.find("skein_cluster_partitions " + std::to_string(partitions) + "\n") != std::string::npos);
  CHECK(r.body.find("skein_cluster_partitions_leaderless 0\n") != std::string::npos);
  CHECK(r.body.find("skein_cluster_applied_seq{partition=\"0\"}") != std::string::npos);

  // Usage and memory search gather each thread's rows once, though every node stores them.
  REQUIRE(client(2)->call("GET", "/v1/usage?agent=a", "", &r).is_ok());
  INFO(r.body);
  REQUIRE(r.status == 200);
  CHECK(r.body.find("\"rows\":" + std::to_string(acks.size()) + ",") != std::string::npos);
  auto hits_once = [&] {
    if (!client(1)->call("GET", "/v1/agents/a/memory?q=hi&k=50", "", &r).is_ok() || r.status != 200) return false;
    size_t found = 0;
    for (const auto& a : acks)
      for (uint64_t seq = 1; seq <= a.last_seq; ++seq) {
        const std::string hit = "\"thread_id\":\"" + a.thread + "\",\"seq\":" + std::to_string(seq) + ",";
        size_t at = r.body.find(hit);
        if (at == std::string::npos) continue;
        ++found;
        CHECK(r.body.find(hit, at + 1) == std::string::npos);
      }
    return found >= acks.size();  // each thread's "hi", embedded by its leader's effect
  };
  CHECK(eventually(hits_once, 30s));

  // A drain of n2 through n1: n2's leads move to the others while it is
  // written through; undone, n2 leads again. A node that is not a member: 404.
  auto leads_of = [&](size_t via, const std::string& node) {
    if (!client(via)->call("GET", "/v1/cluster", "", &r).is_ok() || r.status != 200) return size_t{99};
    auto l = leaders_of(r.body);
    if (l.size() != partitions) return size_t{99};
    size_t led = 0;
    for (auto& [p, leader] : l) led += leader == node ? 1 : leader.empty() ? 99 : 0;
    return led;
  };
  REQUIRE(client(0)->call("POST", "/v1/cluster/nodes/n9/drain", "", &r).is_ok());
  CHECK(r.status == 404);
  REQUIRE(client(0)->call("POST", "/v1/cluster/nodes/n2/drain", "", &r).is_ok());
  INFO(r.body);
  REQUIRE(r.status == 202);
  for (auto& a : acks) {
    REQUIRE(client(1)->call("POST", "/v1/threads/" + a.thread + "/entries", R"({"text":"drained","wait":true})", &r)
                .is_ok());
    INFO(r.body);
    if (r.status == 503) continue;  // its partition between two leaders: the request timed out
    REQUIRE(r.status == 200);
    CHECK(last_seq_of(r.body) > a.last_seq);
    a.last_seq = last_seq_of(r.body);
  }
  CHECK(eventually([&] { return leads_of(0, "n2") == 0 && leads_of(1, "n2") == 0; }, 30s));
  REQUIRE(client(2)->call("DELETE", "/v1/cluster/nodes/n2/drain", "", &r).is_ok());
  REQUIRE(r.status == 202);
  CHECK(eventually([&] { size_t led = leads_of(1, "n2"); return led > 0 && led < 99; }, 30s));
  REQUIRE(eventually([&] { return converged({0, 1, 2}); }, 60s));
  for (auto& a : acks) {  // the last seqs as they stand (an entry above that timed out may have run)
    // A partition moving back to n2 answers 503 for that moment.
    REQUIRE(eventually([&] { return client(2)->call("GET", "/v1/threads/" + a.thread, "", &r).is_ok() && r.status == 200; }, 30s));
    a.last_seq = manifest_of(r.body).last_seq;
  }

  // The leader of the first thread's partition goes: SIGKILL.
  REQUIRE(client(0)->call("GET", "/v1/cluster", "", &r).is_ok());
  const uint32_t part = replication::partition_of("default", cluster_key(acks[0].thread), partitions);
  const std::string victim_id = leaders_of(r.body)[part];
  size_t victim = 0;
  while (ids[victim] != victim_id) ++victim;
  const size_t via = (victim + 1) % n;
  const auto killed_at = std::chrono::steady_clock::now();
  nodes[victim]->kill();

  // Through a survivor, every thread takes an entry again: the dead node's
  // partitions after their failover (a 503 meanwhile, never a wrong answer).
  std::chrono::steady_clock::duration failover{};
  size_t refused = 0;  // 503s meanwhile: a request that met the dead link first
  for (auto& a : acks) {
    bool done = eventually(
        [&] {
          if (!client(via)->call("POST", "/v1/threads/" + a.thread + "/entries", R"({"text":"again","wait":true})", &r)
                   .is_ok())
            return false;
          if (r.status == 503) {  // unavailable, while no leader serves it
            CHECK(r.body.find("unavailable") != std::string::npos);
            ++refused;
            return false;
          }
          INFO(a.thread << ": " << r.body);
          REQUIRE(r.status == 200);
          return true;
        },
        60s);
    INFO(a.thread << ": " << r.status << " " << r.body);
    REQUIRE(done);
    uint64_t seq = last_seq_of(r.body);
    CHECK(seq > a.last_seq);  // every acknowledged event before it, none lost
    a.last_seq = seq;
    if (failover == std::chrono::steady_clock::duration{}) failover = std::chrono::steady_clock::now() - killed_at;
  }
  CHECK(refused <= 2);  // the others waited for the next leader
  WARN(refused << " refused; failover of partition " << part << " (leader " << victim_id << " SIGKILLed, lease ttl 900 ms): "
                                << std::chrono::duration_cast<std::chrono::milliseconds>(failover).count() << " ms");

  // Seqs have no gap, and each thread's events read the same through both survivors.
  for (const auto& a : acks) {
    std::string seen[2];
    size_t k = 0;
    for (size_t i = 0; i < n; ++i) {
      if (i == victim) continue;
      REQUIRE(client(i)->call("GET", "/v1/threads/" + a.thread + "/entries?limit=1000", "", &r).is_ok());
      INFO(r.body);
      REQUIRE(r.status == 200);
      seen[k++] = r.body;
    }
    CHECK(seen[0] == seen[1]);
    for (uint64_t s = 1; s <= a.last_seq; ++s)
      CHECK(seen[0].find("\"seq\":" + std::to_string(s) + ",") != std::string::npos);
  }

  // The killed node again on its disk: it joins, catches up, and leads again.
  nodes[victim] = start_node(ids[victim], url(), data(victim));
  REQUIRE(eventually([&] { return converged({0, 1, 2}); }, 60s));
  for (const auto& a : acks) {
    REQUIRE(client(victim)->call("GET", "/v1/threads/" + a.thread, "", &r).is_ok());
    INFO(r.body);
    REQUIRE(r.status == 200);
    CHECK(manifest_of(r.body).last_seq == a.last_seq);
  }

  // A planned stop of all three; then every disk holds every thread's events, the same.
  for (size_t i = 0; i < n; ++i) CHECK(nodes[i]->stop_within(SIGTERM, 30s) == 0);
  check_disks_equal({data(0), data(1), data(2)}, acks);
}

TEST_CASE_METHOD(replicated_nodes, "replicated serve: a leader paused past its lease steps down when it resumes") {
  if (!ready()) return;
  REQUIRE(eventually([&] { return all_led(); }, 60s));
  REQUIRE(client(1)->call("POST", "/v1/agents", R"({"id":"a","engine_config":{"default":{"reply":"ok"}}})", &r).is_ok());
  REQUIRE(r.status < 300);

  // A thread made through n1 is led by n1 (a node mints ids of its own partitions).
  std::vector<ack> acks(1);
  REQUIRE(client(0)->call("POST", "/v1/threads", R"({"agent_id":"a"})", &r).is_ok());
  INFO(r.body);
  REQUIRE(r.status == 201);
  acks[0].thread = manifest_of(r.body).id;
  REQUIRE(client(0)->call("POST", "/v1/threads/" + acks[0].thread + "/entries", R"({"text":"one","wait":true})", &r).is_ok());
  REQUIRE(r.status == 200);
  acks[0].last_seq = last_seq_of(r.body);

  // n1 stopped (SIGSTOP) past its lease: n2 or n3 takes the partition and serves the thread.
  REQUIRE(::kill(nodes[0]->child().pid(), SIGSTOP) == 0);
  bool served = eventually(
      [&] {
        return client(1)->call("POST", "/v1/threads/" + acks[0].thread + "/entries", R"({"text":"two","wait":true})", &r)
                   .is_ok() &&
               r.status == 200;
      },
      60s);
  INFO(r.status << " " << r.body);
  REQUIRE(served);
  uint64_t seq = last_seq_of(r.body);
  CHECK(seq > acks[0].last_seq);
  acks[0].last_seq = seq;

  // n1 resumes: it no longer leads the partition (its next append would be
  // fenced off), and a write through it goes to the new leader.
  REQUIRE(::kill(nodes[0]->child().pid(), SIGCONT) == 0);
  served = eventually(
      [&] {
        return client(0)->call("POST", "/v1/threads/" + acks[0].thread + "/entries", R"({"text":"three","wait":true})", &r)
                   .is_ok() &&
               r.status == 200;
      },
      60s);
  INFO(r.status << " " << r.body);
  REQUIRE(served);
  seq = last_seq_of(r.body);
  CHECK(seq > acks[0].last_seq);
  acks[0].last_seq = seq;
  REQUIRE(eventually([&] { return all_led(); }, 60s));

  for (size_t i = 0; i < n; ++i) CHECK(nodes[i]->stop_within(SIGTERM, 30s) == 0);
  check_disks_equal({data(0), data(1), data(2)}, acks);
}

// Three nats-servers holding the log at replicas 3: one killed, writes go
// on; two killed, writes answer 503 within the timeout (never a hang); both
// back, writes go on. Every acknowledged entry is in its thread once; one
// that failed is there at most once (its append may have landed).
struct three_servers : replicated_nodes {
  three_servers() : replicated_nodes(3) {}
};

TEST_CASE_METHOD(three_servers, "replicated serve: nats-servers killed under the nodes, one and then two") {
  if (!ready()) return;
  REQUIRE(eventually([&] { return all_led(); }, 60s));
  REQUIRE(client(0)->call("POST", "/v1/agents", R"({"id":"a","engine_config":{"default":{"reply":"ok"}}})", &r).is_ok());
  REQUIRE(r.status < 300);
  std::vector<std::string> threads;
  for (size_t k = 0; k < 3; ++k) {
    REQUIRE(client(k)->call("POST", "/v1/threads", R"({"agent_id":"a"})", &r).is_ok());
    REQUIRE(r.status == 201);
    threads.push_back(manifest_of(r.body).id);
  }
  std::map<std::string, int> outcome;  // entry text -> its answer's status
  int next = 0;
  // One waited entry per thread, each through another node; its text names it.
  auto write_round = [&]() {
    std::vector<int> statuses;
    for (size_t k = 0; k < threads.size(); ++k) {
      const std::string text = "entry-" + std::to_string(next++);
      const auto start = std::chrono::steady_clock::now();
      status s = client((k + 1) % n)->call("POST", "/v1/threads/" + threads[k] + "/entries",
                                           R"({"text":")" + text + R"(","wait":true})", &r);
      INFO(text << ": " << s.to_string() << " " << r.status << " " << r.body);
      REQUIRE(s.is_ok());  // an answer, never a hang (the client gives up after 20 s)
      CHECK(std::chrono::steady_clock::now() - start < 19s);
      CHECK((r.status == 200 || r.status == 503));
      outcome[text] = r.status;
      statuses.push_back(r.status);
    }
    return statuses;
  };
  auto all_ok = [&](const std::vector<int>& st) { return std::all_of(st.begin(), st.end(), [](int x) { return x == 200; }); };
  REQUIRE(all_ok(write_round()));

  servers->kill(0);  // a quorum remains: stream leaders move, writes go on
  CHECK(eventually([&] { return all_ok(write_round()); }, 60s));
  servers->kill(1);  // no quorum: refused within the timeout
  CHECK(eventually([&] {
    auto st = write_round();
    return std::all_of(st.begin(), st.end(), [](int x) { return x == 503; });
  }, 60s));
  servers->restart(0);
  servers->restart(1);
  const auto restarted = std::chrono::steady_clock::now();
  CHECK(eventually([&] { return all_ok(write_round()); }, 90s));
  WARN("writes through every node again "
       << std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - restarted).count()
       << " ms after both servers restarted");

  // Each acknowledged entry once; each failed one at most once.
  size_t acked = 0, failed = 0;
  std::string stored;  // every thread's events
  for (const auto& t : threads) {
    std::string events;
    REQUIRE(eventually([&] { return !(events = all_entries(*client(0), t)).empty(); }, 30s));
    stored += events;
  }
  for (const auto& [text, st] : outcome) {
    size_t count = 0;
    const std::string quoted = "\"" + text + "\"";
    for (size_t at = stored.find(quoted); at != std::string::npos; at = stored.find(quoted, at + 1)) ++count;
    INFO(text << " answered " << st << ", stored " << count << " times");
    if (st == 200) CHECK(count == 1);
    else CHECK(count <= 1);
    (st == 200 ? acked : failed) += 1;
  }
  WARN(acked << " entries acknowledged, " << failed << " refused (503) while the servers were down");
  for (size_t i = 0; i < n; ++i) CHECK(nodes[i]->stop_within(SIGTERM, 30s) == 0);
}
