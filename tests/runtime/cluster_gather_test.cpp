// Calls that span every node's threads: usage totals and memory search are
// gathered from every node and merged (runtime_cluster.cpp), answered the same
// through any node, and refused rather than partial while a node is down.
#include <catch2/catch.hpp>

#include <set>

#include "tests/runtime/cluster_fixture.hpp"
#include "tests/support/runtime_fixture.hpp"

using namespace skein;
using namespace skein::test;
using namespace std::chrono_literals;

TEST_CASE("cluster: usage and memory search gather every node's part") {
  cluster_fixture f{3, [](runtime_options& o) { o.effects.embeddings = true; }};
  f.agent(0);

  std::vector<std::string> words = {"zebra", "quartz", "violin",  "glacier", "pepper",
                                    "lantern", "orchid", "saddle", "comet"};
  // Threads on every node, and at least one that a fourth node will own (below).
  rendezvous by4{{"n1", "n2", "n3", "n4"}};
  std::vector<manifest> threads;
  std::set<size_t> owners;
  bool one_moves = false;
  for (size_t k = 0; k < words.size() || !one_moves; ++k) {
    if (k == words.size()) words.push_back("extra" + std::to_string(k));
    threads.push_back(f.thread(k % f.n));
    owners.insert(f.owner(threads.back().id));
    one_moves = one_moves || by4.owner_id(cluster_key(threads.back().id)) == "n4";
    f.run((k + 1) % f.n, threads.back().id, "a note about the " + words[k]);
  }
  REQUIRE(owners.size() == f.n);

  // Usage: the same totals through every node, every thread's rows counted once.
  usage_report first;
  for (size_t via = 0; via < f.n; ++via) {
    usage_query q;
    q.group_by = usage_query::group::thread;
    usage_report rep;
    REQUIRE(f.nodes[via]->usage(q, &rep).is_ok());
    REQUIRE(rep.groups.size() == threads.size());
    std::set<std::string> keys;
    for (const auto& g : rep.groups) {
      keys.insert(g.key);
      CHECK(g.runs == 1);
    }
    for (const auto& t : threads) CHECK(keys.count(t.id) == 1);
    CHECK(std::is_sorted(rep.groups.begin(), rep.groups.end(),
                         [](const usage_totals& a, const usage_totals& b) { return a.key < b.key; }));
    q.group_by = usage_query::group::agent;
    REQUIRE(f.nodes[via]->usage(q, &rep).is_ok());
    REQUIRE(rep.groups.size() == 1);
    CHECK(rep.groups[0].key == "helper");
    CHECK(rep.groups[0].runs == threads.size());
    q.group_by = usage_query::group::none;
    REQUIRE(f.nodes[via]->usage(q, &rep).is_ok());
    REQUIRE(rep.groups.size() == 1);
    CHECK(rep.groups[0].runs == threads.size());
    if (via == 0) first = rep;
    CHECK(rep.rows == first.rows);
    CHECK(rep.groups[0].usage == first.groups[0].usage);
    // One thread's usage, asked through a node that does not own it.
    q.thread_id = threads[via].id;
    size_t other = (f.owner(q.thread_id) + 1) % f.n;
    REQUIRE(f.nodes[other]->usage(q, &rep).is_ok());
    REQUIRE(rep.groups.size() == 1);
    CHECK(rep.groups[0].runs == 1);
  }

  // Memory search: the best hit for each word is its thread, wherever it lives,
  // through every node (the embeddings effect indexes after the runs: waited for).
  for (size_t k = 0; k < words.size(); ++k) {
    for (size_t via = 0; via < f.n; ++via) {
      std::vector<memory_hit> hits;
      bool found = runtime_fixture::eventually([&] {
        return f.nodes[via]->memory_search("helper", words[k], 3, &hits).is_ok() && !hits.empty() &&
               hits.front().thread_id == threads[k].id;
      }, 30s);
      INFO(words[k] << " via " << f.members[via].id << ": " << (hits.empty() ? "no hits" : hits.front().thread_id));
      CHECK(found);
      CHECK(hits.size() <= 3);
      CHECK(std::is_sorted(hits.begin(), hits.end(),
                           [](const memory_hit& a, const memory_hit& b) { return a.score > b.score; }));
    }
  }
  std::vector<memory_hit> hits;
  CHECK(f.nodes[1]->memory_search("nobody", "zebra", 3, &hits).code() == errc::not_found);
  CHECK(f.nodes[1]->memory_search("helper", "zebra", 0, &hits).code() == errc::invalid_input);

  // A fourth node joins and takes its threads: their messages are found at once
  // through every node, the new one included (its index took the moved rows).
  size_t n4 = f.join_and_rebalance();
  size_t on_n4 = 0;
  for (const auto& t : threads) on_n4 += f.owner(t.id) == n4;
  REQUIRE(on_n4 > 0);
  for (size_t k = 0; k < words.size(); ++k)
    for (size_t via = 0; via < 4; ++via) {
      std::vector<memory_hit> hits;
      REQUIRE(f.nodes[via]->memory_search("helper", words[k], 3, &hits).is_ok());
      INFO(words[k] << " via " << f.members[via].id << " after the rebalance (" << on_n4 << " threads moved to n4)");
      REQUIRE(!hits.empty());
      CHECK(hits.front().thread_id == threads[k].id);
    }
  f.n = 4;

  // A node down: refused, naming it, never a partial answer.
  f.close(2);
  usage_query q;
  usage_report rep;
  status s = f.nodes[0]->usage(q, &rep);
  CHECK(s.code() == errc::unavailable);
  CHECK(s.message().find("n3") != std::string::npos);
  s = f.nodes[1]->memory_search("helper", "zebra", 3, &hits);
  CHECK(s.code() == errc::unavailable);
  CHECK(s.message().find("n3") != std::string::npos);
}

TEST_CASE("cluster: a moved thread's pending effect work is taken up on its new node at once") {
  // The first three nodes run no embeddings effect: the threads' messages
  // reach a memory index only where one runs — the fourth node, once the
  // threads are there (its effects are told of each adopted thread, as of a
  // commit; before, only its next open's catch-up took them up).
  cluster_fixture f{3, [](runtime_options& o) { o.effects.embeddings = o.cluster.node_id == "n4"; }};
  f.agent(0);
  rendezvous by4{{"n1", "n2", "n3", "n4"}};
  std::vector<std::pair<std::string, std::string>> moving;  // thread, its word
  for (size_t k = 0; moving.size() < 3; ++k) {
    manifest t = f.thread(k % f.n);
    std::string word = "marigold" + std::to_string(k);
    f.run((k + 1) % f.n, t.id, "a note about the " + word);
    if (by4.owner_id(cluster_key(t.id)) == "n4") moving.emplace_back(t.id, word);
  }
  std::vector<memory_hit> hits;
  REQUIRE(f.nodes[0]->memory_search("helper", moving[0].second, 3, &hits).is_ok());
  CHECK(hits.empty());  // nobody embedded anything yet

  size_t n4 = f.join_and_rebalance();
  for (const auto& entry : moving) {
    const std::string& thread = entry.first;  // named, not bound: lambdas below take them
    const std::string& word = entry.second;
    for (size_t via : {size_t{0}, n4}) {
      bool found = runtime_fixture::eventually([&] {
        return f.nodes[via]->memory_search("helper", word, 3, &hits).is_ok() && !hits.empty() &&
               hits.front().thread_id == thread;
      }, 30s);
      INFO(word << " via " << f.members[via].id);
      CHECK(found);
    }
  }
}
