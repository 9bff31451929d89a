// partition_writer.hpp: fenced, idempotent appends to one partition's subject.
#include "runtime/replication/partition_writer.hpp"

#include <thread>

namespace skein::replication {

status partition_writer::read_last(stream_message* m) const {
  status s = js_.last_on_subject(stream_, subject_, m);
  if (s.code() != errc::not_found) return s;
  *m = {};  // nothing on the subject yet: seq 0
  return status::ok();
}

status partition_writer::open() {
  stream_message m;
  SKEIN_TRY(read_last(&m));
  last_ = m.seq;
  opened_ = true;
  uncertain_ = false;
  return status::ok();
}

// After an append that may or may not have landed: the subject's last message
// is ours (take its sequence), or what we knew (ours did not land), or another
// writer's (deposed).
status partition_writer::resync() {
  stream_message m;
  SKEIN_TRY(read_last(&m));
  if (m.seq != last_) {
    if (m.msg_id.compare(0, writer_.size() + 1, writer_ + ".") != 0) {
      deposed_ = true;
      return status::conflict("partition " + subject_ + ": written by another leader (" + m.msg_id + ") at seq " +
                              std::to_string(m.seq));
    }
    last_ = m.seq;
  }
  uncertain_ = false;
  return status::ok();
}

status partition_writer::append(std::string_view batch, uint64_t* seq) {
  if (deposed_) return status::conflict("partition " + subject_ + ": this writer was deposed");
  if (!opened_) SKEIN_TRY(open());
  if (uncertain_) SKEIN_TRY(resync());
  const std::string id = writer_ + "." + std::to_string(++next_id_);
  const auto deadline = std::chrono::steady_clock::now() + retry_for_;
  for (bool resent = false;; resent = true) {
    uint64_t stored = 0;
    bool duplicate = false;
    status s = js_.publish(subject_, batch, last_, id, &stored, &duplicate);
    if (s && stored <= last_) {
      // Answered as an older message: its id was used before (ids must never
      // repeat, partition_writer.hpp). Nothing new is stored; refuse, for good.
      deposed_ = true;
      return status::conflict("partition " + subject_ + ": message id " + id + " answered as stored at seq " +
                              std::to_string(stored) + (duplicate ? " (a duplicate)" : "") + ", not after " +
                              std::to_string(last_));
    }
    if (s) {
      last_ = stored;
      if (seq != nullptr) *seq = stored;
      return status::ok();
    }
    if (s.code() == errc::conflict && resent) {
      // A resend may meet its own first copy at the fence: a stream leader
      // elected meanwhile checks the expected sequence before it finds the id
      // (seen with nats-server 2.9.10). The subject's last message says which.
      stream_message m;
      status r = read_last(&m);
      if (r && m.msg_id == id) {
        last_ = m.seq;
        if (seq != nullptr) *seq = m.seq;
        return status::ok();
      }
      if (!r && r.code() == errc::unavailable) {
        uncertain_ = true;
        return r;
      }
    }
    if (s.code() == errc::conflict) {
      deposed_ = true;
      return s;
    }
    if (s.code() != errc::unavailable || std::chrono::steady_clock::now() >= deadline) {
      uncertain_ = true;
      return s;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // a leader election under way
  }
}

}  // namespace skein::replication
