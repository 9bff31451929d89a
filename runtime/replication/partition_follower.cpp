// partition_follower.hpp: follow from the applied sequence, open, decode, apply.
#include "runtime/replication/partition_follower.hpp"

#include "persistence/replicated_batch.hpp"

namespace skein::replication {

status partition_follower::start(jetstream& js, event_log& log, const message_sealer* sealer,
                                 const std::string& stream, const std::string& subject, uint32_t partition,
                                 std::unique_ptr<partition_follower>* out) {
  std::unique_ptr<partition_follower> f{new partition_follower(log, sealer, partition)};
  uint64_t done = 0;
  SKEIN_TRY(log.replicated_seq(partition, &done));
  f->applied_ = done;
  auto* raw = f.get();
  SKEIN_TRY(js.follow(stream, subject, done + 1, [raw](const stream_message& m) { raw->on_message(m); }, &f->sub_));
  *out = std::move(f);
  return status::ok();
}

partition_follower::~partition_follower() { sub_.reset(); }

status partition_follower::error() const {
  std::lock_guard<std::mutex> lock{mu_};
  return error_;
}

bool partition_follower::wait_applied(uint64_t seq, std::chrono::milliseconds limit) const {
  std::unique_lock<std::mutex> lock{mu_};
  progress_.wait_for(lock, limit, [&] { return applied() >= seq || stopped(); });
  return applied() >= seq;
}

void partition_follower::fail(status s) {
  {
    std::lock_guard<std::mutex> lock{mu_};
    if (failed_.load()) return;
    error_ = std::move(s);
    failed_.store(true, std::memory_order_release);
  }
  progress_.notify_all();
}

void partition_follower::on_message(const stream_message& m) {
  if (failed_.load(std::memory_order_acquire)) return;  // stopped at a bad message: nothing after it
  const std::string where = "partition " + std::to_string(partition_) + " seq " + std::to_string(m.seq) + ": ";
  std::string plain;
  const std::string* bytes = &m.data;
  if (sealer_ != nullptr) {
    if (status s = sealer_->open(m.subject, m.data, &plain); !s) return fail(status::corruption(where + s.message()));
    bytes = &plain;
  }
  std::vector<replicated_row> rows;
  if (status s = decode_replicated(*bytes, &rows); !s) return fail(status::corruption(where + s.message()));
  bool applied = false;
  if (status s = log_.apply_replicated(partition_, m.seq, rows, &applied); !s)
    return fail(status{s.code(), where + s.message()});
  {
    std::lock_guard<std::mutex> lock{mu_};  // a waiter checks and sleeps under it: no lost wakeup
    applied_.store(m.seq, std::memory_order_release);
  }
  progress_.notify_all();
}

}  // namespace skein::replication
