// Membership without a file (runtime/replication/member_registry.hpp) on a
// real nats-server: nodes see each other join, a planned leave at once, and a
// failed node gone once its renewals stop for member_ttl.
#include <catch2/catch.hpp>
#include <condition_variable>
#include <mutex>

#include "runtime/replication/member_registry.hpp"
#include "tests/support/nats_cluster.hpp"

using namespace skein;
using namespace skein::replication;
using namespace std::chrono_literals;
using skein::test::nats_cluster;

namespace {

// One node: its own connection, its registry, and the live sets it was told of.
struct node {
  // What the registry's callback uses is declared before the registry, so it
  // outlives it: the registry's watcher may report until it is destroyed.
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> now;  // the last live set reported, by id
  std::unique_ptr<jetstream> js;
  std::unique_ptr<member_registry> reg;

  node(const nats_cluster& nats, const std::string& id, std::chrono::milliseconds ttl) {
    js = nats.connect();
    registry_options o;
    o.node_id = id;
    o.value = id + "@127.0.0.1";
    o.member_ttl = ttl;
    auto s = member_registry::start(*js, o, [this](const std::vector<member>& alive) {
      std::lock_guard<std::mutex> lock{mu};
      now.clear();
      for (const auto& m : alive) now.push_back(m.id);
      cv.notify_all();
    }, &reg);
    INFO(s.to_string());
    REQUIRE(s.is_ok());
  }

  // Bounded: true once the reported live set is `ids`.
  bool sees(const std::vector<std::string>& ids, std::chrono::milliseconds limit = 10s) {
    std::unique_lock<std::mutex> lock{mu};
    return cv.wait_for(lock, limit, [&] { return now == ids; });
  }
};

}  // namespace

TEST_CASE("membership: nodes see each other join, a leave at once, a failure after member_ttl") {
  if (nats_cluster::binary().empty()) {
    WARN("nats-server is not installed (packages.txt lists it): the membership tests did not run");
    return;
  }
  nats_cluster nats{1};
  const auto ttl = 1500ms;
  node n1{nats, "n1", ttl}, n2{nats, "n2", ttl}, n3{nats, "n3", ttl};
  const std::vector<std::string> all{"n1", "n2", "n3"};
  CHECK(n1.sees(all));
  CHECK(n2.sees(all));
  CHECK(n3.sees(all));
  auto alive = n1.reg->alive();
  REQUIRE(alive.size() == 3);
  CHECK(alive[1].value == "n2@127.0.0.1");

  // A planned leave: gone at once (well within one member_ttl).
  auto left_at = std::chrono::steady_clock::now();
  n3.reg->stop(true);
  CHECK(n1.sees({"n1", "n2"}, ttl / 2));
  CHECK(n2.sees({"n1", "n2"}, ttl / 2));
  (void)left_at;

  // A failure: n2's renewals stop, its key stays. Gone after member_ttl from
  // the last renewal n1 saw (at most a third of it before the stop), not before.
  auto failed_at = std::chrono::steady_clock::now();
  n2.reg->stop(false);
  REQUIRE(n1.sees({"n1"}, ttl * 3));
  auto took = std::chrono::steady_clock::now() - failed_at;
  CHECK(took >= ttl * 2 / 3 - 100ms);

  // It comes back: a new registration is a join.
  n2.reg.reset();
  node n2b{nats, "n2", ttl};
  CHECK(n1.sees({"n1", "n2"}));
}
