// The event log's quotas (event_log.hpp, log_quota): the counts the writer keeps
// and the checks of creating ticks and new inputs. Rows of the meta column
// family written here, version 1 (schema version 4):
//
//   meta "threads"             value := decimal count of the threads stored
//   meta "events/" YYYY-MM-DD  value := decimal count of the events committed
//                                       whose ts falls in that UTC day
//
// Both are written in the batch of the ticks that change them ("threads" also
// with every erase_thread), so a restart finds the counts of what is stored.
// Day rows older than the days kept (the newest day seen and the one before,
// for runs that cross midnight) are deleted in the batch that moves past them.
// A database of a schema before 4 (or without a "threads" row) gets one at
// open from a count of the threads column family's keys, written with version 4.
#include <cassert>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <rocksdb/db.h>
#include <rocksdb/transaction_log.h>
#include <rocksdb/write_batch.h>

#include "persistence/event_log.hpp"
#include "persistence/event_log_internal.hpp"

namespace skein {
namespace {

using namespace detail;

constexpr int64_t ms_per_day = 86400000;
constexpr int64_t days_kept = 2;  // the newest day and the one before
constexpr const char* threads_key = "threads";
constexpr std::string_view day_prefix = "events/";

std::string day_key(int64_t day) { return std::string{day_prefix} + utc_day(day * ms_per_day); }

// The day of a "events/YYYY-MM-DD" key; false if it is none.
bool parse_day_key(std::string_view key, int64_t* day) {
  if (!key.starts_with(day_prefix)) return false;
  std::string date{key.substr(day_prefix.size())};
  tm t{};
  char rest = 0;
  if (date.size() != 10 || std::sscanf(date.c_str(), "%4d-%2d-%2d%c", &t.tm_year, &t.tm_mon, &t.tm_mday, &rest) != 3)
    return false;
  t.tm_year -= 1900;
  t.tm_mon -= 1;
  time_t secs = ::timegm(&t);
  *day = day_of(static_cast<int64_t>(secs) * 1000);
  return utc_day(*day * ms_per_day) == date;  // rejects 2026-02-31 and the like
}

bool parse_count(std::string_view v, uint64_t* out) {
  auto r = std::from_chars(v.data(), v.data() + v.size(), *out);
  return !v.empty() && r.ec == std::errc{} && r.ptr == v.data() + v.size();
}

int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

void event_log::set_quota(const log_quota& q) {
  threads_max_.store(q.threads_max, std::memory_order_relaxed);
  events_per_day_max_.store(q.events_per_day_max, std::memory_order_relaxed);
  storage_bytes_max_.store(q.storage_bytes_max, std::memory_order_relaxed);
}

log_quota event_log::quota() const {
  log_quota q;
  q.threads_max = threads_max_.load(std::memory_order_relaxed);
  q.events_per_day_max = events_per_day_max_.load(std::memory_order_relaxed);
  q.storage_bytes_max = storage_bytes_max_.load(std::memory_order_relaxed);
  return q;
}

status event_log::storage_bytes(uint64_t* out) const {
  std::lock_guard<std::mutex> lock{storage_mu_};
  int64_t now = steady_ms();
  if (storage_at_ms_ != INT64_MIN && now - storage_at_ms_ < storage_cache_ms) {
    *out = storage_bytes_;
    return status::ok();
  }
  auto* db = impl_->db.get();
  uint64_t sst = 0, unflushed = 0;
  // Sums over every column family; reads no file.
  if (!db->GetAggregatedIntProperty(rocksdb::DB::Properties::kTotalSstFilesSize, &sst))
    return status::io_error("storage size: RocksDB has no " + std::string{rocksdb::DB::Properties::kTotalSstFilesSize});
  if (mode() == durability::memory) {
    // No WAL: what is not flushed is in the memtables alone.
    if (!db->GetAggregatedIntProperty(rocksdb::DB::Properties::kCurSizeAllMemTables, &unflushed))
      return status::io_error("storage size: RocksDB has no " +
                              std::string{rocksdb::DB::Properties::kCurSizeAllMemTables});
  } else {
    // What is not flushed is in the live WAL files too, by its size on disk.
    // The memtables are not added: they hold the same data, and their figure
    // is their arenas' memory (a block of write_buffer_size / 8 for each
    // column family written to): 137 MB for 100,000 one-event threads whose
    // WAL takes 59 MB (and, once flushed, SST files 10 MB). Lists the WAL
    // directory: the one part that touches the file system.
    rocksdb::VectorLogPtr files;
    SKEIN_TRY(from_rocks(db->GetSortedWalFiles(files), "storage size: list WAL files"));
    for (const auto& f : files)
      if (f->Type() == rocksdb::kAliveLogFile) unflushed += f->SizeFileBytes();
  }
  storage_bytes_ = sst + unflushed;
  storage_at_ms_ = now;
  *out = storage_bytes_;
  return status::ok();
}

status event_log::check_storage() const {
  uint64_t max = storage_bytes_max_.load(std::memory_order_relaxed);
  if (max == 0) return status::ok();
  uint64_t bytes = 0;
  SKEIN_TRY(storage_bytes(&bytes));
  if (bytes < max) return status::ok();
  return status::quota_exceeded("quota storage_bytes_max reached: about " + std::to_string(bytes) +
                                " bytes stored, limit " + std::to_string(max))
      .with_limit("storage_bytes_max");
}

status event_log::check_events(int64_t day, uint64_t pending) const {
  uint64_t max = events_per_day_max_.load(std::memory_order_relaxed);
  if (max == 0) return status::ok();
  uint64_t count = pending;
  {
    std::lock_guard<std::mutex> lock{days_mu_};
    if (auto it = days_.find(day); it != days_.end()) count += it->second;
  }
  if (count < max) return status::ok();
  return status::quota_exceeded("quota events_per_day_max reached: " + std::to_string(count) +
                                " events committed on " + utc_day(day * ms_per_day) + " (UTC), limit " +
                                std::to_string(max))
      .with_limit("events_per_day_max");
}

status event_log::check_create(const tick& t, uint64_t creates, const std::map<int64_t, uint64_t>& days) const {
  assert(t.create);  // only creating ticks are checked against threads_max
  uint64_t max = threads_max_.load(std::memory_order_relaxed);
  uint64_t threads = threads_.load(std::memory_order_relaxed) + creates;
  if (max != 0 && threads >= max)
    return status::quota_exceeded("quota threads_max reached: " + std::to_string(threads) +
                                  " threads stored, limit " + std::to_string(max) + "; thread " + t.thread_id +
                                  " not created")
        .with_limit("threads_max");
  if (!t.inbox_put.empty()) {
    // A thread born with its input (a schedule's firing, a delegated question)
    // is a new input too, admitted at the time its manifest was made.
    int64_t day = day_of(t.manifest.updated_at_ms);
    auto it = days.find(day);
    SKEIN_TRY(check_events(day, it == days.end() ? 0 : it->second));
  }
  return check_storage();
}

status event_log::admit_input(int64_t now_ms) const {
  SKEIN_TRY(check_events(day_of(now_ms), 0));
  return check_storage();
}

status event_log::usage(int64_t now_ms, log_usage* out) const {
  out->threads = threads_.load(std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock{days_mu_};
    auto it = days_.find(day_of(now_ms));
    out->events_today = it == days_.end() ? 0 : it->second;
  }
  return storage_bytes(&out->storage_bytes);
}

void event_log::put_quota_rows(uint64_t threads, const std::map<int64_t, uint64_t>& days,
                               rocksdb::WriteBatch* batch, std::map<int64_t, uint64_t>* next_days) const {
  if (threads != threads_.load(std::memory_order_relaxed))
    batch->Put(impl_->cf(cf_meta), threads_key, std::to_string(threads));
  {
    std::lock_guard<std::mutex> lock{days_mu_};
    *next_days = days_;
  }
  for (const auto& [day, n] : days) {
    uint64_t& total = (*next_days)[day];
    total += n;
    batch->Put(impl_->cf(cf_meta), day_key(day), std::to_string(total));
  }
  if (next_days->empty()) return;
  int64_t oldest = next_days->rbegin()->first - (days_kept - 1);
  for (auto it = next_days->begin(); it != next_days->end() && it->first < oldest;) {
    batch->Delete(impl_->cf(cf_meta), day_key(it->first));
    it = next_days->erase(it);
  }
}

status event_log::write_counted(rocksdb::WriteBatch* batch, size_t ticks, uint64_t threads,
                                const std::map<int64_t, uint64_t>& days, const route_marks& routes) {
  std::map<int64_t, uint64_t> next_days;
  put_quota_rows(threads, days, batch, &next_days);
  SKEIN_TRY(write(batch, ticks, &routes));
  adopt_quota_rows(threads, std::move(next_days));
  return status::ok();
}

void event_log::adopt_quota_rows(uint64_t threads, std::map<int64_t, uint64_t> next_days) {
  threads_.store(threads, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock{days_mu_};
  days_ = std::move(next_days);
}

status event_log::load_quota_rows(bool recount) {
  auto* db = impl_->db.get();
  rocksdb::WriteOptions wo = impl_->write_options;
  wo.sync = mode() != durability::memory;
  std::string value;
  auto s = db->Get(rocksdb::ReadOptions(), impl_->cf(cf_meta), threads_key, &value);
  if (recount && s.ok()) s = rocksdb::Status::NotFound();  // a row of an older schema's era is not trusted
  if (s.ok()) {
    uint64_t n = 0;
    if (!parse_count(value, &n)) return status::corruption("meta threads: not a count: '" + quote_input(value) + "'");
    threads_.store(n, std::memory_order_relaxed);
  } else if (s.IsNotFound()) {
    // A database of an older schema: one pass over the keys of the threads
    // column family (values are read with their blocks, not decoded).
    rocksdb::ReadOptions ro;
    ro.fill_cache = false;
    std::unique_ptr<rocksdb::Iterator> it{db->NewIterator(ro, impl_->cf(cf_threads))};
    uint64_t n = 0;
    for (it->SeekToFirst(); it->Valid(); it->Next()) ++n;
    SKEIN_TRY(from_rocks(it->status(), "count threads"));
    rocksdb::WriteBatch batch;
    batch.Put(impl_->cf(cf_meta), threads_key, std::to_string(n));
    batch.Put(impl_->cf(cf_meta), "schema_version", std::to_string(schema_version));
    SKEIN_TRY(from_rocks(db->Write(wo, &batch), "write the thread count"));
    threads_.store(n, std::memory_order_relaxed);
  } else {
    return from_rocks(s, "read the thread count");
  }

  std::map<int64_t, uint64_t> days;
  std::unique_ptr<rocksdb::Iterator> it{db->NewIterator(rocksdb::ReadOptions(), impl_->cf(cf_meta))};
  for (it->Seek(std::string{day_prefix}); it->Valid() && it->key().starts_with(std::string{day_prefix}); it->Next()) {
    std::string_view key = it->key().ToStringView();
    int64_t day = 0;
    uint64_t n = 0;
    if (!parse_day_key(key, &day) || !parse_count(it->value().ToStringView(), &n))
      return status::corruption("meta " + printable_key(key) + ": not a day's event count");
    days[day] = n;
  }
  SKEIN_TRY(from_rocks(it->status(), "read the events per day"));
  std::lock_guard<std::mutex> lock{days_mu_};
  days_ = std::move(days);
  return status::ok();
}

}  // namespace skein
