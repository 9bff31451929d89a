#include "tools/server/namespace_json.hpp"

#include "runtime/model/json_reader.hpp"
#include "runtime/model/json_writer.hpp"

namespace skein::server {
namespace {

// The first key of `el` (an object) that is not one of `known`.
status only_fields(json::dom::element el, std::initializer_list<std::string_view> known, const std::string& context) {
  json::dom::object obj;
  if (el.get(obj) != simdjson::SUCCESS) return status::invalid_input(context + ": expected an object").with_field(context);
  for (auto field : obj) {
    bool ok = false;
    for (auto k : known) ok = ok || field.key == k;
    if (!ok) {
      std::string name = context + "." + std::string(field.key.substr(0, 64));
      return status::invalid_input(name + ": not a field of " + context).with_field(name);
    }
  }
  return status::ok();
}

}  // namespace

std::string namespace_json(const namespace_info& info, const namespace_usage* usage) {
  std::string out;
  json_writer w{&out};
  w.begin_object();
  w.field("name", info.name);
  w.field_int("created_at_ms", info.created_at_ms);
  w.key("quota");
  w.begin_object();
  w.field_uint("threads_max", info.quota.threads_max);
  w.field_uint("events_per_day_max", info.quota.events_per_day_max);
  w.field_uint("storage_bytes_max", info.quota.storage_bytes_max);
  w.end_object();
  if (usage != nullptr) {
    w.key("usage");
    w.begin_object();
    w.field_uint("threads", usage->threads);
    w.field_uint("events_today", usage->events_today);
    w.field_uint("storage_bytes", usage->storage_bytes);
    w.end_object();
  }
  w.end_object();
  return out;
}

status decode_namespace_body(const std::string& body, const json_limits& limits, bool name_required,
                             std::string* name, namespace_quota* quota) {
  json::document doc;
  SKEIN_TRY(json::parse(body.empty() ? std::string_view{"{}"} : std::string_view{body}, limits, "request body", &doc));
  if (name_required) SKEIN_TRY(only_fields(doc.root(), {"name", "quota"}, "body"));
  else SKEIN_TRY(only_fields(doc.root(), {"quota"}, "body"));
  json::object_reader r;
  SKEIN_TRY(json::object_reader::open(doc.root(), "body", &r));
  if (name_required) {
    SKEIN_TRY(r.string("name", name));
    SKEIN_TRY(validate_namespace(*name, "body.name"));
  }
  if (!r.has("quota")) {
    if (name_required) return status::ok();
    return status::invalid_input("body.quota: required").with_field("body.quota");
  }
  json::dom::element q;
  SKEIN_TRY(r.element("quota", &q));
  SKEIN_TRY(only_fields(q, {"threads_max", "events_per_day_max", "storage_bytes_max"}, "body.quota"));
  json::object_reader qr;
  SKEIN_TRY(json::object_reader::open(q, "body.quota", &qr));
  SKEIN_TRY(qr.uint("threads_max", &quota->threads_max, false));
  SKEIN_TRY(qr.uint("events_per_day_max", &quota->events_per_day_max, false));
  SKEIN_TRY(qr.uint("storage_bytes_max", &quota->storage_bytes_max, false));
  return status::ok();
}

}  // namespace skein::server
