// Partitions and rendezvous placement (runtime/replication/placement.hpp), and
// members judged alive on the observer's clock (membership.hpp): pure logic,
// no servers.
#include <catch2/catch.hpp>
#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "runtime/model/stable_hash.hpp"
#include "runtime/replication/membership.hpp"
#include "runtime/replication/placement.hpp"

using namespace skein;
using namespace skein::replication;
using namespace std::chrono_literals;

TEST_CASE("placement: the hashes are pinned, since partition numbers are stored") {
  // A change here re-homes every stored thread: it is a format change.
  CHECK(stable_hash("") == 0xd725c98e9509182eULL);
  CHECK(stable_hash("thread-1") == 0xd835cdf4aeaba3d4ULL);
  CHECK(partition_of("default", "t-0001", 64) == 38);
  CHECK(partition_of("acme", "t-0001", 64) == 19);
  CHECK(rendezvous_score(7, "n1") == 0x1cfb4d9b44e4ffULL);
}

TEST_CASE("placement: a thread's partition depends on its namespace and root, and spreads evenly") {
  CHECK(partition_of("ab", "c", 1u << 30) != partition_of("a", "bc", 1u << 30));
  std::map<uint32_t, int> count;
  for (int i = 0; i < 64000; ++i) count[partition_of("default", "thread-" + std::to_string(i), 64)]++;
  REQUIRE(count.size() == 64);
  for (const auto& [p, n] : count) {
    INFO("partition " << p);
    CHECK(n > 800);  // 1000 expected each
    CHECK(n < 1200);
  }
}

TEST_CASE("placement: every node computes the same replicas, whatever the order of its member list") {
  std::vector<std::string> members{"n1", "n2", "n3", "n4", "n5"};
  const unsigned seed = std::random_device{}();
  INFO("seed " << seed);
  std::mt19937 rng{seed};
  for (uint32_t p = 0; p < 64; ++p) {
    auto expected = replicas_of(p, members, 3);
    REQUIRE(expected.size() == 3);
    CHECK(std::set<std::string>(expected.begin(), expected.end()).size() == 3);
    auto shuffled = members;
    std::shuffle(shuffled.begin(), shuffled.end(), rng);
    CHECK(replicas_of(p, shuffled, 3) == expected);
  }
  CHECK(replicas_of(1, {"n1", "n2"}, 3).size() == 2);  // fewer members than replicas: all of them
  CHECK(replicas_of(1, {"n1", "n1", "n2"}, 3).size() == 2);  // a repeated id counts once
  CHECK(replicas_of(1, {}, 3).empty());
}

TEST_CASE("placement: leaders spread over members, and a join or a leave moves only what it must") {
  std::vector<std::string> three{"n1", "n2", "n3"}, four{"n1", "n2", "n3", "n4"};
  const uint32_t partitions = 256;
  std::map<std::string, int> leads;
  int moved_on_join = 0;
  for (uint32_t p = 0; p < partitions; ++p) {
    auto before = replicas_of(p, three, 3);
    auto after = replicas_of(p, four, 3);
    leads[before[0]]++;
    // Joining: a partition changes only by taking n4 in, keeping the others' order.
    auto kept = after;
    kept.erase(std::remove(kept.begin(), kept.end(), "n4"), kept.end());
    std::vector<std::string> prefix(before.begin(), before.begin() + static_cast<long>(kept.size()));
    CHECK(kept == prefix);
    if (after != before) ++moved_on_join;
    // Leaving: dropping n2 keeps the order of the rest; its followers move up.
    std::vector<std::string> without{"n1", "n3"};
    auto left = replicas_of(p, without, 3);
    auto expect = before;
    expect.erase(std::remove(expect.begin(), expect.end(), "n2"), expect.end());
    CHECK(left == expect);
  }
  for (const auto& [m, n] : leads) {
    INFO(m);
    CHECK(n > partitions / 3 - 30);
    CHECK(n < partitions / 3 + 30);
  }
  // With replicas 3 of 4 members, n4 enters three quarters of the partitions.
  CHECK(moved_on_join > partitions / 2);
  CHECK(moved_on_join < partitions);
}

TEST_CASE("membership: a member lives while its renewals come, judged on the observer's clock") {
  using clock = membership_view::clock;
  membership_view view{3000ms};
  const auto t0 = clock::time_point{} + 100s;
  view.observe("n1", "addr1", 5, false, t0);
  view.observe("n2", "addr2", 6, false, t0 + 1s);
  CHECK(view.alive_ids(t0 + 1s) == std::vector<std::string>{"n1", "n2"});
  CHECK(view.next_change(t0 + 1s) == t0 + 3s);
  // n1 renews (a new revision); n2 does not.
  view.observe("n1", "addr1", 9, false, t0 + 2500ms);
  CHECK(view.alive_ids(t0 + 3999ms) == std::vector<std::string>{"n1", "n2"});
  CHECK(view.alive_ids(t0 + 4s) == std::vector<std::string>{"n1"});  // n2: 3 s since its last renewal seen
  // The same revision seen again (a watcher's replay) renews nothing.
  view.observe("n2", "addr2", 6, false, t0 + 5s);
  CHECK(view.alive_ids(t0 + 5s) == std::vector<std::string>{"n1"});
  // A leave is at once; an older put that arrives after it changes nothing.
  view.observe("n1", "", 10, true, t0 + 5s);
  CHECK(view.alive_ids(t0 + 5s).empty());
  view.observe("n1", "addr1", 9, false, t0 + 5s);
  CHECK(view.alive_ids(t0 + 5s).empty());
  CHECK(view.next_change(t0 + 5s) == clock::time_point::max());
  // A rejoin is a new revision.
  view.observe("n1", "addr1b", 11, false, t0 + 6s);
  auto alive = view.alive(t0 + 6s);
  REQUIRE(alive.size() == 1);
  CHECK(alive[0].value == "addr1b");
  CHECK(alive[0].revision == 11);
}
