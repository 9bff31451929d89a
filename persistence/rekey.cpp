// rekey (rekey.hpp): the copy into <dir>.rekey and the two-rename swap.
#include "persistence/rekey.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/write_batch.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include "persistence/event_log_internal.hpp"

namespace skein {
namespace {

namespace fs = std::filesystem;

constexpr size_t batch_keys_max = 1024;
constexpr size_t batch_bytes_max = 4 << 20;

// RocksDB writes no informational LOG for the rekey's own opens: the live one
// is event_log.cpp's, and an encrypted env would encrypt it.
class no_log final : public rocksdb::Logger {
 public:
  using rocksdb::Logger::Logv;
  void Logv(const char*, va_list) override {}
};

bool exists(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0;
}

std::string parent_of(const std::string& dir) {
  std::string p = fs::path(dir).parent_path().string();
  return p.empty() ? "." : p;
}

status errno_status(const std::string& what) {
  int e = errno;
  return e == ENOSPC ? status::no_space(what + ": " + std::strerror(e)) : status::io_error(what + ": " + std::strerror(e));
}

status fsync_path(const std::string& path, bool dir) {
  int fd = ::open(path.c_str(), (dir ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
  if (fd < 0) return errno_status("open " + path);
  int r = ::fsync(fd);
  ::close(fd);
  return r == 0 ? status::ok() : errno_status("fsync " + path);
}

status rename_path(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) return errno_status("rename " + from + " to " + to);
  return fsync_path(parent_of(to), true);
}

status remove_tree(const std::string& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
  if (ec) return status::io_error("remove " + path + ": " + ec.message());
  return fsync_path(parent_of(path), true);
}

// Every file of the tree and the directory itself on disk.
status fsync_tree(const std::string& dir) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.is_regular_file()) SKEIN_TRY(fsync_path(entry.path().string(), false));
  if (ec) return status::io_error("list " + dir + ": " + ec.message());
  return fsync_path(dir, true);
}

// Whether another process holds RocksDB's LOCK of `dir` (a rekey or a server
// using it): recovery then leaves everything to it.
bool locked_elsewhere(const std::string& dir) {
  int fd = ::open((dir + "/LOCK").c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return false;
  struct flock fl{};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  bool held = ::fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
  ::close(fd);
  return held;
}

status from_open(const rocksdb::Status& s, const std::string& dir) {
  std::string text = s.ToString();
  if (s.IsIOError() && (text.find("lock") != std::string::npos || text.find("LOCK") != std::string::npos))
    return status::conflict("database at " + dir +
                            " is in use by another process (its LOCK is held): stop it before a rekey");
  return detail::from_rocks(s, "open " + dir);
}

struct open_db {
  std::unique_ptr<encrypted_env> env;  // outlives db (declared first)
  std::unique_ptr<rocksdb::DB> db;
  std::vector<rocksdb::ColumnFamilyHandle*> cfs;
  std::vector<std::string> names;

  ~open_db() { close().ignore(); }
  status close() {
    status out;
    for (auto* h : cfs) db->DestroyColumnFamilyHandle(h).PermitUncheckedError();
    cfs.clear();
    if (db) {
      auto s = db->Close();
      if (!s.ok()) out = detail::from_rocks(s, "close");
      db.reset();
    }
    return out;
  }
};

rocksdb::DBOptions db_options(rocksdb::Env* env) {
  rocksdb::DBOptions o;
  o.env = env != nullptr ? env : rocksdb::Env::Default();
  o.info_log = std::make_shared<no_log>();
  return o;
}

status open_families(const std::string& dir, const rocksdb::DBOptions& o, open_db* out) {
  std::vector<rocksdb::ColumnFamilyDescriptor> descriptors;
  for (const auto& n : out->names) descriptors.emplace_back(n, rocksdb::ColumnFamilyOptions());
  rocksdb::DB* raw = nullptr;
  auto s = rocksdb::DB::Open(o, dir, descriptors, &out->cfs, &raw);
  if (!s.ok()) return from_open(s, dir);
  out->db.reset(raw);
  return status::ok();
}

status copy_family(open_db& from, open_db& to, size_t i,
                   const std::function<void(const rekey_progress&)>& progress) {
  rocksdb::ReadOptions ro;
  ro.total_order_seek = true;  // the families' prefix extractors are not set here
  ro.fill_cache = false;
  rocksdb::WriteOptions wo;
  wo.disableWAL = true;  // flushed and synced before the swap; a crash before it discards the copy
  std::unique_ptr<rocksdb::Iterator> it{from.db->NewIterator(ro, from.cfs[i])};
  rocksdb::WriteBatch batch;
  rekey_progress p;
  p.family = from.names[i];
  size_t in_batch = 0;
  auto write = [&]() -> status {
    auto s = to.db->Write(wo, &batch);
    if (!s.ok()) return detail::from_rocks(s, "write to the new database");
    batch.Clear();
    in_batch = 0;
    p.at = rekey_progress::phase::copied;
    if (progress) progress(p);
    return status::ok();
  };
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    auto s = batch.Put(to.cfs[i], it->key(), it->value());
    if (!s.ok()) return detail::from_rocks(s, "batch");
    ++p.keys;
    p.bytes += it->key().size() + it->value().size();
    if (++in_batch >= batch_keys_max || batch.GetDataSize() >= batch_bytes_max) SKEIN_TRY(write());
  }
  if (!it->status().ok()) return detail::from_rocks(it->status(), "read " + from.names[i]);
  if (in_batch > 0) SKEIN_TRY(write());
  p.at = rekey_progress::phase::family_done;
  if (progress) progress(p);
  return status::ok();
}

std::string trimmed(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

// Steps 1 and 2 (rekey.hpp): the complete new database in `fresh`.
status write_copy(const std::string& dir, const std::string& fresh, const master_key* old_key,
                  const master_key* new_key, const std::function<void(const rekey_progress&)>& progress) {
  rekey_progress p;
  open_db from;
  if (old_key != nullptr && !has_database_key(dir) && exists(dir + "/CURRENT"))
    return status::invalid_input("database at " + dir + " is not encrypted: rekey it with no old key").with_field("key");
  SKEIN_TRY(open_database_key(dir, old_key, nullptr, false, &from.env));
  rocksdb::DBOptions fo = db_options(from.env ? from.env->env() : nullptr);
  if (!exists(dir + "/CURRENT")) return status::not_found("no database at " + dir);
  auto s = rocksdb::DB::ListColumnFamilies(fo, dir, &from.names);
  if (!s.ok()) return detail::from_rocks(s, "list the column families of " + dir);
  SKEIN_TRY(open_families(dir, fo, &from));
  p.at = rekey_progress::phase::opened;
  if (progress) progress(p);

  if (::mkdir(fresh.c_str(), 0755) != 0) return errno_status("mkdir " + fresh);
  open_db to;
  to.names = from.names;
  // With a new key: a new SKEIN-KEY (a new random data key) in the empty directory.
  if (new_key != nullptr) SKEIN_TRY(open_database_key(fresh, new_key, nullptr, true, &to.env));
  p.at = rekey_progress::phase::key_written;
  if (progress) progress(p);
  rocksdb::DBOptions to_options = db_options(to.env ? to.env->env() : nullptr);
  to_options.create_if_missing = true;
  to_options.create_missing_column_families = true;
  SKEIN_TRY(open_families(fresh, to_options, &to));

  for (size_t i = 0; i < from.names.size(); ++i) SKEIN_TRY(copy_family(from, to, i, progress));
  rocksdb::FlushOptions flush;
  flush.wait = true;
  s = to.db->Flush(flush, to.cfs);
  if (!s.ok()) return detail::from_rocks(s, "flush the new database");
  SKEIN_TRY(to.close());
  SKEIN_TRY(fsync_tree(fresh));
  SKEIN_TRY(from.close());
  p.at = rekey_progress::phase::synced;
  p.family.clear();
  if (progress) progress(p);
  return status::ok();
}

}  // namespace

std::string_view to_string(rekey_progress::phase p) {
  switch (p) {
    case rekey_progress::phase::opened: return "opened";
    case rekey_progress::phase::key_written: return "key_written";
    case rekey_progress::phase::copied: return "copied";
    case rekey_progress::phase::family_done: return "family_done";
    case rekey_progress::phase::synced: return "synced";
    case rekey_progress::phase::renamed_old: return "renamed_old";
    case rekey_progress::phase::swapped: return "swapped";
    case rekey_progress::phase::done: return "done";
  }
  return "unknown";
}

status recover_interrupted_rekey(const std::string& dir_in) {
  std::string dir = trimmed(dir_in);
  std::string old = dir + ".rekey-old", fresh = dir + ".rekey";
  bool has_dir = exists(dir), has_old = exists(old), has_fresh = exists(fresh);
  if (!has_old && !has_fresh) return status::ok();
  if (has_dir && locked_elsewhere(dir)) return status::ok();  // a rekey at work: its business
  if (has_old && !has_dir) {
    SKEIN_TRY(rename_path(old, dir));  // crashed between the renames: roll back
  } else if (has_old) {
    SKEIN_TRY(remove_tree(old));  // crashed after the swap: finish
  }
  if (exists(fresh)) SKEIN_TRY(remove_tree(fresh));  // a copy never swapped in
  return status::ok();
}

status rekey_database(const std::string& dir_in, const master_key* old_key, const master_key* new_key,
                      const std::function<void(const rekey_progress&)>& progress) {
  if (old_key == nullptr && new_key == nullptr)
    return status::invalid_input("rekey: neither an old nor a new key: the database stays plain");
  std::string dir = trimmed(dir_in);
  std::string old = dir + ".rekey-old", fresh = dir + ".rekey";
  SKEIN_TRY(recover_interrupted_rekey(dir));
  if (exists(fresh) || exists(old))
    return status::conflict("rekey of " + dir + ": " + fresh + " or " + old + " is in use by another rekey");
  status copied = write_copy(dir, fresh, old_key, new_key, progress);
  if (!copied) {
    if (exists(fresh)) remove_tree(fresh).ignore();  // nothing was swapped: the old one stands
    return copied;
  }
  rekey_progress p;
  SKEIN_TRY(rename_path(dir, old));
  p.at = rekey_progress::phase::renamed_old;
  if (progress) progress(p);
  if (status s = rename_path(fresh, dir); !s) {
    rename_path(old, dir).ignore();  // roll back; recovery at the next open does it otherwise
    return s;
  }
  p.at = rekey_progress::phase::swapped;
  if (progress) progress(p);
  SKEIN_TRY(remove_tree(old));
  p.at = rekey_progress::phase::done;
  if (progress) progress(p);
  return status::ok();
}

}  // namespace skein
