// Usage queries over the usage column family (value grammar: event_log_tick.cpp).
// Reads only; the rows are written with each run's closing tick.
//
// Cost, by filter: a thread filter is one prefix scan of that thread's rows; an
// agent filter reads the agent's index entries (a/agent/) and scans each of its
// threads' rows; with neither, the whole usage column family is scanned. Rows are
// keyed by thread and seq, not by time, so since/until never narrow a scan: they
// filter each row read.
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <map>
#include <rocksdb/db.h>

#include "persistence/event_log_internal.hpp"
#include "persistence/keys.hpp"
#include "runtime/model/ids.hpp"
#include "runtime/model/json_reader.hpp"

namespace skein {

using namespace detail;

namespace {

status decode_usage_row(std::string_view value, usage_row* out, const json_limits& limits) {
  json::document doc;
  SKEIN_TRY(json::parse(value, limits, "usage row", &doc));
  json::object_reader r;
  SKEIN_TRY(json::object_reader::open(doc.root(), "usage", &r));
  SKEIN_TRY(r.int64("ts", &out->ts_ms));
  SKEIN_TRY(r.string("thread", &out->thread_id));
  SKEIN_TRY(r.uint("seq", &out->seq));
  SKEIN_TRY(r.string("agent_id", &out->agent_id));
  simdjson::dom::element u;
  SKEIN_TRY(r.element("usage", &u));
  json::object_reader ur;
  SKEIN_TRY(json::object_reader::open(u, r.name("usage"), &ur));
  SKEIN_TRY(ur.uint("input_tokens", &out->usage.input_tokens));
  SKEIN_TRY(ur.uint("output_tokens", &out->usage.output_tokens));
  SKEIN_TRY(ur.uint("cache_read_tokens", &out->usage.cache_read_tokens));
  SKEIN_TRY(ur.uint("cache_write_tokens", &out->usage.cache_write_tokens));
  SKEIN_TRY(r.number("cost_usd", &out->cost_usd));
  SKEIN_TRY(r.uint("duration_ms", &out->duration_ms));
  return status::ok();
}

}  // namespace

std::string_view to_string(usage_query::group g) {
  switch (g) {
    case usage_query::group::none: return "none";
    case usage_query::group::agent: return "agent";
    case usage_query::group::thread: return "thread";
    case usage_query::group::day: return "day";
  }
  return "none";
}

std::optional<usage_query::group> parse_usage_group(std::string_view name) {
  for (auto g : {usage_query::group::none, usage_query::group::agent, usage_query::group::thread,
                 usage_query::group::day})
    if (to_string(g) == name) return g;
  return std::nullopt;
}

std::string utc_day(int64_t ts_ms) {
  constexpr int64_t ms_per_day = 86400000;
  // Floor division: a time before the epoch belongs to the day before.
  time_t secs = static_cast<time_t>((ts_ms >= 0 ? ts_ms : ts_ms - (ms_per_day - 1)) / ms_per_day * 86400);
  tm t{};
  ::gmtime_r(&secs, &t);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02d", t.tm_year + 1900, t.tm_mon + 1, t.tm_mday);
  return buf;
}

status event_log::scan_usage(const usage_query& q,
                             const std::function<void(std::string_view, const usage_row&)>& fn,
                             uint64_t* unreadable) const {
  if (!q.thread_id.empty()) SKEIN_TRY(validate_id(q.thread_id, "thread"));
  if (!q.agent_id.empty()) SKEIN_TRY(validate_id(q.agent_id, "agent"));
  if (q.since_ms > q.until_ms) return status::invalid_input("since: after until");
  snapshot_guard snap{impl_->db.get()};

  // Scans [lower, upper) of the usage CF (upper "" : to the end).
  auto scan = [&](const std::string& lower, const std::string& upper) -> status {
    rocksdb::ReadOptions ro = snap.read_options();
    rocksdb::Slice upper_slice{upper};
    if (!upper.empty()) ro.iterate_upper_bound = &upper_slice;
    std::unique_ptr<rocksdb::Iterator> it{impl_->db->NewIterator(ro, impl_->cf(cf_usage))};
    usage_row row;
    for (it->Seek(lower); it->Valid(); it->Next()) {
      row = usage_row{};
      if (!decode_usage_row(it->value().ToStringView(), &row, options_.limits)) {
        if (unreadable != nullptr) ++*unreadable;
        continue;
      }
      if (row.ts_ms < q.since_ms || row.ts_ms >= q.until_ms) continue;
      if (!q.agent_id.empty() && row.agent_id != q.agent_id) continue;
      fn(it->key().ToStringView(), row);
    }
    return from_rocks(it->status(), "scan usage");
  };

  if (!q.thread_id.empty())
    return scan(keys::event_prefix(q.thread_id), keys::event_prefix_end(q.thread_id));
  if (q.agent_id.empty()) return scan(std::string{}, std::string{});

  // The agent's threads, from its index entries; a thread erased meanwhile has no rows left.
  std::vector<std::string> threads;
  {
    std::string lower = keys::index_prefix('a', q.agent_id), upper = lower;
    upper.back() = static_cast<char>(upper.back() + 1);
    rocksdb::ReadOptions ro = snap.read_options();
    rocksdb::Slice upper_slice{upper};
    ro.iterate_upper_bound = &upper_slice;
    std::unique_ptr<rocksdb::Iterator> it{impl_->db->NewIterator(ro, impl_->cf(cf_index))};
    for (it->Seek(lower); it->Valid(); it->Next())
      threads.emplace_back(it->key().ToStringView().substr(lower.size()));
    SKEIN_TRY(from_rocks(it->status(), "scan index"));
  }
  for (const auto& t : threads) SKEIN_TRY(scan(keys::event_prefix(t), keys::event_prefix_end(t)));
  return status::ok();
}

status event_log::query_usage(const usage_query& q, usage_report* out,
                              const std::function<bool(std::string_view)>& only) const {
  *out = usage_report{};
  std::map<std::string, usage_totals> groups;
  std::string key;
  usage_totals* last = nullptr;  // rows come grouped by thread: most repeat the last group
  int64_t last_day = INT64_MIN;
  auto add = [&](std::string_view, const usage_row& row) {
    if (only && !only(row.thread_id)) return;
    bool same = last != nullptr;
    switch (q.group_by) {
      case usage_query::group::none: break;
      case usage_query::group::agent: same = same && key == row.agent_id; key = row.agent_id; break;
      case usage_query::group::thread: same = same && key == row.thread_id; key = row.thread_id; break;
      case usage_query::group::day: {
        int64_t day = row.ts_ms >= 0 ? row.ts_ms / 86400000 : (row.ts_ms - 86399999) / 86400000;
        same = same && day == last_day;
        if (!same) key = utc_day(row.ts_ms);
        last_day = day;
        break;
      }
    }
    if (!same) last = &groups[key];
    usage_totals& g = *last;
    g.usage += row.usage;
    g.cost_usd += row.cost_usd;
    g.runs += 1;
    g.duration_ms += row.duration_ms;
    ++out->rows;
  };
  SKEIN_TRY(scan_usage(q, add, &out->unreadable));
  if (q.group_by == usage_query::group::none && groups.empty()) groups[""];  // totals of nothing: zeros
  out->groups.reserve(groups.size());
  for (auto& [key, g] : groups) {
    g.key = key;
    out->groups.push_back(std::move(g));
  }
  return status::ok();
}

}  // namespace skein
