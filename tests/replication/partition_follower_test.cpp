// A partition's follower (runtime/replication/partition_follower.hpp) on a real
// nats-server and real RocksDB: a leader's sealed messages applied to the
// follower's log exactly once, a follower stopped midway resuming from what its
// disk says, and a bad message stopping that partition's follower at it.
#include <catch2/catch.hpp>

#include "persistence/replicated_batch.hpp"
#include "runtime/replication/partition_follower.hpp"
#include "runtime/replication/partition_writer.hpp"
#include "tests/support/eventually.hpp"
#include "tests/support/log_fixtures.hpp"
#include "tests/support/nats_cluster.hpp"
#include "tests/support/sealers.hpp"

using namespace skein;
using namespace skein::replication;
using namespace std::chrono_literals;
using skein::test::nats_cluster;

namespace {

// One message's bytes: the rows, encoded and sealed for `subject`.
std::string message_of(const message_sealer& sealer, const std::string& subject, const std::vector<replicated_row>& rows) {
  std::string plain, sealed;
  encode_replicated(rows, &plain);
  REQUIRE(sealer.seal(subject, plain, &sealed).is_ok());
  return sealed;
}

std::vector<replicated_row> puts_of(event_log& log, const std::string& thread) {
  std::vector<log_row> rows;
  REQUIRE(log.thread_rows(thread, &rows).is_ok());
  std::vector<replicated_row> out;
  for (const auto& r : rows) out.push_back({r.family, replicated_row::op::put, r.key, r.value});
  return out;
}

std::vector<replicated_row> erases_of(const std::vector<replicated_row>& puts) {
  std::vector<replicated_row> out;
  for (const auto& r : puts) out.push_back({r.family, replicated_row::op::erase, r.key, ""});
  return out;
}

bool applied_within(const partition_follower& f, uint64_t seq, std::chrono::milliseconds limit = 10s) {
  return f.wait_applied(seq, limit);
}

// One server with the stream "log", the namespace's sealer, and two logs: a
// leader's holding threads t1 (`t1_events` events) and t2 (two), and an empty
// follower's. Members in the order they must outlive each other.
struct setup {
  nats_cluster nats{1};
  std::unique_ptr<jetstream> js = nats.connect();
  message_sealer sealer = skein::test::sealer_for(3);
  skein::test::temp_dir leader_dir, follower_dir;
  std::unique_ptr<event_log> leader_log = skein::test::open_log(leader_dir.str());
  std::unique_ptr<event_log> follower_log = skein::test::open_log(follower_dir.str());

  explicit setup(size_t t1_events) {
    REQUIRE(js->ensure_stream({"log", {"log.>"}, 1}).is_ok());
    tick a = skein::test::make_tick("t1", 1, t1_events), b = skein::test::make_tick("t2", 1, 2);
    REQUIRE(leader_log->commit(a).is_ok());
    REQUIRE(leader_log->commit(b).is_ok());
  }
};

}  // namespace

TEST_CASE("partition follower: a leader's messages land on the follower's disk once, across a stop midway") {
  if (nats_cluster::binary().empty()) {
    WARN("nats-server is not installed (packages.txt lists it): the follower tests did not run");
    return;
  }
  setup env{3};
  auto& js = env.js;
  auto& sealer = env.sealer;
  auto& leader_log = env.leader_log;
  auto& follower_log = env.follower_log;
  auto t1 = puts_of(*leader_log, "t1"), t2 = puts_of(*leader_log, "t2");

  partition_writer w{*js, "log", "log.p5", "n1.1"};
  uint64_t s1 = 0, s2 = 0, s3 = 0;
  REQUIRE(w.append(message_of(sealer, "log.p5", t1), &s1).is_ok());

  {
    std::unique_ptr<partition_follower> f;
    REQUIRE(partition_follower::start(*js, *follower_log, &sealer, "log", "log.p5", 5, &f).is_ok());
    REQUIRE(applied_within(*f, s1));
  }  // stopped after the first message
  uint64_t on_disk = 0;
  REQUIRE(follower_log->replicated_seq(5, &on_disk).is_ok());
  CHECK(on_disk == s1);
  CHECK(skein::test::thread_keys(*follower_log, "t1") == t1.size());

  // The leader goes on meanwhile; a new follower resumes after s1.
  REQUIRE(w.append(message_of(sealer, "log.p5", t2), &s2).is_ok());
  REQUIRE(w.append(message_of(sealer, "log.p5", erases_of(t1)), &s3).is_ok());
  std::unique_ptr<partition_follower> f;
  REQUIRE(partition_follower::start(*js, *follower_log, &sealer, "log", "log.p5", 5, &f).is_ok());
  REQUIRE(applied_within(*f, s3));
  CHECK(f->error().is_ok());
  CHECK(skein::test::thread_keys(*follower_log, "t1") == 0);  // put, then erased
  std::vector<log_row> copy, source;
  REQUIRE(follower_log->thread_rows("t2", &copy).is_ok());
  REQUIRE(leader_log->thread_rows("t2", &source).is_ok());
  REQUIRE(copy.size() == source.size());
  for (size_t i = 0; i < copy.size(); ++i) {
    CHECK(copy[i].key == source[i].key);
    CHECK(copy[i].value == source[i].value);
  }
  REQUIRE(follower_log->replicated_seq(5, &on_disk).is_ok());
  CHECK(on_disk == s3);
}

TEST_CASE("partition follower: a message that does not open stops its partition there, and only it") {
  if (nats_cluster::binary().empty()) return;
  setup env{2};
  auto& js = env.js;
  auto& sealer = env.sealer;
  auto& leader_log = env.leader_log;
  auto& follower_log = env.follower_log;

  uint64_t good = 0, bad = 0, after = 0, other = 0;
  REQUIRE(js->publish("log.p1", message_of(sealer, "log.p1", puts_of(*leader_log, "t1")), 0, &good).is_ok());
  REQUIRE(js->publish("log.p1", "not sealed at all", good, &bad).is_ok());
  REQUIRE(js->publish("log.p1", message_of(sealer, "log.p1", erases_of(puts_of(*leader_log, "t1"))), bad, &after).is_ok());
  // Another partition's message, sealed for its own subject.
  REQUIRE(js->publish("log.p2", message_of(sealer, "log.p2", puts_of(*leader_log, "t2")), 0, &other).is_ok());

  std::unique_ptr<partition_follower> f1, f2;
  REQUIRE(partition_follower::start(*js, *follower_log, &sealer, "log", "log.p1", 1, &f1).is_ok());
  REQUIRE(partition_follower::start(*js, *follower_log, &sealer, "log", "log.p2", 2, &f2).is_ok());
  REQUIRE(applied_within(*f2, other));
  REQUIRE(skein::test::eventually([&] { return f1->stopped(); }, 10s));
  CHECK(f1->applied() == good);
  status e = f1->error();
  CHECK(e.code() == errc::corruption);
  CHECK(e.message().find("seq " + std::to_string(bad)) != std::string::npos);
  CHECK(skein::test::thread_keys(*follower_log, "t1") > 0);  // the erase after the bad message was not applied
  CHECK(skein::test::thread_keys(*follower_log, "t2") > 0);  // the other partition went on
  CHECK(f2->error().is_ok());
}
