// The schedules column family: definition rows and firing history (keys in
// keys.cpp, values in runtime/model/schedule.cpp). Written only as tick rows
// (tick::schedule_rows), through the journal like every other write.
#include <cassert>
#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include "persistence/event_log.hpp"
#include "persistence/event_log_internal.hpp"
#include "persistence/keys.hpp"
#include "runtime/model/ids.hpp"

namespace skein {

using namespace detail;

status schedule_rows_of(const schedule& s, const schedule_firing* f, std::vector<schedule_row>* out) {
  std::string value;
  SKEIN_TRY(encode_schedule(s, &value));
  out->push_back({schedule_row::op::put, keys::schedule_key(s.id), std::move(value)});
  if (f == nullptr) return status::ok();
  assert(f->seq == s.history_seq);  // the row's key is the schedule's history count
  assert(f->schedule_id == s.id);   // a firing belongs to the schedule it is written with
  SKEIN_TRY(encode_firing(*f, &value));
  out->push_back({schedule_row::op::put, keys::schedule_history_key(s.id, f->seq), std::move(value)});
  // The row that falls out of the newest schedule_history_max: the history stays bounded.
  if (f->seq > schedule_history_max)
    out->push_back({schedule_row::op::erase, keys::schedule_history_key(s.id, f->seq - schedule_history_max), {}});
  return status::ok();
}

std::vector<schedule_row> schedule_erase_rows(std::string_view schedule_id) {
  std::vector<schedule_row> rows;
  rows.push_back({schedule_row::op::erase, keys::schedule_key(schedule_id), {}});
  rows.push_back({schedule_row::op::erase_range, keys::schedule_history_prefix(schedule_id),
                  keys::schedule_history_end(schedule_id)});
  return rows;
}

status event_log::prepare_schedule_rows(const tick& t, rocksdb::WriteBatch* batch) const {
  for (const auto& r : t.schedule_rows) {
    // Only the two key shapes of keys.cpp: a tick cannot write elsewhere through here.
    if (r.key.size() < 3 || (r.key.compare(0, 2, "d/") != 0 && r.key.compare(0, 2, "h/") != 0))
      return status::invalid_input("tick.schedule_rows: key " + printable_key(r.key) +
                                   " is neither a schedule nor a history key");
    switch (r.kind) {
      case schedule_row::op::put:
        if (r.value.size() > options_.limits.json_bytes_max)
          return status::invalid_input("tick.schedule_rows: value exceeds json_bytes_max").with_limit("json_bytes_max");
        batch->Put(impl_->cf(cf_schedules), r.key, r.value);
        break;
      case schedule_row::op::erase:
        batch->Delete(impl_->cf(cf_schedules), r.key);
        break;
      case schedule_row::op::erase_range:
        if (!(r.key < r.value)) return status::invalid_input("tick.schedule_rows: empty erase range");
        batch->DeleteRange(impl_->cf(cf_schedules), r.key, r.value);
        break;
    }
  }
  return status::ok();
}

status event_log::read_schedule(std::string_view id, schedule* out) const {
  SKEIN_TRY(validate_id(id, "schedule id"));
  std::string value;
  auto s = impl_->db->Get(rocksdb::ReadOptions(), impl_->cf(cf_schedules), keys::schedule_key(id), &value);
  if (s.IsNotFound()) return status::not_found("schedule " + std::string{id} + " does not exist");
  SKEIN_TRY(from_rocks(s, "read schedule"));
  if (status d = decode_schedule(value, out, options_.limits); !d)
    return status::corruption("schedules key " + keys::schedule_key(id) + ": " + d.message());
  return status::ok();
}

status event_log::list_schedules(std::string_view after_id, size_t limit, std::vector<schedule>* out,
                                 std::string* next) const {
  if (limit == 0 || limit > schedule_page_max)
    return status::invalid_input("limit: must be between 1 and schedule_page_max (" +
                                 std::to_string(schedule_page_max) + ")")
        .with_field("limit")
        .with_limit("schedule_page_max");
  if (!after_id.empty()) SKEIN_TRY(validate_id(after_id, "cursor"));
  std::string start = keys::schedule_key(after_id);  // before *next is cleared: the caller may pass it as after_id
  out->clear();
  next->clear();
  std::unique_ptr<rocksdb::Iterator> it{impl_->db->NewIterator(rocksdb::ReadOptions(), impl_->cf(cf_schedules))};
  it->Seek(start);
  if (!after_id.empty() && it->Valid() && it->key().ToStringView() == start) it->Next();
  for (; it->Valid() && it->key().starts_with("d/"); it->Next()) {
    if (out->size() == limit) {
      *next = out->back().id;
      break;
    }
    schedule s;
    if (status d = decode_schedule(it->value().ToStringView(), &s, options_.limits); !d)
      return status::corruption("schedules key " + printable_key(it->key().ToStringView()) + ": " + d.message());
    out->push_back(std::move(s));
  }
  return from_rocks(it->status(), "scan schedules");
}

status event_log::scan_schedules(const std::function<void(schedule&&)>& fn) const {
  std::unique_ptr<rocksdb::Iterator> it{impl_->db->NewIterator(rocksdb::ReadOptions(), impl_->cf(cf_schedules))};
  for (it->Seek("d/"); it->Valid() && it->key().starts_with("d/"); it->Next()) {
    schedule s;
    if (status d = decode_schedule(it->value().ToStringView(), &s, options_.limits); !d)
      return status::corruption("schedules key " + printable_key(it->key().ToStringView()) + ": " + d.message());
    fn(std::move(s));
  }
  return from_rocks(it->status(), "scan schedules");
}

status event_log::schedule_history(std::string_view id, uint64_t before_seq, size_t limit,
                                   std::vector<schedule_firing>* out, uint64_t* next) const {
  SKEIN_TRY(validate_id(id, "schedule id"));
  if (limit == 0 || limit > schedule_page_max)
    return status::invalid_input("limit: must be between 1 and schedule_page_max (" +
                                 std::to_string(schedule_page_max) + ")")
        .with_field("limit")
        .with_limit("schedule_page_max");
  out->clear();
  *next = 0;
  std::string prefix = keys::schedule_history_prefix(id);
  std::unique_ptr<rocksdb::Iterator> it{impl_->db->NewIterator(rocksdb::ReadOptions(), impl_->cf(cf_schedules))};
  if (before_seq == 0) it->SeekForPrev(keys::schedule_history_end(id));
  else it->SeekForPrev(keys::schedule_history_key(id, before_seq - 1));
  for (; it->Valid() && it->key().starts_with(prefix); it->Prev()) {
    if (out->size() == limit) {
      *next = out->back().seq;
      break;
    }
    schedule_firing f;
    if (status d = decode_firing(it->value().ToStringView(), &f, options_.limits); !d)
      return status::corruption("schedules key " + printable_key(it->key().ToStringView()) + ": " + d.message());
    out->push_back(std::move(f));
  }
  return from_rocks(it->status(), "scan schedule history");
}

}  // namespace skein
