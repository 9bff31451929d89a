// runtime::impl: what a runtime holds, shared by the files that implement
// skein::runtime (runtime.cpp, runtime_threads.cpp, runtime_runs.cpp,
// runtime_reads.cpp, runtime_upkeep.cpp, runtime_cluster.cpp,
// runtime_schedules.cpp, runtime_health.cpp, runtime_work.cpp, and the
// cluster room's cluster_handoff.cpp and cluster_rebalance.cpp).
// Internal: includes CAF.
#pragma once

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/sec.hpp>
#include <atomic>
#include <map>
#include <set>
#include <shared_mutex>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "actors/caller.hpp"
#include "actors/core.hpp"
#include "actors/error.hpp"
#include "actors/messages.hpp"
#include "actors/timers.hpp"
#include "runtime/cluster/cluster_link.hpp"
#include "runtime/cluster/cluster_tls.hpp"
#include "runtime/cluster/replicated_cluster.hpp"
#include "runtime/host_sink.hpp"
#include "runtime/memory_service.hpp"
#include "runtime/runtime.hpp"
#include "runtime/work/work_service.hpp"

namespace skein {

// A client actor: delivers runtime::send's inputs to the thread actors here
// (runtime_runs.cpp). open() spawns a few; send() takes them in turn.
caf::behavior client_actor(caf::event_based_actor* self, directory_actor directory);

// The target of a request quit before it answered (a thread actor that
// passivated between its resolve and the request): worth one more resolve.
inline bool receiver_down(const caf::error& e) {
  return e.category() == caf::atom("system") &&
         e.code() == static_cast<uint8_t>(caf::sec::request_receiver_down);
}

// Every node's answer, this node's by `local`, the others' by asking their edge
// with `xs`; in member order. The first failure ends it: a gathered answer is
// whole or refused.
template <class T, class Local, class... Ts>
status cluster_gather(cluster_link& link, std::vector<T>* out, Local local, Ts&&... xs) {
  for (const auto& m : link.view()->everyone()) {
    T& value = out->emplace_back();
    if (m.id == link.self()) SKEIN_TRY(local(&value));
    else SKEIN_TRY(link.call(m.id, [&](T& x) { value = std::move(x); }, xs...));
  }
  return status::ok();
}

// Rows handed to another node go in parts of about this many bytes (a part
// holds one row more when a single row is larger).
inline constexpr size_t handoff_part_bytes_max = 1 << 20;
// `rows` in such parts, in order; none for none.
std::vector<std::vector<log_row>> handoff_parts(std::vector<log_row> rows);

struct runtime::impl {
  runtime_options options;
  std::unique_ptr<event_log> log;
  caf::actor_system_config cfg;
  // The node's TLS files as CAF reads them (cluster_tls.hpp): outlive the system.
  std::unique_ptr<cluster_tls_files> tls_files;
  std::unique_ptr<caf::actor_system> sys;
  core actors;
  caf::actor retention;  // the retention effect (actors/effects/retention.hpp)
  caf::actor scheduler;  // actors/scheduler.hpp
  std::vector<caf::actor> clients;
  std::atomic<size_t> next_client{0};
  struct subscription {
    caf::actor actor;                 // the sink actor (host_sink.hpp)
    std::shared_ptr<sink_gate> gate;  // between it and the host's callbacks
  };
  std::mutex subs_mu;  // guards subs
  std::map<uint64_t, subscription> subs;
  std::atomic<uint64_t> next_sub{1};
  // Exceptions thrown by host callbacks, caught and counted (runtime_stats).
  std::shared_ptr<std::atomic<uint64_t>> host_failures = std::make_shared<std::atomic<uint64_t>>(0);
  std::mutex close_mu;  // guards closed
  bool closed = false;
  core_options core_opts;
  std::shared_ptr<memory_service> memory;  // shared with the memory_search tool
  std::unique_ptr<actor_timer_service> memory_timers;  // for the embedders memory search builds
  std::unique_ptr<work_service> work;  // work items (work_service.hpp)
  std::mutex hashing_mu;  // guards hashing
  std::shared_ptr<embedder> hashing;  // for agents naming no embedder: the work service's
  // This node's link to the others (runtime_options::cluster); null when alone.
  // Declared after sys: it goes before the actor system does.
  std::unique_ptr<cluster_link> cluster;
  // A replicated cluster's NATS side (cluster_options::replication); null otherwise.
  // Declared before the log's users stop: closed after the actors, before the log.
  std::unique_ptr<replicated_cluster> replicated;
  // The owner of `key` by the members' view now. In a replicated cluster a
  // partition with no leader known (a failover under way) is waited for up to
  // the request timeout, then unavailable.
  status owner_of(std::string_view key, std::string* out) const;
  // Calls `fn` with the id of every schedule stored here of the partition.
  void for_schedules(uint32_t partition, const std::function<void(const std::string&)>& fn);
  // Puts an agent of the cluster's bucket (its JSON) into the directory here (replicated cluster).
  status put_bucket_agent(const std::string& json);
  // runtime::create_agent in a replicated cluster: through the agents bucket.
  status put_agent_cluster(agent_config config, agent_config* out);
  // Registers this node and starts leading and following (after the link started).
  status start_replication();
  // The actors its hooks tell; dropped by close() once replication stopped.
  struct replicated_targets {
    caf::actor scheduler;
    std::vector<caf::actor> effects;
    directory_actor directory;
    journal_actor journal;
  };
  std::shared_ptr<replicated_targets> replication_targets;

  // The cluster's side of the runtime (runtime_cluster.cpp).
  // Where a call about thread `id` runs: *node is the node to forward it to,
  // empty for here (alone, or this node has it). Unavailable while the thread
  // moves to another node (cluster_handoff.cpp).
  status route(std::string_view id, std::string* node) const;
  // The node a call about one work item (by its thread id) goes to: "" for this
  // one (runtime_work.cpp).
  status item_node(const std::string& thread_id, std::string* node) const;
  // Asks `node` about an item (edge_protocol.hpp, item_atom) and takes its entry.
  template <class... Ts>
  status ask_item(const std::string& node, work_entry* out, Ts&&... xs) {
    return cluster->call(node, [&](work_entry& e) { *out = std::move(e); }, item_atom::value, std::forward<Ts>(xs)...);
  }
  // An agent's work (its items, sessions, suggestions) lives on its work home,
  // the owner of work_home_key(agent): the node a call keyed by `key` goes to,
  // "" for this one (runtime_work.cpp). During a change the active owner
  // serves it until its pass marks the key, answers "moving" until the work
  // is handed, then forwards to the target owner.
  status route_work(const std::string& key, std::string* node) const;
  // route_work() for a call on this node's copy of the work under `key` (an
  // agent's, work_home_key): when it is served here, *gate holds that key's
  // gate shared for the call, so that a pass marking the key waits for calls
  // in flight (release_work) and none starts after the mark.
  using work_gate = std::shared_lock<std::shared_mutex>;
  status work_node(const std::string& key, std::string* node, work_gate* gate);
  // work_node() for a call by agent (its id checked first in a cluster).
  status agent_work_node(const std::string& agent_id, std::string* node, work_gate* gate);
  std::shared_mutex& gate_of(const std::string& key);
  std::mutex work_gates_mu;  // guards work_gates (the map, not the gates)
  std::map<std::string, std::unique_ptr<std::shared_mutex>, std::less<>> work_gates;
  // Asks `node`'s edge (work_atom, xs...) and takes its answer.
  template <class T, class... Ts>
  status ask_work(const std::string& node, T* out, Ts&&... xs) {
    return cluster->call(node, [&](T& r) { *out = std::move(r); }, work_atom::value, std::forward<Ts>(xs)...);
  }
  // The knowledge graph's lenses (0 connected to, 1 produced by, 2 into): this
  // node's triples, and every node's merged (runtime_work.cpp).
  status graph_local(uint8_t lens, const std::string& node, size_t limit, const work_graph_filter& filter,
                     std::vector<work_triple>* out);
  status graph_cluster(uint8_t lens, const std::string& node, size_t limit, const work_graph_filter& filter,
                       std::vector<work_triple>* out);
  // The node a creation goes to ("" here) by its claim or parent (creation_key).
  status route_creation(const thread_options& o, std::string* node) const;
  // The node that decides a claim key ("task/…", "dm/…"); unavailable while it moves.
  status route_claim(const std::string& key, std::string* node) const;
  // A schedule lives where its id's key is owned (cluster_key: a bound one's id
  // starts with its thread's root id, so it lives with the thread); "" here.
  // From another node's call, a schedule this node does not own is refused.
  // `creating`: while a change is under way, a new schedule whose key moves
  // is refused (retry after the rebalance): it would be left behind.
  status route_schedule(const std::string& id, std::string* node, bool creating = false) const;
  // A schedule id for `s` in a cluster (runtime_schedules.cpp): s.id when given
  // (a bound schedule's must start with its thread's root id and '.'), else
  // minted: after the bound thread's root id, or owned by this node.
  status cluster_schedule_id(schedule* s) const;
  status list_schedules_local(const std::string& after_id, size_t limit, std::vector<schedule>* out,
                              std::string* next);
  // Pauses (true) or resumes a schedule, on its node (runtime_schedules.cpp).
  status set_paused(const std::string& id, bool paused, schedule* out);
  bool stored_here(std::string_view id) const;
  // Calls that are not forwarded yet: refused, never answered from the wrong node.
  status put_agent_local(agent_config config, agent_config* out);
  // A node that missed an agent's fan-out (it was down) fetches the coordinator's agents.
  // In a replicated cluster, the one agent named is fetched from the agents bucket.
  status sync_agents(const std::string& agent_id = {});
  status list_local(const thread_query& q, thread_page* out);
  status counts(uint64_t* threads, uint64_t* active);
  // Usage and memory search over every node (runtime_cluster.cpp): each node's
  // own answer, merged; refused, not partial, while a node is unreachable.
  status usage_cluster(const usage_query& q, usage_report* out);
  // This node's part of them (in a replicated cluster: the partitions it leads).
  status usage_local(const usage_query& q, usage_report* out);
  status search_local(const std::string& agent, const std::string& query, size_t k, std::vector<memory_hit>* out);
  status search_cluster(const std::string& agent, const std::string& query, size_t k, std::vector<memory_hit>* out);
  edge_hooks hooks();

  // Membership change (cluster_handoff.cpp).
  // Threads this node handed (or is handing) to another: thread -> new owner.
  // Stored (node rows "node/handoff/<id>") before the first row leaves; a marked
  // thread still stored here is never served here again.
  mutable std::mutex marks_mu;
  std::map<std::string, std::string, std::less<>> marks;
  bool marked(std::string_view id) const;
  // At open: the stored members, the cluster file as the target when it differs,
  // the marks.
  status load_membership();
  bool membership_stored = false;  // load_membership found the active members stored
  // After the link starts, on a database's first open: a node joining a
  // running cluster takes its active members from one; the members are stored.
  status learn_membership();
  // Stores the members (and `previous`, or none) and drops the handoff marks
  // named, in one write.
  status persist_members(const std::vector<cluster_member>& active, const std::vector<cluster_member>& previous,
                         std::vector<std::string> marks_done);
  // This node's pass of a rebalance: hands over what the target gives others.
  std::mutex pass_mu;  // guards pass, pass_thread
  cluster_rebalance_state pass;
  std::thread pass_thread;
  std::atomic<bool> pass_stop{false};
  status start_pass(const std::string& target);
  void run_pass(std::string target);
  enum class handoff_outcome { moved, busy, gone };  // gone: deleted meanwhile, or moved already
  status handoff(const std::string& id, const std::string& to, handoff_outcome* out, uint64_t* events);
  status hand_claims(const cluster_view& v, uint64_t* moved);
  status commit_membership(const std::string& target);
  // Parts of threads other nodes are handing here.
  struct adopting_thread {
    std::vector<log_row> rows;
    uint32_t next = 0;  // the part due
    size_t bytes = 0;
  };
  std::mutex adopt_mu;  // guards adopting, adopting_bytes
  std::map<std::string, adopting_thread> adopting;
  size_t adopting_bytes = 0;
  status adopt(std::string id, uint32_t part, uint32_t parts, std::vector<log_row> rows, bool* adopted);
  // A schedule handed here (its definition and history): written, then armed.
  status adopt_schedule(std::string id, std::vector<log_row> rows, bool* adopted);
  // Marks `id` (a thread, a schedule, an agent's work key) as handed to node
  // `to`, durably before anything of it leaves: this node never serves it
  // again (cluster_handoff.cpp).
  status mark(const std::string& id, const std::string& to);
  // The schedules this node hands over in a pass: marked and released (they
  // never fire here again) before any thread moves; sent once their threads did.
  status release_schedules(const cluster_view& v, std::vector<std::pair<std::string, std::string>>* moving);
  status hand_schedules(const std::vector<std::pair<std::string, std::string>>& moving, uint64_t* moved);
  // The agents whose work home moves: their keys marked, and the calls on their
  // work in flight here ended, before any thread moves; once their items moved (as threads, with
  // their rows and triples), their sessions and suggestions are sent, adopted,
  // and erased here (runtime_work.cpp). `work_handed`: keys handed in this
  // process (after a restart mid-change a marked key answers "moving" until
  // the rerun).
  status release_work(const cluster_view& v, std::vector<std::pair<std::string, std::string>>* moving);
  status hand_work(const std::vector<std::pair<std::string, std::string>>& moving, uint64_t* moved);
  status adopt_work(const std::string& agent_id, std::vector<log_row> rows);
  std::set<std::string, std::less<>> work_handed;  // guarded by marks_mu
  status put_claims(std::vector<log_row> claims);
  // Rebalances coordinated here (runtime::start_rebalance, cluster_rebalance.cpp).
  std::mutex coord_mu;  // guards coord, coord_thread
  cluster_rebalance_state coord;
  std::thread coord_thread;
  void stop_handoffs();  // at close: ends the passes, joins their threads
  status check_open() const {
    if (!sys) return status::io_error("the runtime is closed");
    return status::ok();
  }

  // Asks `dest` and waits for a T (or caf::unit when T is void-like).
  template <class Dest, class T, class... Ts>
  status ask(const Dest& dest, T* out, Ts&&... xs) {
    SKEIN_TRY(check_open());
    caller self{*sys};
    status result;
    self->request(dest, caf::infinite, std::forward<Ts>(xs)...)
        .receive([&](T& v) { *out = std::move(v); }, [&](caf::error& e) { result = to_status(e); });
    return result;
  }

  template <class Dest, class... Ts>
  status tell(const Dest& dest, Ts&&... xs) {
    SKEIN_TRY(check_open());
    caller self{*sys};
    status result;
    self->request(dest, caf::infinite, std::forward<Ts>(xs)...)
        .receive([] {}, [&](caf::error& e) { result = to_status(e); });
    return result;
  }

  // Asks the thread actor of `thread`, activating it; retries if it passivated meanwhile.
  template <caf::message_priority P = caf::message_priority::normal, class T, class... Ts>
  status ask_thread(const std::string& thread, T* out, Ts... xs) {
    for (int attempt = 0;; ++attempt) {
      thread_actor target;
      SKEIN_TRY(ask(actors.directory, &target, resolve_atom::value, thread));
      caller self{*sys};
      status result;
      bool down = false;
      self->request<P>(target, caf::infinite, xs...)
          .receive([&](T& v) { *out = std::move(v); },
                   [&](caf::error& e) {
                     down = receiver_down(e);
                     result = to_status(e);
                   });
      if (!down || attempt == 8) return result;
    }
  }
};

}  // namespace skein
