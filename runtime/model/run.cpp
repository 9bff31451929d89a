#include "runtime/model/run.hpp"

#include <array>

#include "runtime/model/ids.hpp"
#include "runtime/model/json_codec.hpp"
#include "runtime/model/json_reader.hpp"
#include "runtime/model/json_writer.hpp"

namespace skein {
namespace {

constexpr std::array<std::string_view, 3> outcome_names = {"completed", "failed", "cancelled"};

status check_text_field(const std::string& s, std::string_view field, std::string_view limit, size_t max) {
  if (s.size() > max)
    return status::invalid_input(std::string{field} + ": longer than " + std::string{limit} + " (" +
                                 std::to_string(max) + " bytes)")
        .with_limit(std::string{limit})
        .with_field(std::string{field});
  if (!valid_utf8(s)) return status::invalid_input(std::string{field} + ": invalid UTF-8");
  return status::ok();
}

}  // namespace

std::string_view to_string(run_outcome o) { return outcome_names[static_cast<size_t>(o)]; }

std::optional<run_outcome> parse_run_outcome(std::string_view name) {
  for (size_t i = 0; i < outcome_names.size(); ++i)
    if (outcome_names[i] == name) return static_cast<run_outcome>(i);
  return std::nullopt;
}

status validate_input(const run_input& in) {
  if (in.text.size() > input_bytes_max)
    return status::invalid_input("text: " + std::to_string(in.text.size()) +
                                 " bytes exceeds input_bytes_max (" + std::to_string(input_bytes_max) + ")")
        .with_limit("input_bytes_max");
  if (!valid_utf8(in.text)) return status::invalid_input("text: invalid UTF-8");
  if (!in.idempotency_key.empty()) SKEIN_TRY(validate_id(in.idempotency_key, "idempotency_key"));
  SKEIN_TRY(validate_id(in.source, "source"));
  if (!in.run_id.empty()) SKEIN_TRY(validate_id(in.run_id, "run_id"));
  return status::ok();
}

status encode_inbox_input(const run_input& in, std::string* out) {
  SKEIN_TRY(validate_input(in));
  SKEIN_TRY(validate_id(in.run_id, "run_id"));
  out->clear();
  json_writer w{out};
  w.begin_object();
  w.field_int("v", 1);
  w.field("run_id", in.run_id);
  w.field("role", to_string(in.role));
  w.field("text", in.text);
  w.field("source", in.source);
  w.field("idempotency_key", in.idempotency_key);
  if (!in.member.empty()) w.field("member", in.member);
  if (in.follow_up) w.field_bool("follow_up", true);
  w.end_object();
  return status::ok();
}

status decode_inbox_input(std::string_view json, run_input* out, const json_limits& limits) {
  json::document doc;
  json::object_reader r;
  SKEIN_TRY(json::parse_object(json, limits, "inbox input", &doc, &r));
  run_input in;
  std::string role;
  SKEIN_TRY(r.string("run_id", &in.run_id));
  SKEIN_TRY(r.string("role", &role));
  SKEIN_TRY(r.string("text", &in.text));
  SKEIN_TRY(r.string("source", &in.source));
  SKEIN_TRY(r.string("idempotency_key", &in.idempotency_key, false));
  SKEIN_TRY(r.string("member", &in.member, false));
  SKEIN_TRY(r.boolean("follow_up", &in.follow_up, false));
  if (!in.member.empty()) SKEIN_TRY(validate_id(in.member, "inbox input.member"));
  auto parsed = parse_role(role);
  if (!parsed) return status::invalid_input("inbox input.role: must be user, assistant or system");
  in.role = *parsed;
  SKEIN_TRY(validate_input(in));
  SKEIN_TRY(validate_id(in.run_id, "inbox input.run_id"));
  *out = std::move(in);
  return status::ok();
}

status result_from_log(const std::string& thread_id, const std::string& run_id,
                       const std::vector<event>& events, run_result* out) {
  run_result r;
  r.thread_id = thread_id;
  r.run_id = run_id;
  bool stopped = false;
  for (const auto& e : events) {
    if (e.run_id != run_id) continue;
    if (r.first_seq == 0) r.first_seq = e.seq;
    r.last_seq = e.seq;
    if (e.type == event_type::message && e.role == message_role::assistant) r.text = e.text;
    if (e.type == event_type::result) {
      r.usage = e.usage;
      r.cost_usd = e.cost_usd;
      r.duration_ms = e.duration_ms;
      r.turns = e.turns;
    }
    if (e.type == event_type::signal && e.name == "thread.stop") {
      json::document doc;
      json::object_reader data;
      std::string outcome;
      if (json::parse(e.json, json_limits{}, "thread.stop data", &doc).is_ok() &&
          json::object_reader::open(doc.root(), "data", &data).is_ok()) {
        data.string("outcome", &outcome, false).ignore();
        data.string("error", &r.error, false).ignore();
      }
      r.outcome = parse_run_outcome(outcome).value_or(run_outcome::failed);
      stopped = true;
      break;
    }
  }
  if (!stopped) return status::not_found("run " + run_id + " has not ended");
  *out = std::move(r);
  return status::ok();
}

namespace {

// validate_id() names the field in its message; a thread option's error names it
// in status::field() too, so that a caller (create_threads, the HTTP body) need
// not read the message.
status option_id(std::string_view id, const char* field) {
  status s = validate_id(id, field);
  if (!s && s.field().empty()) return std::move(s).with_field(field);
  return s;
}

}  // namespace

status validate_thread_options(const thread_options& o) {
  SKEIN_TRY(option_id(o.agent_id, "agent_id"));
  SKEIN_TRY(check_text_field(o.title, "title", "title_bytes_max", title_bytes_max));
  SKEIN_TRY(check_text_field(o.name, "name", "title_bytes_max", title_bytes_max));
  if (o.tags.size() > tags_max)
    return status::invalid_input("tags: more than tags_max (" + std::to_string(tags_max) + ")").with_limit("tags_max");
  for (const auto& t : o.tags) SKEIN_TRY(option_id(t, "tags"));
  if (!o.parent_thread_id.empty()) SKEIN_TRY(option_id(o.parent_thread_id, "parent_thread_id"));
  if (!o.task_id.empty()) SKEIN_TRY(option_id(o.task_id, "task_id"));
  if (o.dm && !o.parent_thread_id.empty())
    return status::invalid_input("dm: a DM thread hangs from its agent, not from a parent thread").with_field("dm");
  if (!o.members.empty() && (o.dm || !o.parent_thread_id.empty() || !o.task_id.empty()))
    return status::invalid_input("members: only a root thread (no parent, no task) is a house").with_field("members");
  SKEIN_TRY(validate_members(o.members, "members"));
  if (!o.engine_config.empty()) {
    if (o.engine_config.size() > engine_config_bytes_max)
      return status::invalid_input("engine_config: " + std::to_string(o.engine_config.size()) +
                                   " bytes exceed engine_config_bytes_max (" +
                                   std::to_string(engine_config_bytes_max) + ")")
          .with_limit("engine_config_bytes_max")
          .with_field("engine_config");
    json_limits limits;
    limits.json_depth_max = engine_config_depth_max;
    json::document doc;
    SKEIN_TRY(json::parse(o.engine_config, limits, "engine_config", &doc));
    if (!doc.root().is_object())
      return status::invalid_input("engine_config: must be a JSON object").with_field("engine_config");
  }
  return status::ok();
}

namespace {

void write_value(json::dom::element v, std::string* out) { *out += simdjson::minify(v); }

// Writes merge(target, patch) where patch is an object; target may be absent.
void merge_into(const json::dom::element* target, json::dom::element patch, std::string* out) {
  json::dom::object p;
  if (patch.get_object().get(p) != simdjson::SUCCESS) {
    write_value(patch, out);
    return;
  }
  json::dom::object t;
  bool has_target = target != nullptr && target->get_object().get(t) == simdjson::SUCCESS;
  *out += '{';
  bool first = true;
  auto sep = [&] {
    if (!first) *out += ',';
    first = false;
  };
  if (has_target) {
    for (auto field : t) {
      json::dom::element pv;
      if (p.at_key(field.key).get(pv) != simdjson::SUCCESS) {
        sep();
        append_json_string(out, field.key);
        *out += ':';
        write_value(field.value, out);
        continue;
      }
      if (pv.is_null()) continue;  // null removes the member
      sep();
      append_json_string(out, field.key);
      *out += ':';
      merge_into(&field.value, pv, out);
    }
  }
  for (auto field : p) {
    json::dom::element tv;
    if (has_target && t.at_key(field.key).get(tv) == simdjson::SUCCESS) continue;  // merged above
    if (field.value.is_null()) continue;
    sep();
    append_json_string(out, field.key);
    *out += ':';
    merge_into(nullptr, field.value, out);
  }
  *out += '}';
}

}  // namespace

status merge_patch(std::string_view target, std::string_view patch, std::string* out) {
  json::document t, p;
  SKEIN_TRY(json::parse(target.empty() ? "{}" : target, json_limits{}, "engine_config", &t));
  SKEIN_TRY(json::parse(patch.empty() ? "{}" : patch, json_limits{}, "engine_config patch", &p));
  out->clear();
  json::dom::element root = t.root();
  merge_into(&root, p.root(), out);
  return status::ok();
}

std::string thread_engine_patch(const std::string& manifest_config) {
  json::document doc;
  json::object_reader r;
  std::string patch;
  if (!json::parse(manifest_config, json_limits{}, "config", &doc).is_ok() ||
      !json::object_reader::open(doc.root(), "config", &r).is_ok() ||
      !r.raw("engine_config", json::dom::element_type::OBJECT, &patch, false).is_ok())
    return {};
  return patch == "{}" ? std::string{} : patch;
}

mid_run_policy effective_policy(const std::string& manifest_config, mid_run_policy agent_policy) {
  json::document doc;
  json::object_reader r;
  std::string name;
  if (!json::parse(manifest_config, json_limits{}, "config", &doc).is_ok() ||
      !json::object_reader::open(doc.root(), "config", &r).is_ok() ||
      !r.string("mid_run", &name, false).is_ok())
    return agent_policy;
  return parse_mid_run_policy(name).value_or(agent_policy);
}

}  // namespace skein
