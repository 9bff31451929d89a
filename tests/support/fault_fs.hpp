// fault_fs: a RocksDB file system that fails writes, syncs, reads and renames on
// command, and can lose power.
//
// Two ways to inject a fault:
//   - set(fail::wal_append | fail::wal_sync): every WAL append (or sync) fails
//     while the switch is on.
//   - set_full(true): every append to any file fails with NoSpace, as on a full
//     disk, until set_full(false).
//   - arm(kind, n, persistence): the n-th operation of `kind` counted from the
//     arm() call fails, and with fault::persistent every later one of that kind
//     too. counts() tells how many operations of each kind ran since arm() or
//     reset_counts(), which is how a sweep learns the range of n for a workload.
//     kind::power_loss counts every mutating operation (append, sync, rename)
//     and at the n-th the power goes: that operation and every later one of any
//     kind fails, as if the machine stopped there.
//
// What survives: the file system remembers, per file it wrote, how many bytes
// were synced. A failed sync drops what the file gained since its last good sync,
// as the OS may after a failed fsync (its dirty pages are gone). drop_unsynced()
// does that to every file at once — a power loss — and revives the file system;
// call it once the database using it is closed. Renames and directory entries
// are taken as durable at once (RocksDB fsyncs the directory after the renames
// it relies on); files RocksDB deletes are simply gone.
//
// Thread-safe: RocksDB calls it from its background threads. Wrap with
// rocksdb::NewCompositeEnv() and pass the Env in log_options::env.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <catch2/catch.hpp>
#include <memory>
#include <rocksdb/env.h>
#include <rocksdb/file_system.h>
#include <string>
#include <unistd.h>

#include "persistence/event_log.hpp"
#include "tests/support/log_fixtures.hpp"

namespace skein::test {

class fault_fs : public rocksdb::FileSystemWrapper {
 public:
  enum class fail { none, wal_append, wal_sync };
  enum class kind : size_t { append, sync, read, rename, power_loss, count };
  enum class fault { once, persistent };

  static constexpr uint64_t never = UINT64_MAX;

  fault_fs() : FileSystemWrapper(rocksdb::FileSystem::Default()) {}

  static const char* kClassName() { return "skein_test_fault_fs"; }
  const char* Name() const override { return kClassName(); }

  // --- switches ---

  void set(fail f) { mode_.store(f); }
  void set_full(bool full) { full_.store(full); }
  fail mode() const { return mode_.load(); }
  int failures() const { return failures_.load(); }

  void arm(kind k, uint64_t n, fault f) {
    reset_counts();
    armed_kind_.store(k);
    armed_fault_.store(f);
    armed_n_.store(n);
  }
  void disarm() { armed_n_.store(never); }
  void reset_counts() {
    for (auto& c : counts_) c.store(0);
  }
  uint64_t count(kind k) const { return counts_[static_cast<size_t>(k)].load(); }
  bool dead() const { return dead_.load(); }
  // Bytes drop_unsynced() took from files so far.
  uint64_t dropped_bytes() const {
    std::lock_guard<std::mutex> lock{mu_};
    return dropped_bytes_;
  }

  // A power loss: every file loses what was not synced. The database must be
  // closed; afterwards the file system works again, unarmed.
  void drop_unsynced() {
    std::lock_guard<std::mutex> lock{mu_};
    for (auto& [name, f] : files_) {
      // ::truncate, not FileSystem::Truncate: the default file system does not implement that.
      if (f.written > f.synced && ::truncate(name.c_str(), static_cast<off_t>(f.synced)) == 0)
        dropped_bytes_ += f.written - f.synced;
    }
    files_.clear();
    dead_.store(false);
    disarm();
    set(fail::none);
    set_full(false);
  }

  // --- the file system ---

  rocksdb::IOStatus NewWritableFile(const std::string& name, const rocksdb::FileOptions& options,
                                    std::unique_ptr<rocksdb::FSWritableFile>* out,
                                    rocksdb::IODebugContext* dbg) override {
    if (dead()) return injected("create after power loss");
    auto s = target()->NewWritableFile(name, options, out, dbg);
    if (s.ok()) wrap(name, 0, out);
    return s;
  }
  rocksdb::IOStatus ReopenWritableFile(const std::string& name, const rocksdb::FileOptions& options,
                                       std::unique_ptr<rocksdb::FSWritableFile>* out,
                                       rocksdb::IODebugContext* dbg) override {
    if (dead()) return injected("reopen after power loss");
    auto s = target()->ReopenWritableFile(name, options, out, dbg);
    uint64_t size = 0;
    if (s.ok() && target()->GetFileSize(name, rocksdb::IOOptions(), &size, dbg).ok()) wrap(name, size, out);
    return s;
  }
  rocksdb::IOStatus ReuseWritableFile(const std::string& name, const std::string& old_name,
                                      const rocksdb::FileOptions& options,
                                      std::unique_ptr<rocksdb::FSWritableFile>* out,
                                      rocksdb::IODebugContext* dbg) override {
    if (dead()) return injected("reuse after power loss");
    auto s = target()->ReuseWritableFile(name, old_name, options, out, dbg);
    if (s.ok()) wrap(name, 0, out);
    return s;
  }
  rocksdb::IOStatus NewSequentialFile(const std::string& name, const rocksdb::FileOptions& options,
                                      std::unique_ptr<rocksdb::FSSequentialFile>* out,
                                      rocksdb::IODebugContext* dbg) override {
    auto s = target()->NewSequentialFile(name, options, out, dbg);
    if (s.ok()) out->reset(new sequential_file(std::move(*out), this));
    return s;
  }
  rocksdb::IOStatus NewRandomAccessFile(const std::string& name, const rocksdb::FileOptions& options,
                                        std::unique_ptr<rocksdb::FSRandomAccessFile>* out,
                                        rocksdb::IODebugContext* dbg) override {
    auto s = target()->NewRandomAccessFile(name, options, out, dbg);
    if (s.ok()) out->reset(new random_file(std::move(*out), this));
    return s;
  }
  rocksdb::IOStatus RenameFile(const std::string& from, const std::string& to, const rocksdb::IOOptions& o,
                               rocksdb::IODebugContext* dbg) override {
    if (should_fail(kind::rename)) return injected("rename");
    auto s = target()->RenameFile(from, to, o, dbg);
    if (s.ok()) {
      std::lock_guard<std::mutex> lock{mu_};
      auto it = files_.find(from);
      if (it != files_.end()) {
        files_[to] = it->second;
        files_.erase(it);
      } else {
        files_.erase(to);
      }
    }
    return s;
  }
  rocksdb::IOStatus DeleteFile(const std::string& name, const rocksdb::IOOptions& o,
                               rocksdb::IODebugContext* dbg) override {
    if (dead()) return injected("delete after power loss");
    auto s = target()->DeleteFile(name, o, dbg);
    if (s.ok()) {
      std::lock_guard<std::mutex> lock{mu_};
      files_.erase(name);
    }
    return s;
  }

 private:
  struct file_state {
    uint64_t written = 0;  // bytes the file holds
    uint64_t synced = 0;   // of them, durable
  };

  void wrap(const std::string& name, uint64_t size, std::unique_ptr<rocksdb::FSWritableFile>* out) {
    {
      std::lock_guard<std::mutex> lock{mu_};
      files_[name] = file_state{size, size};
    }
    bool wal = name.size() > 4 && name.compare(name.size() - 4, 4, ".log") == 0;
    out->reset(new writable_file(std::move(*out), this, name, wal));
  }

  // Counts one operation of `k`; true if it must fail.
  bool should_fail(kind k) {
    if (dead()) return true;
    uint64_t n = counts_[static_cast<size_t>(k)].fetch_add(1) + 1;
    bool mutating = k != kind::read;
    uint64_t any = mutating ? counts_[static_cast<size_t>(kind::power_loss)].fetch_add(1) + 1 : 0;
    uint64_t armed = armed_n_.load();
    if (armed == never) return false;
    kind ak = armed_kind_.load();
    if (ak == kind::power_loss) {
      if (!mutating || any < armed) return false;
      dead_.store(true);
      return true;
    }
    if (ak != k) return false;
    return armed_fault_.load() == fault::persistent ? n >= armed : n == armed;
  }

  void note_append(const std::string& name, uint64_t bytes) {
    std::lock_guard<std::mutex> lock{mu_};
    files_[name].written += bytes;
  }
  void note_sync(const std::string& name, bool ok, rocksdb::FSWritableFile* file) {
    std::lock_guard<std::mutex> lock{mu_};
    auto& f = files_[name];
    if (ok) {
      f.synced = f.written;
    } else if (f.written > f.synced) {
      file->Truncate(f.synced, rocksdb::IOOptions(), nullptr).PermitUncheckedError();
      f.written = f.synced;
    }
  }
  void note_truncate(const std::string& name, uint64_t size) {
    std::lock_guard<std::mutex> lock{mu_};
    auto& f = files_[name];
    f.written = size;
    if (f.synced > size) f.synced = size;
  }

  class writable_file : public rocksdb::FSWritableFileOwnerWrapper {
   public:
    writable_file(std::unique_ptr<rocksdb::FSWritableFile> base, fault_fs* fs, std::string name, bool wal)
        : FSWritableFileOwnerWrapper(std::move(base)), fs_(fs), name_(std::move(name)), wal_(wal) {}

    rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& o,
                             rocksdb::IODebugContext* dbg) override {
      if (auto s = before_append(); !s.ok()) return s;
      auto s = target()->Append(data, o, dbg);
      if (s.ok()) fs_->note_append(name_, data.size());
      return s;
    }
    rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& o,
                             const rocksdb::DataVerificationInfo& info, rocksdb::IODebugContext* dbg) override {
      if (auto s = before_append(); !s.ok()) return s;
      auto s = target()->Append(data, o, info, dbg);
      if (s.ok()) fs_->note_append(name_, data.size());
      return s;
    }
    rocksdb::IOStatus PositionedAppend(const rocksdb::Slice& data, uint64_t offset, const rocksdb::IOOptions& o,
                                       rocksdb::IODebugContext* dbg) override {
      if (auto s = before_append(); !s.ok()) return s;
      auto s = target()->PositionedAppend(data, offset, o, dbg);
      if (s.ok()) fs_->note_truncate(name_, offset + data.size());
      return s;
    }
    rocksdb::IOStatus PositionedAppend(const rocksdb::Slice& data, uint64_t offset, const rocksdb::IOOptions& o,
                                       const rocksdb::DataVerificationInfo& info,
                                       rocksdb::IODebugContext* dbg) override {
      if (auto s = before_append(); !s.ok()) return s;
      auto s = target()->PositionedAppend(data, offset, o, info, dbg);
      if (s.ok()) fs_->note_truncate(name_, offset + data.size());
      return s;
    }
    rocksdb::IOStatus Truncate(uint64_t size, const rocksdb::IOOptions& o, rocksdb::IODebugContext* dbg) override {
      if (fs_->dead()) return fs_->injected("truncate after power loss");
      auto s = target()->Truncate(size, o, dbg);
      if (s.ok()) fs_->note_truncate(name_, size);
      return s;
    }
    rocksdb::IOStatus Sync(const rocksdb::IOOptions& o, rocksdb::IODebugContext* dbg) override {
      return sync(o, dbg, false);
    }
    rocksdb::IOStatus Fsync(const rocksdb::IOOptions& o, rocksdb::IODebugContext* dbg) override {
      return sync(o, dbg, true);
    }
    // A hint to start writeback, not a durability point: neither counted nor failed.
    rocksdb::IOStatus RangeSync(uint64_t, uint64_t, const rocksdb::IOOptions&, rocksdb::IODebugContext*) override {
      return rocksdb::IOStatus::OK();
    }

   private:
    rocksdb::IOStatus before_append() {
      if (wal_ && fs_->mode() == fail::wal_append) return fs_->injected("WAL append");
      if (fs_->full_.load()) {
        fs_->failures_.fetch_add(1);
        return rocksdb::IOStatus::NoSpace("injected: no space left on device");
      }
      if (fs_->should_fail(kind::append)) return fs_->injected("append");
      return rocksdb::IOStatus::OK();
    }
    rocksdb::IOStatus sync(const rocksdb::IOOptions& o, rocksdb::IODebugContext* dbg, bool full) {
      bool fail_now = (wal_ && fs_->mode() == fail::wal_sync) || fs_->should_fail(kind::sync);
      if (fail_now) {
        if (!fs_->dead()) fs_->note_sync(name_, false, target());
        return fs_->injected(wal_ ? "WAL sync" : "sync");
      }
      auto s = full ? target()->Fsync(o, dbg) : target()->Sync(o, dbg);
      fs_->note_sync(name_, s.ok(), target());
      return s;
    }

    fault_fs* fs_;
    std::string name_;
    bool wal_;
  };

  class sequential_file : public rocksdb::FSSequentialFileOwnerWrapper {
   public:
    sequential_file(std::unique_ptr<rocksdb::FSSequentialFile> base, fault_fs* fs)
        : FSSequentialFileOwnerWrapper(std::move(base)), fs_(fs) {}
    rocksdb::IOStatus Read(size_t n, const rocksdb::IOOptions& o, rocksdb::Slice* result, char* scratch,
                           rocksdb::IODebugContext* dbg) override {
      if (fs_->should_fail(kind::read)) return fs_->injected("read");
      return target()->Read(n, o, result, scratch, dbg);
    }
    rocksdb::IOStatus PositionedRead(uint64_t offset, size_t n, const rocksdb::IOOptions& o,
                                     rocksdb::Slice* result, char* scratch, rocksdb::IODebugContext* dbg) override {
      if (fs_->should_fail(kind::read)) return fs_->injected("read");
      return target()->PositionedRead(offset, n, o, result, scratch, dbg);
    }

   private:
    fault_fs* fs_;
  };

  class random_file : public rocksdb::FSRandomAccessFileOwnerWrapper {
   public:
    random_file(std::unique_ptr<rocksdb::FSRandomAccessFile> base, fault_fs* fs)
        : FSRandomAccessFileOwnerWrapper(std::move(base)), fs_(fs) {}
    rocksdb::IOStatus Read(uint64_t offset, size_t n, const rocksdb::IOOptions& o, rocksdb::Slice* result,
                           char* scratch, rocksdb::IODebugContext* dbg) const override {
      if (fs_->should_fail(kind::read)) return fs_->injected("read");
      return target()->Read(offset, n, o, result, scratch, dbg);
    }
    rocksdb::IOStatus MultiRead(rocksdb::FSReadRequest* reqs, size_t num_reqs, const rocksdb::IOOptions& o,
                                rocksdb::IODebugContext* dbg) override {
      if (fs_->should_fail(kind::read)) {
        for (size_t i = 0; i < num_reqs; ++i) reqs[i].status = fs_->injected("read");
        return rocksdb::IOStatus::IOError("injected read failure");
      }
      return target()->MultiRead(reqs, num_reqs, o, dbg);
    }
    // Asynchronous reads go through the synchronous path, where faults apply.
    rocksdb::IOStatus ReadAsync(rocksdb::FSReadRequest& req, const rocksdb::IOOptions& o,
                                std::function<void(const rocksdb::FSReadRequest&, void*)> cb, void* cb_arg,
                                void**, rocksdb::IOHandleDeleter*, rocksdb::IODebugContext* dbg) override {
      req.status = Read(req.offset, req.len, o, &req.result, req.scratch, dbg);
      cb(req, cb_arg);
      return rocksdb::IOStatus::OK();
    }

   private:
    fault_fs* fs_;
  };

  rocksdb::IOStatus injected(const char* what) {
    failures_.fetch_add(1);
    return rocksdb::IOStatus::IOError(std::string("injected ") + what + " failure");
  }

  std::atomic<fail> mode_{fail::none};
  std::atomic<bool> full_{false};
  std::atomic<int> failures_{0};
  std::atomic<kind> armed_kind_{kind::append};
  std::atomic<fault> armed_fault_{fault::once};
  std::atomic<uint64_t> armed_n_{never};
  std::atomic<bool> dead_{false};
  std::array<std::atomic<uint64_t>, static_cast<size_t>(kind::count)> counts_{};
  mutable std::mutex mu_;  // guards files_ and dropped_bytes_
  std::map<std::string, file_state> files_;
  uint64_t dropped_bytes_ = 0;  // guarded by mu_
};

// A fault_fs and the RocksDB environment over it, for log_options::env; the
// environment must outlive every database opened with it.
struct fault_env {
  std::shared_ptr<fault_fs> fs = std::make_shared<fault_fs>();
  std::unique_ptr<rocksdb::Env> env = rocksdb::NewCompositeEnv(fs);
};

// An event log in sync mode over `env` (a fault_fs's environment, or the default
// when null); the test stops if it does not open.
inline std::unique_ptr<event_log> open_log(const std::string& path, rocksdb::Env* env) {
  log_options o;
  o.path = path;
  o.mode = durability::sync;
  o.env = env;
  return open_log(o);
}

}  // namespace skein::test
