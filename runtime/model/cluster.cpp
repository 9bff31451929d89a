#include "runtime/model/cluster.hpp"

#include <charconv>
#include <set>

#include "runtime/model/ids.hpp"
#include "runtime/model/stable_hash.hpp"

namespace skein {
namespace {

uint64_t node_seed(std::string_view node_id) { return stable_hash(node_id); }

uint64_t weight(uint64_t seed, uint64_t key_hash) { return mix64(seed ^ key_hash); }

bool valid_host_name(std::string_view h) {
  if (h.empty() || h.size() > 253) return false;
  for (char c : h)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.'))
      return false;
  return h.front() != '-' && h.front() != '.';
}

bool valid_ipv6(std::string_view h) {
  if (h.size() < 2 || h.size() > 45) return false;
  for (char c : h)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == ':' || c == '.'))
      return false;
  return h.find(':') != std::string_view::npos;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

status line_error(size_t line, const std::string& what) {
  return status::invalid_input("cluster file line " + std::to_string(line) + ": " + what).with_field("cluster");
}

// "host:port" or "[v6]:port".
status parse_address(std::string_view a, size_t line, cluster_member* m) {
  std::string_view host, port;
  if (!a.empty() && a.front() == '[') {
    size_t close = a.find(']');
    if (close == std::string_view::npos || close + 1 >= a.size() || a[close + 1] != ':')
      return line_error(line, "address '" + quote_input(a, 80) + "' is not [IPv6]:port");
    host = a.substr(1, close - 1);
    port = a.substr(close + 2);
    if (!valid_ipv6(host)) return line_error(line, "bad IPv6 address '" + quote_input(host, 80) + "'");
  } else {
    size_t colon = a.rfind(':');
    if (colon == std::string_view::npos)
      return line_error(line, "address '" + quote_input(a, 80) + "' has no :port");
    host = a.substr(0, colon);
    port = a.substr(colon + 1);
    if (!valid_host_name(host)) return line_error(line, "bad host '" + quote_input(host, 80) + "'");
  }
  unsigned p = 0;
  auto r = std::from_chars(port.data(), port.data() + port.size(), p);
  if (port.empty() || r.ec != std::errc{} || r.ptr != port.data() + port.size() || p == 0 || p > 65535)
    return line_error(line, "bad port '" + quote_input(port, 20) + "' (1..65535)");
  m->host = std::string(host);
  m->port = static_cast<uint16_t>(p);
  return status::ok();
}


bool loopback(std::string_view host) { return host == "127.0.0.1" || host == "::1" || host == "localhost"; }

// A replicated cluster's options (cluster_replication).
status check_replicated(const cluster_options& o) {
  const cluster_replication& r = o.replication;
  if (!o.members.empty())
    return status::invalid_input("cluster: a member list and NATS servers: give one (a static or a replicated cluster)")
        .with_field("cluster");
  if (o.node_id.size() > node_id_bytes_max)
    return status::invalid_input("node id: longer than " + std::to_string(node_id_bytes_max) + " bytes").with_field("node_id");
  if (status s = validate_id(o.node_id, "node id"); !s) return s.with_field("node_id");
  if (o.node_id.find(':') != std::string::npos)  // it is the node's key in the members bucket
    return status::invalid_input("node id: ':' is not allowed in a replicated cluster (characters: [A-Za-z0-9_.-])")
        .with_field("node_id");
  for (const auto& url : r.nats) {
    std::string_view u = url;
    bool known = u.starts_with("nats://") || u.starts_with("tls://");
    if (!known || u.size() > 512 || u.substr(u.find("://") + 3).empty())
      return status::invalid_input("cluster: '" + quote_input(url, 80) +
                                   "' is not a NATS server's URL (nats://host:port or tls://host:port)")
          .with_field("cluster");
  }
  if (r.partitions == 0 || r.partitions > 4096)
    return status::invalid_input("cluster_partitions: between 1 and 4096").with_field("cluster_partitions");
  if (r.replicas == 0 || r.replicas > cluster_members_max)
    return status::invalid_input("cluster_replicas: between 1 and " + std::to_string(cluster_members_max))
        .with_field("cluster_replicas");
  if (r.log_replicas != 1 && r.log_replicas != 3 && r.log_replicas != 5)
    return status::invalid_input("cluster_log_replicas: 1, 3 or 5 (copies among the NATS servers)")
        .with_field("cluster_log_replicas");
  if (r.lease_ttl_ms < 100 || r.member_ttl_ms < 100)
    return status::invalid_input("cluster_lease_ttl_ms and cluster_member_ttl_ms: at least 100").with_field("cluster_lease_ttl_ms");
  if (!o.tls.enabled() && !loopback(r.host))
    return status::invalid_input("cluster_host: " + quote_input(r.host, 80) +
                                 ": plain TCP node links are for loopback only; give cluster_cert, cluster_key "
                                 "and cluster_ca for TLS between machines")
        .with_field("cluster_host");
  if (o.request_timeout_ms == 0 || o.edge_workers == 0 || o.reconnect_min_ms == 0 ||
      o.reconnect_max_ms < o.reconnect_min_ms)
    return status::invalid_input("cluster: timeouts and edge_workers must be positive").with_field("cluster");
  return status::ok();
}

}  // namespace

status parse_cluster(std::string_view text, std::vector<cluster_member>* out) {
  out->clear();
  if (text.size() > cluster_file_bytes_max)
    return status::invalid_input("cluster file: larger than cluster_file_bytes_max (" +
                                 std::to_string(cluster_file_bytes_max) + " bytes)")
        .with_limit("cluster_file_bytes_max")
        .with_field("cluster");
  std::set<std::string> ids, addresses;
  size_t line_no = 0;
  while (!text.empty()) {
    ++line_no;
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    if (size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    line = trim(line);
    if (line.empty()) continue;
    size_t ws = line.find_first_of(" \t");
    if (ws == std::string_view::npos) return line_error(line_no, "expected 'node-id host:port'");
    std::string_view id = line.substr(0, ws);
    std::string_view address = trim(line.substr(ws));
    if (address.find_first_of(" \t") != std::string_view::npos)
      return line_error(line_no, "expected 'node-id host:port', found more fields");
    if (id.size() > node_id_bytes_max)
      return line_error(line_no, "node id longer than node_id_bytes_max (" + std::to_string(node_id_bytes_max) + ")");
    if (status s = validate_id(id, "node id"); !s) return line_error(line_no, s.message());
    cluster_member m;
    m.id = std::string(id);
    if (status s = parse_address(address, line_no, &m); !s) return s;
    if (!ids.insert(m.id).second) return line_error(line_no, "node id '" + m.id + "' is listed twice");
    std::string addr = m.host + "|" + std::to_string(m.port);
    if (!addresses.insert(addr).second)
      return line_error(line_no, "address of '" + m.id + "' is another member's too");
    if (out->size() == cluster_members_max)
      return status::invalid_input("cluster file: more than cluster_members_max (" +
                                   std::to_string(cluster_members_max) + ") members")
          .with_limit("cluster_members_max")
          .with_field("cluster");
    out->push_back(std::move(m));
  }
  if (out->empty()) return status::invalid_input("cluster file: no members").with_field("cluster");
  return status::ok();
}

uint64_t rendezvous_weight(std::string_view node_id, std::string_view key) {
  return weight(node_seed(node_id), fnv1a(key));
}

rendezvous::rendezvous(std::vector<std::string> node_ids) : ids_(std::move(node_ids)) {
  seeds_.reserve(ids_.size());
  for (const std::string& id : ids_) seeds_.push_back(node_seed(id));
}

size_t rendezvous::owner(std::string_view key) const {
  uint64_t key_hash = fnv1a(key);
  size_t best = 0;
  uint64_t best_weight = weight(seeds_[0], key_hash);
  for (size_t i = 1; i < ids_.size(); ++i) {
    uint64_t w = weight(seeds_[i], key_hash);
    if (w > best_weight || (w == best_weight && ids_[i] < ids_[best])) {
      best = i;
      best_weight = w;
    }
  }
  return best;
}

status check_cluster(const cluster_options& o) {
  const cluster_tls& t = o.tls;
  if (o.replication.enabled()) return check_replicated(o);
  if (o.members.empty()) return status::invalid_input("cluster: no members").with_field("cluster");
  if (t.enabled()) {
    const char* missing = t.certificate.empty() ? "cluster_cert" : t.key.empty() ? "cluster_key"
                          : t.ca.empty()        ? "cluster_ca"
                                                : nullptr;
    if (missing != nullptr)
      return status::invalid_input(std::string{missing} +
                                   ": missing (TLS between nodes needs cluster_cert, cluster_key and cluster_ca)")
          .with_field(missing);
  }
  bool found = false;
  for (const auto& m : o.members) {
    if (m.id == o.node_id) found = true;
    if (!t.enabled() && !loopback(m.host))
      return status::invalid_input("cluster: member " + m.id + " at " + m.host +
                                   ": plain TCP node links are for loopback only; give cluster_cert, cluster_key "
                                   "and cluster_ca for TLS between machines")
          .with_field("cluster");
  }
  if (!found)
    return status::invalid_input("node id: '" + quote_input(o.node_id, 80) + "' is not a member of the cluster")
        .with_field("node_id");
  if (o.request_timeout_ms == 0 || o.edge_workers == 0 || o.reconnect_min_ms == 0 ||
      o.reconnect_max_ms < o.reconnect_min_ms)
    return status::invalid_input("cluster: timeouts and edge_workers must be positive").with_field("cluster");
  return status::ok();
}

std::string_view cluster_key(std::string_view thread_id) {
  std::string_view root = thread_id.substr(0, thread_id.find('.'));
  std::string_view work = work_home_key_of(root);
  return work.empty() ? root : work;
}

std::string work_home_key(std::string_view agent_id) {
  static constexpr char hex[] = "0123456789abcdef";
  uint64_t h = mix64(fnv1a(agent_id));
  std::string out = "wk_";
  for (int shift = 60; shift >= 0; shift -= 4) out.push_back(hex[(h >> shift) & 0xf]);
  return out;
}

std::string work_item_id(std::string_view agent_id, int64_t now_ms) {
  return work_home_key(agent_id) + "_" + new_thread_id(now_ms);
}

std::string work_suggestion_id(std::string_view agent_id) {
  return work_home_key(agent_id) + "_sug_" + new_run_id().substr(4);
}

std::string_view work_home_key_of(std::string_view id) {
  if (id.size() <= work_home_key_bytes || !id.starts_with("wk_") || id[work_home_key_bytes] != '_') return {};
  for (char c : id.substr(3, work_home_key_bytes - 3))
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return {};
  return id.substr(0, work_home_key_bytes);
}

std::string format_cluster(const std::vector<cluster_member>& members) {
  std::string out;
  for (const auto& m : members) {
    bool v6 = m.host.find(':') != std::string::npos;
    out += m.id + " " + (v6 ? "[" + m.host + "]" : m.host) + ":" + std::to_string(m.port) + "\n";
  }
  return out;
}

}  // namespace skein
