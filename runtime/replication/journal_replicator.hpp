// journal_replicator: a node's event log's leader side (log_replicator) over
// JetStream. Each write of the log hands it the write's rows split by
// partition; each part is encoded (replicated_batch.hpp), sealed with the
// namespace's key (sealed_message.hpp) for its partition's subject, and
// appended through the partition's writer (partition_writer.hpp): fenced at
// the subject's last sequence and stored once. The log writes the rows only
// once every part is stored.
//
// The node says which partitions it leads: lead() opens a partition's writer
// at the subject's end once the node holds its lease and applied the subject
// up to there (catch_up()); step_down() drops it. A write of a partition this
// node does not lead is refused (conflict) and nothing is published; a
// writer's append refused at the fence (another node wrote: this one was
// deposed) drops the writer too, so every later write there is refused until
// the node leads it again.
//
// Thread-safe: the log's writer replicates while the node's placement leads
// and steps down.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "persistence/event_log.hpp"
#include "persistence/sealed_message.hpp"
#include "runtime/replication/jetstream.hpp"
#include "runtime/replication/partition_writer.hpp"

namespace skein::replication {

struct journal_replication {
  std::string stream = "skein";    // the replicated log's stream
  std::string subject_prefix = "skein.log";  // a partition's subject: <prefix>.<namespace>.<partition>
  std::string ns = "default";      // the log's namespace (its partitions' hash and subjects)
  uint32_t partitions = 64;
  std::string node_id;             // names the node's writers: <node>.p<partition>.<epoch>.<n>
  std::chrono::milliseconds retry_for{5000};  // an append's resends before it is unavailable
};

class journal_replicator : public log_replicator {
 public:
  // `sealer` may be null (a namespace without encryption); borrowed, as `js`.
  journal_replicator(jetstream& js, journal_replication options, const message_sealer* sealer)
      : js_(js), options_(std::move(options)), sealer_(sealer) {}

  std::string subject_of(uint32_t partition) const;

  // Opens the partition's writer for lease epoch `epoch` at the subject's end.
  status lead(uint32_t partition, uint64_t epoch);
  void step_down(uint32_t partition);
  bool leads(uint32_t partition) const;

  // Appends an empty message to the partition (a leader's barrier): stored
  // at *seq only if the subject ended where this node's writer believes, so
  // once this node applied the subject through *seq its disk holds all of
  // it. A read of the subject's end may be a stale replica's; a fenced
  // append is not. conflict (writer dropped) when another wrote meanwhile.
  status barrier(uint32_t partition, uint64_t* seq);

  uint32_t partition_of(std::string_view route) const override;
  status replicate(std::vector<replicated_part>& parts) override;

 private:
  jetstream& js_;
  const journal_replication options_;
  const message_sealer* sealer_;
  std::atomic<uint64_t> generation_{0};  // writers opened
  mutable std::mutex mu_;  // guards writers_
  std::map<uint32_t, std::shared_ptr<partition_writer>> writers_;
};

// Applies the partition's subject to `log` from its applied sequence up to
// `through` (0: the subject's last message, as read now), as a follower does (partition_follower.hpp):
// what a node does before it leads the partition, and after an append whose
// outcome it does not know. unavailable if that end is not reached within
// `limit`; the error of a message that does not apply.
status catch_up(jetstream& js, event_log& log, const message_sealer* sealer, const std::string& stream,
                const std::string& subject, uint32_t partition, std::chrono::milliseconds limit,
                uint64_t through = 0);

}  // namespace skein::replication
