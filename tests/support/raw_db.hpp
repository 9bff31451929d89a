// Direct RocksDB access for tests that plant or inspect keys the event log API
// does not expose (other column families, corrupt values, a newer schema).
// Open only while no event_log has the database open.
#pragma once

#include <memory>
#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace skein::test {

class raw_db {
 public:
  explicit raw_db(const std::string& path) {
    std::vector<std::string> names;
    check(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), path, &names));
    std::vector<rocksdb::ColumnFamilyDescriptor> descriptors;
    for (const auto& n : names) descriptors.emplace_back(n, rocksdb::ColumnFamilyOptions());
    rocksdb::DB* db = nullptr;
    check(rocksdb::DB::Open(rocksdb::DBOptions(), path, descriptors, &handles_, &db));
    db_.reset(db);
    names_ = names;
  }
  ~raw_db() {
    for (auto* h : handles_) db_->DestroyColumnFamilyHandle(h).PermitUncheckedError();
    db_->Close().PermitUncheckedError();
  }

  void put(const std::string& cf, const std::string& key, const std::string& value) {
    rocksdb::WriteOptions wo;
    wo.sync = true;
    check(db_->Put(wo, handle(cf), key, value));
  }

  // Many keys in one synced batch (a planted column family of thousands of rows).
  void put_many(const std::string& cf, const std::vector<std::pair<std::string, std::string>>& rows) {
    rocksdb::WriteBatch batch;
    for (const auto& [k, v] : rows) check(batch.Put(handle(cf), k, v));
    rocksdb::WriteOptions wo;
    wo.sync = true;
    check(db_->Write(wo, &batch));
  }

  void del(const std::string& cf, const std::string& key) {
    rocksdb::WriteOptions wo;
    wo.sync = true;
    check(db_->Delete(wo, handle(cf), key));
  }

  bool get(const std::string& cf, const std::string& key, std::string* value) {
    auto s = db_->Get(rocksdb::ReadOptions(), handle(cf), key, value);
    if (s.IsNotFound()) return false;
    check(s);
    return true;
  }

  const std::vector<std::string>& names() const { return names_; }

  std::vector<std::string> keys(const std::string& cf) {
    rocksdb::ReadOptions ro;
    ro.total_order_seek = true;
    std::unique_ptr<rocksdb::Iterator> it{db_->NewIterator(ro, handle(cf))};
    std::vector<std::string> out;
    for (it->SeekToFirst(); it->Valid(); it->Next()) out.push_back(it->key().ToString());
    check(it->status());
    return out;
  }

 private:
  static void check(const rocksdb::Status& s) {
    if (!s.ok()) throw std::runtime_error("raw_db: " + s.ToString());
  }
  rocksdb::ColumnFamilyHandle* handle(const std::string& cf) {
    for (size_t i = 0; i < names_.size(); ++i)
      if (names_[i] == cf) return handles_[i];
    throw std::runtime_error("raw_db: no column family " + cf);
  }

  std::unique_ptr<rocksdb::DB> db_;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
  std::vector<std::string> names_;
};

}  // namespace skein::test
