// jetstream: skein's connection to NATS JetStream, the replicated log and the
// coordination store of a cluster (docs/cluster.md). It holds the one place
// that speaks the NATS C client (jetstream.cpp); nothing else includes nats.h.
//
// What it gives, in skein's vocabulary (status codes, no NATS types):
// - streams: ensure_stream() creates one or checks that the one there has the
//   replicas and subjects asked for;
// - fenced publish: publish() stores a message on a subject only when the
//   subject's last stream sequence is the one the writer names (0: the subject
//   holds nothing yet). A stale expectation is `conflict` and stores nothing:
//   this is how a deposed partition leader learns that it was deposed;
// - reads: last_on_subject(), and follow(), which hands every message of the
//   subjects matching a filter from a stream sequence on, in order, to a
//   callback (an ordered consumer: a gap or a reconnect restarts it after the
//   last sequence handed over, so a callback never sees a sequence twice);
// - key-value buckets with compare-and-set: kv_create (only if absent),
//   kv_update (only at the revision named), kv_get, kv_delete, kv_keys, and
//   kv_watch, which hands every change to a callback.
//
// Errors: `unavailable` when no answer came within the timeout (no quorum of
// the stream's servers, or no server at all), `conflict` for a refused
// expectation or an existing key, `not_found` for a missing stream, message or
// key, `invalid_input` for a name NATS refuses, `io_error` for the rest, each
// with NATS's own words. Every call waits at most `request_timeout`.
//
// Thread safety: every method may be called from any thread at once. follow()
// and kv_watch() callbacks run on the client's own threads, one at a time per
// follower or watcher; they must not block for long. Destroying a follower or
// watcher waits for a callback under way and runs none after.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/model/status.hpp"

namespace skein::replication {

struct nats_options {
  std::vector<std::string> urls;  // nats://host:port, one or more servers of the cluster
  std::string name;               // the connection's name in the servers' monitoring (the node id)
  std::chrono::milliseconds connect_timeout{2000};
  std::chrono::milliseconds request_timeout{2000};  // each JetStream call
  // TLS and credentials, when the servers ask for them.
  std::string ca_file;           // trusted CAs: connect with TLS (the server's name or IP checked)
  std::string user, password;    // the servers' authorization block
  std::string credentials_file;  // a NATS .creds file (user JWT and seed), for operator-mode servers
};

struct stream_config {
  std::string name;
  std::vector<std::string> subjects;
  int replicas = 1;
  bool memory = false;          // memory storage instead of files (tests of the client itself)
  int64_t max_msgs_per_subject = -1;  // -1: no limit
};

struct stream_message {
  std::string subject;
  uint64_t seq = 0;  // the stream sequence
  std::string data;
  std::string msg_id;  // the id it was published under ("" for none)
};

// Where a stream's copies stand: its leader, and its other replicas, each
// current or lagging (a bucket is the stream "KV_<bucket>").
struct stream_health {
  std::string leader;  // "" while it has none (an election under way, or no quorum)
  int replicas = 0;    // besides the leader
  int current = 0;     // of them, caught up and online
  uint64_t messages = 0, last_seq = 0;
};

struct kv_entry {
  std::string key;
  std::string value;
  uint64_t revision = 0;
  bool deleted = false;  // a delete or purge marker (watchers see these)
};

struct bucket_config {
  std::string name;
  int replicas = 1;
  int history = 1;
  std::chrono::milliseconds ttl{0};  // 0: entries never expire
  bool memory = false;
};

// A live subscription (follow) or watch (kv_watch): destroying it stops it.
class subscription {
 public:
  virtual ~subscription() = default;
};

class jetstream {
 public:
  // Connects to the servers in `opts.urls` (any one of them answering is
  // enough); `unavailable` when none answers within connect_timeout. After
  // that the client reconnects by itself for as long as it lives.
  static status connect(const nats_options& opts, std::unique_ptr<jetstream>* out);
  ~jetstream();
  jetstream(const jetstream&) = delete;
  jetstream& operator=(const jetstream&) = delete;

  status ensure_stream(const stream_config& cfg);
  status delete_stream(const std::string& name);
  status health(const std::string& stream, stream_health* out);

  // Publishes `data` to `subject` if the subject's last sequence in its stream
  // is `expected_last` (0: no message on it yet); *seq gets the new message's
  // stream sequence. `conflict` (and nothing stored) when another message came
  // first. `unavailable` on a timeout: the message may or may not be stored,
  // and a writer must read the subject's last sequence before it goes on.
  status publish(const std::string& subject, std::string_view data, uint64_t expected_last, uint64_t* seq);
  // publish() under an id: a publish whose id the stream stored within its
  // duplicate window (2 minutes) stores nothing again and answers the first
  // one's sequence, *duplicate set. So a publish that timed out is sent
  // again under the same id and lands once. (A stream leader elected since
  // the first may check the expected sequence first and answer `conflict`:
  // partition_writer.hpp reads the subject's last id then.)
  status publish(const std::string& subject, std::string_view data, uint64_t expected_last, const std::string& msg_id,
                 uint64_t* seq, bool* duplicate);

  // The last message on `subject` in `stream`; `not_found` when it holds none.
  status last_on_subject(const std::string& stream, const std::string& subject, stream_message* out);

  // Hands each message of `stream` on subjects matching `filter` (a NATS
  // subject with wildcards) from stream sequence `from_seq` on, in order, to
  // `on_message`; *out keeps it going.
  status follow(const std::string& stream, const std::string& filter, uint64_t from_seq,
                std::function<void(const stream_message&)> on_message, std::unique_ptr<subscription>* out);

  status ensure_bucket(const bucket_config& cfg);
  status kv_get(const std::string& bucket, const std::string& key, kv_entry* out);
  // Creates `key` (or re-creates a deleted one); `conflict` if it holds a value.
  status kv_create(const std::string& bucket, const std::string& key, std::string_view value, uint64_t* revision);
  // Sets `key` if its revision is still `last`; `conflict` otherwise.
  status kv_update(const std::string& bucket, const std::string& key, std::string_view value, uint64_t last,
                   uint64_t* revision);
  status kv_put(const std::string& bucket, const std::string& key, std::string_view value, uint64_t* revision);
  status kv_delete(const std::string& bucket, const std::string& key);
  status kv_keys(const std::string& bucket, std::vector<std::string>* out);
  // Hands every change of the keys matching `keys` (">" for all) to `on_entry`:
  // first the current value of each, then each change as it comes.
  status kv_watch(const std::string& bucket, const std::string& keys, std::function<void(const kv_entry&)> on_entry,
                  std::unique_ptr<subscription>* out);

  struct impl;

 private:
  explicit jetstream(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

}  // namespace skein::replication
