// The event log on RocksDB: opening it (options, column families, the schema
// migrations, the quota rows) and the helpers its other files share. Key
// formats: keys.cpp. Value formats: the manifest and event grammars in
// runtime/model/json_codec.cpp; the usage row's in event_log_tick.cpp; and,
// written here:
//
//   meta "schema_version" value := decimal schema version
//
// The quota rows of meta ("threads", "events/<day>") are in event_log_quota.cpp.
// The log's other files, one concept each: event_log_tick.cpp (a tick's and an
// effect write's rows in a batch), event_log_commit.cpp (group commit),
// event_log_erase.cpp (a thread's erasure), event_log_read.cpp (reads),
// event_log_move.cpp (a thread's rows, moved whole), event_log_quota.cpp,
// event_log_schedules.cpp, work_rows.cpp, usage_query.cpp, recovery.cpp.
#include "persistence/event_log.hpp"

#include <algorithm>
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
#include <sys/stat.h>
#include <unistd.h>

#include "persistence/encryption.hpp"
#include "persistence/event_log_internal.hpp"
#include "persistence/keys.hpp"
#include "persistence/rekey.hpp"

namespace skein {
namespace {

using namespace detail;

constexpr const char* schema_key = "schema_version";

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

}  // namespace skein
