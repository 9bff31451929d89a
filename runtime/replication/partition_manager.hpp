// partition_manager: a node's driver of its partitions in a replicated
// cluster. Every round (lease_ttl / 3, and at once when membership changes)
// it places each partition over the live members (placement.hpp) and acts on
// what that makes this node:
// - the first live replica (the leader by placement): it takes the lease when
//   free or lapsed (lease.hpp), applies the partition's subject up to its end
//   (catch_up), lets the log's writer resume the partition, opens the
//   partition's writer (journal_replicator::lead), applies anything another
//   writer appended meanwhile, and then calls `led`: from there the node
//   serves the partition. A write whose append timed out holds the
//   partition in the log (event_log::resume_partition): the next round
//   applies the subject up to its end, the write's message too if it landed,
//   and resumes it. It renews the lease each round; a renewal refused
//   (the lease was taken: this node was deposed), a writer fenced off, or no
//   renewal through for lease_ttl (cut off: another may hold it by now)
//   steps it down (`lost`) and it follows again;
// - another replica: it follows the subject (partition_follower.hpp), and
//   starts the follower again when it has stood still behind the subject's
//   end for a while (its consumer lost in a server's restart);
// - a leader that placement no longer names (a member joined, or this node is
//   draining: partition_hooks::draining) steps down and releases the lease,
//   so the new leader takes it without waiting for it to lapse.
// A partition whose leader failed is unavailable from then until its next
// leader serves: at most lease_ttl after the last renewal this node saw, plus
// a round and the catch-up.
//
// Runs on a thread of its own; `led` and `lost` are called from it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "persistence/event_log.hpp"
#include "persistence/sealed_message.hpp"
#include "runtime/replication/journal_replicator.hpp"
#include "runtime/replication/member_registry.hpp"

namespace skein::replication {

struct partition_options {
  std::string node_id;
  uint32_t partitions = 64;
  size_t replicas = 3;  // copies of each partition among the live members
  std::string stream = "skein";
  std::string lease_bucket = "skein_leases";
  int bucket_replicas = 1;  // copies of the leases bucket among the NATS servers, when this node creates it
  std::chrono::milliseconds lease_ttl{3000};
  std::chrono::milliseconds catch_up_limit{10000};
};

struct partition_hooks {
  // Runs `fn` on the log's writer (the journal's thread), after what is
  // queued there, and returns its result.
  std::function<status(std::function<status(event_log&)>)> on_writer;
  std::function<void(uint32_t)> led;   // this node now serves the partition
  std::function<void(uint32_t)> lost;  // it no longer does
  // Whether a live member is draining (by what it registered): placement
  // leaves it out, so it leads and follows nothing and its partitions move
  // to the others, its leases released. Null: none is.
  std::function<bool(const member&)> draining;
};

// One partition as this node sees it.
struct partition_view {
  uint32_t partition = 0;
  std::vector<std::string> replicas;  // by placement over the live members, the leader first
  std::string leader;                 // the lease's holder as last read ("" when free or unknown)
  uint64_t epoch = 0;
  uint64_t applied = 0;               // the stream sequence this node's disk has applied
  bool leading = false;               // this node serves it
  bool following = false;
};

struct partition_counters {
  uint64_t rounds = 0;
  uint64_t took = 0;       // leases taken (failovers and first takes)
  uint64_t deposed = 0;    // renewals refused or writers fenced off
  uint64_t released = 0;   // leases given up to a new placement
  uint64_t restarts = 0;   // followers started again, found stuck behind their subject
  uint64_t errors = 0;     // rounds' steps that failed (retried next round)
};

class partition_manager {
 public:
  // The registry, replicator, log and client are borrowed and must outlive it.
  static status start(jetstream& js, event_log& log, journal_replicator& rep, const message_sealer* sealer,
                      member_registry& members, partition_options options, partition_hooks hooks,
                      std::unique_ptr<partition_manager>* out);
  ~partition_manager();  // stop(false)

  // Stops the rounds and every follower; this node no longer leads anything.
  // With `release`, its leases are released (a planned stop: the next leaders
  // take over at once); without, they lapse as a failed node's would.
  void stop(bool release);
  // Wakes the rounds now (a membership change).
  void poke();

  std::vector<partition_view> view() const;
  // The partition's lease holder as last seen ("" when free or unknown).
  std::string holder(uint32_t partition) const;
  partition_counters counters() const;
  status last_error() const;

  struct impl;

 private:
  explicit partition_manager(std::shared_ptr<impl> p) : impl_(std::move(p)) {}
  std::shared_ptr<impl> impl_;
};

}  // namespace skein::replication
