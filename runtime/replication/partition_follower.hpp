// partition_follower: a follower's side of one partition's subject in the
// replicated log. It follows the subject from the sequence after the one its
// log has applied (event_log::replicated_seq), and applies each message —
// opened with the namespace's key (sealed_message.hpp), decoded
// (replicated_batch.hpp) — with its sequence in one batch
// (event_log::apply_replicated). So a follower killed at any point resumes
// where its disk says, and applies every message exactly once.
//
// A message that does not open or decode stops this partition's follower at
// it (error() names it); nothing after it is applied, and no other partition
// is touched. A storage failure stops it the same way.
//
// Runs on the JetStream client's thread for the subscription; destroying the
// follower stops it and waits for a message under way.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "persistence/event_log.hpp"
#include "persistence/sealed_message.hpp"
#include "runtime/replication/jetstream.hpp"

namespace skein::replication {

class partition_follower {
 public:
  // `sealer` may be null: messages are then taken as published (a namespace
  // without encryption).
  static status start(jetstream& js, event_log& log, const message_sealer* sealer, const std::string& stream,
                      const std::string& subject, uint32_t partition, std::unique_ptr<partition_follower>* out);
  ~partition_follower();

  uint64_t applied() const { return applied_.load(std::memory_order_acquire); }
  bool stopped() const { return failed_.load(std::memory_order_acquire); }
  status error() const;
  // Waits until `seq` is applied or the follower stopped, at most `limit`:
  // whether `seq` is applied.
  bool wait_applied(uint64_t seq, std::chrono::milliseconds limit) const;

 private:
  partition_follower(event_log& log, const message_sealer* sealer, uint32_t partition)
      : log_(log), sealer_(sealer), partition_(partition) {}
  void on_message(const stream_message& m);
  void fail(status s);

  event_log& log_;
  const message_sealer* sealer_;
  uint32_t partition_;
  std::atomic<uint64_t> applied_{0};
  std::atomic<bool> failed_{false};
  mutable std::mutex mu_;  // guards error_; progress_ waits on it
  mutable std::condition_variable progress_;
  status error_;
  std::unique_ptr<subscription> sub_;
};

}  // namespace skein::replication
