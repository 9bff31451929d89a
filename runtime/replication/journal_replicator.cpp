// journal_replicator.hpp: a write's parts encoded, sealed and appended by the
// partitions' writers; the catch-up of a partition before it is led.
#include "runtime/replication/journal_replicator.hpp"

#include "persistence/replicated_batch.hpp"
#include "runtime/model/cluster.hpp"
#include "runtime/replication/partition_follower.hpp"
#include "runtime/replication/placement.hpp"

namespace skein::replication {

std::string journal_replicator::subject_of(uint32_t partition) const {
  return options_.subject_prefix + "." + options_.ns + "." + std::to_string(partition);
}

uint32_t journal_replicator::partition_of(std::string_view route) const {
  return replication::partition_of(options_.ns, cluster_key(route), options_.partitions);
}

status journal_replicator::lead(uint32_t partition, uint64_t epoch) {
  if (partition >= options_.partitions)
    return status::invalid_input("partition " + std::to_string(partition) + " of " +
                                 std::to_string(options_.partitions));
  // The writer's id is unique in the stream (its message ids are, and the
  // stream's duplicate window spans every subject, so a repeated id would be
  // answered as stored): node, partition, epoch, and the how-manieth writer
  // of this replicator it is (a node may lead again at the same epoch; a
  // restarted one takes a new epoch, lease.hpp).
  std::string writer = options_.node_id + ".p" + std::to_string(partition) + "." + std::to_string(epoch) + "." +
                       std::to_string(generation_.fetch_add(1) + 1);
  auto w = std::make_shared<partition_writer>(js_, options_.stream, subject_of(partition), std::move(writer),
                                              options_.retry_for);
  SKEIN_TRY(w->open());
  std::lock_guard<std::mutex> lock{mu_};
  writers_[partition] = std::move(w);
  return status::ok();
}

void journal_replicator::step_down(uint32_t partition) {
  std::lock_guard<std::mutex> lock{mu_};
  writers_.erase(partition);
}

bool journal_replicator::leads(uint32_t partition) const {
  std::lock_guard<std::mutex> lock{mu_};
  return writers_.count(partition) != 0;
}

status journal_replicator::barrier(uint32_t partition, uint64_t* seq) {
  std::vector<replicated_part> parts{{partition, {}, 0}};
  SKEIN_TRY(replicate(parts));
  *seq = parts.front().seq;
  return status::ok();
}

status journal_replicator::replicate(std::vector<replicated_part>& parts) {
  for (auto& part : parts) {
    std::shared_ptr<partition_writer> w;
    {
      std::lock_guard<std::mutex> lock{mu_};
      if (auto it = writers_.find(part.partition); it != writers_.end()) w = it->second;
    }
    const std::string where = "partition " + std::to_string(part.partition) + ": ";
    if (!w) return status::conflict(where + "node " + options_.node_id + " does not lead it");
    std::string plain, sealed;
    encode_replicated(part.rows, &plain);
    if (sealer_ != nullptr) SKEIN_TRY(sealer_->seal(subject_of(part.partition), plain, &sealed));
    status s = w->append(sealer_ != nullptr ? sealed : plain, &part.seq);
    if (s) continue;
    if (w->deposed()) step_down(part.partition);
    return status{s.code(), where + s.message()};
  }
  return status::ok();
}

status catch_up(jetstream& js, event_log& log, const message_sealer* sealer, const std::string& stream,
                const std::string& subject, uint32_t partition, std::chrono::milliseconds limit,
                uint64_t through) {
  stream_message last;
  last.seq = through;
  if (through == 0)
    if (status s = js.last_on_subject(stream, subject, &last); !s && s.code() != errc::not_found) return s;
  uint64_t done = 0;
  SKEIN_TRY(log.replicated_seq(partition, &done));
  if (last.seq <= done) return status::ok();
  std::unique_ptr<partition_follower> f;
  SKEIN_TRY(partition_follower::start(js, log, sealer, stream, subject, partition, &f));
  if (f->wait_applied(last.seq, limit)) return status::ok();
  if (f->stopped()) return f->error();
    return status::unavailable("partition " + std::to_string(partition) + " applied up to seq " +
                               std::to_string(f->applied()) + " of " + std::to_string(last.seq) + " within " +
                               std::to_string(limit.count()) + " ms");
}

}  // namespace skein::replication
