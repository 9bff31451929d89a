// skein::runtime as a node of a replicated cluster (cluster_options::
// replication; runtime/cluster/replicated_cluster.hpp): routing by partition
// leader, a partition's recovery when this node takes it and its actors'
// stop when it loses it, and agents kept in the cluster's bucket.
#include <caf/send.hpp>
#include <algorithm>
#include <chrono>
#include <thread>

#include "actors/effects/effects.hpp"
#include "actors/scheduler.hpp"
#include "persistence/recovery.hpp"
#include "runtime/model/agent.hpp"
#include "runtime/model/ids.hpp"
#include "runtime/runtime_impl.hpp"
#include "skein/version.hpp"

namespace skein {

status runtime::impl::owner_of(std::string_view key, std::string* out) const {
  *out = cluster->view()->owner(key);
  if (!replicated) return status::ok();
  // A failover under way (no leader known, or the last one known cannot be
  // reached): the next leader serves within a lease's ttl and a catch-up; a
  // request waits for it up to its timeout.
  auto settled = [&] { return !out->empty() && !cluster->link_down(*out); };
  if (settled()) return status::ok();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(options.cluster.request_timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    *out = cluster->view()->owner(key);
    if (settled()) return status::ok();
  }
  if (!out->empty()) return status::ok();  // the call says why it cannot reach it
  return status::unavailable("partition " + std::to_string(replicated->partition_of(key)) + " of " +
                             std::string{key} + " has no leader now (a failover under way): retry shortly");
}

status runtime::impl::start_replication() {
  // The actors the hooks tell, as they are now: close() drops its own handles
  // while the partition manager may still run a hook (a message to an actor
  // that is gone is dropped), and these once the manager stopped (a handle
  // held keeps a detached actor's thread, and the actor system, waiting).
  replication_targets = std::make_shared<replicated_targets>(
      replicated_targets{scheduler, actors.effects, actors.directory, actors.journal});
  std::shared_ptr<const replicated_targets> to = replication_targets;
  replicated_hooks h;
  h.on_writer = [this, to](std::function<status(event_log&)> fn) {
    SKEIN_TRY(check_open());
    return journal_run(*sys, to->journal, std::move(fn));
  };
  h.recover = [this, to](uint32_t p) {
    // Its interrupted runs closed on the log's writer, as recovery does at
    // open: the last leader's runs in flight there stopped with it.
    auto in_partition = [this, p](std::string_view id) { return replicated->partition_of_thread(id) == p; };
    std::vector<std::string> repaired;
    std::vector<quarantined_thread> quarantined;
    status s = journal_run(*sys, to->journal, [&](event_log& w) {
      return repair_interrupted(w, &repaired, &quarantined, in_partition);
    });
    (void)s;  // a storage error shows in the next write; the partition is served either way
  };
  h.led = [this, to](uint32_t p) {
    // Its schedules fire here from now on; its derived work (titles,
    // embeddings, compaction) goes on here from the stored cursors.
    for_schedules(p, [&](const std::string& id) { caf::anon_send(to->scheduler, load_atom::value, id); });
    for (const auto& fx : to->effects) caf::anon_send(fx, effect_scan_atom::value);
    // Inputs accepted before the last leader stopped wait in their threads'
    // inboxes: activating those threads replays them, as at open.
    std::vector<std::string> waiting;
    if (status s = log->list_inbox_threads(&waiting); !s) return;
    for (const auto& id : waiting)
      if (replicated->partition_of_thread(id) == p) caf::anon_send(to->directory, resolve_atom::value, id);
  };
  h.lost = [this, to](uint32_t p) {
    // Its actors stop as for a handoff; its schedules fire on the next leader.
    auto in_partition = [r = replicated.get(), p](std::string_view id) { return r->partition_of_thread(id) == p; };
    caf::anon_send(to->directory, stop_atom::value, thread_filter{in_partition});
    for_schedules(p, [&](const std::string& id) { caf::anon_send(to->scheduler, release_atom::value, id); });
  };
  h.members = [this](std::vector<cluster_member> members) {
    auto v = cluster->view();
    for (auto& m : members) {
      // This node as its link listens, whatever the bucket showed of it last.
      if (m.id == cluster->self())
        for (const auto& a : v->active)
          if (a.id == m.id) m = a;
      // A member back after it was gone (a restart): its link is tried again.
      bool known = std::any_of(v->active.begin(), v->active.end(), [&](const cluster_member& a) { return a.id == m.id; });
      if (!known) cluster->forget_failure(m.id);
    }
    cluster->set_view(std::move(members), {}, {});
  };
  // Another configuration here: the bucket's wins at the next open.
  h.agent = [this](const std::string& json) { put_bucket_agent(json).ignore(); };
  const auto& r = options.cluster.replication;
  return replicated->start(*log, r.host, cluster->port(), library_version(), std::move(h));
}

void runtime::impl::for_schedules(uint32_t p, const std::function<void(const std::string&)>& fn) {
  log->scan_schedules([&](schedule&& s) {
       if (replicated->partition_of_thread(s.id) == p) fn(s.id);
     })
      .ignore();  // a definition that does not read fires nowhere, as at open
}

status runtime::impl::put_agent_cluster(agent_config config, agent_config* out) {
  // The cluster's bucket decides: an agent there is the cluster's, the same
  // again a no-op, another configuration a conflict; a new one is checked and
  // stored here, then put there unless another node put one first.
  auto settle = [&](const std::string& stored) -> status {
    status put = put_bucket_agent(stored);
    if (!put && put.code() != errc::conflict) return put;
    // The directory judges it as it would here alone: the same again, or a conflict.
    return put_agent_local(std::move(config), out);
  };
  std::string stored;
  SKEIN_TRY(replicated->get_agent(config.id, &stored));
  if (!stored.empty()) return settle(stored);
  agent_config created;
  SKEIN_TRY(put_agent_local(config, &created));
  std::string json;
  SKEIN_TRY(encode_agent(created, &json));
  SKEIN_TRY(replicated->put_agent(created.id, json, &stored));
  if (!stored.empty()) return settle(stored);
  if (out != nullptr) *out = std::move(created);
  return status::ok();
}

status runtime::impl::put_bucket_agent(const std::string& json) {
  agent_config a;
  SKEIN_TRY(decode_agent(json, &a));
  return put_agent_local(std::move(a), nullptr);  // the same again: a no-op
}

status runtime::replication(replication_status* out) {
  SKEIN_TRY(impl_->check_open());
  if (!impl_->replicated) return status::not_found("not a node of a replicated cluster");
  replicated_state st = impl_->replicated->state();
  *out = {};
  out->partitions = st.partitions;
  out->replicas = st.replicas;
  out->link = impl_->options.cluster.replication.host + ":" + std::to_string(impl_->cluster->port());
  for (auto& v : st.views)
    out->views.push_back({v.partition, std::move(v.replicas), std::move(v.leader), v.epoch, v.applied, v.leading,
                          v.following});
  out->rounds = st.counters.rounds;
  out->took = st.counters.took;
  out->deposed = st.counters.deposed;
  out->released = st.counters.released;
  out->restarts = st.counters.restarts;
  out->errors = st.counters.errors;
  out->last_error = std::move(st.last_error);
  out->draining = impl_->replicated->draining();
  return status::ok();
}

status runtime::drain(const std::string& node, bool on) {
  SKEIN_TRY(impl_->check_open());
  if (!impl_->replicated)
    return status::invalid_input("drain: this server is not a node of a replicated cluster (skein serve --cluster "
                                 "nats://…)");
  if (status s = validate_id(node, "node"); !s) return s.with_field("node");
  if (node.find(':') != std::string::npos || node.size() > node_id_bytes_max)
    return status::invalid_input("node: not a node id of a replicated cluster").with_field("node");
  return impl_->replicated->set_drain(node, on);
}

}  // namespace skein
