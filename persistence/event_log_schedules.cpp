// The side column families: schedules (definition rows and firing history; keys
// in keys.cpp, values in runtime/model/schedule.cpp) and the work-item families
// (work, graph, sessions, suggestions; persistence/work_rows.cpp). Written only
// as tick rows (tick::side_rows), through the journal like every other write.
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

std::string_view to_string(side_cf cf) {
  switch (cf) {
    case side_cf::schedules: return "schedules";
    case side_cf::work: return "work";
    case side_cf::graph: return "graph";
    case side_cf::sessions: return "sessions";
    case side_cf::suggestions: return "suggestions";
  }
  return "schedules";
}

namespace {

// Only the key shapes of keys.cpp: a tick cannot write elsewhere through here.
bool side_key_shape_ok(side_cf cf, std::string_view key) {
  if (key.size() < 3) return false;
  switch (cf) {
    case side_cf::schedules: return key.starts_with("d/") || key.starts_with("h/");
    case side_cf::graph: return key.starts_with("s/") || key.starts_with("o/") || key.starts_with("g/");
    case side_cf::work:
    case side_cf::sessions:
    case side_cf::suggestions: {
      size_t slash = key.find('/');
      return slash != 0 && slash != std::string_view::npos && slash + 1 < key.size();
    }
  }
  return false;
}

}  // namespace

status event_log::prepare_side_rows(const tick& t, rocksdb::WriteBatch* batch) const {
  for (const auto& r : t.side_rows) {
    std::string where = "tick.side_rows (" + std::string{to_string(r.cf)} + ")";
    if (!side_key_shape_ok(r.cf, r.key))
      return status::invalid_input(where + ": key " + printable_key(r.key) + " is not a key of that column family");
    auto* cf = impl_->cf(cf_of(r.cf));
    switch (r.kind) {
      case side_row::op::put:
        if (r.value.size() > options_.limits.json_bytes_max)
          return status::invalid_input(where + ": value exceeds json_bytes_max").with_limit("json_bytes_max");
        batch->Put(cf, r.key, r.value);
        break;
      case side_row::op::erase:
        batch->Delete(cf, r.key);
        break;
      case side_row::op::erase_range:
        if (!(r.key < r.value)) return status::invalid_input(where + ": empty erase range");
        batch->DeleteRange(cf, r.key, r.value);
        break;
    }
  }
  return status::ok();
}

status event_log::read_side(side_cf cf, std::string_view key, std::string* value) const {
  auto s = impl_->db->Get(rocksdb::ReadOptions(), impl_->cf(cf_of(cf)), key, value);
  if (s.IsNotFound()) return status::not_found(std::string{to_string(cf)} + " key " + printable_key(key) + " does not exist");
  return from_rocks(s, "read " + std::string{to_string(cf)});
}

status event_log::scan_side(side_cf cf, std::string_view prefix,
                            const std::function<bool(std::string_view key, std::string_view value)>& fn) const {
  std::unique_ptr<rocksdb::Iterator> it{impl_->db->NewIterator(rocksdb::ReadOptions(), impl_->cf(cf_of(cf)))};
  for (it->Seek(rocksdb::Slice(prefix.data(), prefix.size())); it->Valid(); it->Next()) {
    std::string_view key = it->key().ToStringView();
    if (!key.starts_with(prefix)) break;
    if (!fn(key, it->value().ToStringView())) break;
  }
  return from_rocks(it->status(), "scan " + std::string{to_string(cf)});
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
