// fault_fs: a RocksDB file system that fails WAL appends or syncs on command.
//
// A failed sync also drops the WAL bytes written since the last good sync, as the
// OS may after a failed fsync (its dirty pages are gone): nothing that was not
// acknowledged as durable survives. Thread-safe switches; wrap with
// rocksdb::NewCompositeEnv() and pass the Env in log_options::env.
#pragma once

#include <atomic>
#include <rocksdb/file_system.h>
#include <string>

namespace skein::test {

class fault_fs : public rocksdb::FileSystemWrapper {
 public:
  enum class fail { none, wal_append, wal_sync };

  fault_fs() : FileSystemWrapper(rocksdb::FileSystem::Default()) {}

  static const char* kClassName() { return "skein_test_fault_fs"; }
  const char* Name() const override { return kClassName(); }

  void set(fail f) { mode_.store(f); }
  fail mode() const { return mode_.load(); }
  int failures() const { return failures_.load(); }

  rocksdb::IOStatus NewWritableFile(const std::string& name, const rocksdb::FileOptions& options,
                                    std::unique_ptr<rocksdb::FSWritableFile>* out,
                                    rocksdb::IODebugContext* dbg) override {
    auto s = target()->NewWritableFile(name, options, out, dbg);
    if (s.ok() && name.size() > 4 && name.compare(name.size() - 4, 4, ".log") == 0)
      out->reset(new wal_file(std::move(*out), this));
    return s;
  }

 private:
  class wal_file : public rocksdb::FSWritableFileOwnerWrapper {
   public:
    wal_file(std::unique_ptr<rocksdb::FSWritableFile> base, fault_fs* fs)
        : FSWritableFileOwnerWrapper(std::move(base)), fs_(fs) {}

    rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& o,
                             rocksdb::IODebugContext* dbg) override {
      if (fs_->mode() == fail::wal_append) return fs_->injected("WAL append");
      appended_ += data.size();
      return target()->Append(data, o, dbg);
    }
    rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& o,
                             const rocksdb::DataVerificationInfo& info,
                             rocksdb::IODebugContext* dbg) override {
      if (fs_->mode() == fail::wal_append) return fs_->injected("WAL append");
      appended_ += data.size();
      return target()->Append(data, o, info, dbg);
    }
    rocksdb::IOStatus Sync(const rocksdb::IOOptions& o, rocksdb::IODebugContext* dbg) override {
      return sync(o, dbg, false);
    }
    rocksdb::IOStatus Fsync(const rocksdb::IOOptions& o, rocksdb::IODebugContext* dbg) override {
      return sync(o, dbg, true);
    }

   private:
    rocksdb::IOStatus sync(const rocksdb::IOOptions& o, rocksdb::IODebugContext* dbg, bool full) {
      if (fs_->mode() == fail::wal_sync) {
        target()->Truncate(synced_, o, dbg).PermitUncheckedError();
        appended_ = synced_;
        return fs_->injected("WAL sync");
      }
      auto s = full ? target()->Fsync(o, dbg) : target()->Sync(o, dbg);
      if (s.ok()) synced_ = appended_;
      return s;
    }

    fault_fs* fs_;
    uint64_t appended_ = 0;
    uint64_t synced_ = 0;
  };

  rocksdb::IOStatus injected(const char* what) {
    failures_.fetch_add(1);
    return rocksdb::IOStatus::IOError(std::string("injected ") + what + " failure");
  }

  std::atomic<fail> mode_{fail::none};
  std::atomic<int> failures_{0};
};

}  // namespace skein::test
