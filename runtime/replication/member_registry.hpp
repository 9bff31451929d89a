// member_registry: a node's place in a replicated cluster's membership, kept
// in a JetStream key-value bucket instead of a file.
//
// start() registers the node (its key: the node id; its value: what peers need
// to reach it, e.g. its address and version) and renews the key every
// member_ttl / 3 by putting it again. It also watches the bucket and judges
// every member alive or gone on this node's monotonic clock (membership.hpp),
// calling on_change with the live members, by id, whenever that set changes:
// a node joining, leaving (stop(true) deletes its key: gone at once) or
// failing (its renewals stop: gone member_ttl after the last one seen here).
//
// The registry runs on a thread of its own; on_change is called from it or
// from the bucket's watcher, one call at a time, never under the registry's
// lock, and must not call back into the registry's stop().
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/replication/jetstream.hpp"
#include "runtime/replication/membership.hpp"

namespace skein::replication {

struct registry_options {
  std::string bucket = "skein_members";
  int replicas = 1;  // of the bucket, when this node creates it
  std::string node_id;
  std::string value;  // what this node registers
  std::chrono::milliseconds member_ttl{3000};
};

class member_registry {
 public:
  using on_change_fn = std::function<void(const std::vector<member>&)>;

  // Creates the bucket if it is missing, registers the node and starts
  // renewing; fails when the first registration does.
  static status start(jetstream& js, registry_options opts, on_change_fn on_change, std::unique_ptr<member_registry>* out);
  ~member_registry();  // stop(true)

  // Stops renewing; with `leave`, deletes this node's key so peers see it gone
  // at once (a planned stop). Without, peers judge it gone after member_ttl,
  // as if it had failed.
  void stop(bool leave);

  std::vector<member> alive() const;
  // Registers `value` instead, now and at every renewal after (a node that
  // starts draining says so). Fails when this put does; renewals keep it.
  status set_value(std::string value);

  struct impl;

 private:
  explicit member_registry(std::shared_ptr<impl> p) : impl_(std::move(p)) {}
  std::shared_ptr<impl> impl_;
};

}  // namespace skein::replication
