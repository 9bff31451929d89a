// Cluster routes (the namespace's admin): the members of this node's cluster
// with their state and counts, and a rebalance after the cluster file changed.
#include "runtime/model/json_writer.hpp"
#include "tools/server/routes/routes.hpp"

namespace skein::server {
namespace {

void write_rebalance(json_writer& w, const cluster_rebalance_state& r) {
  w.key("rebalance");
  w.begin_object();
  w.field("phase", r.phase.empty() ? "none" : r.phase);
  w.field_uint("moved", r.moved);
  w.field_uint("events", r.events);
  w.field_uint("claims", r.claims);
  w.field_uint("schedules", r.schedules);
  w.field_uint("remaining", r.remaining);
  if (!r.error.empty()) w.field("error", r.error);
  w.end_object();
}

// POST /v1/cluster/rebalance: starts a membership change from this node
// (runtime::start_rebalance); 202, and GET /v1/cluster shows its progress.
void rebalance(route_call& c) {
  if (status s = c.rt().start_rebalance(); !s) return c.fail(s);
  cluster_rebalance_state r;
  if (status s = c.rt().rebalance_state(&r); !s) return c.fail(s);
  std::string body;
  json_writer w{&body};
  w.begin_object();
  write_rebalance(w, r);
  w.end_object();
  c.reply_json(202, body);
}

// A replicated cluster's partitions as this node sees them, and its counters.
void write_replication(json_writer& w, const replication_status& r) {
  w.key("replication");
  w.begin_object();
  w.field_uint("partition_count", r.partitions);
  w.field_uint("replicas", r.replicas);
  w.field("link", r.link);
  w.field_uint("rounds", r.rounds);
  w.field_uint("leases_taken", r.took);
  w.field_uint("deposed", r.deposed);
  w.field_uint("released", r.released);
  w.field_uint("follower_restarts", r.restarts);
  w.field_uint("errors", r.errors);
  if (!r.last_error.empty()) w.field("last_error", r.last_error);
  w.key("draining");
  w.begin_array();
  for (const auto& id : r.draining) w.string(id);
  w.end_array();
  w.key("partitions");
  w.begin_array();
  for (const auto& p : r.views) {
    w.begin_object();
    w.field_uint("partition", p.partition);
    w.field("leader", p.leader);
    w.key("replicas");
    w.begin_array();
    for (const auto& id : p.replicas) w.string(id);
    w.end_array();
    w.field_uint("epoch", p.epoch);
    w.field_uint("applied", p.applied);
    w.field_bool("leading", p.leading);
    w.field_bool("following", p.following);
    w.end_object();
  }
  w.end_array();
  w.end_object();
}

// GET /v1/cluster: the members of this node's cluster, their state and counts
// (admin only: it names every node), and the last rebalance started here.
// Alone, one member: this node.
void cluster_state(route_call& c) {
  std::vector<cluster_member_state> members;
  if (status s = c.rt().cluster_members(&members); !s) return c.fail(s);
  cluster_rebalance_state rebalance;
  if (status s = c.rt().rebalance_state(&rebalance); !s) return c.fail(s);
  std::string body;
  json_writer w{&body};
  w.begin_object();
  std::string self;
  for (const auto& m : members)
    if (m.self) self = m.id;
  w.field("node_id", self);
  w.key("members");
  w.begin_array();
  for (const auto& m : members) {
    w.begin_object();
    w.field("id", m.id);
    w.field("address", m.address);
    w.field("state", m.state);
    w.field("role", m.role);
    w.field_bool("self", m.self);
    w.field_uint("threads", m.threads);
    w.field_uint("active", m.active);
    w.field_uint("forwarded", m.forwarded);
    if (!m.last_error.empty()) w.field("error", m.last_error);
    w.end_object();
  }
  w.end_array();
  write_rebalance(w, rebalance);
  replication_status r;
  if (c.rt().replication(&r)) write_replication(w, r);
  w.end_object();
  c.reply_json(200, body);
}

// POST (DELETE) /v1/cluster/nodes/{node}/drain: marks a node of a replicated
// cluster draining (or no longer): its partitions' leads move to the others.
void drain(route_call& c) {
  const bool on = c.req.method == "POST";
  const std::string node = c.param("node");
  if (status s = c.rt().drain(node, on); !s) return c.fail(s);
  std::string body;
  json_writer w{&body};
  w.begin_object();
  w.field("node", node);
  w.field_bool("draining", on);
  w.end_object();
  c.reply_json(202, body);
}

constexpr route rows[] = {
    {.method = "GET", .pattern = "/v1/cluster", .scope = route_scope::admin, .denied = "read the cluster (admin only)",
     .handler = cluster_state},
    {.method = "POST", .pattern = "/v1/cluster/rebalance", .scope = route_scope::admin,
     .denied = "rebalance the cluster (admin only)", .handler = rebalance},
    {.method = "POST", .pattern = "/v1/cluster/nodes/{node}/drain", .scope = route_scope::admin,
     .denied = "drain a node (admin only)", .handler = drain},
    {.method = "DELETE", .pattern = "/v1/cluster/nodes/{node}/drain", .scope = route_scope::admin,
     .denied = "drain a node (admin only)", .handler = drain},
};

}  // namespace

std::span<const route> cluster_routes() { return rows; }

}  // namespace skein::server
