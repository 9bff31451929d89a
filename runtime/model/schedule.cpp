// Schedule and firing JSON, format version 1 (the `schedules` column family;
// keys in persistence/keys.cpp):
//
//   schedule value := {"v":1,"id":id,"agent_id":id,"kind":"cron"|"interval"|"once",
//                      "cron":string,"time_zone":string,"interval_ms":uint,"anchor_ms":int,
//                      "at_ms":int,"input":{"text":string,"role":"user"|"assistant"|"system"},
//                      "thread_id":id|"","title_prefix":string,"tags":[id,...],
//                      "missed":"skip"|"run_once","paused":bool,"created_at":int,
//                      "next_fire_at":int,"last_fire_at":int,"fire_count":uint,
//                      "history_seq":uint}
//   firing value   := {"v":1,"schedule_id":id,"seq":uint,"scheduled_at":int,"fired_at":int,
//                      "thread_id":string,"run_id":string,
//                      "outcome":"fired"|"skipped"|"failed","reason":string,"missed":uint}
//
// Decoding a schedule validates its definition as creation did: a row that
// does not validate is corruption of the reader's view, never run.
#include "runtime/model/schedule.hpp"

#include <array>
#include <cassert>

#include "runtime/model/cron.hpp"
#include "runtime/model/ids.hpp"
#include "runtime/model/json_reader.hpp"
#include "runtime/model/json_writer.hpp"

namespace skein {
namespace {

constexpr int64_t schedule_format_version = 1;
constexpr std::array<std::string_view, 3> kind_names = {"cron", "interval", "once"};
constexpr std::array<std::string_view, 2> policy_names = {"skip", "run_once"};
constexpr std::array<std::string_view, 3> outcome_names = {"fired", "skipped", "failed"};

template <class E, size_t N>
std::optional<E> parse_name(const std::array<std::string_view, N>& names, std::string_view name) {
  for (size_t i = 0; i < N; ++i)
    if (names[i] == name) return static_cast<E>(i);
  return std::nullopt;
}

status field_error(std::string_view field, std::string message) {
  return status::invalid_input("schedule." + std::string{field} + ": " + message)
      .with_field(std::string{field});
}

status too_long(std::string_view field, size_t size, std::string_view limit, size_t max) {
  return field_error(field, std::to_string(size) + " bytes exceed " + std::string{limit} + " (" +
                                std::to_string(max) + ")")
      .with_limit(std::string{limit});
}

status check_text(std::string_view field, const std::string& text, std::string_view limit, size_t max) {
  if (text.size() > max) return too_long(field, text.size(), limit, max);
  if (!valid_utf8(text)) return field_error(field, "not valid UTF-8");
  return status::ok();
}

status check_time(std::string_view field, int64_t ms) {
  if (ms < 0 || ms > schedule_time_ms_max)
    return field_error(field, "must be between 0 and " + std::to_string(schedule_time_ms_max) + " ms")
        .with_limit("schedule_time_ms_max");
  return status::ok();
}

// Parses the cron fields once per call; find_zone caches the zone database.
status cron_of(const schedule& s, cron_expr* e, zone_handle* z) {
  if (status p = parse_cron(s.cron, e); !p) return std::move(p).with_field("cron");
  if (status f = find_zone(s.time_zone, z); !f) return std::move(f).with_field("time_zone");
  return status::ok();
}

int64_t interval_anchor(const schedule& s) {
  return s.anchor_ms != 0 ? s.anchor_ms : s.created_at_ms + static_cast<int64_t>(s.interval_ms);
}

// The first anchor + k*interval (k >= 0) that is > after_ms.
int64_t interval_next_after(const schedule& s, int64_t after_ms) {
  int64_t anchor = interval_anchor(s);
  if (after_ms < anchor) return anchor;
  int64_t iv = static_cast<int64_t>(s.interval_ms);
  assert(iv > 0);  // validate_schedule refuses intervals below the minimum
  int64_t k = (after_ms - anchor) / iv + 1;
  return anchor + k * iv;
}

}  // namespace

std::string_view to_string(schedule_kind k) { return kind_names[static_cast<size_t>(k)]; }
std::optional<schedule_kind> parse_schedule_kind(std::string_view n) {
  return parse_name<schedule_kind>(kind_names, n);
}
std::string_view to_string(missed_policy p) { return policy_names[static_cast<size_t>(p)]; }
std::optional<missed_policy> parse_missed_policy(std::string_view n) {
  return parse_name<missed_policy>(policy_names, n);
}
std::string_view to_string(firing_outcome o) { return outcome_names[static_cast<size_t>(o)]; }
std::optional<firing_outcome> parse_firing_outcome(std::string_view n) {
  return parse_name<firing_outcome>(outcome_names, n);
}

status validate_schedule(const schedule& s) {
  if (status v = validate_id(s.id, "schedule.id"); !v) return std::move(v).with_field("id");
  if (status v = validate_id(s.agent_id, "schedule.agent_id"); !v) return std::move(v).with_field("agent_id");
  switch (s.kind) {
    case schedule_kind::cron: {
      if (s.cron.empty()) return field_error("cron", "required for kind cron");
      cron_expr e;
      zone_handle z;
      if (status c = parse_cron(s.cron, &e); !c)
        return status(c.code(), "schedule." + c.message()).with_field("cron").with_limit(c.limit());
      if (s.time_zone.size() > zone_name_bytes_max)
        return too_long("time_zone", s.time_zone.size(), "zone_name_bytes_max", zone_name_bytes_max);
      if (status f = find_zone(s.time_zone, &z); !f)
        return status(f.code(), "schedule." + f.message()).with_field("time_zone");
      break;
    }
    case schedule_kind::interval:
      if (s.interval_ms < schedule_interval_ms_min || s.interval_ms > schedule_interval_ms_max)
        return field_error("interval_ms", "must be between " + std::to_string(schedule_interval_ms_min) +
                                              " and " + std::to_string(schedule_interval_ms_max))
            .with_limit(s.interval_ms < schedule_interval_ms_min ? "schedule_interval_ms_min"
                                                                 : "schedule_interval_ms_max");
      SKEIN_TRY(check_time("anchor_ms", s.anchor_ms));
      break;
    case schedule_kind::once:
      if (s.at_ms <= 0) return field_error("at_ms", "required for kind once (ms since the epoch)");
      SKEIN_TRY(check_time("at_ms", s.at_ms));
      break;
  }
  if (s.kind != schedule_kind::cron && !s.cron.empty())
    return field_error("cron", "only for kind cron");
  if (s.kind != schedule_kind::interval && s.interval_ms != 0)
    return field_error("interval_ms", "only for kind interval");
  if (s.kind != schedule_kind::once && s.at_ms != 0) return field_error("at_ms", "only for kind once");
  if (s.input_text.empty()) return field_error("input.text", "required: what each firing sends");
  SKEIN_TRY(check_text("input.text", s.input_text, "schedule_input_bytes_max", schedule_input_bytes_max));
  if (!s.thread_id.empty())
    if (status v = validate_id(s.thread_id, "schedule.thread_id"); !v) return std::move(v).with_field("thread_id");
  SKEIN_TRY(check_text("title_prefix", s.title_prefix, "schedule_title_prefix_bytes_max",
                       schedule_title_prefix_bytes_max));
  for (char c : s.title_prefix)
    if (static_cast<unsigned char>(c) < 0x20) return field_error("title_prefix", "control characters (one line only)");
  if (s.tags.size() > schedule_tags_max)
    return field_error("tags", std::to_string(s.tags.size()) + " tags exceed schedule_tags_max (" +
                                   std::to_string(schedule_tags_max) + ")")
        .with_limit("schedule_tags_max");
  for (size_t i = 0; i < s.tags.size(); ++i) {
    if (status v = validate_id(s.tags[i], "schedule.tags"); !v) return std::move(v).with_field("tags");
    for (size_t j = 0; j < i; ++j)
      if (s.tags[j] == s.tags[i]) return field_error("tags", "duplicate tag " + s.tags[i]);
  }
  if (!s.thread_id.empty() && (!s.title_prefix.empty() || !s.tags.empty()))
    return field_error(s.tags.empty() ? "title_prefix" : "tags", "only for new trigger threads (no thread_id)");
  SKEIN_TRY(check_time("created_at", s.created_at_ms));
  return status::ok();
}

status encode_schedule(const schedule& s, std::string* out, const json_limits& limits) {
  SKEIN_TRY(validate_schedule(s));
  out->clear();
  json_writer w{out};
  w.begin_object();
  w.field_int("v", schedule_format_version);
  w.field("id", s.id);
  w.field("agent_id", s.agent_id);
  w.field("kind", to_string(s.kind));
  w.field("cron", s.cron);
  w.field("time_zone", s.time_zone);
  w.field_uint("interval_ms", s.interval_ms);
  w.field_int("anchor_ms", s.anchor_ms);
  w.field_int("at_ms", s.at_ms);
  w.key("input");
  w.begin_object();
  w.field("text", s.input_text);
  w.field("role", to_string(s.input_role));
  w.end_object();
  w.field("thread_id", s.thread_id);
  w.field("title_prefix", s.title_prefix);
  w.field_strings("tags", s.tags);
  w.field("missed", to_string(s.missed));
  w.field_bool("paused", s.paused);
  w.field_int("created_at", s.created_at_ms);
  w.field_int("next_fire_at", s.next_fire_at_ms);
  w.field_int("last_fire_at", s.last_fire_at_ms);
  w.field_uint("fire_count", s.fire_count);
  w.field_uint("history_seq", s.history_seq);
  w.end_object();
  if (out->size() > limits.json_bytes_max)
    return status::invalid_input("schedule: encoded " + std::to_string(out->size()) +
                                 " bytes exceed json_bytes_max (" + std::to_string(limits.json_bytes_max) + ")")
        .with_limit("json_bytes_max");
  return status::ok();
}

status read_schedule_definition(const json::object_reader& r, bool id_required, schedule* out) {
  schedule s;
  std::string kind, missed = "skip", role = "user";
  SKEIN_TRY(r.string("id", &s.id, id_required));
  SKEIN_TRY(r.string("agent_id", &s.agent_id));
  SKEIN_TRY(r.string("kind", &kind));
  auto k = parse_schedule_kind(kind);
  if (!k) return r.invalid("kind", "must be cron, interval or once");
  s.kind = *k;
  SKEIN_TRY(r.string("cron", &s.cron, false));
  SKEIN_TRY(r.string("time_zone", &s.time_zone, false));
  SKEIN_TRY(r.uint("interval_ms", &s.interval_ms, false));
  SKEIN_TRY(r.int64("anchor_ms", &s.anchor_ms, false));
  SKEIN_TRY(r.int64("at_ms", &s.at_ms, false));
  json::dom::element el;
  SKEIN_TRY(r.element("input", &el));
  json::object_reader in;
  SKEIN_TRY(json::object_reader::open(el, r.name("input"), &in));
  SKEIN_TRY(in.string("text", &s.input_text));
  SKEIN_TRY(in.string("role", &role, false));
  auto parsed_role = parse_role(role);
  if (!parsed_role) return in.invalid("role", "must be user, assistant or system");
  s.input_role = *parsed_role;
  SKEIN_TRY(r.string("thread_id", &s.thread_id, false));
  SKEIN_TRY(r.string("title_prefix", &s.title_prefix, false));
  SKEIN_TRY(r.strings("tags", &s.tags, false));
  SKEIN_TRY(r.string("missed", &missed, false));
  auto p = parse_missed_policy(missed);
  if (!p) return r.invalid("missed", "must be skip or run_once");
  s.missed = *p;
  SKEIN_TRY(r.boolean("paused", &s.paused, false));
  *out = std::move(s);
  return status::ok();
}

status decode_schedule(std::string_view text, schedule* out, const json_limits& limits) {
  json::document doc;
  json::object_reader r;
  SKEIN_TRY(json::parse_versioned(text, limits, "schedule", schedule_format_version, &doc, &r));
  schedule s;
  SKEIN_TRY(read_schedule_definition(r, true, &s));
  SKEIN_TRY(r.int64("created_at", &s.created_at_ms, false));
  SKEIN_TRY(r.int64("next_fire_at", &s.next_fire_at_ms, false));
  SKEIN_TRY(r.int64("last_fire_at", &s.last_fire_at_ms, false));
  SKEIN_TRY(r.uint("fire_count", &s.fire_count, false));
  SKEIN_TRY(r.uint("history_seq", &s.history_seq, false));
  SKEIN_TRY(validate_schedule(s));
  *out = std::move(s);
  return status::ok();
}

status encode_firing(const schedule_firing& f, std::string* out, const json_limits& limits) {
  SKEIN_TRY(validate_id(f.schedule_id, "firing.schedule_id"));
  if (!valid_utf8(f.reason)) return status::invalid_input("firing.reason: not valid UTF-8").with_field("reason");
  out->clear();
  json_writer w{out};
  w.begin_object();
  w.field_int("v", schedule_format_version);
  w.field("schedule_id", f.schedule_id);
  w.field_uint("seq", f.seq);
  w.field_int("scheduled_at", f.scheduled_at_ms);
  w.field_int("fired_at", f.fired_at_ms);
  w.field("thread_id", f.thread_id);
  w.field("run_id", f.run_id);
  w.field("outcome", to_string(f.outcome));
  w.field("reason", f.reason);
  w.field_uint("missed", f.missed);
  w.end_object();
  if (out->size() > limits.json_bytes_max)
    return status::invalid_input("firing: encoded " + std::to_string(out->size()) +
                                 " bytes exceed json_bytes_max (" + std::to_string(limits.json_bytes_max) + ")")
        .with_limit("json_bytes_max");
  return status::ok();
}

status decode_firing(std::string_view text, schedule_firing* out, const json_limits& limits) {
  json::document doc;
  json::object_reader r;
  SKEIN_TRY(json::parse_versioned(text, limits, "firing", schedule_format_version, &doc, &r));
  schedule_firing f;
  std::string outcome;
  SKEIN_TRY(r.string("schedule_id", &f.schedule_id));
  SKEIN_TRY(r.uint("seq", &f.seq));
  SKEIN_TRY(r.int64("scheduled_at", &f.scheduled_at_ms));
  SKEIN_TRY(r.int64("fired_at", &f.fired_at_ms));
  SKEIN_TRY(r.string("thread_id", &f.thread_id, false));
  SKEIN_TRY(r.string("run_id", &f.run_id, false));
  SKEIN_TRY(r.string("outcome", &outcome));
  auto o = parse_firing_outcome(outcome);
  if (!o) return status::invalid_input("firing.outcome: must be fired, skipped or failed").with_field("outcome");
  f.outcome = *o;
  SKEIN_TRY(r.string("reason", &f.reason, false));
  SKEIN_TRY(r.uint("missed", &f.missed, false));
  *out = std::move(f);
  return status::ok();
}

std::string new_schedule_id(int64_t now_ms) {
  std::string id = new_thread_id(now_ms);
  id.replace(0, 2, "sc");  // "th_YYYYMMDD_..." -> "sc_YYYYMMDD_..."
  return id;
}

status schedule_next_after(const schedule& s, int64_t after_ms, int64_t* out) {
  switch (s.kind) {
    case schedule_kind::once:
      *out = s.at_ms > after_ms ? s.at_ms : 0;
      return status::ok();
    case schedule_kind::interval:
      *out = interval_next_after(s, after_ms);
      if (*out > schedule_time_ms_max) *out = 0;
      return status::ok();
    case schedule_kind::cron: {
      cron_expr e;
      zone_handle z;
      SKEIN_TRY(cron_of(s, &e, &z));
      if (after_ms < cron_after_ms_min) after_ms = cron_after_ms_min;
      status n = next_fire(e, z, after_ms, out);
      if (n.code() == errc::not_found) {
        *out = 0;  // never again
        return status::ok();
      }
      return n;
    }
  }
  return status::invalid_input("schedule.kind: unknown");
}

status schedule_next_from(const schedule& s, int64_t from_ms, int64_t* out) {
  return schedule_next_after(s, from_ms - 1, out);
}

status schedule_missed(const schedule& s, int64_t now_ms, missed_firings* out) {
  *out = {};
  int64_t due = s.next_fire_at_ms;
  if (due == 0 || due > now_ms) {
    out->next_ms = due;
    return status::ok();
  }
  if (s.kind == schedule_kind::interval) {
    // Arithmetic, not a walk: a long stop of a fast interval costs nothing.
    int64_t iv = static_cast<int64_t>(s.interval_ms);
    uint64_t n = static_cast<uint64_t>((now_ms - due) / iv) + 1;
    out->count = std::min(n, schedule_missed_count_max);
    out->capped = n > schedule_missed_count_max;
    out->latest_ms = due + static_cast<int64_t>(n - 1) * iv;
    out->next_ms = out->latest_ms + iv;
    return status::ok();
  }
  out->count = 1;
  out->latest_ms = due;
  int64_t next = 0;
  SKEIN_TRY(schedule_next_after(s, due, &next));
  while (next != 0 && next <= now_ms) {
    if (out->count == schedule_missed_count_max) {
      // Past the cap, jump: the latest missed time is the last one before now.
      out->capped = true;
      SKEIN_TRY(schedule_next_after(s, now_ms, &next));
      break;
    }
    ++out->count;
    out->latest_ms = next;
    SKEIN_TRY(schedule_next_after(s, next, &next));
  }
  out->next_ms = next;
  return status::ok();
}

status schedule_preview(const schedule& s, int64_t after_ms, size_t n, std::vector<int64_t>* out) {
  if (n > schedule_preview_max)
    return status::invalid_input("n: " + std::to_string(n) + " exceeds schedule_preview_max (" +
                                 std::to_string(schedule_preview_max) + ")")
        .with_field("n")
        .with_limit("schedule_preview_max");
  out->clear();
  int64_t t = after_ms;
  while (out->size() < n) {
    int64_t next = 0;
    SKEIN_TRY(schedule_next_after(s, t, &next));
    if (next == 0) break;
    out->push_back(next);
    t = next;
  }
  return status::ok();
}

}  // namespace skein
