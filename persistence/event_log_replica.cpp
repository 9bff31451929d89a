// event_log.hpp's sides of the replicated log. The leader's: each write's
// rows of the replicated families split by partition and replicated before
// the write, the partitions' sequences written with the rows. The follower's:
// a partition's message applied with its stream sequence in one batch,
// exactly once.
#include <algorithm>
#include <charconv>
#include <map>
#include <rocksdb/write_batch.h>

#include "persistence/event_log.hpp"
#include "persistence/event_log_internal.hpp"
#include "runtime/model/cluster.hpp"

namespace skein {

using namespace detail;

namespace {

// The meta row holding a partition's applied sequence.
std::string replicated_key(uint32_t partition) { return "replicated/" + std::to_string(partition); }

status read_seq(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* meta, uint32_t partition, uint64_t* seq) {
  std::string value;
  auto s = db->Get(rocksdb::ReadOptions(), meta, replicated_key(partition), &value);
  if (s.IsNotFound()) {
    *seq = 0;
    return status::ok();
  }
  if (!s.ok()) return status::io_error("replicated seq of partition " + std::to_string(partition) + ": " + s.ToString());
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), *seq);
  if (ec != std::errc{} || end != value.data() + value.size())
    return status::corruption("meta row " + replicated_key(partition) + ": \"" + value.substr(0, 32) + "\"");
  return status::ok();
}

}  // namespace

status event_log::replicated_seq(uint32_t partition, uint64_t* seq) const {
  return read_seq(impl_->db.get(), impl_->cf(cf_meta), partition, seq);
}

status event_log::apply_replicated(uint32_t partition, uint64_t seq, const std::vector<replicated_row>& rows,
                                   bool* applied) {
  *applied = false;
  if (!writable()) return refusal();
  for (size_t i = 0; i < rows.size(); ++i)
    if (rows[i].family >= cf_count || rows[i].family == cf_meta || rows[i].family == cf_default)
      return status::invalid_input("replicated row " + std::to_string(i) + " of " + std::to_string(rows.size()) +
                                   ": family " + std::to_string(rows[i].family) + " is not a replicated one")
          .with_field("rows");
  uint64_t done = 0;
  SKEIN_TRY(read_seq(impl_->db.get(), impl_->cf(cf_meta), partition, &done));
  if (seq <= done) return status::ok();  // applied before: once is enough
  rocksdb::WriteBatch batch;
  for (const auto& r : rows) {
    auto* cf = impl_->cf(static_cast<cf_id>(r.family));
    rocksdb::Status s;
    switch (r.kind) {
      case replicated_row::op::put: s = batch.Put(cf, r.key, r.value); break;
      case replicated_row::op::erase: s = batch.Delete(cf, r.key); break;
      case replicated_row::op::erase_range: s = batch.DeleteRange(cf, r.key, r.value); break;
    }
    if (!s.ok()) return status::io_error("replicated batch: " + s.ToString());
  }
  auto s = batch.Put(impl_->cf(cf_meta), replicated_key(partition), std::to_string(seq));
  if (!s.ok()) return status::io_error("replicated batch: " + s.ToString());
  SKEIN_TRY(write(&batch, 0, nullptr));  // a failed write latches the log, as a tick's does
  *applied = true;
  return status::ok();
}

namespace detail {

std::string side_route(const side_row& row) {
  std::string_view key = row.key;
  if (row.cf == side_cf::schedules) {
    // "d/" id, or "h/" id 0x00 be64(seq) (keys.hpp)
    key.remove_prefix(std::min<size_t>(2, key.size()));
    return std::string{key.substr(0, key.find('\0'))};
  }
  // work, sessions, suggestions: agent-id "/" ... (work_rows.cpp)
  return work_home_key(key.substr(0, key.find('/')));
}

}  // namespace detail

event_log::route_marks event_log::whole(const rocksdb::WriteBatch& batch, std::string route) {
  return {{static_cast<uint32_t>(batch.Count()), std::move(route)}};
}

namespace {

// Reads a batch's entries back as replicated rows, each with the route of the
// piece it belongs to: rows of the families a replicated log leaves alone
// (default, agents, meta: this node's own) are skipped.
class batch_splitter : public rocksdb::WriteBatch::Handler {
 public:
  using route_marks = std::vector<std::pair<uint32_t, const std::string*>>;
  batch_splitter(const std::map<uint32_t, uint8_t>& families, route_marks marks)
      : families_(families), marks_(std::move(marks)) {}

  rocksdb::Status PutCF(uint32_t cf, const rocksdb::Slice& key, const rocksdb::Slice& value) override {
    return add(cf, replicated_row::op::put, key, value);
  }
  rocksdb::Status DeleteCF(uint32_t cf, const rocksdb::Slice& key) override {
    return add(cf, replicated_row::op::erase, key, {});
  }
  rocksdb::Status SingleDeleteCF(uint32_t cf, const rocksdb::Slice& key) override {
    return add(cf, replicated_row::op::erase, key, {});
  }
  rocksdb::Status DeleteRangeCF(uint32_t cf, const rocksdb::Slice& begin, const rocksdb::Slice& end) override {
    return add(cf, replicated_row::op::erase_range, begin, end);
  }
  rocksdb::Status MergeCF(uint32_t, const rocksdb::Slice&, const rocksdb::Slice&) override {
    return rocksdb::Status::NotSupported("a merge cannot be replicated");
  }

  // The rows of each route, in batch order; the first entry of a replicated
  // family outside every mark, if any.
  std::map<const std::string*, std::vector<replicated_row>> by_route;
  std::optional<size_t> unrouted;

 private:
  rocksdb::Status add(uint32_t cf, replicated_row::op kind, const rocksdb::Slice& key, const rocksdb::Slice& value) {
    const size_t index = entry_++;
    auto f = families_.find(cf);
    if (f == families_.end()) return rocksdb::Status::Corruption("an entry of an unknown column family");
    if (f->second == cf_default || f->second == cf_agents || f->second == cf_meta) return rocksdb::Status::OK();
    while (mark_ < marks_.size() && index >= marks_[mark_].first) ++mark_;
    if (mark_ == marks_.size()) {
      if (!unrouted) unrouted = index;
      return rocksdb::Status::OK();
    }
    by_route[marks_[mark_].second].push_back({f->second, kind, key.ToString(), value.ToString()});
    return rocksdb::Status::OK();
  }

  const std::map<uint32_t, uint8_t>& families_;
  route_marks marks_;
  size_t entry_ = 0, mark_ = 0;
};

}  // namespace

status event_log::replicate(rocksdb::WriteBatch* batch, const route_marks& routes) {
  if (families_.empty())  // RocksDB's column family ids -> cf_id: fixed once the log is open
    for (size_t i = 0; i < cf_count; ++i) families_[impl_->cfs[i]->GetID()] = static_cast<uint8_t>(i);
  batch_splitter::route_marks marks;
  marks.reserve(routes.size());
  for (const auto& r : routes) marks.emplace_back(r.end, &r.route);
  batch_splitter split{families_, std::move(marks)};
  SKEIN_TRY(from_rocks(batch->Iterate(&split), "split a batch by partition"));
  if (split.unrouted)
    return status::invalid_input("entry " + std::to_string(*split.unrouted + 1) +
                                 " of a write belongs to no thread or schedule: a replicated log cannot carry it");
  if (split.by_route.empty()) return status::ok();
  // One part per partition, its rows in batch order (routes in mark order).
  std::map<uint32_t, size_t> part_of;
  std::vector<replicated_part> parts;
  for (const auto& r : routes) {
    auto it = split.by_route.find(&r.route);
    if (it == split.by_route.end()) continue;
    uint32_t p = options_.replicator->partition_of(r.route);
    if (unsettled_.count(p))
      return status::unavailable("partition " + std::to_string(p) +
                                 ": an earlier append's outcome is unknown; its log must be applied first");
    auto [slot, fresh] = part_of.emplace(p, parts.size());
    if (fresh) parts.push_back({p, {}, 0});
    auto& rows = parts[slot->second].rows;
    std::move(it->second.begin(), it->second.end(), std::back_inserter(rows));
    split.by_route.erase(it);
  }
  if (status s = options_.replicator->replicate(parts); !s) {
    // A part stored (its seq set), or any part when the refusal is no
    // conflict (a timeout: it may be stored), holds rows this disk lacks: the
    // next write there would be prepared over them.
    const bool certain = s.code() == errc::conflict || s.code() == errc::invalid_input;
    for (const auto& part : parts)
      if (part.seq != 0 || !certain) unsettled_.insert(part.partition);
    unsettled_count_.store(unsettled_.size(), std::memory_order_release);
    // To the writer's callers a partition led elsewhere is as a timeout is:
    // not acknowledged, to be retried (its leader serves it).
    if (s.code() == errc::conflict) return status::unavailable(s.message() + ": retry: its partition's leader serves it");
    return s;
  }
  for (const auto& part : parts) {
    auto s = batch->Put(impl_->cf(cf_meta), replicated_key(part.partition), std::to_string(part.seq));
    if (!s.ok()) return from_rocks(s, "replicated seq");
  }
  return status::ok();
}

void event_log::resume_partition(uint32_t partition) {
  unsettled_.erase(partition);
  unsettled_count_.store(unsettled_.size(), std::memory_order_release);
  cache_.clear();
}

}  // namespace skein
