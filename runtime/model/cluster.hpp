// cluster: who the nodes of a skein cluster are, and which node owns a thread.
//
// Membership is a static file (`skein serve --cluster FILE`), the same on every
// node. Ownership is rendezvous (highest-random-weight) hashing of the thread id
// over the member ids: every node computes the same owner with no coordination,
// and adding or removing a member moves only the threads whose owner changes —
// onto the new member, or off the removed one (about 1/n of them).
//
// The hash is part of the on-disk contract: a thread lives in its owner's
// database, so a change to owner() would strand threads. cluster_test pins it.
//
// Membership file grammar (one member per line; '#' starts a comment):
//   file   := { line '\n' }
//   line   := [ ws ] [ member ] [ ws ] [ '#' any* ]
//   member := node-id ws host ':' port
//   node-id: validate_id's charset, at most node_id_bytes_max
//   host   := name | IPv4 | '[' IPv6 ']'       port := 1..65535
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/model/status.hpp"

namespace skein {

inline constexpr size_t cluster_members_max = 64;
inline constexpr size_t node_id_bytes_max = 64;
inline constexpr size_t cluster_file_bytes_max = 64 << 10;

struct cluster_member {
  std::string id;    // the node id (`skein serve --node-id`)
  std::string host;  // its cluster link's address, IPv6 without brackets
  uint16_t port = 0;
};

// A member list as the text of a cluster file (one "id host:port" line each):
// how a node stores and sends its membership. parse_cluster() reads it back.
std::string format_cluster(const std::vector<cluster_member>& members);

// The members of `text`, in file order. Errors name the line and what is wrong
// (an empty file, a bad id, host or port, a duplicate id or address, too many).
status parse_cluster(std::string_view text, std::vector<cluster_member>* out);

// The 64-bit weight of `node_id` for `key`: the owner is the member with the
// highest weight (ties, astronomically rare: the smaller id).
uint64_t rendezvous_weight(std::string_view node_id, std::string_view key);

// How a runtime joins a cluster (runtime_options::cluster). An empty node_id:
// the runtime is alone, nothing below applies.
// TLS between nodes (CAF's OpenSSL module): PEM files, all three or none. Both
// ends of a link present a certificate signed by the cluster CA and check the
// other's against it (no host names: the CA decides who is a member). Without
// TLS, node links are plain TCP and every member must be on loopback.
struct cluster_tls {
  std::string certificate;  // this node's certificate (chain), PEM
  std::string key;          // its private key, PEM, unencrypted
  std::string ca;           // the cluster CA's certificate(s), PEM
  bool enabled() const { return !certificate.empty() || !key.empty() || !ca.empty(); }
};

// A replicated cluster (docs/cluster.md, "Replication"): its members find each
// other through NATS JetStream, which also carries every partition's log.
struct cluster_replication {
  std::vector<std::string> nats;  // the servers: nats://host:port (tls://…); empty: a static cluster
  std::string nats_ca;            // trusted CA of the servers' certificates: connect with TLS
  std::string nats_user, nats_password, nats_creds;  // the servers' authorization, when they ask
  uint32_t partitions = 64;       // when this node creates the cluster; a running one keeps its own
  size_t replicas = 3;            // copies of each partition among the live nodes
  int log_replicas = 1;           // copies of the log and the buckets among the NATS servers (1, 3, 5)
  uint64_t lease_ttl_ms = 3000;   // a partition's leader renews its lease within this
  uint64_t member_ttl_ms = 3000;  // a node not renewed within this is gone
  std::string host = "127.0.0.1";  // where this node's link listens and peers reach it
  uint16_t port = 0;               // 0: any free port (registered as bound)
  bool enabled() const { return !nats.empty(); }
};

struct cluster_options {
  std::string node_id;                   // this node: one of the members
  std::vector<cluster_member> members;   // parse_cluster(); the same list on every node (a static cluster)
  cluster_replication replication;       // or a replicated one: members found through NATS
  // A forwarded call unanswered this long is `unavailable` naming the owner (a
  // send waits for its run instead, and fails when the owner's link drops).
  uint64_t request_timeout_ms = 5000;
  // After a failed connection to a member, calls for its threads fail at once
  // for this long, doubling per failure up to the max.
  uint64_t reconnect_min_ms = 100;
  uint64_t reconnect_max_ms = 5000;
  size_t edge_workers = 8;               // threads serving other nodes' calls here
  cluster_tls tls;
  // Test hook: a forwarded send of a thread for which this returns true is
  // taken by this node's edge and never run nor answered (as a request lost
  // with a link CAF closed). Empty: none.
  std::function<bool(const std::string& thread_id)> lose_send;
};

// Checks options: node_id names a member; TLS files all given or none (not
// read here: runtime/cluster/cluster_tls.hpp); without TLS every member's host is a
// loopback address.
status check_cluster(const cluster_options& options);

// The key a thread is owned by: its root id (the part before the first '.'),
// so that a delegation's children ("parent.N") live with their parent — or,
// for a root id led by an agent's work home key (a work item, work_item_id), that
// key, so that an agent's items live together, on their agent's work home.
std::string_view cluster_key(std::string_view thread_id);

// An agent's work home key, "wk_" + 16 hex digits of a stable hash of its id: the
// key its work (items, sessions, suggestions) is owned by in a cluster.
inline constexpr size_t work_home_key_bytes = 19;
std::string work_home_key(std::string_view agent_id);
// A new work item's thread id, led by its agent's work home key:
// "wk_<16 hex>_th_YYYYMMDD_<12 base32>".
std::string work_item_id(std::string_view agent_id, int64_t now_ms);
// A new suggestion's id, led by its agent's work home key: "wk_<16 hex>_sug_<16 base32>".
std::string work_suggestion_id(std::string_view agent_id);
// The work home key an id (an item's, a suggestion's) leads with; "" if none.
std::string_view work_home_key_of(std::string_view id);

// What GET /v1/cluster shows of one member.
struct cluster_member_state {
  std::string id;
  std::string address;         // host:port of its node link
  // member; or, while a membership change waits for `skein cluster rebalance`:
  // joining (in the new file only) or leaving (in the active members only)
  std::string role = "member";
  bool self = false;
  std::string state;           // self | up | down | unknown (never tried)
  std::string last_error;      // why it is down, "" otherwise
  uint64_t threads = 0;        // threads stored on it (when up or self)
  uint64_t active = 0;         // thread actors alive on it
  uint64_t forwarded = 0;      // calls this node forwarded to it
};

// One partition of a replicated cluster as a node sees it (GET /v1/cluster).
struct partition_state {
  uint32_t partition = 0;
  std::vector<std::string> replicas;  // by placement over the live members, the leader first
  std::string leader;                 // its lease's holder as last seen ("" when none)
  uint64_t epoch = 0;                 // the lease's epoch
  uint64_t applied = 0;               // the stream sequence this node's disk has applied
  bool leading = false, following = false;
};

// A node's view of its replicated cluster (runtime::replication).
struct replication_status {
  uint32_t partitions = 0;
  size_t replicas = 0;
  std::string link;  // this node's link, host:port
  std::vector<partition_state> views;
  std::vector<std::string> draining;  // nodes marked draining (runtime::drain)
  uint64_t rounds = 0, took = 0, deposed = 0, released = 0, restarts = 0, errors = 0;
  std::string last_error;
};

// A membership change (runtime::rebalance): each node hands the threads whose
// owner changes to their new owner, then every node commits the new members.
struct cluster_rebalance_state {
  // "" (none since the node opened) | moving | committed | failed
  std::string phase;
  uint64_t moved = 0;      // threads handed to their new owner
  uint64_t events = 0;     // their events
  uint64_t claims = 0;     // task and DM claims handed over
  uint64_t schedules = 0;  // schedules handed to their new owner (with their history)
  uint64_t remaining = 0;  // threads still to move (at the last count)
  std::string error;       // why it failed: rerun it once that is fixed
};

// Ownership over a fixed member list. Cheap to copy; safe to share read-only.
class rendezvous {
 public:
  rendezvous() = default;
  explicit rendezvous(std::vector<std::string> node_ids);

  // Index (into the ids given) of the owner of `key`; members must not be empty.
  size_t owner(std::string_view key) const;
  const std::string& owner_id(std::string_view key) const { return ids_[owner(key)]; }
  const std::vector<std::string>& ids() const { return ids_; }
  bool empty() const { return ids_.empty(); }

 private:
  std::vector<std::string> ids_;
  std::vector<uint64_t> seeds_;  // per member: the mixed hash of its id
};

}  // namespace skein
