// replicated_cluster: a runtime's place in a replicated cluster
// (cluster_options::replication): the NATS JetStream side a node needs, in one
// object the façade owns (runtime_impl.hpp). No CAF here.
//
// connect() reaches the NATS servers, makes sure of the replicated log's
// stream and the cluster's buckets, and reads the cluster's partition count
// (the first node to start stores its own; every later one takes the stored
// one, whatever it was given). Its replicator() is what the node's event log
// is opened with: from then every write of the log replicates before it is
// written (journal_replicator.hpp).
//
// start() registers the node (its link's address and version) in the members
// bucket, watches the agents bucket, and runs the partition manager over the
// log (partition_manager.hpp): the node leads and follows partitions by
// itself, calling the hooks as that changes.
//
// Routing reads it: owner(key) is the node that serves a thread (by its
// cluster_key): this node when it leads the key's partition, else the
// partition lease's holder as last seen, "" when none is known (a failover
// under way).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "persistence/encryption.hpp"
#include "persistence/event_log.hpp"
#include "runtime/model/cluster.hpp"
#include "runtime/replication/partition_manager.hpp"

namespace skein {

struct replicated_hooks {
  // Runs a write-side call on the log's writer (the journal's thread).
  std::function<status(std::function<status(event_log&)>)> on_writer;
  // This node leads the partition and is about to serve it: its recovery
  // (interrupted runs closed), before any call reaches it.
  std::function<void(uint32_t)> recover;
  std::function<void(uint32_t)> led;   // this node now serves the partition
  std::function<void(uint32_t)> lost;  // it no longer does
  // The live members changed (every one, this node included, with its link's address).
  std::function<void(std::vector<cluster_member>)> members;
  // An agent as stored in the cluster's agents bucket (JSON, agent.hpp).
  std::function<void(const std::string& json)> agent;
};

// What GET /v1/cluster shows of the replication.
struct replicated_state {
  uint32_t partitions = 0;
  size_t replicas = 0;
  std::vector<replication::partition_view> views;
  replication::partition_counters counters;
  std::string last_error;
};

class replicated_cluster {
 public:
  static status connect(const cluster_options& options, std::shared_ptr<const master_key> key,
                        std::unique_ptr<replicated_cluster>* out);
  ~replicated_cluster();  // stop(false)
  replicated_cluster(const replicated_cluster&) = delete;
  replicated_cluster& operator=(const replicated_cluster&) = delete;

  std::shared_ptr<log_replicator> replicator() const;

  // Registers this node (its link at host:port) and starts leading and
  // following. `log` is borrowed until stop().
  // `version`: the skein version it registers beside its address.
  status start(event_log& log, const std::string& host, uint16_t port, const std::string& version,
               replicated_hooks hooks);
  // Stops leading and following; with `leave` (a planned stop) the node's
  // leases are released and its membership deleted, so that the others take
  // over at once.
  void stop(bool leave);

  uint32_t partition_of(std::string_view key) const;
  // A thread's partition: its cluster_key's (a child's is its root's).
  uint32_t partition_of_thread(std::string_view thread_id) const;
  std::string owner(std::string_view key) const;
  // Whether this node serves the thread's partition now.
  bool serves_thread(std::string_view thread_id) const;
  replicated_state state() const;
  // ok when every partition has a leader as last seen; else unavailable naming
  // the first without one (a gathered answer is whole or refused).
  status check_led() const;

  // Marks a node draining (on) or not (off) in the cluster's bucket: placement
  // leaves a draining node out, so its partitions' leases move to the others
  // (released at once) and it follows nothing; every node sees the mark.
  // not_found when `node` is not a live member and `on`.
  status set_drain(const std::string& node, bool on);
  std::vector<std::string> draining() const;

  // Stores an agent (its JSON) in the agents bucket unless one with its id is
  // there: then *stored gets that one's JSON (compare before you trust it).
  status put_agent(const std::string& id, const std::string& json, std::string* stored);
  // The agent's JSON in the bucket; "" when there is none.
  status get_agent(const std::string& id, std::string* json);

  struct impl;

 private:
  explicit replicated_cluster(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

}  // namespace skein
