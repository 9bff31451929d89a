// A node's partitions (runtime/replication/partition_manager.hpp) with three
// nodes in this process, each with its own connection, registry, replicator
// and real RocksDB log, on a real nats-server: every partition comes to be led
// by exactly one node, the placement's; when a leader fails (its renewals
// stop), the next replica takes its partitions over with every acknowledged
// write on its disk; and when the node comes back, placement hands its
// partitions back through released leases, every replica ending identical.
#include <catch2/catch.hpp>
#include <array>
#include <cstdlib>
#include <map>
#include <random>
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

// The node's replicator, which can lose the answer of its next replication
// that succeeded: the message is stored, the write reported unavailable (a
// publish whose acknowledgement timed out).
struct ack_loser : log_replicator {
  std::shared_ptr<journal_replicator> inner;
  std::atomic<bool> lose_next{false};
  uint32_t partition_of(std::string_view route) const override { return inner->partition_of(route); }
  status replicate(std::vector<replicated_part>& parts) override {
    status s = inner->replicate(parts);
    if (s && lose_next.exchange(false)) return status::unavailable("the publish's acknowledgement was lost");
    return s;
  }
};

// One node. Its log's writer is the test thread or the manager's on_writer,
// one at a time (`writer`). Declared in the order they must outlive each other.
struct node {
  std::string id;
  skein::test::temp_dir& dir;
  std::mutex writer;
  std::unique_ptr<jetstream> js;
  std::shared_ptr<journal_replicator> rep;
  std::shared_ptr<ack_loser> loser = std::make_shared<ack_loser>();
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
    loser->inner = rep;
    lo.replicator = loser;
    log = skein::test::open_log(lo);
    registry_options ro;
    ro.node_id = id;
    ro.member_ttl = ttl;
    ro.replicas = copies;
    // The manager's rounds (every ttl / 3) read the live members themselves.
    // A node (re)started while the servers elect leaders tries again, as its supervisor would.
    status s = skein::test::until_available(
        30s, [&] { return member_registry::start(*js, ro, [](const std::vector<member>&) {}, &reg); });
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
    s = skein::test::until_available(
        30s, [&] { return partition_manager::start(*js, *log, *rep, nullptr, *reg, po, hooks, &mgr); });
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
  // Appends the event after what this node's disk holds of `thread`, with `text`.
  status append(const std::string& thread, const std::string& text) {
    tick t;
    {
      std::lock_guard<std::mutex> lock{writer};
      manifest m;
      status r = log->read_manifest(thread, &m);
      t = skein::test::make_tick(thread, r ? m.last_seq + 1 : 1, 1);
    }
    t.events[0].text = text;
    return commit(t);
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

// The replicas of `ps` behind their leader's disk, said for a failure's
// message: "" when every one has applied what its leader has.
std::string lagging(const std::vector<node*>& nodes, const std::vector<uint32_t>& ps) {
  std::string out;
  for (uint32_t p : ps) {
    node* l = leader_of(nodes, p);
    if (l == nullptr) return "p" + std::to_string(p) + " has no leader";
    uint64_t want = 0;
    REQUIRE(l->log->replicated_seq(p, &want).is_ok());
    for (node* n : nodes) {
      uint64_t have = 0;
      REQUIRE(n->log->replicated_seq(p, &have).is_ok());
      if (have != want)
        out += n->id + " p" + std::to_string(p) + " at " + std::to_string(have) + " of " + std::to_string(want) +
               (n->mgr->view()[p].following ? " following" : " not following") + " (restarts " +
               std::to_string(n->mgr->counters().restarts) + ", " + n->mgr->last_error().to_string() + ") ";
    }
  }
  return out;
}

std::vector<uint32_t> every_partition() {
  std::vector<uint32_t> out;
  for (uint32_t p = 0; p < partitions; ++p) out.push_back(p);
  return out;
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
  std::string behind;
  bool applied = skein::test::eventually([&] { return (behind = lagging(nodes, every_partition())).empty(); }, 20s);
  INFO(behind);
  REQUIRE(applied);
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

TEST_CASE("partition manager: a write whose acknowledgement was lost holds its partition until applied, once") {
  if (nats_cluster::binary().empty()) return;
  nats_cluster nats{1};
  {
    auto js = nats.connect();
    REQUIRE(js->ensure_stream({"skein", {"skein.log.>"}, 1}).is_ok());
  }
  skein::test::temp_dir d;
  node n{nats, "n1", d};
  REQUIRE(skein::test::eventually([&] { return converged({&n}); }, 30s));
  auto write = [&](const std::string& text) { return n.append("t1", text); };
  REQUIRE(write("first").is_ok());
  n.loser->lose_next = true;
  CHECK(write("lost ack").code() == errc::unavailable);  // stored, but the node cannot know
  // Held, then applied from the subject by the next round: the next write
  // comes after it, and it is there once.
  status s = skein::test::until_available(30s, [&] { return write("next"); });
  INFO(s.to_string());
  REQUIRE(s.is_ok());
  std::vector<event> events;
  REQUIRE(n.log->read_events("t1", 1, 0, &events).is_ok());
  std::vector<std::string> texts;
  for (const auto& e : events) texts.push_back(e.text);
  CHECK(texts == std::vector<std::string>{"first", "lost ack", "next"});
  CHECK(n.unsettled().empty());
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
  std::string behind;
  bool applied = skein::test::eventually([&] { return (behind = lagging(nodes, {p})).empty(); }, 20s);
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

// A history of writes through whoever leads, beside random faults of nodes
// (a crash, then a restart on the same disk) and of NATS servers (a pause or a
// kill, then a resume or restart), one fault at a time so that a quorum of
// servers and two nodes stay. Then: every acknowledged write is on every
// replica exactly once; a failed one is absent or there once, never twice; no
// seq of a thread holds two different events on two replicas (all replicas'
// rows are identical); and each thread's seqs have no gap.
TEST_CASE("partition manager: a history under random node and server faults keeps every acknowledged write once") {
  if (nats_cluster::binary().empty()) return;
  uint64_t seed = std::random_device{}();
  if (const char* s = std::getenv("SKEIN_TEST_SEED")) seed = std::strtoull(s, nullptr, 10);
  WARN("seed " << seed << " (SKEIN_TEST_SEED=" << seed << " repeats it)");
  std::mt19937_64 rng{seed};
  nats_cluster nats{3};
  {
    auto js = nats.connect();
    REQUIRE(skein::test::until_available(20s, [&] {
      return js->ensure_stream({"skein", {"skein.log.>"}, 3});
    }).is_ok());
  }
  skein::test::temp_dir d1, d2, d3;
  std::array<skein::test::temp_dir*, 3> dirs{&d1, &d2, &d3};
  std::array<std::unique_ptr<node>, 3> nodes;
  for (int i = 0; i < 3; ++i) nodes[i] = std::make_unique<node>(nats, "n" + std::to_string(i + 1), *dirs[i], std::vector<int>{}, 3);
  auto live = [&] {
    std::vector<node*> out;
    for (auto& n : nodes)
      if (n) out.push_back(n.get());
    return out;
  };
  bool settled = skein::test::eventually([&] { return converged(live()); }, 60s);
  INFO(views_of(live()));
  REQUIRE(settled);

  struct write {
    std::string thread;
    bool acked = false;
  };
  std::map<std::string, write> writes;  // by the text each wrote
  int down_node = -1, down_server = -1;
  bool server_killed = false;
  size_t acked = 0, failed = 0, faults = 0;
  for (int step = 0; step < 240; ++step) {
    if (step % 12 == 11) {
      // End the fault under way, or start one.
      if (down_node >= 0) {
        nodes[down_node] = std::make_unique<node>(nats, "n" + std::to_string(down_node + 1), *dirs[down_node],
                                                  std::vector<int>{}, 3);
        down_node = -1;
      } else if (down_server >= 0) {
        if (server_killed) nats.restart(down_server);
        else nats.resume(down_server);
        down_server = -1;
      } else {
        ++faults;
        switch (rng() % 3) {
          case 0:
            down_node = static_cast<int>(rng() % 3);
            nodes[down_node]->fail();
            nodes[down_node].reset();
            break;
          case 1:
            down_server = static_cast<int>(rng() % 3);
            server_killed = false;
            nats.pause(down_server);
            break;
          default:
            down_server = static_cast<int>(rng() % 3);
            server_killed = true;
            nats.kill(down_server);
            break;
        }
      }
    }
    std::string id = "th" + std::to_string(rng() % 6);
    node* l = leader_of(live(), partition_of("default", id, partitions));
    if (l == nullptr) continue;  // moving: a client retries later
    // The next event after what the leader's disk holds, with a text of its own.
    std::string text = "w" + std::to_string(step);
    writes[text] = {id, false};
    if (l->append(id, text).is_ok()) {
      writes[text].acked = true;
      ++acked;
    } else {
      ++failed;
    }
  }
  // Heal: the node back, the server back; every partition led, every replica caught up.
  if (down_node >= 0)
    nodes[down_node] = std::make_unique<node>(nats, "n" + std::to_string(down_node + 1), *dirs[down_node],
                                              std::vector<int>{}, 3);
  if (down_server >= 0) {
    if (server_killed) nats.restart(down_server);
    else nats.resume(down_server);
  }
  WARN(acked << " writes acknowledged, " << failed << " failed, over " << faults << " faults");
  CHECK(acked > 0);
  std::vector<node*> all = live();
  settled = skein::test::eventually([&] { return converged(all); }, 60s);
  INFO(views_of(all));
  REQUIRE(settled);
  std::string behind;
  bool caught_up = skein::test::eventually([&] { return (behind = lagging(all, every_partition())).empty(); }, 60s);
  INFO(behind);
  REQUIRE(caught_up);
  // Healed means writable: no partition stays held by a write that timed out.
  for (int i = 0; i < 6; ++i) {
    std::string id = "th" + std::to_string(i);
    node* l = leader_of(all, partition_of("default", id, partitions));
    std::string text = "after" + std::to_string(i);
    status s = skein::test::until_available(30s, [&] { return l->append(id, text); });
    INFO(id << ": " << s.to_string());
    REQUIRE(s.is_ok());
    writes[text] = {id, true};
  }
  caught_up = skein::test::eventually([&] { return (behind = lagging(all, every_partition())).empty(); }, 60s);
  INFO(behind);
  REQUIRE(caught_up);
  for (int i = 0; i < 6; ++i) {
    std::string id = "th" + std::to_string(i);
    INFO("thread " << id);
    std::vector<std::vector<log_row>> rows(all.size());
    for (size_t k = 0; k < all.size(); ++k) {
      status r = all[k]->log->thread_rows(id, &rows[k]);
      if (r.code() == errc::not_found) continue;
      REQUIRE(r.is_ok());
    }
    for (size_t k = 1; k < all.size(); ++k) {
      REQUIRE(rows[k].size() == rows[0].size());
      for (size_t j = 0; j < rows[0].size(); ++j) CHECK(rows[k][j].value == rows[0][j].value);
    }
    std::vector<event> events;
    status r = all[0]->log->read_events(id, 1, 0, &events);
    if (r.code() == errc::not_found) continue;
    REQUIRE(r.is_ok());
    std::map<std::string, int> seen;
    for (size_t j = 0; j < events.size(); ++j) {
      CHECK(events[j].seq == j + 1);  // no gap
      ++seen[events[j].text];
    }
    for (const auto& [text, n] : seen) {
      INFO("text " << text);
      CHECK(n == 1);  // never twice
      CHECK(writes.count(text) == 1);  // nothing nobody wrote
    }
    for (const auto& [text, w] : writes)
      if (w.acked && w.thread == id) {
        INFO("acknowledged " << text);
        CHECK(seen[text] == 1);
      }
  }
}
