// A node's partitions (runtime/replication/partition_manager.hpp) with three
// nodes in this process, each with its own connection, registry, replicator
// and real RocksDB log, on a real nats-server: every partition comes to be led
// by exactly one node, the placement's; when a leader fails (its renewals
// stop), the next replica takes its partitions over with every acknowledged
// write on its disk; and when the node comes back, placement hands its
// partitions back through released leases, every replica ending identical.
#include <catch2/catch.hpp>
#include <map>
#include <mutex>

#include "runtime/replication/partition_manager.hpp"
#include "runtime/replication/placement.hpp"
#include "tests/support/eventually.hpp"
#include "tests/support/log_fixtures.hpp"
#include "tests/support/nats_cluster.hpp"

using namespace skein;
using namespace skein::replication;
using namespace std::chrono_literals;
using skein::test::nats_cluster;

namespace {

constexpr uint32_t partitions = 8;
constexpr auto ttl = 900ms;

// One node. Its log's writer is the test thread or the manager's on_writer,
// one at a time (`writer`). Declared in the order they must outlive each other.
struct node {
  std::string id;
  skein::test::temp_dir& dir;
  std::mutex writer;
  std::unique_ptr<jetstream> js;
  std::shared_ptr<journal_replicator> rep;
  std::unique_ptr<event_log> log;
  std::unique_ptr<member_registry> reg;
  std::unique_ptr<partition_manager> mgr;

  // `servers`: the NATS servers it may reach (empty: all); the buckets it
  // creates keep `copies` copies.
  node(const nats_cluster& nats, std::string node_id, skein::test::temp_dir& d, std::vector<int> servers = {},
       int copies = 1)
      : id(std::move(node_id)), dir(d) {
    replication::nats_options no = nats.client_options();
    if (!servers.empty()) {
      no.urls.clear();
      for (int i : servers) no.urls.push_back(nats.url(i));
    }
    no.request_timeout = 1s;
    status c = jetstream::connect(no, &js);
    INFO(c.to_string());
    REQUIRE(c.is_ok());
    journal_replication o;
    o.node_id = id;
    o.partitions = partitions;
    o.retry_for = 1s;
    rep = std::make_shared<journal_replicator>(*js, o, nullptr);
    log_options lo;
    lo.path = dir.str();
    lo.replicator = rep;
    log = skein::test::open_log(lo);
    registry_options ro;
    ro.node_id = id;
    ro.member_ttl = ttl;
    ro.replicas = copies;
    // The manager's rounds (every ttl / 3) read the live members themselves.
    status s = member_registry::start(*js, ro, [](const std::vector<member>&) {}, &reg);
    INFO(s.to_string());
    REQUIRE(s.is_ok());
    partition_options po{
        .node_id = id, .partitions = partitions, .replicas = 3, .bucket_replicas = copies, .lease_ttl = ttl};
    partition_hooks hooks;
    hooks.draining = [](const member& m) { return m.value == "draining"; };
    hooks.on_writer = [this](std::function<status(event_log&)> fn) {
      std::lock_guard<std::mutex> lock{writer};
      return fn(*log);
    };
    s = partition_manager::start(*js, *log, *rep, nullptr, *reg, po, hooks, &mgr);
    INFO(s.to_string());
    REQUIRE(s.is_ok());
  }
  // A crash as peers see it: renewals stop, nothing is released or left.
  void fail() {
    mgr->stop(false);
    reg->stop(false);
  }
  bool leads(uint32_t p) const { return mgr->view()[p].leading; }
  status commit(tick& t) {
    std::lock_guard<std::mutex> lock{writer};
    return log->commit(t);
  }
  std::vector<uint32_t> unsettled() {
    std::lock_guard<std::mutex> lock{writer};
    return log->unsettled_partitions();
  }
};

// The node leading `p` when exactly one does, else null.
node* leader_of(const std::vector<node*>& nodes, uint32_t p) {
  node* found = nullptr;
  for (node* n : nodes) {
    if (!n->leads(p)) continue;
    if (found != nullptr) return nullptr;
    found = n;
  }
  return found;
}

// Every partition led by exactly one of `nodes`: its placement's first over them.
bool converged(const std::vector<node*>& nodes) {
  std::vector<std::string> ids;
  for (node* n : nodes) ids.push_back(n->id);
  for (uint32_t p = 0; p < partitions; ++p) {
    node* l = leader_of(nodes, p);
    if (l == nullptr || l->id != replicas_of(p, ids, 3).front()) return false;
  }
  return true;
}

// What each node sees, for a failure's message.
std::string views_of(const std::vector<node*>& nodes) {
  std::string out;
  for (node* n : nodes) {
    out += n->id + " (" + n->mgr->last_error().to_string() + "):";
    for (const auto& v : n->mgr->view())
      out += " p" + std::to_string(v.partition) + "=" + v.leader + (v.leading ? "*" : "") + (v.following ? "f" : "");
    out += "\n";
  }
  return out;
}

}  // namespace

TEST_CASE("partition manager: a failed leader's partitions move to the next replica, acknowledged writes with them") {
  if (nats_cluster::binary().empty()) {
    WARN("nats-server is not installed (packages.txt lists it): the partition manager tests did not run");
    return;
  }
  nats_cluster nats{1};
  {
    auto js = nats.connect();
    REQUIRE(js->ensure_stream({"skein", {"skein.log.>"}, 1}).is_ok());
  }
  skein::test::temp_dir d1, d2, d3;
  auto n1 = std::make_unique<node>(nats, "n1", d1);
  auto n2 = std::make_unique<node>(nats, "n2", d2);
  auto n3 = std::make_unique<node>(nats, "n3", d3);
  std::vector<node*> nodes{n1.get(), n2.get(), n3.get()};
  // Whoever started first took every lease; placement then moves each to
  // its first replica over all three.
  bool settled = skein::test::eventually([&] { return converged(nodes); }, 20s);
  INFO(views_of(nodes));
  REQUIRE(settled);

  // Writes through each thread's leader, every one acknowledged.
  std::map<std::string, uint64_t> acked;
  auto write_round = [&](int round) {
    for (int i = 0; i < 16; ++i) {
      std::string id = "th" + std::to_string(i);
      uint32_t p = n1->rep->partition_of(id);
      node* l = leader_of(nodes, p);
      REQUIRE(l != nullptr);
      tick t = skein::test::make_tick(id, acked[id] + 1, 2);
      t.create = acked[id] == 0;
      status s = l->commit(t);
      INFO(id << " round " << round << " on " << l->id << ": " << s.to_string());
      REQUIRE(s.is_ok());
      acked[id] += 2;
    }
  };
  write_round(0);
  write_round(1);

  // n1 fails: every partition it led is led by another node within the lease's ttl and a few rounds.
  std::vector<uint32_t> moved;
  for (uint32_t p = 0; p < partitions; ++p)
    if (n1->leads(p)) moved.push_back(p);
  REQUIRE_FALSE(moved.empty());
  auto failed_at = std::chrono::steady_clock::now();
  n1->fail();
  std::vector<node*> survivors{n2.get(), n3.get()};
  settled = skein::test::eventually([&] { return converged(survivors); }, 20s);
  INFO(views_of(survivors));
  REQUIRE(settled);
  auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - failed_at);
  WARN("failover of " << moved.size() << " partitions: " << took.count() << " ms (lease ttl " << ttl.count() << " ms)");
  // Every acknowledged write is on the new leaders' disks.
  for (const auto& [id, seq] : acked) {
    node* l = leader_of(survivors, n2->rep->partition_of(id));
    manifest m;
    REQUIRE(l->log->read_manifest(id, &m).is_ok());
    CHECK(m.last_seq == seq);
  }
  nodes = survivors;
  write_round(2);
  CHECK(n2->mgr->counters().took + n3->mgr->counters().took >= partitions);

  // n1 comes back on its disk: it catches up, placement hands its partitions
  // back (the others release them), and every replica ends with the same rows.
  n1.reset();
  n1 = std::make_unique<node>(nats, "n1", d1);
  nodes = {n1.get(), n2.get(), n3.get()};
  settled = skein::test::eventually([&] { return converged(nodes); }, 20s);
  INFO(views_of(nodes));
  REQUIRE(settled);
  for (uint32_t p : moved) CHECK(n1->leads(p));
  write_round(3);
  // The followers apply the last writes; then all three disks agree.
  REQUIRE(skein::test::eventually(
      [&] {
        for (uint32_t p = 0; p < partitions; ++p) {
          uint64_t want = 0;
          REQUIRE(leader_of(nodes, p)->log->replicated_seq(p, &want).is_ok());
          for (node* n : nodes) {
            uint64_t have = 0;
            REQUIRE(n->log->replicated_seq(p, &have).is_ok());
            if (have != want) return false;
          }
        }
        return true;
      },
      20s));
  for (const auto& [id, seq] : acked) {
    INFO("thread " << id);
    std::vector<log_row> first;
    REQUIRE(n1->log->thread_rows(id, &first).is_ok());
    for (node* n : {n2.get(), n3.get()}) {
      std::vector<log_row> rows;
      REQUIRE(n->log->thread_rows(id, &rows).is_ok());
      REQUIRE(rows.size() == first.size());
      for (size_t i = 0; i < rows.size(); ++i) CHECK(rows[i].value == first[i].value);
    }
    manifest m;
    REQUIRE(n1->log->read_manifest(id, &m).is_ok());
    CHECK(m.last_seq == seq);
  }
  CHECK(n2->mgr->counters().released + n3->mgr->counters().released >= moved.size());
}

TEST_CASE("partition manager: a drained node's partitions move to the others under writes, never two writers") {
  if (nats_cluster::binary().empty()) return;
  nats_cluster nats{1};
  {
    auto js = nats.connect();
    REQUIRE(js->ensure_stream({"skein", {"skein.log.>"}, 1}).is_ok());
  }
  skein::test::temp_dir d1, d2, d3;
  node n1{nats, "n1", d1}, n2{nats, "n2", d2}, n3{nats, "n3", d3};
  std::vector<node*> nodes{&n1, &n2, &n3};
  bool settled = skein::test::eventually([&] { return converged(nodes); }, 30s);
  INFO(views_of(nodes));
  REQUIRE(settled);
  size_t led = 0;
  for (uint32_t p = 0; p < partitions; ++p) led += n1.leads(p) ? 1 : 0;
  REQUIRE(led > 0);

  // Writes go on through whoever leads, before, during and after the drain;
  // one refused while its partition moves is tried again, as a client would.
  std::map<std::string, uint64_t> acked;
  size_t refused = 0;
  auto write_all = [&] {
    for (int i = 0; i < 16; ++i) {
      std::string id = "th" + std::to_string(i);
      uint32_t p = n1.rep->partition_of(id);
      node* l = leader_of(nodes, p);
      if (l == nullptr) {
        ++refused;
        continue;
      }
      tick t = skein::test::make_tick(id, acked[id] + 1, 1);
      t.create = acked[id] == 0;
      if (l->commit(t).is_ok()) ++acked[id];
      else ++refused;
    }
  };
  write_all();
  REQUIRE(n1.reg->set_value("draining").is_ok());
  std::vector<node*> rest{&n2, &n3};
  auto drained = [&] {
    for (uint32_t p = 0; p < partitions; ++p)
      if (n1.leads(p) || n1.mgr->view()[p].following) return false;
    return converged(rest);
  };
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (!skein::test::eventually(drained, 50ms)) {
    INFO(views_of(nodes));
    REQUIRE(std::chrono::steady_clock::now() < deadline);
    write_all();
    // Never two writers: no partition is led by two nodes at once.
    for (uint32_t p = 0; p < partitions; ++p) {
      size_t leaders = 0;
      for (node* n : nodes) leaders += n->leads(p) ? 1 : 0;
      REQUIRE(leaders <= 1);
    }
  }
  CHECK(n1.mgr->counters().released >= led);
  write_all();
  WARN(refused << " writes refused while partitions moved");
  for (const auto& [id, seq] : acked) {
    node* l = leader_of(rest, n2.rep->partition_of(id));
    REQUIRE(l != nullptr);
    manifest m;
    REQUIRE(l->log->read_manifest(id, &m).is_ok());
    CHECK(m.last_seq == seq);
  }
}

// The victim reaches one NATS server of three, the others the other two: a
// pause of its server cuts it off (as a SIGSTOP of the node would) while the
// cluster keeps its quorum.
TEST_CASE("partition manager: a leader cut off past its lease is deposed, and every replica ends identical") {
  if (nats_cluster::binary().empty()) return;
  nats_cluster nats{3};
  {
    auto js = nats.connect();
    REQUIRE(skein::test::until_available(20s, [&] {
      return js->ensure_stream({"skein", {"skein.log.>"}, 3});
    }).is_ok());
  }
  const uint32_t p = partition_of("default", "th0", partitions);  // as journal_replicator places th0
  const std::string victim_id = replicas_of(p, {"n1", "n2", "n3"}, 3).front();
  skein::test::temp_dir d1, d2, d3;
  std::vector<std::unique_ptr<node>> owned;
  std::map<std::string, skein::test::temp_dir*> dirs{{"n1", &d1}, {"n2", &d2}, {"n3", &d3}};
  for (const auto& [id, dir] : dirs) {
    std::vector<int> servers = id == victim_id ? std::vector<int>{0} : std::vector<int>{1, 2};
    owned.push_back(std::make_unique<node>(nats, id, *dir, servers, 3));
  }
  std::vector<node*> nodes;
  node* victim = nullptr;
  for (auto& n : owned) {
    nodes.push_back(n.get());
    if (n->id == victim_id) victim = n.get();
  }
  bool settled = skein::test::eventually([&] { return converged(nodes); }, 60s);
  INFO(views_of(nodes));
  REQUIRE(settled);
  REQUIRE(victim->leads(p));

  uint64_t acked = 0;  // th0's acknowledged events
  tick first = skein::test::make_tick("th0", 1, 3);
  REQUIRE(victim->commit(first).is_ok());
  acked = 3;

  nats.pause(0);
  // Its write fails: never acknowledged, never applied on its disk.
  tick cut = skein::test::make_tick("th0", 4, 1);
  CHECK(victim->commit(cut).code() == errc::unavailable);
  std::vector<node*> others;
  for (node* n : nodes)
    if (n != victim) others.push_back(n);
  settled = skein::test::eventually([&] { return converged(others); }, 60s);
  INFO(views_of(others));
  REQUIRE(settled);
  node* next = leader_of(others, p);
  manifest m;
  REQUIRE(next->log->read_manifest("th0", &m).is_ok());
  CHECK(m.last_seq >= acked);  // the failed write may have landed: then once, before anything else
  tick more = skein::test::make_tick("th0", m.last_seq + 1, 2);
  REQUIRE(next->commit(more).is_ok());
  acked = m.last_seq + 2;

  // Cut off for a lease's ttl, it stopped serving by itself.
  REQUIRE(skein::test::eventually([&] { return !victim->leads(p); }, 30s));
  CHECK(victim->mgr->counters().deposed >= 1);
  CHECK(victim->unsettled() == std::vector<uint32_t>{p});

  nats.resume(0);
  // Back: it catches up, and placement gives it the partition again once the
  // others release it; its held partition is resumed as it leads again.
  settled = skein::test::eventually([&] { return converged(nodes) && victim->unsettled().empty(); }, 60s);
  INFO(views_of(nodes));
  REQUIRE(settled);
  tick last = skein::test::make_tick("th0", acked + 1, 1);
  REQUIRE(victim->commit(last).is_ok());
  acked += 1;
  // Every replica applies up to the leader's sequence, then holds the same rows.
  uint64_t want = 0;
  REQUIRE(victim->log->replicated_seq(p, &want).is_ok());
  std::string behind;
  bool applied = skein::test::eventually(
      [&] {
        behind.clear();
        for (node* n : nodes) {
          uint64_t have = 0;
          REQUIRE(n->log->replicated_seq(p, &have).is_ok());
          if (have != want)
            behind += n->id + " at " + std::to_string(have) + " of " + std::to_string(want) + " (restarts " +
                      std::to_string(n->mgr->counters().restarts) + ", " + n->mgr->last_error().to_string() + ") ";
        }
        return behind.empty();
      },
      20s);
  INFO(behind << "\n" << views_of(nodes));
  REQUIRE(applied);
  std::vector<log_row> rows;
  REQUIRE(victim->log->thread_rows("th0", &rows).is_ok());
  for (node* n : others) {
    std::vector<log_row> theirs;
    REQUIRE(n->log->thread_rows("th0", &theirs).is_ok());
    REQUIRE(theirs.size() == rows.size());
    for (size_t i = 0; i < rows.size(); ++i) CHECK(theirs[i].value == rows[i].value);
  }
  REQUIRE(victim->log->read_manifest("th0", &m).is_ok());
  CHECK(m.last_seq == acked);
}
