// Partition leases (runtime/replication/lease.hpp) on a real nats-server: one
// holder at a time, a lapse judged on the taker's own clock, a deposed holder
// told so by its next renewal, and the fence that refuses its next write even
// before that.
#include <catch2/catch.hpp>

#include "runtime/replication/lease.hpp"
#include "tests/support/nats_cluster.hpp"

using namespace skein;
using namespace skein::replication;
using namespace std::chrono_literals;
using skein::test::nats_cluster;

TEST_CASE("lease: one holder at a time, a lapsed lease is taken with the next epoch and its old holder deposed") {
  if (nats_cluster::binary().empty()) {
    WARN("nats-server is not installed (packages.txt lists it): the lease tests did not run");
    return;
  }
  nats_cluster nats{1};
  auto js = nats.connect();
  REQUIRE(js->ensure_bucket({"leases", 1, 1}).is_ok());
  REQUIRE(js->ensure_stream({"log", {"log.>"}, 1}).is_ok());
  lease_keeper n1{*js, "leases", "n1", 3000ms}, n2{*js, "leases", "n2", 3000ms};
  using clock = lease_keeper::clock;
  const auto t0 = clock::time_point{} + 1000s;  // the keepers' clocks: each its own, injected

  lease a, b;
  REQUIRE(n1.try_take(7, t0, &a).is_ok());
  REQUIRE(n1.holds(a));
  CHECK(a.epoch == 1);
  REQUIRE(n2.try_take(7, t0, &b).is_ok());
  CHECK_FALSE(n2.holds(b));
  CHECK(b.holder == "n1");
  // The leader writes the partition's first message, fenced at "nothing yet".
  uint64_t last = 0;
  REQUIRE(js->publish("log.p7", "by n1", 0, &last).is_ok());

  // n1 renews within the ttl: n2's clock starts again at each renewal it sees.
  REQUIRE(n2.try_take(7, t0 + 2s, &b).is_ok());
  REQUIRE(n1.renew(7, &a).is_ok());
  REQUIRE(n2.try_take(7, t0 + 4s, &b).is_ok());  // 4 s after its first sight, but renewed since
  CHECK(b.holder == "n1");
  REQUIRE(n2.try_take(7, t0 + 6999ms, &b).is_ok());
  CHECK(b.holder == "n1");

  // n1 stops renewing (paused): 3 s after n2 saw the last renewal, n2 takes it.
  REQUIRE(n2.try_take(7, t0 + 7s, &b).is_ok());
  REQUIRE(n2.holds(b));
  CHECK(b.epoch == 2);
  // The new leader reads where the partition is and writes after it.
  stream_message m;
  REQUIRE(js->last_on_subject("log", "log.p7", &m).is_ok());
  uint64_t seq = 0;
  REQUIRE(js->publish("log.p7", "by n2", m.seq, &seq).is_ok());

  // n1 wakes up: its write, fenced at what it last wrote, is refused before it
  // even learns it was deposed; then its renewal says so.
  CHECK(js->publish("log.p7", "by n1, deposed", last, &m.seq).code() == errc::conflict);
  CHECK(n1.renew(7, &a).code() == errc::conflict);
  lease seen;
  REQUIRE(n1.try_take(7, t0 + 7s, &seen).is_ok());
  CHECK(seen.holder == "n2");
  CHECK(seen.epoch == 2);

  // A drain: n2 releases, and n1 takes the free lease at once with the next epoch.
  REQUIRE(n2.release(7, b).is_ok());
  REQUIRE(n1.try_take(7, t0 + 7s, &a).is_ok());
  REQUIRE(n1.holds(a));
  CHECK(a.epoch == 3);
  // A value that is not a lease is corruption, named.
  REQUIRE(js->kv_put("leases", lease_keeper::key(9), "garbage", nullptr).is_ok());
  status s = n1.try_take(9, t0, &a);
  CHECK(s.code() == errc::corruption);
  CHECK(s.message().find("p.9") != std::string::npos);
}

TEST_CASE("lease: of many nodes racing for a free lease, exactly one gets it") {
  if (nats_cluster::binary().empty()) return;
  nats_cluster nats{1};
  auto js = nats.connect();
  REQUIRE(js->ensure_bucket({"leases", 1, 1}).is_ok());
  for (uint32_t p = 0; p < 8; ++p) {
    std::vector<std::unique_ptr<lease_keeper>> keepers;
    std::vector<lease> got(6);
    std::vector<std::thread> threads;
    for (int i = 0; i < 6; ++i) keepers.push_back(std::make_unique<lease_keeper>(*js, "leases", "n" + std::to_string(i), 3000ms));
    std::vector<status> results(6);
    for (int i = 0; i < 6; ++i)
      threads.emplace_back([&, i] { results[i] = keepers[i]->try_take(p, lease_keeper::clock::now(), &got[i]); });
    for (auto& t : threads) t.join();
    int holders = 0;
    for (int i = 0; i < 6; ++i) {
      CHECK(results[i].is_ok());
      if (keepers[i]->holds(got[i])) ++holders;
    }
    CHECK(holders == 1);
  }
}

namespace {

// One server with the bucket "leases"; t0 stands for a keeper's clock.
struct one_server {
  nats_cluster nats{1};
  std::unique_ptr<jetstream> js = nats.connect();
  const lease_keeper::clock::time_point t0 = lease_keeper::clock::time_point{} + 1000s;
  one_server() { REQUIRE(js->ensure_bucket({"leases", 1, 1}).is_ok()); }
};

}  // namespace

TEST_CASE("lease: a restarted node takes its former incarnation's lease at once, at the next epoch") {
  if (nats_cluster::binary().empty()) return;
  one_server env;
  auto& js = env.js;
  const auto t0 = env.t0;
  lease a;
  {
    lease_keeper before{*js, "leases", "n1", 3000ms};
    REQUIRE(before.try_take(3, t0, &a).is_ok());
    REQUIRE(before.holds(a));
  }  // the process died holding it
  lease_keeper after{*js, "leases", "n1", 3000ms}, other{*js, "leases", "n2", 3000ms};
  lease b, c;
  REQUIRE(after.try_take(3, t0, &b).is_ok());  // no lapse waited for
  REQUIRE(after.holds(b));
  CHECK(b.epoch == a.epoch + 1);  // a new writer id: never the former one's message ids
  REQUIRE(after.try_take(3, t0 + 1s, &c).is_ok());  // its own now: kept, confirmed by a write
  REQUIRE(after.holds(c));
  CHECK(c.epoch == b.epoch);
  CHECK(c.revision > b.revision);
  REQUIRE(other.try_take(3, t0 + 1s, &c).is_ok());
  CHECK_FALSE(other.holds(c));
}

TEST_CASE("lease: a lease read as this node's is held only once a write confirms it") {
  if (nats_cluster::binary().empty()) return;
  one_server env;
  auto& js = env.js;
  const auto t0 = env.t0;
  lease_keeper n1{*js, "leases", "n1", 3000ms};
  lease a;
  REQUIRE(n1.try_take(5, t0, &a).is_ok());
  REQUIRE(n1.holds(a));
  // The key changes under n1 while still naming it (what n1 read was stale by
  // the time it wrote): its confirmation at the revision it read is refused.
  uint64_t rev = 0;
  REQUIRE(js->kv_put("leases", lease_keeper::key(5), lease_keeper::encode({"n2", a.epoch + 1, 0}), &rev).is_ok());
  lease seen;
  REQUIRE(n1.try_take(5, t0 + 1s, &seen).is_ok());
  CHECK_FALSE(n1.holds(seen));
  CHECK(seen.holder == "n2");
}
