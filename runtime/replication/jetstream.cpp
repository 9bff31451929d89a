// jetstream.hpp over the NATS C client: connection options, the mapping of
// NATS's errors onto skein's status codes, streams, fenced publishes, ordered
// followers and key-value buckets (a watcher runs on a thread of its own).
#include "runtime/replication/jetstream.hpp"

#include <nats/nats.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

namespace skein::replication {
namespace {

// NATS's words for the last error on this thread, or its status text.
std::string nats_words(natsStatus s) {
  const char* last = nats_GetLastError(nullptr);
  if (last != nullptr && *last != '\0') return last;
  return natsStatus_GetText(s);
}

status to_status(natsStatus s, int jerr, const std::string& what) {
  if (s == NATS_OK) return status::ok();
  std::string msg = what + ": " + nats_words(s);
  if (jerr != 0) msg += " (JetStream error " + std::to_string(jerr) + ")";
  switch (jerr) {
    case JSStreamWrongLastSequenceErr: return status::conflict(msg);
    case JSNoMessageFoundErr:
    case JSStreamNotFoundErr:
    case JSConsumerNotFoundErr: return status::not_found(msg);
    // The cluster is electing a leader or lacks a quorum: try again later.
    case JSClusterNotAvailErr:
    case JSClusterNotLeaderErr:
    case JSClusterNoPeersErr:
    case JSStreamOfflineErr:
    case JSConsumerOfflineErr: return status::unavailable(msg);
    default: break;
  }
  // The key-value calls give no JetStream code, only its text (10008: the
  // meta leader being elected).
  if (jerr == 0 && msg.find("temporarily unavailable") != std::string::npos) return status::unavailable(msg);
  switch (s) {
    case NATS_TIMEOUT:
    case NATS_NO_RESPONDERS:
    case NATS_NO_SERVER:
    case NATS_CONNECTION_CLOSED:
    case NATS_CONNECTION_DISCONNECTED:
    case NATS_STALE_CONNECTION: return status::unavailable(msg);
    case NATS_NOT_FOUND: return status::not_found(msg);
    case NATS_INVALID_ARG:
    case NATS_INVALID_SUBJECT: return status::invalid_input(msg);
    default: return status::io_error(msg);
  }
}

// A compare-and-set on a key that lost: the client words an existing key (a
// create is an update at revision 0) or a changed revision as a wrong last
// sequence, in its text only.
status cas_status(natsStatus s, const std::string& what) {
  status st = to_status(s, 0, what);
  if (!st && st.message().find("wrong last sequence") != std::string::npos) return status::conflict(st.message());
  return st;
}

int64_t millis(std::chrono::milliseconds d) { return static_cast<int64_t>(d.count()); }

// A stored message's subject, data and publish id (its sequence is read by the caller).
void take(natsMsg* msg, stream_message* out) {
  out->subject = natsMsg_GetSubject(msg);
  out->data.assign(natsMsg_GetData(msg), static_cast<size_t>(natsMsg_GetDataLength(msg)));
  const char* id = nullptr;
  out->msg_id = natsMsgHeader_Get(msg, "Nats-Msg-Id", &id) == NATS_OK && id != nullptr ? id : "";
}

// Waits, when destroyed, for the subscription's last callback: the client
// calls on_complete once nothing more will run.
class follower : public subscription {
 public:
  std::function<void(const stream_message&)> on_message;
  natsSubscription* sub = nullptr;

  ~follower() override {
    if (sub == nullptr) return;
    natsSubscription_Unsubscribe(sub);
    {
      std::unique_lock<std::mutex> lock{mu_};
      done_cv_.wait(lock, [this] { return done_; });
    }
    natsSubscription_Destroy(sub);
  }

  static void on_msg(natsConnection*, natsSubscription*, natsMsg* msg, void* closure) {
    auto* self = static_cast<follower*>(closure);
    stream_message m;
    jsMsgMetaData* meta = nullptr;
    if (natsMsg_GetMetaData(&meta, msg) == NATS_OK) {
      m.seq = meta->Sequence.Stream;
      jsMsgMetaData_Destroy(meta);
    }
    take(msg, &m);
    natsMsg_Destroy(msg);
    if (m.seq != 0) self->on_message(m);
  }

  static void on_complete(void* closure) {
    auto* self = static_cast<follower*>(closure);
    std::lock_guard<std::mutex> lock{self->mu_};
    self->done_ = true;
    self->done_cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable done_cv_;
  bool done_ = false;
};

// A key-value watcher: a thread of its own takes the watcher's entries.
class watcher : public subscription {
 public:
  watcher(kvWatcher* w, std::function<void(const kv_entry&)> fn) : w_(w), on_entry_(std::move(fn)) {
    thread_ = std::thread([this] { run(); });
  }
  ~watcher() override {
    stop_ = true;
    kvWatcher_Stop(w_);
    thread_.join();
    kvWatcher_Destroy(w_);
  }

 private:
  void run() {
    while (!stop_.load()) {
      kvEntry* e = nullptr;
      natsStatus s = kvWatcher_Next(&e, w_, 250);
      if (s == NATS_TIMEOUT) continue;
      if (s == NATS_INVALID_SUBSCRIPTION || s == NATS_CONNECTION_CLOSED || stop_.load()) break;  // stopped
      if (s != NATS_OK) {
        // A hiccup the client recovers from (a slow consumer, a missed
        // heartbeat that resets the ordered consumer): the watch goes on. A
        // watcher that ended here would leave its owner blind for good
        // (membership, leases), and tell no one.
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        continue;
      }
      if (e == nullptr) continue;  // the end of the initial values
      kv_entry out;
      out.key = kvEntry_Key(e);
      out.value.assign(static_cast<const char*>(kvEntry_Value(e)), static_cast<size_t>(kvEntry_ValueLen(e)));
      out.revision = kvEntry_Revision(e);
      out.deleted = kvEntry_Operation(e) != kvOp_Put;
      kvEntry_Destroy(e);
      on_entry_(out);
    }
  }

  kvWatcher* w_;
  std::function<void(const kv_entry&)> on_entry_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace

struct jetstream::impl {
  natsOptions* opts = nullptr;
  natsConnection* nc = nullptr;
  jsCtx* js = nullptr;
  nats_options options;
  std::mutex kv_mu;
  std::map<std::string, kvStore*> buckets;  // guarded by kv_mu

  ~impl() {
    for (auto& [name, kv] : buckets) kvStore_Destroy(kv);
    if (js != nullptr) jsCtx_Destroy(js);
    if (nc != nullptr) {
      natsConnection_Close(nc);
      natsConnection_Destroy(nc);
    }
    if (opts != nullptr) natsOptions_Destroy(opts);
  }

  // The bucket's handle, opened once.
  status bucket(const std::string& name, kvStore** out) {
    std::lock_guard<std::mutex> lock{kv_mu};
    auto it = buckets.find(name);
    if (it != buckets.end()) {
      *out = it->second;
      return status::ok();
    }
    kvStore* kv = nullptr;
    natsStatus s = js_KeyValue(&kv, js, name.c_str());
    if (s != NATS_OK) return to_status(s, 0, "bucket " + name);
    buckets[name] = kv;
    *out = kv;
    return status::ok();
  }
};

jetstream::jetstream(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
jetstream::~jetstream() = default;

status jetstream::connect(const nats_options& o, std::unique_ptr<jetstream>* out) {
  if (o.urls.empty()) return status::invalid_input("nats: no server url").with_field("urls");
  auto p = std::make_unique<impl>();
  p->options = o;
  natsStatus s = natsOptions_Create(&p->opts);
  std::vector<const char*> urls;
  for (const auto& u : o.urls) urls.push_back(u.c_str());
  if (s == NATS_OK) s = natsOptions_SetServers(p->opts, urls.data(), static_cast<int>(urls.size()));
  if (s == NATS_OK) s = natsOptions_SetTimeout(p->opts, millis(o.connect_timeout));
  if (s == NATS_OK && !o.name.empty()) s = natsOptions_SetName(p->opts, o.name.c_str());
  // Reconnect for as long as the connection lives; a caller sees `unavailable` meanwhile.
  if (s == NATS_OK) s = natsOptions_SetMaxReconnect(p->opts, -1);
  if (s == NATS_OK) s = natsOptions_SetReconnectWait(p->opts, 250);
  if (s == NATS_OK && !o.ca_file.empty()) s = natsOptions_SetSecure(p->opts, true);
  if (s == NATS_OK && !o.ca_file.empty()) s = natsOptions_LoadCATrustedCertificates(p->opts, o.ca_file.c_str());
  if (s == NATS_OK && !o.user.empty()) s = natsOptions_SetUserInfo(p->opts, o.user.c_str(), o.password.c_str());
  if (s == NATS_OK && !o.credentials_file.empty())
    s = natsOptions_SetUserCredentialsFromFiles(p->opts, o.credentials_file.c_str(), nullptr);
  if (s != NATS_OK) return to_status(s, 0, "nats options");
  s = natsConnection_Connect(&p->nc, p->opts);
  if (s != NATS_OK) return to_status(s, 0, "nats connect");
  jsOptions jo;
  jsOptions_Init(&jo);
  jo.Wait = millis(o.request_timeout);
  s = natsConnection_JetStream(&p->js, p->nc, &jo);
  if (s != NATS_OK) return to_status(s, 0, "jetstream");
  out->reset(new jetstream(std::move(p)));
  return status::ok();
}

status jetstream::ensure_stream(const stream_config& c) {
  std::vector<const char*> subjects;
  for (const auto& s : c.subjects) subjects.push_back(s.c_str());
  jsStreamConfig cfg;
  jsStreamConfig_Init(&cfg);
  cfg.Name = c.name.c_str();
  cfg.Subjects = subjects.data();
  cfg.SubjectsLen = static_cast<int>(subjects.size());
  cfg.Replicas = c.replicas;
  cfg.Storage = c.memory ? js_MemoryStorage : js_FileStorage;
  cfg.MaxMsgsPerSubject = c.max_msgs_per_subject;
  jsStreamInfo* si = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  natsStatus s = js_GetStreamInfo(&si, impl_->js, c.name.c_str(), nullptr, &jerr);
  if (s == NATS_NOT_FOUND || jerr == JSStreamNotFoundErr) {
    jerr = static_cast<jsErrCode>(0);
    s = js_AddStream(&si, impl_->js, &cfg, nullptr, &jerr);
    if (si != nullptr) jsStreamInfo_Destroy(si);
    return to_status(s, jerr, "stream " + c.name);
  }
  if (s != NATS_OK) return to_status(s, jerr, "stream " + c.name);
  bool same = si->Config->Replicas == c.replicas && si->Config->SubjectsLen == cfg.SubjectsLen;
  for (int i = 0; same && i < cfg.SubjectsLen; ++i) same = c.subjects[static_cast<size_t>(i)] == si->Config->Subjects[i];
  jsStreamInfo_Destroy(si);
  if (same) return status::ok();
  si = nullptr;
  s = js_UpdateStream(&si, impl_->js, &cfg, nullptr, &jerr);
  if (si != nullptr) jsStreamInfo_Destroy(si);
  return to_status(s, jerr, "stream " + c.name + " (update)");
}

status jetstream::delete_stream(const std::string& name) {
  jsErrCode jerr = static_cast<jsErrCode>(0);
  return to_status(js_DeleteStream(impl_->js, name.c_str(), nullptr, &jerr), jerr, "stream " + name);
}

status jetstream::health(const std::string& stream, stream_health* out) {
  jsStreamInfo* si = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  natsStatus s = js_GetStreamInfo(&si, impl_->js, stream.c_str(), nullptr, &jerr);
  if (s != NATS_OK) return to_status(s, jerr, "stream " + stream);
  *out = {};
  out->messages = si->State.Msgs;
  out->last_seq = si->State.LastSeq;
  if (si->Cluster != nullptr) {
    if (si->Cluster->Leader != nullptr) out->leader = si->Cluster->Leader;
    out->replicas = si->Cluster->ReplicasLen;
    for (int i = 0; i < si->Cluster->ReplicasLen; ++i) {
      const jsPeerInfo* peer = si->Cluster->Replicas[i];
      if (peer->Current && !peer->Offline) ++out->current;
    }
  }
  jsStreamInfo_Destroy(si);
  return status::ok();
}

status jetstream::publish(const std::string& subject, std::string_view data, uint64_t expected_last, uint64_t* seq) {
  return publish(subject, data, expected_last, "", seq, nullptr);
}

status jetstream::publish(const std::string& subject, std::string_view data, uint64_t expected_last,
                          const std::string& msg_id, uint64_t* seq, bool* duplicate) {
  jsPubOptions po;
  jsPubOptions_Init(&po);
  if (!msg_id.empty()) po.MsgId = msg_id.c_str();
  po.MaxWait = millis(impl_->options.request_timeout);
  if (expected_last == 0) po.ExpectNoMessage = true;
  else po.ExpectLastSubjectSeq = expected_last;
  jsPubAck* ack = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  natsStatus s = js_Publish(&ack, impl_->js, subject.c_str(), data.data(), static_cast<int>(data.size()), &po, &jerr);
  if (s != NATS_OK) return to_status(s, jerr, "publish to " + subject);
  if (seq != nullptr) *seq = ack->Sequence;
  if (duplicate != nullptr) *duplicate = ack->Duplicate;
  jsPubAck_Destroy(ack);
  return status::ok();
}

status jetstream::last_on_subject(const std::string& stream, const std::string& subject, stream_message* out) {
  natsMsg* msg = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  natsStatus s = js_GetLastMsg(&msg, impl_->js, stream.c_str(), subject.c_str(), nullptr, &jerr);
  if (s != NATS_OK) return to_status(s, jerr, "last message of " + subject);
  take(msg, out);
  out->seq = natsMsg_GetSequence(msg);
  natsMsg_Destroy(msg);
  return status::ok();
}

status jetstream::follow(const std::string& stream, const std::string& filter, uint64_t from_seq,
                         std::function<void(const stream_message&)> on_message, std::unique_ptr<subscription>* out) {
  auto f = std::make_unique<follower>();
  f->on_message = std::move(on_message);
  jsSubOptions so;
  jsSubOptions_Init(&so);
  so.Stream = stream.c_str();
  so.Ordered = true;
  so.Config.DeliverPolicy = js_DeliverByStartSequence;
  so.Config.OptStartSeq = from_seq == 0 ? 1 : from_seq;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  natsStatus s = js_Subscribe(&f->sub, impl_->js, filter.c_str(), &follower::on_msg, f.get(), nullptr, &so, &jerr);
  if (s == NATS_OK) s = natsSubscription_SetOnCompleteCB(f->sub, &follower::on_complete, f.get());
  if (s != NATS_OK) {
    if (f->sub != nullptr) {
      natsSubscription_Destroy(f->sub);
      f->sub = nullptr;
    }
    return to_status(s, jerr, "follow " + stream + " " + filter);
  }
  *out = std::move(f);
  return status::ok();
}

status jetstream::ensure_bucket(const bucket_config& c) {
  kvStore* kv = nullptr;
  if (impl_->bucket(c.name, &kv)) return status::ok();
  kvConfig cfg;
  kvConfig_Init(&cfg);
  cfg.Bucket = c.name.c_str();
  cfg.Replicas = c.replicas;
  cfg.History = static_cast<uint8_t>(c.history);
  cfg.TTL = millis(c.ttl) * 1000000;  // nanoseconds (the client passes it on as the stream's max age)
  cfg.StorageType = c.memory ? js_MemoryStorage : js_FileStorage;
  natsStatus s = js_CreateKeyValue(&kv, impl_->js, &cfg);
  if (s != NATS_OK) return to_status(s, 0, "bucket " + c.name);
  std::lock_guard<std::mutex> lock{impl_->kv_mu};
  auto [it, fresh] = impl_->buckets.emplace(c.name, kv);
  if (!fresh) kvStore_Destroy(kv);
  return status::ok();
}

status jetstream::kv_get(const std::string& bucket, const std::string& key, kv_entry* out) {
  kvStore* kv = nullptr;
  SKEIN_TRY(impl_->bucket(bucket, &kv));
  kvEntry* e = nullptr;
  natsStatus s = kvStore_Get(&e, kv, key.c_str());
  if (s != NATS_OK) return to_status(s, 0, "key " + key + " of " + bucket);
  out->key = key;
  out->value.assign(static_cast<const char*>(kvEntry_Value(e)), static_cast<size_t>(kvEntry_ValueLen(e)));
  out->revision = kvEntry_Revision(e);
  out->deleted = false;
  kvEntry_Destroy(e);
  return status::ok();
}

status jetstream::kv_create(const std::string& bucket, const std::string& key, std::string_view value,
                            uint64_t* revision) {
  kvStore* kv = nullptr;
  SKEIN_TRY(impl_->bucket(bucket, &kv));
  uint64_t rev = 0;
  natsStatus s = kvStore_Create(&rev, kv, key.c_str(), value.data(), static_cast<int>(value.size()));
  if (s != NATS_OK) return cas_status(s, "create key " + key + " of " + bucket);
  if (revision != nullptr) *revision = rev;
  return status::ok();
}

status jetstream::kv_update(const std::string& bucket, const std::string& key, std::string_view value, uint64_t last,
                            uint64_t* revision) {
  kvStore* kv = nullptr;
  SKEIN_TRY(impl_->bucket(bucket, &kv));
  uint64_t rev = 0;
  natsStatus s = kvStore_Update(&rev, kv, key.c_str(), value.data(), static_cast<int>(value.size()), last);
  if (s != NATS_OK) return cas_status(s, "update key " + key + " of " + bucket);
  if (revision != nullptr) *revision = rev;
  return status::ok();
}

status jetstream::kv_put(const std::string& bucket, const std::string& key, std::string_view value,
                         uint64_t* revision) {
  kvStore* kv = nullptr;
  SKEIN_TRY(impl_->bucket(bucket, &kv));
  uint64_t rev = 0;
  natsStatus s = kvStore_Put(&rev, kv, key.c_str(), value.data(), static_cast<int>(value.size()));
  if (s != NATS_OK) return to_status(s, 0, "put key " + key + " of " + bucket);
  if (revision != nullptr) *revision = rev;
  return status::ok();
}

status jetstream::kv_delete(const std::string& bucket, const std::string& key) {
  kvStore* kv = nullptr;
  SKEIN_TRY(impl_->bucket(bucket, &kv));
  return to_status(kvStore_Delete(kv, key.c_str()), 0, "delete key " + key + " of " + bucket);
}

status jetstream::kv_keys(const std::string& bucket, std::vector<std::string>* out) {
  kvStore* kv = nullptr;
  SKEIN_TRY(impl_->bucket(bucket, &kv));
  kvKeysList list{};
  natsStatus s = kvStore_Keys(&list, kv, nullptr);
  out->clear();
  if (s == NATS_NOT_FOUND) return status::ok();  // an empty bucket
  if (s != NATS_OK) return to_status(s, 0, "keys of " + bucket);
  for (int i = 0; i < list.Count; ++i) out->emplace_back(list.Keys[i]);
  kvKeysList_Destroy(&list);
  return status::ok();
}

status jetstream::kv_watch(const std::string& bucket, const std::string& keys,
                           std::function<void(const kv_entry&)> on_entry, std::unique_ptr<subscription>* out) {
  kvStore* kv = nullptr;
  SKEIN_TRY(impl_->bucket(bucket, &kv));
  kvWatcher* w = nullptr;
  natsStatus s = kvStore_Watch(&w, kv, keys.c_str(), nullptr);
  if (s != NATS_OK) return to_status(s, 0, "watch " + bucket);
  *out = std::make_unique<watcher>(w, std::move(on_entry));
  return status::ok();
}

}  // namespace skein::replication
