// Value formats, version 1 (the schema version in the `meta` column family).
//
//   event    := {"seq":uint,"ts":int,"run":string,"type":type,"payload":payload}
//   type     := "message" | "assistant_text" | "thinking" | "tool_call" | "tool_result"
//             | "system_prompt" | "local_system_message" | "result" | "compaction" | "signal"
//   payload  := message:    {"role":"user"|"assistant"|"system","text":string}
//             | assistant_text, thinking, system_prompt, local_system_message: {"text":string}
//             | tool_call:  {"call_id":string,"name":string,"arguments":json}
//             | tool_result:{"call_id":string,"name":string,"output":string,"is_error":bool}
//             | result:     {"usage":usage,"cost_usd":number,"duration_ms":uint,"turns":uint,
//                            "outcome":string}
//             | compaction: {"strategy":string,"from_seq":uint,"to_seq":uint,"events":array
//                            [,"v":2,"original_events":uint,"tokens_before":uint,
//                             "tokens_after":uint,"prompt_seq":uint]}
//               (v2 adds the optional fields, written when any is set; a v1
//               compaction lacks them and reads back with zeros. `events` is an
//               array of `event`s: the working view the compaction starts, the
//               system prompt excluded — compaction.hpp.)
//             | signal:     {"name":string,"data":object}
//   usage    := {"input_tokens":uint,"output_tokens":uint,"cache_read_tokens":uint,
//                "cache_write_tokens":uint}
//
//   manifest := {"v":1,"id":id,"agent_id":id,"parent_kind":kind,"parent_id":string,
//                "session_id":string,"task_id":string,"title":string,"name":string,
//                "tags":[id...],"pinned_at":int,"environment_id":string,"status":status,
//                ["last_outcome":"completed"|"failed"|"cancelled",]
//                "usage":usage,"cost_usd":number,"config":object,"created_at":int,
//                "updated_at":int,"last_seq":uint,"children_count":uint,"heartbeat_at":int,
//                "title_generated":bool,"compaction_seq":uint,"archived_at":int,"depth":uint
//                [,"members":[member...]][,"work":work]}
//               (depth: written when not 0; a manifest without it is a root, depth 0)
//   kind     := "none" | "thread" | "task" | "schedule" | "agent"
//   member   := agent-id "=" trigger      (a house member: '=' is no id character)
//   trigger  := "always" | "on_mention"
//   (`members`, kind "agent" and `last_outcome` came later in version 1: written
//   only when set, so a manifest without them reads as before. config may hold "engine_config":
//   object, the thread's merge patch of its agent's engine config.)
//   status   := "open" | "idle" | "running" | "completed" | "failed" | "cancelled"
//   work     := {"text":string,"status":"open"|"resolved"|"archived",
//                "class":"operational"|"backlog","project_state":bool,"touch_count":uint,
//                "created_at":int,"last_touched_at":int,"dormant_since":int,
//                "resolved_at":int,"resolution":string,"resolved_session":string,
//                "archived_at":int[,"project":string][,"linear_issue":string]}
//   (`work` came later in version 1 with work items (work.hpp): written only for
//   a thread that is an item, so every older manifest reads as an ordinary thread.
//   text, status and created_at are required; the others default to 0, "", false.
//   `project` and `linear_issue` came later still (issue 29): written when not
//   "default" and not "", so an older item reads as one of project "default".)
//
// Times are ms since the Unix epoch. A value is written only if it reads back
// (json_codec.hpp): encoded size <= json_bytes_max; nesting <= json_depth_max,
// where a payload's raw JSON (arguments, data, events) sits event_envelope_depth
// (2) levels down and a manifest's config manifest_envelope_depth (1). Decoding requires every field of the event
// envelope and payload, and of the manifest: id, agent_id, status, created_at,
// updated_at, last_seq; other manifest fields default when absent. Unknown fields
// are ignored so that a newer writer's additions do not break an older reader.
#include "runtime/model/json_codec.hpp"

#include <algorithm>
#include <cmath>

#include "runtime/model/ids.hpp"
#include "runtime/model/json_reader.hpp"
#include "runtime/model/json_writer.hpp"

namespace skein {
namespace {

namespace dom = simdjson::dom;
using json::object_reader;

constexpr int64_t manifest_format_version = 1;
// The compaction payload with counts and token estimates (grammar above).
constexpr uint64_t compaction_payload_version = 2;

status read_usage(const object_reader& parent, std::string_view field, token_usage* out) {
  dom::element el;
  SKEIN_TRY(parent.element(field, &el));
  object_reader r;
  SKEIN_TRY(object_reader::open(el, parent.name(field), &r));
  SKEIN_TRY(r.uint("input_tokens", &out->input_tokens));
  SKEIN_TRY(r.uint("output_tokens", &out->output_tokens));
  SKEIN_TRY(r.uint("cache_read_tokens", &out->cache_read_tokens));
  SKEIN_TRY(r.uint("cache_write_tokens", &out->cache_write_tokens));
  return status::ok();
}

status decode_payload(const object_reader& p, event* e) {
  switch (e->type) {
    case event_type::message: {
      std::string role_name;
      SKEIN_TRY(p.string("role", &role_name));
      auto r = parse_role(role_name);
      if (!r) return status::invalid_input(p.name("role") + ": must be user, assistant or system");
      e->role = *r;
      return p.string("text", &e->text);
    }
    case event_type::assistant_text:
    case event_type::thinking:
    case event_type::system_prompt:
    case event_type::local_system_message:
      return p.string("text", &e->text);
    case event_type::tool_call:
      SKEIN_TRY(p.string("call_id", &e->call_id));
      SKEIN_TRY(p.string("name", &e->name));
      return p.any_raw("arguments", &e->json);
    case event_type::tool_result:
      SKEIN_TRY(p.string("call_id", &e->call_id));
      SKEIN_TRY(p.string("name", &e->name));
      SKEIN_TRY(p.string("output", &e->text));
      return p.boolean("is_error", &e->is_error);
    case event_type::result: {
      SKEIN_TRY(read_usage(p, "usage", &e->usage));
      SKEIN_TRY(p.number("cost_usd", &e->cost_usd));
      SKEIN_TRY(p.uint("duration_ms", &e->duration_ms));
      uint64_t turns = 0;
      SKEIN_TRY(p.uint("turns", &turns));
      if (turns > UINT32_MAX) return status::invalid_input(p.name("turns") + ": out of range");
      e->turns = static_cast<uint32_t>(turns);
      return p.string("outcome", &e->outcome);
    }
    case event_type::compaction:
      SKEIN_TRY(p.string("strategy", &e->name));
      SKEIN_TRY(p.uint("from_seq", &e->from_seq));
      SKEIN_TRY(p.uint("to_seq", &e->to_seq));
      SKEIN_TRY(p.uint("original_events", &e->original_events, false));
      SKEIN_TRY(p.uint("tokens_before", &e->tokens_before, false));
      SKEIN_TRY(p.uint("tokens_after", &e->tokens_after, false));
      SKEIN_TRY(p.uint("prompt_seq", &e->prompt_seq, false));
      return p.raw("events", dom::element_type::ARRAY, &e->json);
    case event_type::signal:
      SKEIN_TRY(p.string("name", &e->name));
      return p.raw("data", dom::element_type::OBJECT, &e->json);
  }
  return status::invalid_input("event.type: unknown");
}

// --- encoding --------------------------------------------------------------

status check_text(std::string_view s, std::string_view field) {
  if (!valid_utf8(s)) return status::invalid_input(std::string{field} + ": invalid UTF-8");
  return status::ok();
}

status check_number(double v, std::string_view field) {
  if (!std::isfinite(v)) return status::invalid_input(std::string{field} + ": not a finite number");
  return status::ok();
}

// Where a raw JSON field sits: its name in errors, the type it must have (when
// set), and the levels of the document above it.
struct raw_field {
  std::string_view name;
  const char* kind = nullptr;  // "{" or "[" when restricted
  size_t envelope_depth = 0;
};

// Validates and minifies a raw JSON field within the limits of the document that
// will hold it.
status check_raw(std::string_view json, const raw_field& f, const json_limits& limits,
                 std::string* out) {
  if (json == "{}" || json == "[]") {  // the common empty values need no parser
    out->assign(json);
  } else {
    // The parser checks the depth left below the envelope as it goes, so the
    // rule costs no extra pass; only a refusal counts the depth, for its message.
    json_limits inner = limits;
    inner.json_depth_max = limits.json_depth_max > f.envelope_depth ? limits.json_depth_max - f.envelope_depth : 0;
    status s = normalize_json(json, f.name, out, inner);
    if (!s) {
      size_t depth = json_depth(json);
      if (depth + f.envelope_depth <= limits.json_depth_max) return s;
      return status::invalid_input(std::string{f.name} + ": nesting " + std::to_string(depth) +
                                   " plus the " + std::to_string(f.envelope_depth) +
                                   " levels above it exceeds json_depth_max (" +
                                   std::to_string(limits.json_depth_max) + ")")
          .with_limit("json_depth_max")
          .with_field(std::string{f.name});
    }
  }
  if (f.kind != nullptr && (*out)[0] != f.kind[0])
    return status::invalid_input(std::string{f.name} + ": expected " +
                                 (f.kind[0] == '{' ? "an object" : "an array"));
  return status::ok();
}

// The field that contributes most to an oversized document, for its error.
struct big_field {
  std::string_view name;
  size_t bytes = 0;
  void consider(std::string_view n, size_t b) {
    if (b > bytes) {
      name = n;
      bytes = b;
    }
  }
};

status too_large(std::string_view what, size_t bytes, const json_limits& limits,
                 const big_field& biggest) {
  std::string msg = std::string{what} + ": encoded " + std::to_string(bytes) +
                    " bytes exceeds json_bytes_max (" + std::to_string(limits.json_bytes_max) + ")";
  if (!biggest.name.empty())
    msg += "; its largest field " + std::string{biggest.name} + " holds " +
           std::to_string(biggest.bytes) + " bytes";
  return status::invalid_input(std::move(msg)).with_limit("json_bytes_max");
}

big_field biggest_field(const event& e) {
  big_field b;
  b.consider("event.run", e.run_id.size());
  b.consider(e.type == event_type::tool_result ? "event.payload.output" : "event.payload.text",
             e.text.size());
  b.consider("event.payload.call_id", e.call_id.size());
  b.consider(e.type == event_type::compaction ? "event.payload.strategy" : "event.payload.name",
             e.name.size());
  b.consider(e.type == event_type::tool_call    ? "event.payload.arguments"
             : e.type == event_type::compaction ? "event.payload.events"
                                                : "event.payload.data",
             e.json.size());
  b.consider("event.payload.outcome", e.outcome.size());
  return b;
}

big_field biggest_field(const manifest& m) {
  big_field b;
  b.consider("manifest.config", m.config.size());
  b.consider("manifest.title", m.title.size());
  b.consider("manifest.name", m.name.size());
  b.consider("manifest.session_id", m.session_id.size());
  b.consider("manifest.task_id", m.task_id.size());
  b.consider("manifest.environment_id", m.environment_id.size());
  size_t tags = 0;
  for (const auto& t : m.tags) tags += t.size() + 3;
  b.consider("manifest.tags", tags);
  return b;
}


status write_payload(json_writer& w, const event& e, const json_limits& limits) {
  std::string raw;
  w.begin_object();
  switch (e.type) {
    case event_type::message:
      SKEIN_TRY(check_text(e.text, "event.payload.text"));
      w.field("role", to_string(e.role));
      w.field("text", e.text);
      break;
    case event_type::assistant_text:
    case event_type::thinking:
    case event_type::system_prompt:
    case event_type::local_system_message:
      SKEIN_TRY(check_text(e.text, "event.payload.text"));
      w.field("text", e.text);
      break;
    case event_type::tool_call:
      SKEIN_TRY(check_text(e.call_id, "event.payload.call_id"));
      SKEIN_TRY(check_text(e.name, "event.payload.name"));
      SKEIN_TRY(check_raw(e.json.empty() ? "{}" : e.json,
                          {"event.payload.arguments", nullptr, event_envelope_depth}, limits, &raw));
      w.field("call_id", e.call_id);
      w.field("name", e.name);
      w.key("arguments");
      w.raw(raw);
      break;
    case event_type::tool_result:
      SKEIN_TRY(check_text(e.call_id, "event.payload.call_id"));
      SKEIN_TRY(check_text(e.name, "event.payload.name"));
      SKEIN_TRY(check_text(e.text, "event.payload.output"));
      w.field("call_id", e.call_id);
      w.field("name", e.name);
      w.field("output", e.text);
      w.key("is_error");
      w.boolean(e.is_error);
      break;
    case event_type::result:
      SKEIN_TRY(check_number(e.cost_usd, "event.payload.cost_usd"));
      SKEIN_TRY(check_text(e.outcome, "event.payload.outcome"));
      write_result_fields(w, e);
      break;
    case event_type::compaction:
      SKEIN_TRY(check_text(e.name, "event.payload.strategy"));
      SKEIN_TRY(check_raw(e.json.empty() ? "[]" : e.json,
                          {"event.payload.events", "[", event_envelope_depth}, limits, &raw));
      w.field("strategy", e.name);
      w.field_uint("from_seq", e.from_seq);
      w.field_uint("to_seq", e.to_seq);
      if (e.original_events != 0 || e.tokens_before != 0 || e.tokens_after != 0 || e.prompt_seq != 0) {
        w.field_uint("v", compaction_payload_version);
        w.field_uint("original_events", e.original_events);
        w.field_uint("tokens_before", e.tokens_before);
        w.field_uint("tokens_after", e.tokens_after);
        w.field_uint("prompt_seq", e.prompt_seq);
      }
      w.key("events");
      w.raw(raw);
      break;
    case event_type::signal:
      SKEIN_TRY(check_text(e.name, "event.payload.name"));
      SKEIN_TRY(check_raw(e.json.empty() ? "{}" : e.json,
                          {"event.payload.data", "{", event_envelope_depth}, limits, &raw));
      w.field("name", e.name);
      w.key("data");
      w.raw(raw);
      break;
  }
  w.end_object();
  return status::ok();
}

}  // namespace

bool valid_utf8(std::string_view s) { return simdjson::validate_utf8(s.data(), s.size()); }

size_t json_depth(std::string_view json) {
  size_t depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < json.size(); ++i) {
    char c = json[i];
    if (in_string) {
      if (c == '\\') ++i;  // the escaped byte cannot end the string
      else if (c == '"') in_string = false;
      continue;
    }
    switch (c) {
      case '"': in_string = true; break;
      case '[':
      case '{': {
        // An empty array or object adds no level: simdjson's parser counts only
        // containers it descends into.
        size_t next = json.find_first_not_of(" \t\r\n", i + 1);
        if (next != std::string_view::npos && (json[next] == ']' || json[next] == '}')) {
          i = next;
          break;
        }
        deepest = std::max(deepest, ++depth);
        break;
      }
      case ']':
      case '}': --depth; break;
      default: break;
    }
  }
  return deepest;
}

void write_usage(json_writer& w, const token_usage& u) {
  w.begin_object();
  w.field_uint("input_tokens", u.input_tokens);
  w.field_uint("output_tokens", u.output_tokens);
  w.field_uint("cache_read_tokens", u.cache_read_tokens);
  w.field_uint("cache_write_tokens", u.cache_write_tokens);
  w.end_object();
}

void write_spend(json_writer& w, const token_usage& usage, double cost_usd) {
  w.key("usage");
  write_usage(w, usage);
  w.key("cost_usd");
  w.number(cost_usd);
}

void write_result_fields(json_writer& w, const event& e) {
  write_spend(w, e.usage, e.cost_usd);
  w.field_uint("duration_ms", e.duration_ms);
  w.field_uint("turns", e.turns);
  w.field("outcome", e.outcome);
}


status normalize_json(std::string_view json, std::string_view field, std::string* out,
                      const json_limits& limits) {
  json::document doc;
  SKEIN_TRY(json::parse(json, limits, field, &doc));
  *out = simdjson::minify(doc.root());
  return status::ok();
}

status encode_event(const event& e, std::string* out, const json_limits& limits) {
  SKEIN_TRY(check_text(e.run_id, "event.run"));
  out->clear();
  json_writer w{out};
  w.begin_object();
  w.field_uint("seq", e.seq);
  w.field_int("ts", e.ts_ms);
  w.field("run", e.run_id);
  w.field("type", to_string(e.type));
  w.key("payload");
  SKEIN_TRY(write_payload(w, e, limits));
  w.end_object();
  if (out->size() > limits.json_bytes_max) return too_large("event", out->size(), limits, biggest_field(e));
  return status::ok();
}

status check_storable(const event& e, const json_limits& limits) {
  std::string scratch;
  return encode_event(e, &scratch, limits);
}

status decode_event(std::string_view json, event* out, const json_limits& limits) {
  json::document doc;
  object_reader r;
  SKEIN_TRY(json::parse_object(json, limits, "event", &doc, &r));
  event e;
  SKEIN_TRY(r.uint("seq", &e.seq));
  SKEIN_TRY(r.int64("ts", &e.ts_ms));
  SKEIN_TRY(r.string("run", &e.run_id));
  std::string type_name;
  SKEIN_TRY(r.string("type", &type_name));
  auto type = parse_event_type(type_name);
  if (!type) return status::invalid_input("event.type: unknown type '" + type_name + "'");
  e.type = *type;
  dom::element payload;
  SKEIN_TRY(r.element("payload", &payload));
  object_reader p;
  SKEIN_TRY(object_reader::open(payload, "event.payload", &p));
  SKEIN_TRY(decode_payload(p, &e));
  *out = std::move(e);
  return status::ok();
}

bool peek_event_envelope(std::string_view json, uint64_t* seq, event_type* type) {
  constexpr std::string_view seq_key = "{\"seq\":", type_key = ",\"type\":\"";
  if (!json.starts_with(seq_key)) return false;
  size_t i = seq_key.size();
  uint64_t n = 0;
  size_t digits = 0;
  for (; i < json.size() && json[i] >= '0' && json[i] <= '9'; ++i, ++digits) {
    if (n > (UINT64_MAX - 9) / 10) return false;
    n = n * 10 + static_cast<uint64_t>(json[i] - '0');
  }
  if (digits == 0 || i >= json.size() || json[i] != ',') return false;
  size_t at = json.find(type_key, i);
  if (at == std::string_view::npos) return false;
  size_t begin = at + type_key.size();
  size_t end = json.find('"', begin);
  if (end == std::string_view::npos) return false;
  auto t = parse_event_type(json.substr(begin, end - begin));
  if (!t) return false;
  *seq = n;
  *type = *t;
  return true;
}

bool peek_event_ts(std::string_view json, int64_t* ts_ms) {
  constexpr std::string_view seq_key = "{\"seq\":", ts_key = ",\"ts\":";
  if (!json.starts_with(seq_key)) return false;
  size_t i = seq_key.size();
  while (i < json.size() && json[i] >= '0' && json[i] <= '9') ++i;
  if (i == seq_key.size() || json.substr(i, ts_key.size()) != ts_key) return false;
  i += ts_key.size();
  const bool negative = i < json.size() && json[i] == '-';
  if (negative) ++i;
  uint64_t n = 0;
  size_t digits = 0;
  for (; i < json.size() && json[i] >= '0' && json[i] <= '9'; ++i, ++digits) {
    if (n > (static_cast<uint64_t>(INT64_MAX) - 9) / 10) return false;
    n = n * 10 + static_cast<uint64_t>(json[i] - '0');
  }
  if (digits == 0 || i >= json.size() || json[i] != ',') return false;
  *ts_ms = negative ? -static_cast<int64_t>(n) : static_cast<int64_t>(n);
  return true;
}

status encode_manifest(const manifest& m, std::string* out, const json_limits& limits) {
  SKEIN_TRY(validate_id(m.id, "manifest.id"));
  SKEIN_TRY(validate_id(m.agent_id, "manifest.agent_id"));
  for (const auto& tag : m.tags) SKEIN_TRY(validate_id(tag, "manifest.tags"));
  if ((m.parent == parent_kind::none) != m.parent_id.empty())
    return status::invalid_input("manifest.parent_id: must be set exactly when parent_kind is not none");
  if (!m.parent_id.empty()) SKEIN_TRY(validate_id(m.parent_id, "manifest.parent_id"));
  for (auto [text, field] : {std::pair{&m.session_id, "manifest.session_id"},
                             {&m.task_id, "manifest.task_id"},
                             {&m.title, "manifest.title"},
                             {&m.name, "manifest.name"},
                             {&m.environment_id, "manifest.environment_id"}})
    SKEIN_TRY(check_text(*text, field));
  SKEIN_TRY(check_number(m.cost_usd, "manifest.cost_usd"));
  SKEIN_TRY(validate_members(m.members, "manifest.members"));
  std::string config;
  SKEIN_TRY(check_raw(m.config.empty() ? "{}" : m.config,
                      {"manifest.config", "{", manifest_envelope_depth}, limits, &config));

  out->clear();
  json_writer w{out};
  w.begin_object();
  w.field_int("v", manifest_format_version);
  w.field("id", m.id);
  w.field("agent_id", m.agent_id);
  w.field("parent_kind", to_string(m.parent));
  w.field("parent_id", m.parent_id);
  w.field("session_id", m.session_id);
  w.field("task_id", m.task_id);
  w.field("title", m.title);
  w.field("name", m.name);
  w.field_strings("tags", m.tags);
  w.field_int("pinned_at", m.pinned_at_ms);
  w.field("environment_id", m.environment_id);
  w.field("status", to_string(m.status));
  if (m.last_outcome) w.field("last_outcome", to_string(*m.last_outcome));
  write_spend(w, m.usage, m.cost_usd);
  w.key("config");
  w.raw(config);
  w.field_int("created_at", m.created_at_ms);
  w.field_int("updated_at", m.updated_at_ms);
  w.field_uint("last_seq", m.last_seq);
  w.field_uint("children_count", m.children_count);
  w.field_int("heartbeat_at", m.heartbeat_at_ms);
  if (m.title_generated) w.field_bool("title_generated", true);
  if (m.compaction_seq != 0) w.field_uint("compaction_seq", m.compaction_seq);
  if (m.archived_at_ms != 0) w.field_int("archived_at", m.archived_at_ms);
  if (m.depth != 0) w.field_uint("depth", m.depth);
  if (!m.members.empty()) {
    w.key("members");
    w.begin_array();
    for (const auto& member : m.members) w.string(member.agent_id + "=" + std::string{to_string(member.trigger)});
    w.end_array();
  }
  if (m.work) {
    w.key("work");
    write_work_item(w, *m.work);
  }
  w.end_object();
  if (out->size() > limits.json_bytes_max)
    return too_large("manifest", out->size(), limits, biggest_field(m));
  return status::ok();
}

void write_work_item(json_writer& w, const work_item& x) {
  w.begin_object();
  w.field("text", x.text);
  w.field("status", to_string(x.status));
  w.field("class", to_string(x.cls));
  if (x.project_state) w.field_bool("project_state", true);
  w.field_uint("touch_count", x.touch_count);
  w.field_int("created_at", x.created_at_ms);
  w.field_int("last_touched_at", x.last_touched_at_ms);
  if (x.dormant_since_ms != 0) w.field_int("dormant_since", x.dormant_since_ms);
  if (x.resolved_at_ms != 0) w.field_int("resolved_at", x.resolved_at_ms);
  if (!x.resolution.empty()) w.field("resolution", x.resolution);
  if (!x.resolved_session.empty()) w.field("resolved_session", x.resolved_session);
  if (x.archived_at_ms != 0) w.field_int("archived_at", x.archived_at_ms);
  if (x.project != work_default_project) w.field("project", x.project);
  if (!x.linear_issue.empty()) w.field("linear_issue", x.linear_issue);
  w.end_object();
}

status read_work_item(const json::object_reader& r, work_item* out) {
  work_item x;
  std::string text;
  SKEIN_TRY(r.string("text", &x.text));
  SKEIN_TRY(r.string("status", &text));
  auto st = parse_work_status(text);
  if (!st) return status::invalid_input(r.name("status") + ": unknown status '" + quote_input(text) + "'");
  x.status = *st;
  text.clear();
  SKEIN_TRY(r.string("class", &text, false));
  if (!text.empty()) {
    auto c = parse_work_class(text);
    if (!c) return status::invalid_input(r.name("class") + ": unknown class '" + quote_input(text) + "'");
    x.cls = *c;
  }
  SKEIN_TRY(r.boolean("project_state", &x.project_state, false));
  SKEIN_TRY(r.uint("touch_count", &x.touch_count, false));
  SKEIN_TRY(r.int64("created_at", &x.created_at_ms));
  SKEIN_TRY(r.int64("last_touched_at", &x.last_touched_at_ms, false));
  SKEIN_TRY(r.int64("dormant_since", &x.dormant_since_ms, false));
  SKEIN_TRY(r.int64("resolved_at", &x.resolved_at_ms, false));
  SKEIN_TRY(r.string("resolution", &x.resolution, false));
  SKEIN_TRY(r.string("resolved_session", &x.resolved_session, false));
  SKEIN_TRY(r.int64("archived_at", &x.archived_at_ms, false));
  SKEIN_TRY(r.string("project", &x.project, false));
  if (x.project.empty()) return status::invalid_input(r.name("project") + ": empty");
  SKEIN_TRY(r.string("linear_issue", &x.linear_issue, false));
  *out = std::move(x);
  return status::ok();
}

status check_storable(const manifest& m, const json_limits& limits) {
  std::string scratch;
  return encode_manifest(m, &scratch, limits);
}

status decode_manifest(std::string_view json, manifest* out, const json_limits& limits) {
  json::document doc;
  object_reader r;
  SKEIN_TRY(json::parse_versioned(json, limits, "manifest", manifest_format_version, &doc, &r));
  manifest m;
  SKEIN_TRY(r.string("id", &m.id));
  SKEIN_TRY(validate_id(m.id, "manifest.id"));
  SKEIN_TRY(r.string("agent_id", &m.agent_id));
  SKEIN_TRY(validate_id(m.agent_id, "manifest.agent_id"));
  std::string text;
  SKEIN_TRY(r.string("parent_kind", &text, false));
  if (!text.empty()) {
    auto kind = parse_parent_kind(text);
    if (!kind) return status::invalid_input("manifest.parent_kind: unknown kind '" + text + "'");
    m.parent = *kind;
  }
  SKEIN_TRY(r.string("parent_id", &m.parent_id, false));
  if ((m.parent == parent_kind::none) != m.parent_id.empty())
    return status::invalid_input("manifest.parent_id: must be set exactly when parent_kind is not none");
  SKEIN_TRY(r.string("session_id", &m.session_id, false));
  SKEIN_TRY(r.string("task_id", &m.task_id, false));
  SKEIN_TRY(r.string("title", &m.title, false));
  SKEIN_TRY(r.string("name", &m.name, false));
  SKEIN_TRY(r.strings("tags", &m.tags, false));
  for (const auto& tag : m.tags) SKEIN_TRY(validate_id(tag, "manifest.tags"));
  SKEIN_TRY(r.int64("pinned_at", &m.pinned_at_ms, false));
  SKEIN_TRY(r.string("environment_id", &m.environment_id, false));
  SKEIN_TRY(r.string("status", &text));
  auto st = parse_thread_status(text);
  if (!st) return status::invalid_input("manifest.status: unknown status '" + text + "'");
  m.status = *st;
  if (r.has("last_outcome")) {
    SKEIN_TRY(r.string("last_outcome", &text));
    auto outcome = parse_run_outcome(text);
    if (!outcome) return r.invalid("last_outcome", "unknown outcome '" + quote_input(text) + "'");
    m.last_outcome = *outcome;
  }
  if (r.has("usage")) SKEIN_TRY(read_usage(r, "usage", &m.usage));
  SKEIN_TRY(r.number("cost_usd", &m.cost_usd, false));
  SKEIN_TRY(r.raw("config", dom::element_type::OBJECT, &m.config, false));
  SKEIN_TRY(r.int64("created_at", &m.created_at_ms));
  SKEIN_TRY(r.int64("updated_at", &m.updated_at_ms));
  SKEIN_TRY(r.uint("last_seq", &m.last_seq));
  SKEIN_TRY(r.uint("children_count", &m.children_count, false));
  SKEIN_TRY(r.int64("heartbeat_at", &m.heartbeat_at_ms, false));
  SKEIN_TRY(r.boolean("title_generated", &m.title_generated, false));
  SKEIN_TRY(r.uint("compaction_seq", &m.compaction_seq, false));
  SKEIN_TRY(r.int64("archived_at", &m.archived_at_ms, false));
  uint64_t depth = 0;
  SKEIN_TRY(r.uint("depth", &depth, false));
  if (depth > UINT32_MAX) return status::invalid_input("manifest.depth: out of range");
  m.depth = static_cast<uint32_t>(depth);
  std::vector<std::string> members;
  SKEIN_TRY(r.strings("members", &members, false));
  for (const auto& text : members) {
    size_t eq = text.rfind('=');
    auto trigger = eq == std::string::npos ? std::nullopt : parse_member_trigger(std::string_view{text}.substr(eq + 1));
    if (!trigger) return status::invalid_input("manifest.members: '" + quote_input(text) + "' is not agent=trigger");
    m.members.push_back({text.substr(0, eq), *trigger});
  }
  SKEIN_TRY(validate_members(m.members, "manifest.members"));
  if (r.has("work")) {
    dom::element el;
    SKEIN_TRY(r.element("work", &el));
    object_reader wr;
    SKEIN_TRY(object_reader::open(el, "manifest.work", &wr));
    SKEIN_TRY(read_work_item(wr, &m.work.emplace()));
  }
  *out = std::move(m);
  return status::ok();
}

}  // namespace skein
