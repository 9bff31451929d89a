// cluster: skein as 1, 2 and 3 nodes in this process (each its own runtime,
// actor system and database, linked over loopback by CAF's middleman, each
// with its HTTP server), and 3 nodes again with TLS links: runs/s through HTTP
// with every client on a random node (most runs forwarded to their thread's
// owner), the cost of a forwarded read against a local one, and the handoff of
// a rebalance when a fourth node joins the three. The nodes share this
// machine's cores: the shape, not scaling.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <optional>

#include "bench/workloads.hpp"
#include "tests/support/tls_cert.hpp"
#include "tools/client/http_client.hpp"
#include "tools/server/http_server.hpp"

namespace skein::bench {
namespace {

// A loopback port free now (bound to 0 and released) for a node's link.
status free_port(uint16_t* out) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return status::io_error("socket: cannot open");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
            ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  ::close(fd);
  if (!ok) return status::io_error("no free loopback port");
  *out = ntohs(a.sin_port);
  return status::ok();
}

struct node_set {
  std::vector<cluster_member> members;
  std::vector<cluster_tls> tls;  // empty: plain TCP links
  std::vector<std::unique_ptr<runtime>> nodes;
  std::vector<std::unique_ptr<bench_server>> servers;

  ~node_set() {
    servers.clear();
    for (auto& n : nodes)
      if (n) n->close().ignore();
  }
};

// Node i of `set` on a fresh database, with its HTTP server. A node opened
// after the agent was written fetches it from the first member.
status open_node(const bench_options& options, const std::string& name, node_set& set, size_t i) {
  runtime_options ro;
  ro.cluster.node_id = set.members[i].id;
  ro.cluster.members = set.members;
  if (!set.tls.empty()) ro.cluster.tls = set.tls[i];
  ro.data_dir = options.dir + "/" + name + "-" + set.members[i].id;
  SKEIN_TRY(fresh_dir(ro.data_dir));
  std::unique_ptr<runtime> rt;
  SKEIN_TRY(runtime::open(std::move(ro), &rt));
  set.nodes.push_back(std::move(rt));
  std::unique_ptr<bench_server> srv;
  SKEIN_TRY(bench_server::start(*set.nodes.back(), http::server_limits{}, 2, &srv));
  set.servers.push_back(std::move(srv));
  return status::ok();
}

status open_nodes(const bench_options& options, const std::string& name, size_t n, bool tls,
                  const agent_config& agent, node_set* set) {
  std::optional<test::tls_authority> ca;
  if (tls) {
    SKEIN_TRY(fresh_dir(options.dir + "/" + name + "-certs"));
    ca.emplace(options.dir + "/" + name + "-certs", "bench");
  }
  for (size_t i = 0; i < n; ++i) {
    cluster_member m{"n" + std::to_string(i + 1), "127.0.0.1", 0};
    SKEIN_TRY(free_port(&m.port));
    if (ca) set->tls.push_back(ca->node(m.id));
    set->members.push_back(std::move(m));
  }
  for (size_t i = 0; i < n; ++i) SKEIN_TRY(open_node(options, name, *set, i));
  // Once all are up: the first member writes it to every node (a node it could
  // not reach would be left alone for a reconnect backoff).
  SKEIN_TRY(set->nodes[0]->create_agent(agent));
  // Every pair linked before the clients start, one node after another: the
  // runs measure a cluster in its steady state. (Two nodes that dial each other
  // at the same moment get two links, and CAF closes one; a request already on
  // that one is lost and its call times out — docs/cluster.md's known limits.)
  for (auto& node : set->nodes) {
    std::vector<cluster_member_state> members;
    SKEIN_TRY(node->cluster_members(&members));
  }
  return status::ok();
}

}  // namespace

status run_cluster(const bench_options& options, result* out) {
  constexpr size_t runs_per_thread = 10;
  const size_t threads = scaled_count(300, options.scale);
  const size_t clients = std::min<size_t>(32, threads);
  agent_config agent = bench_agent();
  // Tables are filled as the measurements go and added at the end (add_table's
  // references do not outlive the next one).
  table runs, reads, handoff;
  runs.title =
      "cluster: " + with_commas(static_cast<double>(threads)) + " threads x " + std::to_string(runs_per_thread) +
          " runs over 1, 2 and 3 nodes in this process (scripted engine at 0 ms, durability sync);\n"
          "POST /v1/threads/{id}/entries {\"wait\":true} from " + std::to_string(clients) +
          " clients, client k on node k mod n: a run of another node's thread is forwarded";
  runs.columns = {col("nodes"),          col("runs"),          col("forwarded", "%", 0), col("seconds", "s", 2),
                  col("runs/s", "runs/s"), col("p50", "ms", 3), col("p99", "ms", 3),     col("failures")};
  const std::pair<size_t, bool> variants[] = {{1, false}, {2, false}, {3, false}, {3, true}};  // nodes, TLS
  for (auto [n, tls] : variants) {
    node_set set;
    const std::string name = "cluster" + std::to_string(n) + (tls ? "-tls" : "");
    SKEIN_TRY(open_nodes(options, name, n, tls, agent, &set));
    // The threads spread over the nodes: each node creates (and owns) its share.
    std::vector<std::string> ids;
    for (size_t i = 0; i < n; ++i) {
      std::vector<std::string> mine;
      SKEIN_TRY(create_bench_threads(*set.nodes[i], agent.id, threads / n + (i < threads % n ? 1 : 0), true, &mine));
      ids.insert(ids.end(), mine.begin(), mine.end());
    }
    std::atomic<size_t> next_client{0}, forwarded{0};
    host_outcome o;
    progress bar{"cluster " + std::to_string(n), ids.size() * runs_per_thread, options.quiet};
    auto client_thread = [&](const std::vector<std::string>& mine, host_outcome* mo) {
      size_t node = next_client++ % n;
      http::client client{http::endpoint{"127.0.0.1", set.servers[node]->listener->port()}};
      rendezvous ring{[&] {
        std::vector<std::string> v;
        for (const auto& m : set.members) v.push_back(m.id);
        return v;
      }()};
      for (size_t r = 0; r < runs_per_thread; ++r)
        for (const auto& id : mine) {
          if (ring.owner(cluster_key(id)) != node) ++forwarded;
          std::string where = "node n" + std::to_string(node + 1) + " thread " + id + " run " + std::to_string(r);
          bench_clock::time_point sent = bench_clock::now(), answered;
          status s = post_run(client, id, r, where + ": ", {}, &answered);
          mo->record(sent, answered, s);
          bar.advance();
        }
    };
    SKEIN_TRY(drive_round_robin(ids, clients, ids.size() * runs_per_thread, client_thread, &o));
    for (size_t i = 0; i < n; ++i) {
      SKEIN_TRY(check_thread_logs(*set.nodes[i], ids, 20,
                                  {1 + scripted_events_per_run * runs_per_thread, runs_per_thread}));
      SKEIN_TRY(check_log_clean(*set.nodes[i]));
    }
    runs.rows.push_back({text(std::to_string(n) + (tls ? ", TLS" : "")), num(o.completed),
                         num(100.0 * static_cast<double>(forwarded) / static_cast<double>(o.completed)),
                         num(o.seconds()), num(o.per_s()), num(ms_at(o.latencies_ns, 0.50)),
                         num(ms_at(o.latencies_ns, 0.99)), num(o.failures)});
    if (options.plot)
      add_bar(out, "throughput-cluster", "cluster: runs/s through HTTP (higher is better)", "runs/s",
              std::to_string(n) + (n == 1 ? " node" : " nodes") + (tls ? ", TLS" : ""), o.per_s());
    if (n < 3) continue;

    // A read of a manifest on its owner against the same read through another node.
    std::vector<int64_t> local_ns, forwarded_ns;
    rendezvous ring{{"n1", "n2", "n3"}};
    for (size_t k : spread(std::min<size_t>(ids.size(), scaled_count(2000, options.scale)), ids.size())) {
      size_t owner = ring.owner(cluster_key(ids[k]));
      for (size_t via : {owner, (owner + 1) % 3}) {
        manifest m;
        auto read = [&] { return set.nodes[via]->get_thread(ids[k], &m); };
        SKEIN_TRY(timed(via == owner ? &local_ns : &forwarded_ns, read));
      }
    }
    reads.title = "cluster: runtime::get_thread on the thread's owner, and through another node (forwarded over "
                  "the node link), 3 nodes";
    reads.columns = {col("path"), col("reads"), col("p50", "us", 1), col("p99", "us", 1)};
    const std::string links = tls ? " (TLS links)" : "";
    for (auto* ns : {&local_ns, &forwarded_ns})
      reads.rows.push_back({text((ns == &local_ns ? "local" : "forwarded") + links), num(ns->size()),
                            num(quantile_us(*ns, 0.50)), num(quantile_us(*ns, 0.99))});
    double local_p50 = quantile_us(local_ns, 0.50), forwarded_p50 = quantile_us(forwarded_ns, 0.50);
    reads.notes.push_back("a forwarded read" + links + " costs " + with_commas(forwarded_p50 - local_p50, 1) +
                          " us more at the median: a request and a reply over loopback through both actor systems");
    if (tls) continue;  // the handoff is measured once, over plain links

    // Handoff: a fourth node joins; the rebalance moves the threads it owns by the four.
    set.members.push_back({"n4", "127.0.0.1", 0});
    SKEIN_TRY(free_port(&set.members.back().port));
    SKEIN_TRY(open_node(options, name, set, 3));
    for (size_t i = 0; i < 3; ++i) SKEIN_TRY(set.nodes[i]->reload_cluster(set.members));
    cluster_rebalance_state st;
    auto start = bench_clock::now();
    SKEIN_TRY(set.nodes[0]->rebalance(&st));
    double seconds = seconds_since(start, bench_clock::now());
    for (const auto& id : ids) {
      manifest m;
      SKEIN_TRY(set.nodes[3]->get_thread(id, &m));
      if (m.last_seq != 1 + scripted_events_per_run * runs_per_thread)
        return status::corruption("cluster: thread " + id + " has " + std::to_string(m.last_seq) +
                                  " events after the rebalance");
    }
    handoff.title = "cluster: a fourth node joins the three; rebalance hands it the threads it owns (each frozen, "
                    "its rows sent, written in one batch there, erased here)";
    handoff.columns = {col("threads moved"), col("events"), col("seconds", "s", 2), col("threads/s", "/s"),
                       col("events/s", "/s")};
    handoff.rows.push_back({num(static_cast<double>(st.moved)), num(static_cast<double>(st.events)), num(seconds),
                            num(static_cast<double>(st.moved) / seconds),
                            num(static_cast<double>(st.events) / seconds)});
  }
  for (table* t : {&runs, &reads, &handoff}) out->tables.push_back(std::move(*t));
  return status::ok();
}

}  // namespace skein::bench
