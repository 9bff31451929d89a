#include "tools/server/work_json.hpp"

#include <cmath>
#include <cstdio>
#include <ctime>

namespace skein::server {

namespace {

constexpr double day_ms = 24.0 * 3600 * 1000;

// JSON has no NaN or infinity: a non-finite figure is written as 0.
void write_finite(json_writer& w, std::string_view k, double v) { w.field_number(k, std::isfinite(v) ? v : 0.0); }

// Whole days between two moments, as the seed rounds them.
int64_t days_between(int64_t from_ms, int64_t to_ms) {
  return std::llround(std::max(0.0, static_cast<double>(to_ms - from_ms) / day_ms));
}

// [{label_key: name, "count": n}...]
void write_counts(json_writer& w, std::string_view key, std::string_view label_key, const work_counts& counts) {
  w.key(key);
  w.begin_array();
  for (const auto& [label, n] : counts) {
    w.begin_object();
    w.field(label_key, label);
    w.field_uint("count", n);
    w.end_object();
  }
  w.end_array();
}

void write_dedup(json_writer& w, std::string_view key, const work_create_result& r) {
  w.key(key);
  w.begin_object();
  w.field("method", r.matched_by == "embedding" ? "embedding" : "text_normalization");
  write_finite(w, "similarity", r.similarity);
  w.field("matched_thread_id", r.thread.id);
  w.end_object();
}

}  // namespace

std::string iso8601(int64_t ms) {
  int64_t secs = ms >= 0 ? ms / 1000 : (ms - 999) / 1000;
  std::time_t t = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms - secs * 1000));
  return buf;
}

void write_triple(json_writer& w, const work_triple& t) {
  w.begin_object();
  w.field("subject", t.subject);
  w.field("predicate", t.predicate);
  w.field("object", t.object);
  w.field("agent_id", t.agent_id);
  w.field("thread_id", t.thread_id);
  w.field_uint("seq", t.seq);
  w.field_int("at_ms", t.at_ms);
  w.field("project", t.project);
  w.end_object();
}

void write_sweep_fields(json_writer& w, const work_sweep_result& r) {
  w.field_uint("examined", r.examined);
  w.field_strings("dormant", r.dormant);
  w.field_strings("archived", r.archived);
}

std::string suggestion_json(const work_suggestion& s) {
  std::string out;
  json_writer w{&out};
  w.begin_object();
  w.field("id", s.id);
  w.field("agent_id", s.agent_id);
  w.field("text", s.text);
  w.field("status", to_string(s.status));
  w.field_strings("sessions", s.sessions);
  w.field_uint("dismissals", s.dismissals);
  w.field("promoted_thread", s.promoted_thread);
  w.field_int("created_at_ms", s.created_at_ms);
  w.field_int("updated_at_ms", s.updated_at_ms);
  w.field("project", s.project);
  w.end_object();
  return out;
}

void write_created_fields(json_writer& w, const work_create_result& r, const work_vitality& v) {
  std::string item = work_item_json(work_entry{r.thread, v});
  w.key("item");
  w.raw(item);
  w.key("thread");
  w.raw(item);
  w.field_bool("success", true);
  w.field_bool("deduplicated", r.deduplicated);
  w.field("matched_by", r.matched_by);
  write_finite(w, "similarity", r.similarity);
  if (r.deduplicated) {
    write_dedup(w, "dedup_details", r);
    write_dedup(w, "dedup", r);
  }
}

std::string created_json(const work_create_result& r, const work_vitality& v) {
  std::string out;
  json_writer w{&out};
  w.begin_object();
  write_created_fields(w, r, v);
  w.end_object();
  return out;
}

void write_entries(json_writer& w, std::string_view key, const std::vector<work_entry>& items) {
  w.key(key);
  w.begin_array();
  for (const auto& e : items) w.raw(work_item_json(e));
  w.end_array();
}

void write_item_fields(json_writer& w, const work_entry& e) {
  const manifest& m = e.thread;
  work_item wi = m.work.value_or(work_item{});
  w.field("id", m.id);
  w.field("agent_id", m.agent_id);
  w.field("title", m.title);
  w.field("text", wi.text);
  w.field("status", to_string(wi.status));
  w.field("class", to_string(wi.cls));
  w.field_bool("project_state", wi.project_state);
  w.field_uint("touch_count", wi.touch_count);
  w.field_int("created_at_ms", wi.created_at_ms);
  w.field_int("last_touched_at_ms", wi.last_touched_at_ms);
  w.field_int("dormant_since_ms", e.vitality.dormant_since_ms != 0 ? e.vitality.dormant_since_ms : wi.dormant_since_ms);
  w.field_int("resolved_at_ms", wi.resolved_at_ms);
  w.field("resolution", wi.resolution);
  w.field("resolved_session", wi.resolved_session);
  w.field_int("archived_at_ms", wi.archived_at_ms);
  w.field("project", wi.project);
  w.field("linear_issue", wi.linear_issue);
  w.field_strings("tags", m.tags);
  write_finite(w, "vitality", e.vitality.vitality);
  write_finite(w, "recency", e.vitality.recency);
  write_finite(w, "frequency", e.vitality.frequency);
  w.field("stage", to_string(e.vitality.stage));
  // The seed's ThreadObject names.
  w.field("created_at", iso8601(wi.created_at_ms));
  w.field("last_touched_at", iso8601(wi.last_touched_at_ms));
  if (wi.resolved_at_ms != 0) w.field("resolved_at", iso8601(wi.resolved_at_ms));
  w.field("resolution_note", wi.resolution);
  w.field("resolved_by_session", wi.resolved_session);
}

std::string work_item_json(const work_entry& e) {
  std::string out;
  json_writer w{&out};
  w.begin_object();
  write_item_fields(w, e);
  w.end_object();
  return out;
}

std::string item_summary_json(const work_entry& e, int64_t now_ms) {
  std::string out;
  json_writer w{&out};
  work_item wi = e.thread.work.value_or(work_item{});
  w.begin_object();
  w.field("id", e.thread.id);
  w.field("thread_id", e.thread.id);
  w.field("text", wi.text);
  w.field("lifecycle_status", to_string(e.vitality.stage));
  write_finite(w, "vitality_score", e.vitality.vitality);
  w.field("thread_class", to_string(wi.cls));
  w.field_int("days_since_touch", days_between(wi.last_touched_at_ms, now_ms));
  if (e.vitality.dormant_since_ms != 0) w.field_int("dormant_days", days_between(e.vitality.dormant_since_ms, now_ms));
  w.field("project", wi.project);
  w.end_object();
  return out;
}

std::string graph_stats_json(const work_graph_stats& st) {
  std::string out;
  json_writer w{&out};
  auto lists = [&] {
    write_counts(w, "top_subjects", "label", st.top_subjects);
    write_counts(w, "top_objects", "label", st.top_objects);
    write_counts(w, "issues_by_learning_count", "issue", st.top_issues);
    write_counts(w, "agents_by_contribution", "agent", st.top_agents);
  };
  w.begin_object();
  w.field_uint("triples", st.triples);
  w.field_uint("nodes", st.nodes);
  w.key("by_predicate");
  w.begin_object();
  for (const auto& [p, n] : st.by_predicate) w.field_uint(p, n);
  w.end_object();
  lists();
  // The seed's answer nests its figures under `stats`.
  w.key("stats");
  w.begin_object();
  w.field_uint("total_triples", st.triples);
  w.key("predicate_distribution");
  w.begin_object();
  for (const auto& [p, n] : st.by_predicate) w.field_uint(p, n);
  w.end_object();
  lists();
  w.end_object();
  w.end_object();
  return out;
}

}  // namespace skein::server
