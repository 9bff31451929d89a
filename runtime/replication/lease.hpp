// lease: a partition's leadership, held by compare-and-set on one key of the
// leases bucket ("p.<partition>"; value "<epoch> <holder>").
//
// A node takes a free lease by creating its key (epoch 1), and a lapsed one by
// updating it at the revision it saw, with the next epoch. A lease is lapsed
// when this keeper has seen its revision unchanged for lease_ttl on its own
// monotonic clock (its holder renews every lease_ttl / 3, each renewal a new
// revision): no clocks are compared between nodes. The holder renews by
// updating at its own last revision; `conflict` then means it was deposed.
//
// A lease is not what keeps two writers apart: that is the fenced publish
// (jetstream.hpp), which refuses a deposed leader's next write even while it
// still believes it holds the lease. The lease decides who should write; the
// fence makes sure only one can.
//
// Not thread-safe: one owner (the node's partition actor) drives it.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "runtime/replication/jetstream.hpp"

namespace skein::replication {

struct lease {
  std::string holder;  // "" when free
  uint64_t epoch = 0;
  uint64_t revision = 0;  // of its key
};

class lease_keeper {
 public:
  using clock = std::chrono::steady_clock;

  lease_keeper(jetstream& js, std::string bucket, std::string node, std::chrono::milliseconds ttl)
      : js_(js), bucket_(std::move(bucket)), node_(std::move(node)), ttl_(ttl) {}

  static std::string key(uint32_t partition) { return "p." + std::to_string(partition); }

  // Reads the lease and takes it when it is free or has lapsed (as this keeper
  // saw it at `now`). *out: the lease as it stands after the try; held() says
  // whether it is this node's. `conflict` is not an error here: another node
  // took it first (then *out is the current lease as read next time). A
  // lease naming this node that this keeper never took (the node restarted)
  // is taken again at the next epoch; one it took is confirmed by a write
  // (a read may be a lagging replica's), else reported as not held.
  status try_take(uint32_t partition, clock::time_point now, lease* out);

  // Renews this node's lease: `conflict` when it was taken meanwhile (deposed).
  status renew(uint32_t partition, lease* held);

  // Gives the lease up (a drain): the key is set free at the holder's revision.
  status release(uint32_t partition, const lease& held);

  bool holds(const lease& l) const { return l.holder == node_; }

  static std::string encode(const lease& l) { return std::to_string(l.epoch) + " " + l.holder; }
  static bool decode(const std::string& value, lease* out);

 private:
  struct sighting {
    uint64_t revision = 0;
    clock::time_point since;
  };
  jetstream& js_;
  std::string bucket_, node_;
  std::chrono::milliseconds ttl_;
  std::map<uint32_t, sighting> seen_;  // each partition's lease revision as this keeper last saw it change
  std::set<uint32_t> taken_;           // partitions whose lease this keeper took (not a former incarnation)
};

}  // namespace skein::replication
