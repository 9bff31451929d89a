// event_log.hpp's follower side of the replicated log: a partition's message
// applied with its stream sequence in one batch, exactly once.
#include <charconv>

#include "persistence/event_log.hpp"
#include "persistence/event_log_internal.hpp"

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
    auto s = r.erase ? batch.Delete(cf, r.key) : batch.Put(cf, r.key, r.value);
    if (!s.ok()) return status::io_error("replicated batch: " + s.ToString());
  }
  auto s = batch.Put(impl_->cf(cf_meta), replicated_key(partition), std::to_string(seq));
  if (!s.ok()) return status::io_error("replicated batch: " + s.ToString());
  SKEIN_TRY(write(&batch, 0));  // a failed write latches the log, as a tick's does
  *applied = true;
  return status::ok();
}

}  // namespace skein
