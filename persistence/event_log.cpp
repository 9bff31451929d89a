// The event log on RocksDB. Key formats: keys.cpp. Value formats: the manifest and
// event grammars in runtime/model/json_codec.cpp, and, written here, version 2:
//
//   usage value := {"ts":int,"thread":id,"seq":uint,"run":string,"agent_id":id,
//                   "usage":usage,"cost_usd":number,"duration_ms":uint,"turns":uint,
//                   "outcome":string}
//   meta "schema_version" value := decimal schema version
//
// The quota rows of meta ("threads", "events/<day>") are in event_log_quota.cpp.
//
// One usage row is written for every `result` event, in the same batch, keyed by
// thread and seq (keys.cpp) so that erasing a thread deletes its rows as a range;
// "ts" is the result event's time. Version 1 had no "ts" in the value (it led the
// key); the migration at open moves it there.
//
// Threads rows behind the log (schema version 5). A tick writes its thread's row
// only when a read could not derive it: a tick that appends events and changes
// nothing but what follows from them keeps the stored row, which is then behind
// (its last_seq below the thread's last event key). Every read reports
// (derive_manifest, event_log_read.cpp):
//
//   last_seq        := seq of the thread's last event key (the log, never the row)
//   updated_at_ms   := max(row updated_at, ts of the last event)    if behind
//   heartbeat_at_ms := that updated_at_ms                           if behind, the row
//                      is running and its heartbeat_at equals its updated_at
//
// The writer keeps the row exactly when this derivation, from the stored row and
// the log as the tick leaves it, gives the tick's manifest field for field, and
// the tick's index entries are the stored ones. The "u" entry keeps the second of
// updated_at (keys.cpp), so the row and the entry are rewritten together at least
// once in every second a thread is written in: listing by update stays exact to
// the second, as before. A tick is one batch: after a crash the row and the log
// end are those of the same whole ticks, and the read derives the last of them.
#include "persistence/event_log.hpp"

#include <algorithm>
#include <cassert>
#include <charconv>
#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/slice_transform.h>
#include <rocksdb/table.h>
#include <rocksdb/utilities/options_util.h>
#include <rocksdb/write_batch.h>
#include <cstdarg>
#include <cstdio>
#include <ctime>
#include <fcntl.h>
#include <set>
#include <sys/stat.h>
#include <tuple>
#include <unistd.h>

#include "persistence/encryption.hpp"
#include "persistence/event_log_internal.hpp"
#include "persistence/keys.hpp"
#include "persistence/rekey.hpp"
#include "persistence/work_rows.hpp"
#include "runtime/model/embedding.hpp"
#include "runtime/model/ids.hpp"
#include "runtime/model/json_writer.hpp"

namespace skein {
namespace {

using namespace detail;

constexpr const char* schema_key = "schema_version";

// Days since the epoch of the UTC day holding ms (floor: before 1970 too).
int64_t day_of(int64_t ms) {
  constexpr int64_t ms_per_day = 86400000;
  return ms >= 0 ? ms / ms_per_day : (ms - (ms_per_day - 1)) / ms_per_day;
}

// Prefix of an event or embedding key: the thread id and its 0x00 terminator.
class thread_prefix final : public rocksdb::SliceTransform {
 public:
  const char* Name() const override { return "skein.thread_prefix.v1"; }
  rocksdb::Slice Transform(const rocksdb::Slice& key) const override {
    const char* zero = static_cast<const char*>(std::memchr(key.data(), 0, key.size()));
    return rocksdb::Slice(key.data(), static_cast<size_t>(zero - key.data()) + 1);
  }
  bool InDomain(const rocksdb::Slice& key) const override {
    return std::memchr(key.data(), 0, key.size()) != nullptr;
  }
};

// RocksDB's informational LOG, written with plain POSIX calls whose failures are
// ignored. RocksDB's own logger writes through a WritableFileWriter which, in
// Debian 12's build (assertions on), aborts the process on the first line after
// one that failed: on a full disk, the very write that reports the failure. The
// previous LOG is kept as LOG.old, as a restart after a crash needs it.
class info_log final : public rocksdb::Logger {
 public:
  info_log(const std::string& dir, bool create_dir) : Logger(rocksdb::InfoLogLevel::INFO_LEVEL) {
    if (create_dir) ::mkdir(dir.c_str(), 0755);  // RocksDB would create it next; EEXIST is fine
    std::string path = dir + "/LOG";
    ::rename(path.c_str(), (path + ".old").c_str());
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  }
  ~info_log() override {
    if (fd_ >= 0) ::close(fd_);
  }
  info_log(const info_log&) = delete;
  info_log& operator=(const info_log&) = delete;

  using rocksdb::Logger::Logv;
  void Logv(const char* format, va_list ap) override {
    if (fd_ < 0) return;
    char line[8192];
    timespec now{};
    ::clock_gettime(CLOCK_REALTIME, &now);
    tm t{};
    ::gmtime_r(&now.tv_sec, &t);
    int head = std::snprintf(line, sizeof line, "%04d/%02d/%02d-%02d:%02d:%02d.%06ld ", t.tm_year + 1900,
                             t.tm_mon + 1, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec, now.tv_nsec / 1000);
    int body = std::vsnprintf(line + head, sizeof line - head - 1, format, ap);
    size_t size = std::min<size_t>(head + std::max(body, 0), sizeof line - 2);
    if (size == 0 || line[size - 1] != '\n') line[size++] = '\n';
    ssize_t written = ::write(fd_, line, size);  // a lost diagnostic line is not an error
    (void)written;
  }

 private:
  int fd_ = -1;
};

void encode_usage_row(const std::string& thread, const std::string& agent, const event& e,
                      std::string* out) {
  out->clear();
  json_writer w{out};
  w.begin_object();
  w.field_int("ts", e.ts_ms);
  w.field("thread", thread);
  w.field_uint("seq", e.seq);
  w.field("run", e.run_id);
  w.field("agent_id", agent);
  w.key("usage");
  write_usage(w, e.usage);
  w.key("cost_usd");
  w.number(e.cost_usd);
  w.field_uint("duration_ms", e.duration_ms);
  w.field_uint("turns", e.turns);
  w.field("outcome", e.outcome);
  w.end_object();
}

// Moves every usage row of a version-1 database to its version-2 key (keys.cpp),
// "ts" into the value, in batches; the last batch records schema version 2. A
// crash midway leaves version 1 recorded and the rows not yet moved in place —
// they still start with 0x00, which no version-2 key does — so the next open
// resumes. A key of that range that is not a version-1 usage key stays as it is.
status migrate_usage_v1(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* usage,
                        rocksdb::ColumnFamilyHandle* meta, const rocksdb::WriteOptions& wo) {
  constexpr size_t rows_per_batch = 4096;
  const std::string upper(1, '\1');
  rocksdb::Slice upper_slice{upper};
  std::string resume;  // the last key handled: each batch seeks past it, not over tombstones
  for (;;) {
    rocksdb::ReadOptions ro;
    ro.iterate_upper_bound = &upper_slice;
    std::unique_ptr<rocksdb::Iterator> it{db->NewIterator(ro, usage)};
    rocksdb::WriteBatch batch;
    size_t rows = 0;
    for (it->Seek(resume); it->Valid() && rows < rows_per_batch; it->Next()) {
      std::string_view key = it->key().ToStringView();
      if (!resume.empty() && key == resume) continue;
      resume.assign(key);
      ++rows;
      int64_t ts = 0;
      std::string_view thread;
      uint64_t seq = 0;
      if (!keys::parse_usage_key_v1(key, &ts, &thread, &seq)) continue;
      std::string_view old = it->value().ToStringView();
      std::string value{old};
      if (old.size() > 2 && old.front() == '{')
        value = "{\"ts\":" + std::to_string(ts) + "," + std::string{old.substr(1)};
      batch.Put(usage, keys::usage_key(thread, seq), value);
      batch.Delete(usage, key);
    }
    SKEIN_TRY(from_rocks(it->status(), "scan version-1 usage rows"));
    const bool done = rows < rows_per_batch;
    if (done) batch.Put(meta, schema_key, std::to_string(schema_version));
    SKEIN_TRY(from_rocks(db->Write(wo, &batch), "migrate usage rows to schema version 2"));
    if (done) return status::ok();
  }
}

}  // namespace

namespace detail {

status from_rocks(const rocksdb::Status& s, std::string_view what) {
  if (s.ok()) return status::ok();
  std::string msg = std::string{what} + ": " + s.ToString();
  if (s.IsNoSpace() || s.subcode() == rocksdb::Status::kSpaceLimit) return status::no_space(msg);
  if (s.IsNotFound()) return status::not_found(msg);
  if (s.IsCorruption()) return status::corruption(msg);
  if (s.IsBusy() || s.IsTryAgain()) return status::overloaded(msg);
  return status::io_error(msg);
}

std::string hex_encode(std::string_view bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

bool hex_decode(std::string_view hex, std::string* out) {
  if (hex.size() % 2 != 0) return false;
  out->clear();
  for (size_t i = 0; i < hex.size(); i += 2) {
    unsigned v = 0;
    auto r = std::from_chars(hex.data() + i, hex.data() + i + 2, v, 16);
    if (r.ec != std::errc{} || r.ptr != hex.data() + i + 2) return false;
    out->push_back(static_cast<char>(v));
  }
  return true;
}

std::string printable_key(std::string_view key) {
  std::string out;
  for (unsigned char c : key) {
    if (c >= 0x20 && c < 0x7f) out.push_back(static_cast<char>(c));
    else out += "\\x" + hex_encode(std::string_view(reinterpret_cast<const char*>(&c), 1));
  }
  return out;
}

}  // namespace detail

std::string_view to_string(durability d) {
  switch (d) {
    case durability::sync: return "sync";
    case durability::flush: return "flush";
    case durability::memory: return "memory";
  }
  return "unknown";
}

bool parse_durability(std::string_view name, durability* out) {
  for (auto d : {durability::sync, durability::flush, durability::memory}) {
    if (to_string(d) == name) {
      *out = d;
      return true;
    }
  }
  return false;
}

std::vector<std::string> index_keys_of(const manifest& m) {
  std::vector<std::string> out;
  out.reserve(4 + m.tags.size());
  out.push_back(keys::index_key('a', m.agent_id, m.id));
  if (!m.parent_id.empty()) out.push_back(keys::index_key('p', m.parent_id, m.id));
  out.push_back(keys::index_key('s', to_string(m.status), m.id));
  for (const auto& tag : m.tags) out.push_back(keys::index_key('t', tag, m.id));
  out.push_back(keys::index_key('u', keys::updated_value(m.updated_at_ms), m.id));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<std::string> claim_keys_of(const manifest& m) {
  std::vector<std::string> out;
  if (!m.task_id.empty()) out.push_back(keys::claim_key("task", m.task_id));
  if (m.parent == parent_kind::agent) out.push_back(keys::claim_key("dm", m.parent_id));
  std::sort(out.begin(), out.end());
  return out;
}

event_log::event_log(log_options options) : options_(std::move(options)), impl_(new impl) {}

event_log::~event_log() = default;

status event_log::open(const log_options& options, std::unique_ptr<event_log>* out) {
  if (options.path.empty()) return status::invalid_input("log_options.path: must not be empty");
  std::unique_ptr<event_log> log{new event_log(options)};

  rocksdb::DBOptions db_options;
  db_options.create_if_missing = options.create_if_missing;
  db_options.create_missing_column_families = true;
  db_options.max_background_jobs = 2;
  db_options.bytes_per_sync = 1 << 20;
  // Bounds what an open after a crash replays: past this much WAL, RocksDB flushes
  // the column families that hold the oldest log (small ones would never fill a
  // memtable and would keep every log file alive).
  db_options.max_total_wal_size = options.wal_bytes_max;
  if (options.mode == durability::memory) {
    log->mem_env_.reset(rocksdb::NewMemEnv(rocksdb::Env::Default()));
    db_options.env = log->mem_env_.get();
  }
  if (options.env != nullptr) db_options.env = options.env;
  if (options.encryption && options.mode == durability::memory)
    return status::invalid_input("encryption: a memory-mode log has no files to encrypt; give no key")
        .with_field("key");
  if (options.mode != durability::memory) {
    // Both before the info log below, which creates the directory and LOG: a
    // refused key leaves every file as it was.
    SKEIN_TRY(recover_interrupted_rekey(options.path));
    SKEIN_TRY(open_database_key(options.path, options.encryption.get(), options.env, options.create_if_missing,
                                &log->encrypted_env_));
    if (log->encrypted_env_) db_options.env = log->encrypted_env_->env();
  }
  if (options.mode != durability::memory)
    db_options.info_log = std::make_shared<info_log>(options.path, options.create_if_missing);

  std::shared_ptr<const rocksdb::SliceTransform> prefix = std::make_shared<thread_prefix>();
  rocksdb::BlockBasedTableOptions table;
  table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  table.whole_key_filtering = false;
  // A thread's log is read as a range: 16 KiB blocks (about 90 events) take a
  // quarter of the block reads, decompressions and cache inserts of the default
  // 4 KiB on a cold read.
  table.block_size = 16 << 10;
  rocksdb::BlockBasedTableOptions threads_table;
  threads_table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));

  std::vector<rocksdb::ColumnFamilyDescriptor> descriptors;
  for (size_t i = 0; i < cf_count; ++i) {
    rocksdb::ColumnFamilyOptions cf_options;
    if (i == cf_events || i == cf_embeddings) {
      cf_options.prefix_extractor = prefix;
      cf_options.memtable_prefix_bloom_size_ratio = 0.05;
      cf_options.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
    }
    if (i == cf_events) cf_options.write_buffer_size = 64 << 20;
    // Every creation Gets its new, absent id (event_log::prepare: must not
    // exist): whole-key bloom filters, in the tables and in the memtable, answer
    // that miss without reading a block or searching the memtable.
    if (i == cf_threads) {
      cf_options.table_factory.reset(rocksdb::NewBlockBasedTableFactory(threads_table));
      cf_options.memtable_whole_key_filtering = true;
      cf_options.memtable_prefix_bloom_size_ratio = 0.05;
    }
    descriptors.emplace_back(cf_names[i], cf_options);
  }

  rocksdb::DB* raw = nullptr;
  // In memory mode the path is only a name; RocksDB's memory env refuses relative
  // paths (GetAbsolutePath: not implemented), so the name is rooted there.
  std::string db_path = options.path;
  if (options.mode == durability::memory && db_path.front() != '/') db_path.insert(0, 1, '/');
  auto s = rocksdb::DB::Open(db_options, db_path, descriptors, &log->impl_->cfs, &raw);
  if (!s.ok()) {
    if (s.IsInvalidArgument() && s.ToString().find("does not exist") != std::string::npos)
      return status::not_found("event log at " + options.path + ": " + s.ToString());
    return from_rocks(s, "open event log at " + options.path);
  }
  log->impl_->db.reset(raw);

  auto& wo = log->impl_->write_options;
  wo.sync = options.mode == durability::sync;
  wo.disableWAL = options.mode == durability::memory;

  // Schema version: written at creation, checked on every open, and moved forward
  // by a migration when an older one is found.
  std::string version;
  bool recount = false;  // a database older than the quota rows: count its threads
  s = raw->Get(rocksdb::ReadOptions(), log->impl_->cf(cf_meta), schema_key, &version);
  rocksdb::WriteOptions meta_wo = wo;
  meta_wo.sync = options.mode != durability::memory;
  if (s.IsNotFound()) {
    s = raw->Put(meta_wo, log->impl_->cf(cf_meta), schema_key, std::to_string(schema_version));
    if (!s.ok()) return from_rocks(s, "write schema version");
  } else if (!s.ok()) {
    return from_rocks(s, "read schema version");
  } else {
    uint32_t stored = 0;
    auto r = std::from_chars(version.data(), version.data() + version.size(), stored);
    if (r.ec != std::errc{} || r.ptr != version.data() + version.size())
      return status::corruption("meta schema_version: not a number: '" + version + "'");
    if (stored > schema_version)
      return status::conflict("event log at " + options.path + " has schema version " +
                              std::to_string(stored) + ", newer than this skein supports (" +
                              std::to_string(schema_version) + "): upgrade skein to open it");
    if (stored < 1) return status::corruption("meta schema_version: unknown version " + version);
    recount = stored < 4;
    if (stored == 1)
      SKEIN_TRY(migrate_usage_v1(raw, log->impl_->cf(cf_usage), log->impl_->cf(cf_meta), meta_wo));
    // 2 -> 3 only adds column families, which the open above created empty;
    // 3 -> 4 adds the quota rows, which load_quota_rows() writes with the version;
    // 4 -> 5 finds no row behind its log: recording the version is all.
    if (!recount && stored < schema_version) {
      s = raw->Put(meta_wo, log->impl_->cf(cf_meta), schema_key, std::to_string(schema_version));
      if (!s.ok()) return from_rocks(s, "write schema version");
    }
  }
  SKEIN_TRY(log->load_quota_rows(recount));
  log->set_quota(options.quota);
  *out = std::move(log);
  return status::ok();
}

// --- write side --------------------------------------------------------------

status event_log::compact_all() {
  if (options_.mode == durability::memory) return status::ok();
  rocksdb::FlushOptions fo;
  fo.wait = true;
  auto s = impl_->db->Flush(fo, impl_->cfs);
  if (!s.ok()) return from_rocks(s, "flush");
  rocksdb::CompactRangeOptions co;
  co.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
  for (auto* cf : impl_->cfs) {
    s = impl_->db->CompactRange(co, cf, nullptr, nullptr);
    if (!s.ok()) return from_rocks(s, "compact");
  }
  return status::ok();
}

status event_log::load_projection(const std::string& thread_id, projection* out,
                                  bool* found) const {
  // The writer's own reads: nothing else writes between them, no snapshot needed.
  std::string value;
  auto s = impl_->db->Get(rocksdb::ReadOptions(), impl_->cf(cf_threads), thread_id, &value);
  if (s.IsNotFound()) {
    *found = false;
    return status::ok();
  }
  SKEIN_TRY(from_rocks(s, "read manifest of " + thread_id));
  auto m = std::make_shared<manifest>();
  status d = decode_manifest(value, m.get(), options_.limits);
  if (!d) return status::corruption("threads key " + thread_id + ": " + d.message());
  log_end end;
  SKEIN_TRY(log_end_of(thread_id, &end));
  *found = true;
  // The keys, not the row, say where the log ends (the row may be behind).
  out->last_seq = end.seq;
  out->last_ts_ms = end.ts_ms;
  // The index entries and claims are the stored row's: they were written with it.
  out->index_keys = index_keys_of(*m);
  out->claim_keys = claim_keys_of(*m);
  out->row_bytes = value.size();
  out->row = std::move(m);
  return status::ok();
}

status event_log::salvage_projection(const std::string& thread_id, projection* out) const {
  // The keys, not the manifest, say where the log ends: appending there is safe
  // whatever the stored values hold. No row: a repair always writes its own.
  SKEIN_TRY(last_event_seq(thread_id, &out->last_seq));
  projection stored;
  bool found = false;
  status s = load_projection(thread_id, &stored, &found);
  if (s && found) {
    out->index_keys = std::move(stored.index_keys);
    return status::ok();
  }
  if (!s && s.code() != errc::corruption) return s;
  SKEIN_TRY(find_index_keys(thread_id, &out->index_keys));
  // Claims are no index_keys_of() entries: the diff of a repair must not drop them.
  std::erase_if(out->index_keys, [](const std::string& k) { return k.starts_with("c/"); });
  std::sort(out->index_keys.begin(), out->index_keys.end());
  return status::ok();
}

status event_log::prepare_claims(const tick& t, rocksdb::WriteBatch* batch,
                                 std::unordered_map<std::string, std::string>* claims) const {
  for (const auto& key : claim_keys_of(t.manifest)) {
    // "c/task/T": the field that made the claim, for the error.
    const char* field = key.starts_with("c/task/") ? "task_id" : "dm";
    if (auto it = claims->find(key); it != claims->end() && it->second != t.thread_id)
      return status::conflict(std::string{field} + ": " + key.substr(2) + " is claimed by thread " + it->second)
          .with_field(field);
    std::string holder;
    auto s = impl_->db->Get(rocksdb::ReadOptions(), impl_->cf(cf_index), key, &holder);
    if (!s.IsNotFound()) {
      SKEIN_TRY(from_rocks(s, "read claim"));
      if (holder != t.thread_id) {
        // A claim outlives its thread only if something failed between two
        // writes that should have been one; a claim naming no thread is taken over.
        std::string manifest_value;
        auto h = impl_->db->Get(rocksdb::ReadOptions(), impl_->cf(cf_threads), holder, &manifest_value);
        if (!h.IsNotFound()) {
          SKEIN_TRY(from_rocks(h, "read claim holder"));
          return status::conflict(std::string{field} + ": " + key.substr(2) + " is claimed by thread " + holder)
              .with_field(field);
        }
      }
    }
    batch->Put(impl_->cf(cf_index), key, t.thread_id);
    (*claims)[key] = t.thread_id;
  }
  return status::ok();
}

status event_log::prepare(tick& t, const projection* prev, rocksdb::WriteBatch* batch,
                          projection* next, std::unordered_map<std::string, std::string>* claims) const {
  SKEIN_TRY(validate_id(t.thread_id, "tick.thread_id"));
  if (t.manifest.id != t.thread_id)
    return status::invalid_input("tick.manifest.id: '" + t.manifest.id +
                                 "' differs from the tick's thread '" + t.thread_id + "'");
  size_t events_max = t.bulk ? options_.bulk_events_max : options_.tick_events_max;
  if (t.events.size() > events_max)
    return status::invalid_input("tick.events: " + std::to_string(t.events.size()) + " events exceed " +
                                 (t.bulk ? "bulk_events_max (" : "tick_events_max (") +
                                 std::to_string(events_max) + ")");
  if (t.create && t.quarantine)
    return status::invalid_input("tick.quarantine: repairs an existing thread, cannot create one");
  if (t.create && prev != nullptr)
    return status::conflict("thread " + t.thread_id + " already exists");
  if (!t.create && prev == nullptr)
    return status::not_found("thread " + t.thread_id + " does not exist");

  uint64_t last = prev != nullptr ? prev->last_seq : 0;
  for (const auto& e : t.events) {
    if (e.seq != last + 1)
      return status::conflict("thread " + t.thread_id + ": event seq " + std::to_string(e.seq) +
                              " does not continue the log (expected " +
                              std::to_string(last + 1) + ")");
    last = e.seq;
  }
  t.manifest.last_seq = last;
  next->last_seq = last;
  next->last_ts_ms = t.events.empty() ? (prev != nullptr ? prev->last_ts_ms : std::nullopt)
                                      : std::optional<int64_t>{t.events.back().ts_ms};
  next->index_keys = index_keys_of(t.manifest);

  // Every value goes through the storable rule (json_codec.hpp) under the limits
  // the reads apply: a value that could not be read back is never written. A
  // row left behind was checked when it was written; what a read derives of it
  // differs in three numbers only, within row_derivable's margin.
  std::string value;
  if (prev != nullptr && row_derivable(*prev, t, *next)) {
    next->row = prev->row;
    next->row_bytes = prev->row_bytes;
  } else {
    if (status s = encode_manifest(t.manifest, &value, options_.limits); !s)
      return status{s.code(), "thread " + t.thread_id + ": " + s.message()};
    batch->Put(impl_->cf(cf_threads), t.thread_id, value);
    next->row = std::make_shared<const manifest>(t.manifest);
    next->row_bytes = value.size();
  }
  for (const auto& e : t.events) {
    if (status s = encode_event(e, &value, options_.limits); !s)
      return status{s.code(), "thread " + t.thread_id + ": event seq " + std::to_string(e.seq) +
                                  " (" + std::string{to_string(e.type)} + "): " + s.message()};
    batch->Put(impl_->cf(cf_events), keys::event_key(t.thread_id, e.seq), value);
    if (e.type == event_type::result) {
      encode_usage_row(t.thread_id, t.manifest.agent_id, e, &value);
      batch->Put(impl_->cf(cf_usage), keys::usage_key(t.thread_id, e.seq), value);
    }
  }

  for (const auto& [order, input] : t.inbox_put) {
    if (order == 0) return status::invalid_input("tick.inbox_put: arrival order must be at least 1");
    SKEIN_TRY(encode_inbox_input(input, &value));
    batch->Put(impl_->cf(cf_inbox), keys::inbox_key(t.thread_id, order), value);
  }
  if (t.inbox_take != 0) batch->Delete(impl_->cf(cf_inbox), keys::inbox_key(t.thread_id, t.inbox_take));
  SKEIN_TRY(prepare_side_rows(t, batch));
  if (t.create) SKEIN_TRY(prepare_claims(t, batch, claims));
  for (const auto& [effect, cursor] : t.effect_cursors) {
    SKEIN_TRY(validate_id(effect, "tick.effect_cursors"));
    if (cursor > t.manifest.last_seq)
      return status::invalid_input("tick.effect_cursors: " + effect + " cursor " + std::to_string(cursor) +
                                   " is past the thread's last seq " + std::to_string(t.manifest.last_seq));
    // A cursor never moves back: an effect's work redone below it would repeat.
    uint64_t stored = 0;
    SKEIN_TRY(read_effect_cursor(effect, t.thread_id, &stored));
    if (cursor < stored)
      return status::conflict("tick.effect_cursors: " + effect + " cursor " + std::to_string(cursor) +
                              " is below the stored " + std::to_string(stored));
    std::string v;
    keys::put_be64(&v, cursor);
    batch->Put(impl_->cf(cf_effects), keys::effect_key(effect, t.thread_id), v);
  }

  if (!t.idempotency_key.empty()) {
    SKEIN_TRY(validate_id(t.idempotency_key, "idempotency_key"));
    if (t.events.empty())
      return status::invalid_input("tick.idempotency_key: needs the run's first events");
    std::string v;
    keys::put_be64(&v, t.events.front().seq);
    v += t.run_id;
    batch->Put(impl_->cf(cf_index), keys::idempotency_key(t.thread_id, t.idempotency_key), v);
  }

  static const std::vector<std::string> none;
  const auto& old_keys = prev != nullptr ? prev->index_keys : none;
  // Both lists are sorted: a merge walk finds what to delete and what to add.
  size_t i = 0, j = 0;
  while (i < old_keys.size() || j < next->index_keys.size()) {
    if (j == next->index_keys.size() ||
        (i < old_keys.size() && old_keys[i] < next->index_keys[j])) {
      batch->Delete(impl_->cf(cf_index), old_keys[i++]);
    } else if (i == old_keys.size() || next->index_keys[j] < old_keys[i]) {
      batch->Put(impl_->cf(cf_index), next->index_keys[j++], rocksdb::Slice());
    } else {
      ++i;
      ++j;
    }
  }
  return status::ok();
}

bool event_log::row_derivable(const projection& prev, tick& t, const projection& next) const {
  // Reads decode the row under json_bytes_max and derive three integers of it:
  // each may grow by at most 20 digits and a sign over what was checked.
  constexpr size_t derived_bytes_max = 3 * 21;
  if (t.create || t.quarantine || !prev.row) return false;
  if (prev.row_bytes + derived_bytes_max > options_.limits.json_bytes_max) return false;
  if (next.index_keys != prev.index_keys) return false;  // the "u" entry's second among them
  const manifest& row = *prev.row;
  manifest derived_fields;  // the three numbers a read derives, over the log after the tick
  derived_fields.status = row.status;
  derived_fields.last_seq = row.last_seq;
  derived_fields.updated_at_ms = row.updated_at_ms;
  derived_fields.heartbeat_at_ms = row.heartbeat_at_ms;
  derive_manifest(log_end{next.last_seq, next.last_ts_ms}, &derived_fields);
  if (t.manifest.last_seq != derived_fields.last_seq || t.manifest.updated_at_ms != derived_fields.updated_at_ms ||
      t.manifest.heartbeat_at_ms != derived_fields.heartbeat_at_ms)
    return false;
  // Every other field as stored: manifest's own == with the three set to the
  // row's, so that a field added to manifest is compared too.
  manifest& m = t.manifest;
  const auto tick_fields = std::tuple{m.last_seq, m.updated_at_ms, m.heartbeat_at_ms};
  std::tie(m.last_seq, m.updated_at_ms, m.heartbeat_at_ms) = std::tuple{row.last_seq, row.updated_at_ms, row.heartbeat_at_ms};
  const bool same = m == row;
  std::tie(m.last_seq, m.updated_at_ms, m.heartbeat_at_ms) = tick_fields;
  return same;
}

status event_log::write(rocksdb::WriteBatch* batch, size_t ticks) {
  auto s = impl_->db->Write(impl_->write_options, batch);
  if (!s.ok()) {
    // A failed write may have left the WAL in an unknown state; RocksDB does not
    // retry a failed fsync and neither do we: refuse writes until reopened.
    // A full disk latches too, though nothing was acknowledged wrongly: after
    // DB::Resume() RocksDB 7.8 goes on appending to the WAL writer that failed
    // (the packaged build aborts on an assertion there; a release build refuses
    // every write), and its own recovery waits for free space of a whole write
    // buffer. Only a reopen, with a new WAL, is safe. Refusals keep saying
    // no_space, so callers see a full disk (507), not a broken one.
    bool full = s.IsNoSpace() || s.subcode() == rocksdb::Status::kSpaceLimit;
    no_space_.store(full, std::memory_order_release);
    writable_.store(false, std::memory_order_release);
    cache_.clear();
    return from_rocks(s, full ? "write batch (the disk is full: reopen the log once space is freed)" : "write batch");
  }
  counters_.writes.fetch_add(1, std::memory_order_relaxed);
  counters_.bytes.fetch_add(batch->GetDataSize(), std::memory_order_relaxed);
  counters_.keys.fetch_add(batch->Count(), std::memory_order_relaxed);
  uint64_t seen = counters_.group_max.load(std::memory_order_relaxed);
  while (ticks > seen && !counters_.group_max.compare_exchange_weak(seen, ticks)) {
  }
  return status::ok();
}

status event_log::refusal() const {
  if (no_space_.load(std::memory_order_acquire))
    return status::no_space("event log refuses writes after the disk was full; reopen it once space is freed");
  return status::io_error("event log refuses writes after a failed write; reopen it");
}

void event_log::remember(const std::string& thread_id, projection p) {
  if (options_.manifest_cache_max == 0) return;
  if (cache_.size() >= options_.manifest_cache_max && cache_.find(thread_id) == cache_.end())
    cache_.clear();  // crude but O(1) amortized; misses only cost a Get
  cache_[thread_id] = std::move(p);
}

status event_log::commit(tick& t) {
  tick* one[] = {&t};
  status result;
  commit_group(one, std::span<status>(&result, 1));
  return result;
}

void event_log::commit_group(std::span<tick* const> ticks, std::span<status> results) {
  commit_group(ticks, results, {}, {});
}

void event_log::commit_group(std::span<tick* const> ticks, std::span<status> results,
                             std::span<effect_write* const> effects, std::span<status> effect_results) {
  assert(ticks.size() == results.size());  // one result per tick
  assert(effects.size() == effect_results.size());  // one result per effect write
  if (!writable()) {
    for (auto& r : results)
      r = refusal();
    for (auto& r : effect_results) r = refusal();
    counters_.failed.fetch_add(ticks.size(), std::memory_order_relaxed);
    return;
  }
  rocksdb::WriteBatch batch;
  std::unordered_map<std::string, projection> pending;  // threads touched by this group
  std::unordered_map<std::string, std::string> claims;  // claim keys put by this group
  std::vector<size_t> accepted;
  accepted.reserve(ticks.size());
  uint64_t events = 0;
  uint64_t creates = 0;                // creating ticks accepted (threads_max)
  uint64_t rows = 0;                   // threads rows written (the others are left behind)
  std::map<int64_t, uint64_t> days;    // events accepted per UTC day (events_per_day_max)

  for (size_t i = 0; i < ticks.size(); ++i) {
    tick& t = *ticks[i];
    if (t.thread_id.empty() && !t.side_rows.empty()) {
      // Schedule rows alone: no thread to check.
      batch.SetSavePoint();
      if (status s = prepare_side_rows(t, &batch); !s) {
        batch.RollbackToSavePoint().PermitUncheckedError();
        results[i] = s;
        counters_.rejected.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      batch.PopSavePoint().PermitUncheckedError();
      accepted.push_back(i);
      continue;
    }
    const projection* prev = nullptr;
    projection loaded;
    if (auto it = pending.find(t.thread_id); it != pending.end()) {
      prev = &it->second;
    } else if (t.quarantine) {
      status s = validate_id(t.thread_id, "tick.thread_id");
      if (s) s = salvage_projection(t.thread_id, &loaded);
      if (!s) {
        results[i] = s;
        counters_.rejected.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      prev = &loaded;
    } else if (auto it = cache_.find(t.thread_id); it != cache_.end()) {
      prev = &it->second;
    } else {
      bool found = false;
      status s = validate_id(t.thread_id, "tick.thread_id");
      if (s) s = load_projection(t.thread_id, &loaded, &found);
      if (!s) {
        results[i] = s;
        counters_.rejected.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      if (found) prev = &loaded;
    }
    projection next;
    batch.SetSavePoint();
    // A refused tick's claims must not stay claimed; only creating ticks claim.
    std::unordered_map<std::string, std::string> claims_before;
    if (t.create) claims_before = claims;
    status s = prepare(t, prev, &batch, &next, &claims);
    // Quotas after the tick is known valid: an invalid one gets its own error.
    if (s && t.create) s = check_create(t, creates, days);
    if (!s) {
      if (t.create) claims = std::move(claims_before);
      batch.RollbackToSavePoint().PermitUncheckedError();
      results[i] = s;
      counters_.rejected.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    batch.PopSavePoint().PermitUncheckedError();
    if (prev == nullptr || next.row != prev->row) ++rows;
    pending[t.thread_id] = std::move(next);
    accepted.push_back(i);
    events += t.events.size();
    if (t.create) ++creates;
    for (const auto& e : t.events) ++days[day_of(e.ts_ms)];
  }
  // Effect writes after the ticks: a thread created or advanced by this group is
  // known to them through `pending`.
  std::vector<size_t> effects_accepted;
  for (size_t i = 0; i < effects.size(); ++i) {
    batch.SetSavePoint();
    status s = prepare_effect(*effects[i], pending, &batch);
    if (!s) {
      batch.RollbackToSavePoint().PermitUncheckedError();
      effect_results[i] = s;
      counters_.rejected.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    batch.PopSavePoint().PermitUncheckedError();
    effects_accepted.push_back(i);
  }
  if (accepted.empty() && effects_accepted.empty()) return;
  const uint64_t threads = threads_.load(std::memory_order_relaxed) + creates;
  std::map<int64_t, uint64_t> next_days;
  put_quota_rows(threads, days, &batch, &next_days);

  status s = write(&batch, accepted.size());
  for (size_t i : accepted) results[i] = s;
  for (size_t i : effects_accepted) effect_results[i] = s;
  if (!s) {
    counters_.failed.fetch_add(accepted.size(), std::memory_order_relaxed);
    return;
  }
  adopt_quota_rows(threads, std::move(next_days));
  for (auto& [id, p] : pending) remember(id, std::move(p));
  counters_.commits.fetch_add(accepted.size(), std::memory_order_relaxed);
  counters_.events.fetch_add(events, std::memory_order_relaxed);
  counters_.manifests.fetch_add(rows, std::memory_order_relaxed);
}

status event_log::erase_thread(std::string_view thread_id, bool keep_claims) {
  SKEIN_TRY(validate_id(thread_id, "thread id"));
  if (!writable()) return refusal();
  std::string id{thread_id};
  auto* db = impl_->db.get();
  rocksdb::WriteBatch batch;

  projection p;
  bool found = false;
  status loaded = load_projection(id, &p, &found);
  // A manifest that cannot be read names no index entries: find them by a scan.
  const bool stored = found || loaded.code() == errc::corruption;  // its threads row exists
  if (loaded.code() == errc::corruption) loaded = find_index_keys(id, &p.index_keys);
  SKEIN_TRY(loaded);
  for (const auto& k : p.index_keys) batch.Delete(impl_->cf(cf_index), k);
  // Claims (keys.cpp) free with their thread; one that names another thread stays.
  for (const auto& k : p.claim_keys) {
    if (keep_claims) break;
    std::string holder;
    auto c = db->Get(rocksdb::ReadOptions(), impl_->cf(cf_index), k, &holder);
    if (c.IsNotFound()) continue;
    SKEIN_TRY(from_rocks(c, "read claim"));
    if (holder == id) batch.Delete(impl_->cf(cf_index), k);
  }
  batch.Delete(impl_->cf(cf_threads), id);

  auto begin = keys::event_prefix(id), end = keys::event_prefix_end(id);
  batch.DeleteRange(impl_->cf(cf_events), begin, end);
  batch.DeleteRange(impl_->cf(cf_embeddings), begin, end);
  batch.DeleteRange(impl_->cf(cf_inbox), begin, end);
  batch.DeleteRange(impl_->cf(cf_usage), begin, end);  // usage keys share the event key shape
  std::string idem_begin = keys::idempotency_prefix(id), idem_end = idem_begin;
  idem_end.back() = static_cast<char>(idem_end.back() + 1);
  batch.DeleteRange(impl_->cf(cf_index), idem_begin, idem_end);

  // effects keys lead with the effect name: visit each name once.
  std::unique_ptr<rocksdb::Iterator> it{db->NewIterator(rocksdb::ReadOptions(), impl_->cf(cf_effects))};
  for (it->SeekToFirst(); it->Valid();) {
    std::string_view key = it->key().ToStringView();
    // A copy: the key's bytes belong to the iterator and change at the next Seek.
    std::string effect{key.substr(0, key.find('\0'))};
    std::string target = keys::effect_key(effect, id);
    it->Seek(target);
    if (it->Valid() && it->key().ToStringView() == target) batch.Delete(impl_->cf(cf_effects), target);
    std::string next_effect = effect;
    next_effect.push_back('\1');
    it->Seek(next_effect);
  }
  SKEIN_TRY(from_rocks(it->status(), "scan effects"));
  SKEIN_TRY(erase_work_rows(id, p.index_keys, &batch));
  uint64_t threads = threads_.load(std::memory_order_relaxed);
  if (stored && threads > 0) --threads;
  return write_whole_thread(&batch, threads, id);
}

status event_log::write_whole_thread(rocksdb::WriteBatch* batch, uint64_t threads, const std::string& thread_id) {
  std::map<int64_t, uint64_t> days;
  put_quota_rows(threads, {}, batch, &days);
  SKEIN_TRY(write(batch, 0));
  adopt_quota_rows(threads, std::move(days));
  cache_.erase(thread_id);
  return status::ok();
}

status event_log::erase_work_rows(const std::string& id, const std::vector<std::string>& index_keys,
                                  rocksdb::WriteBatch* batch) const {
  // The item's row is keyed by its agent, which the agent index entry names.
  for (const auto& k : index_keys) {
    if (!k.starts_with("a/")) continue;
    std::string_view agent = std::string_view{k}.substr(2, k.size() - 2 - id.size() - 1);
    batch->Delete(impl_->cf(cf_work), keys::work_key(agent, id));
  }
  // Every triple naming the thread, as subject or object, with all three of its
  // keys; a row that does not decode cannot name its twin keys: it goes by its own.
  std::set<std::string> triples;
  std::vector<std::string> undecodable;
  std::unique_ptr<rocksdb::Iterator> graph{impl_->db->NewIterator(rocksdb::ReadOptions(), impl_->cf(cf_graph))};
  SKEIN_TRY(thread_triple_keys(graph.get(), id, &triples, &undecodable));
  for (const auto& k : triples) batch->Delete(impl_->cf(cf_graph), k);
  for (const auto& k : undecodable) batch->Delete(impl_->cf(cf_graph), k);
  return status::ok();
}

status event_log::prepare_effect(const effect_write& w, const std::unordered_map<std::string, projection>& pending,
                                 rocksdb::WriteBatch* batch) const {
  SKEIN_TRY(validate_id(w.effect, "effect_write.effect"));
  SKEIN_TRY(validate_id(w.thread_id, "effect_write.thread_id"));
  // The journal serializes this check with erase_thread: a thread erased before
  // the write is refused here, one erased after it loses the rows with the rest.
  projection p;
  const projection* prev = nullptr;
  if (auto it = pending.find(w.thread_id); it != pending.end()) {
    prev = &it->second;
  } else if (auto it = cache_.find(w.thread_id); it != cache_.end()) {
    prev = &it->second;
  } else {
    bool found = false;
    SKEIN_TRY(load_projection(w.thread_id, &p, &found));
    if (found) prev = &p;
  }
  if (prev == nullptr) return status::not_found("thread " + w.thread_id + " does not exist");
  if (w.cursor > prev->last_seq)
    return status::invalid_input("effect_write.cursor: " + w.effect + " cursor " + std::to_string(w.cursor) +
                                 " is past the thread's last seq " + std::to_string(prev->last_seq));
  uint64_t stored = 0;
  SKEIN_TRY(read_effect_cursor(w.effect, w.thread_id, &stored));
  if (w.cursor < stored)
    return status::conflict("effect_write.cursor: " + w.effect + " cursor " + std::to_string(w.cursor) +
                            " of thread " + w.thread_id + " is below the stored " + std::to_string(stored));
  for (const auto& [seq, value] : w.embeddings) {
    if (seq <= stored || seq > w.cursor)
      return status::conflict("effect_write.embeddings: seq " + std::to_string(seq) + " of thread " +
                              w.thread_id + " is outside (" + std::to_string(stored) + ", " +
                              std::to_string(w.cursor) + "]");
    embedding_record check;
    if (status d = decode_embedding(value, &check); !d)
      return status::invalid_input("effect_write.embeddings: seq " + std::to_string(seq) + ": " + d.message());
    batch->Put(impl_->cf(cf_embeddings), keys::event_key(w.thread_id, seq), value);
  }
  std::string v;
  keys::put_be64(&v, w.cursor);
  batch->Put(impl_->cf(cf_effects), keys::effect_key(w.effect, w.thread_id), v);
  return status::ok();
}

status event_log::commit_effect(effect_write& w) {
  effect_write* one[] = {&w};
  status result;
  commit_effects(one, std::span<status>(&result, 1));
  return result;
}

void event_log::commit_effects(std::span<effect_write* const> writes, std::span<status> results) {
  commit_group({}, {}, writes, results);
}

status event_log::put_agent(const agent_config& agent) {
  if (!writable()) return refusal();
  std::string value;
  SKEIN_TRY(encode_agent(agent, &value, options_.limits));
  rocksdb::WriteBatch batch;
  batch.Put(impl_->cf(cf_agents), agent.id, value);
  return write(&batch, 0);
}

}  // namespace skein

namespace skein {

status event_log::commit_all(std::span<tick* const> ticks) {
  if (!writable()) {
    counters_.failed.fetch_add(ticks.size(), std::memory_order_relaxed);
    return status::io_error("event log refuses writes after a failed write; reopen it");
  }
  rocksdb::WriteBatch batch;
  std::unordered_map<std::string, projection> pending;  // threads touched by this call
  std::unordered_map<std::string, std::string> claims;  // claim keys put by this call
  uint64_t events = 0;
  uint64_t creates = 0;              // creating ticks so far (threads_max)
  uint64_t rows = 0;                 // threads rows written
  std::map<int64_t, uint64_t> days;  // their events per UTC day
  for (size_t i = 0; i < ticks.size(); ++i) {
    tick& t = *ticks[i];
    const projection* prev = nullptr;
    projection loaded;
    status s = validate_id(t.thread_id, "tick.thread_id");
    if (s) {
      if (auto it = pending.find(t.thread_id); it != pending.end()) {
        prev = &it->second;
      } else if (auto it = cache_.find(t.thread_id); it != cache_.end()) {
        prev = &it->second;
      } else {
        bool found = false;
        s = load_projection(t.thread_id, &loaded, &found);
        if (found) prev = &loaded;
      }
    }
    projection next;
    if (s) s = prepare(t, prev, &batch, &next, &claims);
    if (s && t.create) s = check_create(t, creates, days);
    if (!s) {
      // One refusal refuses them all: the batch is dropped unwritten.
      counters_.rejected.fetch_add(ticks.size(), std::memory_order_relaxed);
      return status(s.code(), "tick " + std::to_string(i + 1) + " of " +
                                  std::to_string(ticks.size()) + ": " + s.message())
          .with_limit(s.limit())
          .with_field(s.field());
    }
    if (prev == nullptr || next.row != prev->row) ++rows;
    pending[t.thread_id] = std::move(next);
    events += t.events.size();
    if (t.create) ++creates;
    for (const auto& e : t.events) ++days[day_of(e.ts_ms)];
  }
  if (ticks.empty()) return status::ok();
  const uint64_t threads = threads_.load(std::memory_order_relaxed) + creates;
  std::map<int64_t, uint64_t> next_days;
  put_quota_rows(threads, days, &batch, &next_days);
  status s = write(&batch, ticks.size());
  if (!s) {
    counters_.failed.fetch_add(ticks.size(), std::memory_order_relaxed);
    return s;
  }
  adopt_quota_rows(threads, std::move(next_days));
  for (auto& [id, p] : pending) remember(id, std::move(p));
  counters_.commits.fetch_add(ticks.size(), std::memory_order_relaxed);
  counters_.events.fetch_add(events, std::memory_order_relaxed);
  counters_.manifests.fetch_add(rows, std::memory_order_relaxed);
  return status::ok();
}

}  // namespace skein
