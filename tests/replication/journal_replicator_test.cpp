// A node's event log replicating through JetStream (journal_replicator.hpp
// as the log's log_replicator) on a real nats-server and real RocksDB: a
// leader's writes land, sealed, on the partitions' subjects before its disk,
// and a follower catching up holds exactly the leader's rows; a write of a
// partition not led, or led by a deposed writer, is refused and stored
// nowhere; with the server gone a write is unavailable, written nowhere, and
// its partition held until caught up.
#include <catch2/catch.hpp>

#include "runtime/replication/journal_replicator.hpp"
#include "tests/support/log_fixtures.hpp"
#include "tests/support/nats_cluster.hpp"
#include "tests/support/sealers.hpp"

using namespace skein;
using namespace skein::replication;
using namespace std::chrono_literals;
using skein::test::nats_cluster;
using skein::test::make_tick;
using skein::test::thread_keys;

namespace {

constexpr uint32_t partitions = 4;

// A node: its log, opened with a replicator of its own.
struct node {
  skein::test::temp_dir dir;
  std::shared_ptr<journal_replicator> rep;
  std::unique_ptr<event_log> log;

  node(jetstream& js, const std::string& id, const message_sealer& sealer) {
    journal_replication o;
    o.node_id = id;
    o.partitions = partitions;
    o.retry_for = 1500ms;
    rep = std::make_shared<journal_replicator>(js, o, &sealer);
    log_options lo;
    lo.path = dir.str();
    lo.replicator = rep;
    log = skein::test::open_log(lo);
  }
  status catch_up(jetstream& js, const message_sealer& sealer, uint32_t p) {
    return replication::catch_up(js, *log, &sealer, "skein", rep->subject_of(p), p, 10s);
  }
};

void check_same_thread(event_log& a, event_log& b, const std::string& id) {
  INFO("thread " << id);
  std::vector<log_row> x, y;
  REQUIRE(a.thread_rows(id, &x).is_ok());
  REQUIRE(b.thread_rows(id, &y).is_ok());
  REQUIRE(x.size() == y.size());
  for (size_t i = 0; i < x.size(); ++i) {
    CHECK(x[i].key == y[i].key);
    CHECK(x[i].value == y[i].value);
  }
}

struct setup {
  nats_cluster nats{1};
  std::unique_ptr<jetstream> js = nats.connect(500ms);
  message_sealer sealer = skein::test::sealer_for(7);

  setup() { REQUIRE(js->ensure_stream({"skein", {"skein.log.>"}, 1}).is_ok()); }
};

}  // namespace

TEST_CASE("journal replicator: a leader's writes reach a follower's disk through JetStream, each once") {
  if (nats_cluster::binary().empty()) {
    WARN("nats-server is not installed (packages.txt lists it): the journal replicator tests did not run");
    return;
  }
  setup env;
  node leader{*env.js, "n1", env.sealer}, follower{*env.js, "n2", env.sealer};
  for (uint32_t p = 0; p < partitions; ++p) REQUIRE(leader.rep->lead(p, 1).is_ok());

  std::vector<std::string> ids;
  for (int i = 0; i < 12; ++i) ids.push_back("th" + std::to_string(i));
  for (const auto& id : ids) {
    tick t = make_tick(id, 1, 3);
    status s = leader.log->commit(t);
    INFO(id << " partition " << leader.rep->partition_of(id) << ": " << s.to_string());
    REQUIRE(s.is_ok());
  }
  for (int round = 0; round < 3; ++round)
    for (const auto& id : ids) {
      tick t = make_tick(id, 4 + round, 1);
      REQUIRE(leader.log->commit(t).is_ok());
    }
  REQUIRE(leader.log->erase_thread("th3").is_ok());

  for (uint32_t p = 0; p < partitions; ++p) {
    INFO("partition " << p);
    REQUIRE(follower.catch_up(*env.js, env.sealer, p).is_ok());
    stream_message last;
    REQUIRE(env.js->last_on_subject("skein", leader.rep->subject_of(p), &last).is_ok());
    uint64_t lead_seq = 0, follow_seq = 0;
    REQUIRE(leader.log->replicated_seq(p, &lead_seq).is_ok());
    REQUIRE(follower.log->replicated_seq(p, &follow_seq).is_ok());
    CHECK(lead_seq == last.seq);
    CHECK(follow_seq == last.seq);
  }
  for (const auto& id : ids) {
    if (id == "th3") continue;
    check_same_thread(*leader.log, *follower.log, id);
  }
  CHECK(thread_keys(*follower.log, "th3") == 0);
  // Sealed: a message read back raw is no replicated batch.
  stream_message last;
  REQUIRE(env.js->last_on_subject("skein", leader.rep->subject_of(leader.rep->partition_of("th0")), &last).is_ok());
  CHECK(last.data.substr(0, 2) == std::string("S\x01"));
}

TEST_CASE("journal replicator: a write of a partition not led, or led by a deposed writer, is stored nowhere") {
  if (nats_cluster::binary().empty()) return;
  setup env;
  node a{*env.js, "n1", env.sealer}, b{*env.js, "n2", env.sealer};
  const uint32_t p = a.rep->partition_of("t1");

  tick not_led = make_tick("t1", 1, 2);
  CHECK(a.log->commit(not_led).code() == errc::unavailable);  // a retry goes to the leader
  CHECK(thread_keys(*a.log, "t1") == 0);
  stream_message last;
  CHECK(env.js->last_on_subject("skein", a.rep->subject_of(p), &last).code() == errc::not_found);

  REQUIRE(a.rep->lead(p, 1).is_ok());
  tick first = make_tick("t1", 1, 2);
  REQUIRE(a.log->commit(first).is_ok());
  // b takes the partition over (a's lease lapsed, say): it applies the
  // subject, leads at the next epoch and writes.
  REQUIRE(b.catch_up(*env.js, env.sealer, p).is_ok());
  REQUIRE(b.rep->lead(p, 2).is_ok());
  b.log->resume_partition(p);
  tick by_b = make_tick("t1", 3, 1);
  REQUIRE(b.log->commit(by_b).is_ok());
  // a wakes up and writes: refused at the fence, stored nowhere, and a no
  // longer leads the partition.
  tick stale = make_tick("t1", 3, 2);
  CHECK(a.log->commit(stale).code() == errc::unavailable);
  CHECK_FALSE(a.rep->leads(p));
  manifest m;
  REQUIRE(a.log->read_manifest("t1", &m).is_ok());
  CHECK(m.last_seq == 2);
  tick again = make_tick("t1", 3, 1);
  CHECK(a.log->commit(again).code() == errc::unavailable);
  // Catching up gives a b's write: both disks hold the same rows.
  REQUIRE(a.catch_up(*env.js, env.sealer, p).is_ok());
  check_same_thread(*a.log, *b.log, "t1");
  REQUIRE(a.log->read_manifest("t1", &m).is_ok());
  CHECK(m.last_seq == 3);
}

TEST_CASE("journal replicator: with the server gone a write is unavailable, stored nowhere, its partition held") {
  if (nats_cluster::binary().empty()) return;
  setup env;
  node leader{*env.js, "n1", env.sealer}, follower{*env.js, "n2", env.sealer};
  const uint32_t p = leader.rep->partition_of("t1");
  REQUIRE(leader.rep->lead(p, 1).is_ok());
  tick first = make_tick("t1", 1, 2);
  REQUIRE(leader.log->commit(first).is_ok());

  env.nats.kill(0);
  tick lost = make_tick("t1", 3, 1);
  status s = leader.log->commit(lost);
  CHECK(s.code() == errc::unavailable);
  CHECK(leader.log->unsettled_partitions() == std::vector<uint32_t>{p});
  manifest m;
  REQUIRE(leader.log->read_manifest("t1", &m).is_ok());
  CHECK(m.last_seq == 2);

  env.nats.restart(0);
  // Held until caught up, even with the server back.
  tick held = make_tick("t1", 3, 1);
  CHECK(leader.log->commit(held).code() == errc::unavailable);
  status caught = skein::test::until_available(20s, [&] { return leader.catch_up(*env.js, env.sealer, p); });
  INFO(caught.to_string());
  REQUIRE(caught.is_ok());
  leader.log->resume_partition(p);
  REQUIRE(leader.log->read_manifest("t1", &m).is_ok());
  tick next = make_tick("t1", m.last_seq + 1, 1);
  REQUIRE(leader.log->commit(next).is_ok());
  REQUIRE(follower.catch_up(*env.js, env.sealer, p).is_ok());
  check_same_thread(*leader.log, *follower.log, "t1");
}

TEST_CASE("journal replicator: a partition led again at the same epoch appends new messages, never duplicates") {
  if (nats_cluster::binary().empty()) return;
  setup env;
  node n{*env.js, "n1", env.sealer};
  const uint32_t p = n.rep->partition_of("t1");
  REQUIRE(n.rep->lead(p, 1).is_ok());
  tick first = make_tick("t1", 1, 1);
  REQUIRE(n.log->commit(first).is_ok());
  // Stepped down (its writer fenced off, say) and leading again under the
  // same lease: a new writer, whose message ids are not the first one's.
  n.rep->step_down(p);
  REQUIRE(n.rep->lead(p, 1).is_ok());
  tick second = make_tick("t1", 2, 1);
  REQUIRE(n.log->commit(second).is_ok());
  stream_message last;
  REQUIRE(env.js->last_on_subject("skein", n.rep->subject_of(p), &last).is_ok());
  uint64_t seq = 0;
  REQUIRE(n.log->replicated_seq(p, &seq).is_ok());
  CHECK(seq == last.seq);
  CHECK(last.seq == 2);  // stored, not answered as the first one's duplicate
}
