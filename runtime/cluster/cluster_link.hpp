// cluster_link: a runtime's place in a cluster (runtime_options::cluster), the
// edge where calls cross nodes. Internal to the runtime (runtime.cpp); the
// public view is runtime_options::cluster and runtime::cluster_members().
//
// Outbound: a call about a thread another node owns (rendezvous over
// cluster_key, runtime/model/cluster.hpp) goes to that node's edge actor, a CAF
// remote actor reached over the middleman. Every call is bounded by the request
// timeout and answers `unavailable` naming the owner when it cannot be reached;
// a send waits for its run however long it takes, but fails as soon as the
// owner's link drops. After a failed connection a member is left alone for a
// backoff (doubling) and calls for its threads fail at once meanwhile.
//
// Inbound: the edge, published on this node's member port, is a pool of
// workers (blocking actors, a thread each) that run each call through the local
// runtime. A worker refuses a thread this node does not own (the nodes' member
// lists differ): a thread never has two writers. Callbacks and shared pointers
// never cross: a remote subscription is a relay of (seq, type, stored JSON)
// messages to a sink actor on the subscriber's node.
//
// Edge interface: runtime/cluster/edge_protocol.hpp.
#pragma once

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/atom.hpp>
#include <caf/meta/type_name.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "actors/caller.hpp"
#include "actors/error.hpp"
#include "actors/messages.hpp"
#include "runtime/cluster/edge_protocol.hpp"
#include "runtime/memory_service.hpp"
#include "runtime/model/cluster.hpp"
#include "runtime/runtime.hpp"

namespace skein {


// Registers every type the edge protocol carries (both ends must) and loads the
// middleman into `cfg`; with `tls` (files already checked, cluster_tls.hpp)
// CAF's OpenSSL module too, configured with them.
void prepare_cluster_config(caf::actor_system_config& cfg, const cluster_tls& tls = {});
// The same types without the middleman: for tests of the wire encoding.
void register_wire_types(caf::actor_system_config& cfg);

// The keys of the claims a thread makes (one thread per task, one DM thread per
// agent): owned like thread ids, so that one node decides each claim.
inline std::string task_key(std::string_view task_id) { return "task/" + std::string{task_id}; }
inline std::string dm_key(std::string_view agent_id) { return "dm/" + std::string{agent_id}; }

// The key a creation is routed by: the claim it makes (one thread per task, one
// DM thread per agent) or its parent's family; "" when any node may create it.
std::string creation_key(const thread_options& o);

// What the edge's workers need of the runtime besides its public calls: the
// local paths of the calls that fan out in a cluster.
struct edge_hooks {
  std::function<status(agent_config, agent_config*)> put_agent_local;
  std::function<status(const thread_query&, thread_page*)> list_local;
  std::function<status(uint64_t* threads, uint64_t* active)> counts;
  std::function<status(const usage_query&, usage_report*)> usage_local;
  std::function<status(std::string agent, std::string query, size_t k, std::vector<memory_hit>*)> search_local;
  std::function<status(const std::string& after, size_t limit, std::vector<schedule>*, std::string* next)>
      list_schedules_local;
  // Membership change (cluster_handoff.cpp).
  std::function<status(const std::string& target)> start_pass;
  std::function<cluster_rebalance_state()> pass_state;
  std::function<status(std::string id, uint32_t part, uint32_t parts, std::vector<log_row> rows, bool* adopted)>
      adopt;
  std::function<status(std::vector<log_row> claims)> put_claims;
  std::function<status(std::string id, std::vector<log_row> rows, bool* adopted)> adopt_schedule;
  std::function<status(std::string agent, std::vector<log_row> rows)> adopt_work;
  // Work items' knowledge graph, this node's triples alone (runtime_work.cpp).
  std::function<status(uint8_t lens, const std::string& node, size_t limit, const work_graph_filter&,
                       std::vector<work_triple>*)>
      graph_local;
  std::function<status(const std::string& project, work_graph_stats*, work_graph_shared*)> graph_stats_local;
  std::function<status(const std::string& target)> commit;
};

// Who the members are, as a node sees them now. Immutable; swapped whole.
struct cluster_view {
  std::vector<cluster_member> active;    // where threads live
  std::vector<cluster_member> target;    // the new members, until a rebalance commits them; empty: none
  std::vector<cluster_member> previous;  // the members before the last committed change; empty: none
  rendezvous active_ring, target_ring, previous_ring;
  // A replicated cluster's owner of a key (its partition's leader; "" while
  // none is known); null: a static cluster's, by active_ring.
  std::function<std::string(std::string_view key)> placement;
  // The node that serves `key` (a cluster_key, a claim's): "" when none is known.
  std::string owner(std::string_view key) const {
    return placement ? placement(key) : active_ring.owner_id(key);
  }
  bool changing() const { return !target.empty(); }
  bool in_target(std::string_view node) const;
  // active, then the target's members not in it: everyone to ask.
  std::vector<cluster_member> everyone() const;
};

class cluster_link;

// One of the edge's workers (cluster_edge.cpp): serves other nodes' calls on
// the calling thread until stop_atom or an exit message (cluster_link::start).
void edge_worker(caf::blocking_actor* self, runtime* rt, cluster_link* link, edge_hooks hooks);

class cluster_link {
 public:
  cluster_link(caf::actor_system& sys, cluster_options options);
  ~cluster_link();
  cluster_link(const cluster_link&) = delete;
  cluster_link& operator=(const cluster_link&) = delete;

  // Spawns the edge workers over `rt` and publishes the edge on this node's
  // member address; io_error names the address when it is taken.
  status start(runtime& rt, edge_hooks hooks);
  // Unpublishes the edge and stops its workers (they finish the call they run).
  void stop();

  const std::string& self() const { return options_.node_id; }
  const cluster_options& options() const { return options_; }
  // The members now (never null), and a change of them: the link also gets to
  // know members it did not (a joining node).
  std::shared_ptr<const cluster_view> view() const;
  void set_view(std::vector<cluster_member> active, std::vector<cluster_member> target,
                std::vector<cluster_member> previous);
  // A replicated cluster: who owns a key (cluster_view::placement), from now on.
  void set_placement(std::function<std::string(std::string_view key)> placement);
  // The port the edge listens on (after start(): the one bound when 0 was asked).
  uint16_t port() const { return port_; }
  // The first active member: it decides agents.
  std::string coordinator() const { return view()->active.front().id; }
  // Whether new thread ids minted here are this node's: by the target members
  // while a change is under way (new threads go straight to their new home),
  // else by the active ones. A value that keeps no reference to the link
  // (actors may outlive it by a message): core_options::owns_id.
  std::function<bool(std::string_view)> id_filter() const;
  // True on an edge worker's thread while it runs another node's call: the
  // node it forwards to must not forward it back (runtime::impl::route).
  static bool serving_edge();
  // Whether `node`'s link is down: it was lost, or the last connection
  // failed (a replicated cluster waits for another leader then).
  bool link_down(const std::string& node) const;
  // Clears one member's failed-connection state: it joined again.
  void forget_failure(const std::string& node);
  // Clears every member's failed-connection backoff: after asking members at
  // open, when some were not up yet.
  void forget_failures();
  // Whether links are TLS (CAF's OpenSSL module).
  bool tls() const { return options_.tls.enabled(); }

  // Asks node `node`'s edge and waits, at most the request timeout: `on_value`
  // takes the reply's values. A refusal of the owner comes back as it is; no
  // answer, a lost link or an unreachable node is `unavailable` naming the node.
  template <class F, class... Ts>
  status call(const std::string& node, F&& on_value, Ts&&... xs) {
    edge_actor edge;
    SKEIN_TRY(peer(node, &edge));
    caller self{sys_};
    status result;
    self->request(edge, timeout_, std::forward<Ts>(xs)...)
        .receive(std::forward<F>(on_value), [&](caf::error& e) { result = failure(node, e); });
    return result;
  }

  // A send to the owner: `done` is called once, with the run's result or why
  // there is none (unavailable when the owner's link dropped during the run).
  void send(const std::string& node, const std::string& thread, run_input input,
            std::function<void(status, run_result)> done);
  // A subscription on the owner relayed to a sink actor here (host_sink.hpp;
  // *sink_actor: stop it to unsubscribe). It ends "unavailable" if the link drops.
  status subscribe(const std::string& node, const std::string& thread, uint64_t from_seq, event_sink sink,
                   std::shared_ptr<std::atomic<uint64_t>> failures, caf::actor* sink_actor);

  // Every member as GET /v1/cluster shows it; asks each reachable one for its counts.
  status members(const edge_hooks& local, std::vector<cluster_member_state>* out);

 private:
  struct peers;
  // The member's edge: linked already, or a link made now, by whichever node
  // calls first (when both do, CAF's BASP keeps one link and closes the other;
  // under TLS that close once broke the other link too: cluster_tls.cpp).
  status peer(const std::string& node, edge_actor* out);
  status failure(const std::string& node, const caf::error& e);

  struct views;
  caf::actor_system& sys_;
  cluster_options options_;
  std::shared_ptr<views> views_;  // shared with id_filter()'s functions
  std::chrono::milliseconds timeout_;
  std::set<std::string> interface_;  // edge_actor's signatures: what a peer's edge must publish
  std::shared_ptr<peers> peers_;
  caf::actor edge_;
  std::vector<caf::actor> workers_;        // blocking actors, one per thread below
  std::vector<std::thread> worker_threads_;
  uint16_t port_ = 0;
};

}  // namespace skein
