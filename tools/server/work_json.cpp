#include "tools/server/work_json.hpp"

#include <cmath>

namespace skein::server {

namespace {

// JSON has no NaN or infinity: a non-finite figure is written as 0.
void write_finite(json_writer& w, std::string_view k, double v) { w.field_number(k, std::isfinite(v) ? v : 0.0); }

}  // namespace

void write_triple(json_writer& w, const work_triple& t) {
  w.begin_object();
  w.field("subject", t.subject);
  w.field("predicate", t.predicate);
  w.field("object", t.object);
  w.field("agent_id", t.agent_id);
  w.field("thread_id", t.thread_id);
  w.field_uint("seq", t.seq);
  w.field_int("at_ms", t.at_ms);
  w.end_object();
}

std::string suggestion_json(const work_suggestion& s) {
  std::string out;
  json_writer w{&out};
  w.begin_object();
  w.field("id", s.id);
  w.field("agent_id", s.agent_id);
  w.field("text", s.text);
  w.field("status", to_string(s.status));
  w.key("sessions");
  w.begin_array();
  for (const auto& x : s.sessions) w.string(x);
  w.end_array();
  w.field_uint("dismissals", s.dismissals);
  w.field("promoted_thread", s.promoted_thread);
  w.field_int("created_at_ms", s.created_at_ms);
  w.field_int("updated_at_ms", s.updated_at_ms);
  w.end_object();
  return out;
}

std::string created_json(const work_create_result& r, const work_vitality& v) {
  std::string out;
  json_writer w{&out};
  w.begin_object();
  w.key("item");
  w.raw(work_item_json(work_entry{r.thread, v}));
  w.field_bool("deduplicated", r.deduplicated);
  w.field("matched_by", r.matched_by);
  write_finite(w, "similarity", r.similarity);
  w.end_object();
  return out;
}

void write_entries(json_writer& w, std::string_view key, const std::vector<work_entry>& items) {
  w.key(key);
  w.begin_array();
  for (const auto& e : items) w.raw(work_item_json(e));
  w.end_array();
}

void write_strings(json_writer& w, std::string_view key, const std::vector<std::string>& v) {
  w.key(key);
  w.begin_array();
  for (const auto& x : v) w.string(x);
  w.end_array();
}

std::string work_item_json(const work_entry& e) {
  std::string out;
  json_writer w{&out};
  const manifest& m = e.thread;
  work_item wi = m.work.value_or(work_item{});
  w.begin_object();
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
  write_strings(w, "tags", m.tags);
  write_finite(w, "vitality", e.vitality.vitality);
  write_finite(w, "recency", e.vitality.recency);
  write_finite(w, "frequency", e.vitality.frequency);
  w.field("stage", to_string(e.vitality.stage));
  w.end_object();
  return out;
}

}  // namespace skein::server
