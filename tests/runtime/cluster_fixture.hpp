// Runtimes as the nodes of one cluster, in one process (each its own CAF actor
// system and node id, linked over loopback by the middleman). Shared by the
// cluster tests.
#pragma once

#include <catch2/catch.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "runtime/runtime.hpp"
#include "tests/support/free_port.hpp"
#include "tests/support/temp_dir.hpp"

namespace skein::test {

struct cluster_fixture {
  size_t n;  // nodes opened at construction: n1 … nN
  std::vector<std::unique_ptr<temp_dir>> dirs;
  std::vector<cluster_member> members;
  std::vector<std::unique_ptr<runtime>> nodes;
  std::function<cluster_tls(size_t)> tls_of;  // node i's TLS files; unset: plain TCP
  std::function<void(runtime_options&)> adjust;  // more options of every node, set before open()

  explicit cluster_fixture(size_t count = 3, std::function<cluster_tls(size_t)> tls = {})
      : n(count), tls_of(std::move(tls)) {
    for (size_t i = 0; i < n; ++i) add_member();
    for (size_t i = 0; i < n; ++i) open(i);
  }

  // `count` nodes opened with more options of every node, set before each open().
  cluster_fixture(size_t count, std::function<void(runtime_options&)> options_of_all) : n(count) {
    adjust = std::move(options_of_all);
    for (size_t i = 0; i < n; ++i) add_member();
    for (size_t i = 0; i < n; ++i) open(i);
  }

  // One more member (closed: open() it), with a directory and a port of its own.
  size_t add_member() {
    size_t i = members.size();
    members.push_back({"n" + std::to_string(i + 1), "127.0.0.1", free_port()});
    dirs.push_back(std::make_unique<temp_dir>());
    nodes.emplace_back();
    return i;
  }

  runtime_options options(size_t i) {
    runtime_options o;
    o.data_dir = dirs[i]->str();
    o.effects.titles = false;
    o.effects.embeddings = false;
    o.effects.compaction = false;
    o.worker_threads = 2;
    o.cluster.node_id = members[i].id;
    o.cluster.members = members;
    o.cluster.request_timeout_ms = 2000;
    o.cluster.reconnect_min_ms = 50;
    o.cluster.reconnect_max_ms = 200;
    o.cluster.edge_workers = 4;
    if (tls_of) o.cluster.tls = tls_of(i);
    if (adjust) adjust(o);
    return o;
  }

  void open(size_t i) {
    status s = runtime::open(options(i), &nodes[i]);
    INFO(s.to_string());
    REQUIRE(s.is_ok());
  }

  void close(size_t i) {
    REQUIRE(nodes[i]->close().is_ok());
    nodes[i].reset();
  }

  // The index of the node that owns `thread` among the first `count` members
  // (0: all of them).
  size_t owner(const std::string& thread, size_t count = 0) {
    std::vector<std::string> ids;
    for (size_t i = 0; i < (count == 0 ? members.size() : count); ++i) ids.push_back(members[i].id);
    return rendezvous{ids}.owner(cluster_key(thread));
  }

  // A thread of agent "helper" created through node `via`.
  manifest thread(size_t via) {
    thread_options o;
    o.agent_id = "helper";
    manifest m;
    status s = nodes[via]->create_thread(o, &m);
    INFO(s.to_string());
    REQUIRE(s.is_ok());
    return m;
  }

  // A run of `text` on `thread` sent through node `via`, waited for.
  run_result run(size_t via, const std::string& thread, const std::string& text) {
    run_input in;
    in.text = text;
    run_result r;
    status s = nodes[via]->send(thread, in).wait(&r, std::chrono::seconds(30));
    INFO(thread << " via " << members[via].id << ": " << s.to_string());
    REQUIRE(s.is_ok());
    return r;
  }

  // A new member joins: opened, every other node reloads the members, and a
  // rebalance through node `via` moves its threads to it. Its index.
  size_t join_and_rebalance(size_t via = 0) {
    size_t added = add_member();
    open(added);
    for (size_t i = 0; i < added; ++i) REQUIRE(nodes[i]->reload_cluster(members).is_ok());
    cluster_rebalance_state st;
    status moved = nodes[via]->rebalance(&st);
    INFO(moved.to_string() << " " << st.error);
    REQUIRE(moved.is_ok());
    return added;
  }

  // A rebalance started through node `via`, cut short: node `leaving` (a new
  // owner) is closed once `moved` threads reached their new owners, and the
  // pass fails. Polls the pass's progress, bounded (20 s each wait).
  cluster_rebalance_state cut_short_rebalance(size_t via, size_t leaving, uint64_t moved) {
    using namespace std::chrono_literals;
    REQUIRE(nodes[via]->start_rebalance().is_ok());
    REQUIRE(nodes[via]->start_rebalance().code() == errc::conflict);  // one at a time
    cluster_rebalance_state st;
    for (int i = 0; i < 4000; ++i) {
      REQUIRE(nodes[via]->rebalance_state(&st).is_ok());
      if (st.moved >= moved || st.phase != "moving") break;
      std::this_thread::sleep_for(5ms);
    }
    REQUIRE(st.phase == "moving");
    close(leaving);
    for (int i = 0; i < 2000 && st.phase == "moving"; ++i) {
      std::this_thread::sleep_for(10ms);
      REQUIRE(nodes[via]->rebalance_state(&st).is_ok());
    }
    INFO(st.error);
    REQUIRE(st.phase == "failed");
    return st;
  }

  // A rebalance rerun through node `via` right after a member came back: on a
  // loaded machine the new process may not answer within the request timeout
  // at once, and what the operator is told to do then is to run it again. Run
  // again only for that (a node found down, a backoff, fails at once); at most
  // `attempts` runs; the last one's answer.
  status rerun_rebalance(size_t via, cluster_rebalance_state* st, int attempts = 5) {
    status s;
    for (int i = 0; i < attempts; ++i) {
      s = nodes[via]->rebalance(st);
      if (s.code() != errc::unavailable || s.message().find("did not answer within") == std::string::npos) break;
    }
    return s;
  }

  void agent(size_t via) {
    agent_config a;
    a.id = "helper";
    a.system_prompt = "test";
    a.engine_config = R"({"default":{"reply":"done"}})";
    status s = nodes[via]->create_agent(a);
    INFO(s.to_string());
    REQUIRE(s.is_ok());
  }
};

}  // namespace skein::test
