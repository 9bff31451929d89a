// partition_writer: a partition leader's side of its subject in the
// replicated log. Each append publishes one batch (a journal group's ticks of
// the partition), fenced at the last sequence this writer knows, under an id
// of its own ("<writer>.<n>"; the writer id names the node, the partition
// and its lease epoch: it must be unique in the stream, whose duplicate
// window spans all its subjects), so that:
// - a batch is acknowledged once JetStream stored it on a quorum: append()
//   returns ok with its sequence, never before;
// - another writer's message on the subject (this one was deposed) refuses the
//   append with `conflict` and stores nothing; the writer stays deposed;
// - a publish that timed out is sent again under the same id until
//   `retry_for` passes: the stream stores it once whatever happened to the
//   first (its duplicate window answers the first's sequence; a leader
//   elected meanwhile may refuse the resend at the fence instead, and the
//   subject's last message, under this id, shows it landed);
// - past `retry_for` the append is `unavailable` and its batch may still land;
//   the next append first reads the subject's last message and takes it as
//   its own (by its id) or as proof of being deposed.
//
// Not thread-safe: one owner (the partition's leader) appends in order.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/replication/jetstream.hpp"

namespace skein::replication {

class partition_writer {
 public:
  partition_writer(jetstream& js, std::string stream, std::string subject, std::string writer_id,
                   std::chrono::milliseconds retry_for = std::chrono::seconds(5))
      : js_(js), stream_(std::move(stream)), subject_(std::move(subject)), writer_(std::move(writer_id)),
        retry_for_(retry_for) {}

  // Reads where the subject stands: the leader calls it once it holds the
  // lease, after applying the subject up to there.
  status open();
  status append(std::string_view batch, uint64_t* seq);

  uint64_t last() const { return last_; }
  bool deposed() const { return deposed_; }

 private:
  status resync();
  // The subject's last message; seq 0 and no id when it holds none.
  status read_last(stream_message* m) const;

  jetstream& js_;
  std::string stream_, subject_, writer_;
  std::chrono::milliseconds retry_for_;
  uint64_t last_ = 0;
  uint64_t next_id_ = 0;
  bool opened_ = false, uncertain_ = false, deposed_ = false;
};

}  // namespace skein::replication
