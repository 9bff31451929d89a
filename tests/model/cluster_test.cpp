// The cluster membership file and rendezvous ownership: the grammar and its
// errors, a pinned hash (a change would strand threads in the wrong node's
// database), balance, order independence and minimal movement on a change.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "runtime/model/cluster.hpp"
#include "runtime/model/ids.hpp"

using namespace skein;

namespace {

// Thread ids as skein mints them, from a printed seed.
std::vector<std::string> random_thread_ids(size_t n, uint64_t seed) {
  std::printf("cluster_test: seed %" PRIu64 "\n", seed);
  std::mt19937_64 rng(seed);
  std::vector<std::string> ids;
  for (size_t i = 0; i < n; ++i) ids.push_back(new_thread_id(1795000000000 + int64_t(rng() % 86400000000), rng()));
  return ids;
}

uint64_t test_seed() { return std::random_device{}() | (uint64_t(std::random_device{}()) << 32); }

status parse(const std::string& text) {
  std::vector<cluster_member> m;
  return parse_cluster(text, &m);
}

}  // namespace

TEST_CASE("cluster file: members with comments, blanks, names, IPv4 and IPv6", "[cluster]") {
  std::vector<cluster_member> m;
  REQUIRE(parse_cluster("# three nodes\n"
                        "n1 127.0.0.1:7501\n"
                        "\n"
                        "  n2\tnode-b.example:7502   # the second\r\n"
                        "n3 [::1]:7503",
                        &m)
              .is_ok());
  REQUIRE(m.size() == 3);
  CHECK(m[0].id == "n1");
  CHECK(m[0].host == "127.0.0.1");
  CHECK(m[0].port == 7501);
  CHECK(m[1].id == "n2");
  CHECK(m[1].host == "node-b.example");
  CHECK(m[1].port == 7502);
  CHECK(m[2].host == "::1");
  CHECK(m[2].port == 7503);
}

TEST_CASE("cluster file: every error names the line and what is wrong", "[cluster]") {
  auto message = [](const std::string& text) { return parse(text).message(); };
  CHECK(message("") == "cluster file: no members");
  CHECK(message("# only a comment\n\n") == "cluster file: no members");
  CHECK(message("n1 127.0.0.1:7501\nn2\n").find("line 2: expected 'node-id host:port'") != std::string::npos);
  CHECK(message("n1 127.0.0.1:7501 extra").find("line 1: expected 'node-id host:port', found more fields") !=
        std::string::npos);
  CHECK(message("n1 127.0.0.1").find("line 1: address '127.0.0.1' has no :port") != std::string::npos);
  CHECK(message("n1 127.0.0.1:0").find("bad port '0'") != std::string::npos);
  CHECK(message("n1 127.0.0.1:65536").find("bad port '65536'") != std::string::npos);
  CHECK(message("n1 127.0.0.1:77x").find("bad port '77x'") != std::string::npos);
  CHECK(message("n1 bad_host:7501").find("bad host 'bad_host'") != std::string::npos);
  CHECK(message("n1 [zz]:7501").find("bad IPv6 address 'zz'") != std::string::npos);
  CHECK(message("n1 [::1]7501").find("is not [IPv6]:port") != std::string::npos);
  CHECK(message("n/1 127.0.0.1:7501").find("line 1: ") != std::string::npos);
  CHECK(message("n1 127.0.0.1:7501\nn1 127.0.0.1:7502").find("line 2: node id 'n1' is listed twice") !=
        std::string::npos);
  CHECK(message("n1 127.0.0.1:7501\nn2 127.0.0.1:7501").find("line 2: address of 'n2' is another member's too") !=
        std::string::npos);
  CHECK(message(std::string(65, 'n') + " 127.0.0.1:7501").find("node_id_bytes_max") != std::string::npos);
  std::string many;
  for (int i = 0; i <= int(cluster_members_max); ++i)
    many.append("n").append(std::to_string(i)).append(" 127.0.0.1:").append(std::to_string(7000 + i)).append("\n");
  status s = parse(many);
  CHECK(s.limit() == "cluster_members_max");
  CHECK(parse(std::string(cluster_file_bytes_max + 1, '#')).limit() == "cluster_file_bytes_max");
  CHECK(parse("n1 127.0.0.1:0").field() == "cluster");
}

TEST_CASE("rendezvous: the hash is pinned", "[cluster]") {
  // These values are part of the on-disk contract: a thread lives in its
  // owner's database. If this test fails, owner() changed and every existing
  // cluster would look for its threads on the wrong nodes.
  CHECK(rendezvous_weight("n1", "th_20261123_aaaaaaaaaaaa") == 0x165d561b1784b739ull);
  CHECK(rendezvous_weight("n2", "th_20261123_aaaaaaaaaaaa") == 0x9b912a2342d5f457ull);
  CHECK(rendezvous_weight("node-b", "") == 0xe69d03b61247ee1aull);
  rendezvous r({"n1", "n2", "n3"});
  std::string owners;
  for (int i = 0; i < 12; ++i) owners += r.owner_id("th_20261123_" + std::string(12, char('a' + i))).back();
  CHECK(owners == "222333231333");
}

TEST_CASE("rendezvous: balanced, independent of member order, minimal movement", "[cluster]") {
  std::vector<std::string> keys = random_thread_ids(30000, test_seed());
  rendezvous three({"n1", "n2", "n3"});
  rendezvous shuffled({"n3", "n1", "n2"});
  std::map<std::string, size_t> counts;
  for (const std::string& k : keys) {
    REQUIRE(three.owner_id(k) == shuffled.owner_id(k));
    ++counts[three.owner_id(k)];
  }
  for (const auto& [node, n] : counts) {
    INFO(node << " owns " << n);
    CHECK(n > keys.size() * 30 / 100);  // 33.3% each, within 3.3 points
    CHECK(n < keys.size() * 367 / 1000);
  }

  SECTION("a fourth node takes about a quarter, only from the others") {
    rendezvous four({"n1", "n2", "n3", "n4"});
    size_t moved = 0;
    for (const std::string& k : keys) {
      if (four.owner_id(k) == three.owner_id(k)) continue;
      REQUIRE(four.owner_id(k) == "n4");
      ++moved;
    }
    INFO("moved " << moved);
    CHECK(moved > keys.size() * 22 / 100);
    CHECK(moved < keys.size() * 28 / 100);
  }
  SECTION("removing a node moves only its threads") {
    rendezvous two({"n1", "n3"});
    for (const std::string& k : keys) {
      if (three.owner_id(k) != "n2") REQUIRE(two.owner_id(k) == three.owner_id(k));
    }
  }
}

TEST_CASE("replicated cluster options: each refusal names its setting", "[cluster]") {
  auto base = [] {
    cluster_options o;
    o.node_id = "n1";
    o.replication.nats = {"nats://127.0.0.1:4222", "tls://10.0.0.2:4222"};
    return o;
  };
  CHECK(check_cluster(base()).is_ok());
  struct bad_case {
    const char* field;
    std::function<void(cluster_options&)> spoil;
  };
  const std::vector<bad_case> cases = {
      {"cluster", [](cluster_options& o) { o.members = {{"n1", "127.0.0.1", 7501}}; }},
      {"cluster", [](cluster_options& o) { o.replication.nats = {"nats://"}; }},
      {"cluster", [](cluster_options& o) { o.replication.nats = {"http://127.0.0.1:4222"}; }},
      {"cluster", [](cluster_options& o) { o.replication.nats = {"nats://" + std::string(600, 'h')}; }},
      {"node_id", [](cluster_options& o) { o.node_id = "n:1"; }},
      {"node_id", [](cluster_options& o) { o.node_id = ""; }},
      {"node_id", [](cluster_options& o) { o.node_id = std::string(65, 'n'); }},
      {"cluster_partitions", [](cluster_options& o) { o.replication.partitions = 0; }},
      {"cluster_partitions", [](cluster_options& o) { o.replication.partitions = 4097; }},
      {"cluster_replicas", [](cluster_options& o) { o.replication.replicas = 0; }},
      {"cluster_log_replicas", [](cluster_options& o) { o.replication.log_replicas = 2; }},
      {"cluster_lease_ttl_ms", [](cluster_options& o) { o.replication.lease_ttl_ms = 99; }},
      {"cluster_host", [](cluster_options& o) { o.replication.host = "10.0.0.1"; }},
      {"cluster", [](cluster_options& o) { o.request_timeout_ms = 0; }},
  };
  for (const auto& c : cases) {
    cluster_options o = base();
    c.spoil(o);
    status s = check_cluster(o);
    INFO(c.field << ": " << s.to_string());
    CHECK(s.code() == errc::invalid_input);
    CHECK(s.field() == c.field);
  }
}
