// replicated_cluster.hpp: the stream, the buckets and the stored partition
// count; the registry, the agents' watch and the partition manager of a node.
#include "runtime/cluster/replicated_cluster.hpp"

#include <atomic>
#include <charconv>
#include <mutex>
#include <set>
#include <sstream>

#include "persistence/sealed_message.hpp"
#include "runtime/replication/journal_replicator.hpp"
#include "runtime/replication/member_registry.hpp"
#include "runtime/replication/placement.hpp"

namespace skein {
namespace {

constexpr const char* stream_name = "skein";
constexpr const char* subject_prefix = "skein.log";
constexpr const char* log_namespace = "default";  // a cluster node has one database
constexpr const char* members_bucket = "skein_members";
constexpr const char* leases_bucket = "skein_leases";
constexpr const char* agents_bucket = "skein_agents";
constexpr const char* config_bucket = "skein_cluster";

// A bucket's key for an agent id: ids may hold ':', which keys may not.
std::string agent_key(std::string_view id) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out = "a.";
  for (unsigned char c : id) {
    out.push_back(hex[c >> 4]);
    out.push_back(hex[c & 15]);
  }
  return out;
}

// What a node registers: "<host> <port> <version>".
std::string member_value(const std::string& host, uint16_t port, const std::string& version) {
  return host + " " + std::to_string(port) + " " + version;
}

bool parse_member(const replication::member& m, cluster_member* out) {
  std::istringstream in{m.value};
  std::string host, port_text;
  if (!(in >> host >> port_text)) return false;
  unsigned port = 0;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc{} || end != port_text.data() + port_text.size() || port == 0 || port > 65535) return false;
  *out = {m.id, host, static_cast<uint16_t>(port)};
  return true;
}

}  // namespace

struct replicated_cluster::impl {
  cluster_options options;
  std::unique_ptr<replication::jetstream> js;
  std::unique_ptr<message_sealer> sealer;  // null: the log is not encrypted
  uint32_t partitions = 0;
  std::shared_ptr<replication::journal_replicator> replicator;
  std::unique_ptr<replication::member_registry> registry;
  std::unique_ptr<replication::partition_manager> manager;
  std::atomic<replication::partition_manager*> running{nullptr};  // manager, once started and until stopped
  std::unique_ptr<replication::subscription> agents_watch, drain_watch;
  mutable std::mutex drain_mu;
  std::set<std::string> drained;  // guarded by drain_mu: the nodes marked draining
  std::unique_ptr<std::atomic<bool>[]> serving;  // per partition: led and recovered here
  std::mutex stop_mu;
  bool stopped = false;

  // The node serving partition `p` as this one sees it: itself once it
  // serves it, else the lease's holder; "" when none is known.
  std::string owner_of(uint32_t p) const;
};

replicated_cluster::replicated_cluster(std::unique_ptr<impl> p) : impl_(std::move(p)) {}

replicated_cluster::~replicated_cluster() { stop(false); }

status replicated_cluster::connect(const cluster_options& options, std::shared_ptr<const master_key> key,
                                   std::unique_ptr<replicated_cluster>* out) {
  auto p = std::make_unique<impl>();
  p->options = options;
  const cluster_replication& r = options.replication;
  replication::nats_options no;
  no.urls = r.nats;
  no.name = options.node_id;
  no.request_timeout = std::chrono::milliseconds(std::min<uint64_t>(options.request_timeout_ms, 2000));
  no.ca_file = r.nats_ca;
  no.user = r.nats_user;
  no.password = r.nats_password;
  no.credentials_file = r.nats_creds;
  if (status s = replication::jetstream::connect(no, &p->js); !s)
    return status{s.code(), "cluster: NATS: " + s.message()}.with_field("cluster");
  replication::stream_config sc;
  sc.name = stream_name;
  sc.subjects = {std::string{subject_prefix} + ".>"};
  sc.replicas = r.log_replicas;
  SKEIN_TRY(p->js->ensure_stream(sc));
  SKEIN_TRY(p->js->ensure_bucket({config_bucket, r.log_replicas, 1}));
  SKEIN_TRY(p->js->ensure_bucket({agents_bucket, r.log_replicas, 1}));
  // The partition count is the cluster's: the first node stores its own.
  std::string mine = std::to_string(r.partitions);
  status created = p->js->kv_create(config_bucket, "partitions", mine, nullptr);
  if (!created && created.code() != errc::conflict) return created;
  replication::kv_entry stored;
  SKEIN_TRY(p->js->kv_get(config_bucket, "partitions", &stored));
  uint32_t parts = 0;
  auto [end, ec] = std::from_chars(stored.value.data(), stored.value.data() + stored.value.size(), parts);
  if (ec != std::errc{} || end != stored.value.data() + stored.value.size() || parts == 0)
    return status::corruption("cluster: the stored partition count '" + quote_input(stored.value, 40) +
                              "' is not a number");
  p->partitions = parts;
  if (key) {
    p->sealer = std::make_unique<message_sealer>();
    SKEIN_TRY(message_sealer::make(*key, p->sealer.get()));
  }
  replication::journal_replication jr;
  jr.stream = stream_name;
  jr.subject_prefix = subject_prefix;
  jr.ns = log_namespace;
  jr.partitions = parts;
  jr.node_id = options.node_id;
  jr.retry_for = std::chrono::milliseconds(options.request_timeout_ms);
  p->replicator = std::make_shared<replication::journal_replicator>(*p->js, jr, p->sealer.get());
  p->serving = std::make_unique<std::atomic<bool>[]>(parts);
  for (uint32_t i = 0; i < parts; ++i) p->serving[i] = false;
  out->reset(new replicated_cluster(std::move(p)));
  return status::ok();
}

std::shared_ptr<log_replicator> replicated_cluster::replicator() const { return impl_->replicator; }

status replicated_cluster::start(event_log& log, const std::string& host, uint16_t port, const std::string& version,
                                 replicated_hooks hooks) {
  impl* p = impl_.get();
  const cluster_replication& r = p->options.replication;
  if (hooks.agent) {
    auto on_agent = hooks.agent;
    SKEIN_TRY(p->js->kv_watch(
        agents_bucket, ">",
        [on_agent](const replication::kv_entry& e) {
          if (!e.deleted) on_agent(e.value);
        },
        &p->agents_watch));
  }
  // Drain marks: "drain.<node>" keys of the config bucket.
  SKEIN_TRY(p->js->kv_watch(
      config_bucket, "drain.>",
      [p](const replication::kv_entry& e) {
        std::string node = e.key.substr(6);
        {
          std::lock_guard lock{p->drain_mu};
          if (e.deleted) p->drained.erase(node);
          else p->drained.insert(node);
        }
        if (auto* m = p->running.load()) m->poke();
      },
      &p->drain_watch));
  replication::registry_options ro;
  ro.bucket = members_bucket;
  ro.replicas = r.log_replicas;
  ro.node_id = p->options.node_id;
  ro.value = member_value(host, port, version);
  ro.member_ttl = std::chrono::milliseconds(r.member_ttl_ms);
  auto on_members = [p, hooks](const std::vector<replication::member>& alive) {
    std::vector<cluster_member> members;
    for (const auto& m : alive) {
      cluster_member c;
      if (parse_member(m, &c)) members.push_back(std::move(c));
    }
    if (hooks.members) hooks.members(std::move(members));
    if (auto* m = p->running.load()) m->poke();
  };
  SKEIN_TRY(replication::member_registry::start(*p->js, ro, on_members, &p->registry));
  if (hooks.members) on_members(p->registry->alive());
  replication::partition_options po;
  po.node_id = p->options.node_id;
  po.partitions = p->partitions;
  po.replicas = r.replicas;
  po.stream = stream_name;
  po.lease_bucket = leases_bucket;
  po.bucket_replicas = r.log_replicas;
  po.lease_ttl = std::chrono::milliseconds(r.lease_ttl_ms);
  po.catch_up_limit = std::chrono::milliseconds(std::max<uint64_t>(p->options.request_timeout_ms, 10000));
  replication::partition_hooks ph;
  ph.on_writer = hooks.on_writer;
  ph.draining = [p](const replication::member& m) {
    std::lock_guard lock{p->drain_mu};
    return p->drained.count(m.id) > 0;
  };
  // Served only once recovered (led), and no longer before the actors go (lost).
  ph.led = [p, recover = hooks.recover, led = hooks.led](uint32_t part) {
    if (recover) recover(part);
    p->serving[part] = true;
    if (led) led(part);
  };
  ph.lost = [p, lost = hooks.lost](uint32_t part) {
    p->serving[part] = false;
    if (lost) lost(part);
  };
  SKEIN_TRY(replication::partition_manager::start(*p->js, log, *p->replicator, p->sealer.get(), *p->registry, po,
                                                  std::move(ph), &p->manager));
  p->running = p->manager.get();
  return status::ok();
}

void replicated_cluster::stop(bool leave) {
  std::lock_guard lock{impl_->stop_mu};
  if (impl_->stopped) return;
  impl_->stopped = true;
  impl_->agents_watch.reset();
  impl_->drain_watch.reset();
  impl_->running = nullptr;
  if (impl_->manager) impl_->manager->stop(leave);
  if (impl_->registry) impl_->registry->stop(leave);
}

uint32_t replicated_cluster::partition_of(std::string_view key) const {
  return replication::partition_of(log_namespace, key, impl_->partitions);
}

uint32_t replicated_cluster::partition_of_thread(std::string_view thread_id) const {
  return partition_of(cluster_key(thread_id));
}

std::string replicated_cluster::owner(std::string_view key) const { return impl_->owner_of(partition_of(key)); }

std::string replicated_cluster::impl::owner_of(uint32_t p) const {
  if (serving[p]) return options.node_id;
  auto* m = running.load();
  if (m == nullptr) return {};
  std::string holder = m->holder(p);
  // This node's lease without its service: being taken or given up.
  return holder == options.node_id ? std::string{} : holder;
}

bool replicated_cluster::serves_thread(std::string_view thread_id) const {
  return impl_->serving[partition_of_thread(thread_id)];
}

status replicated_cluster::check_led() const {
  for (uint32_t p = 0; p < impl_->partitions; ++p)
    if (impl_->owner_of(p).empty())
      return status::unavailable("partition " + std::to_string(p) + " has no leader now (a failover under way): retry shortly");
  return status::ok();
}

replicated_state replicated_cluster::state() const {
  replicated_state s;
  s.partitions = impl_->partitions;
  s.replicas = impl_->options.replication.replicas;
  if (auto* m = impl_->running.load()) {
    s.views = m->view();
    s.counters = m->counters();
    s.last_error = m->last_error().message();
  }
  return s;
}

status replicated_cluster::put_agent(const std::string& id, const std::string& json, std::string* stored) {
  stored->clear();
  status created = impl_->js->kv_create(agents_bucket, agent_key(id), json, nullptr);
  if (created || created.code() != errc::conflict) return created;
  replication::kv_entry e;
  SKEIN_TRY(impl_->js->kv_get(agents_bucket, agent_key(id), &e));
  *stored = std::move(e.value);
  return status::ok();
}

status replicated_cluster::get_agent(const std::string& id, std::string* json) {
  json->clear();
  replication::kv_entry e;
  status s = impl_->js->kv_get(agents_bucket, agent_key(id), &e);
  if (s.code() == errc::not_found) return status::ok();
  SKEIN_TRY(s);
  if (!e.deleted) *json = std::move(e.value);
  return status::ok();
}

status replicated_cluster::set_drain(const std::string& node, bool on) {
  if (on) {
    bool alive = false;
    if (impl_->registry)
      for (const auto& m : impl_->registry->alive()) alive = alive || m.id == node;
    if (!alive) return status::not_found("node " + quote_input(node, 80) + " is not a live member").with_field("node");
    return impl_->js->kv_put(config_bucket, "drain." + node, "1", nullptr);
  }
  status s = impl_->js->kv_delete(config_bucket, "drain." + node);
  return s.code() == errc::not_found ? status::ok() : s;
}

std::vector<std::string> replicated_cluster::draining() const {
  std::lock_guard lock{impl_->drain_mu};
  return {impl_->drained.begin(), impl_->drained.end()};
}

}  // namespace skein
