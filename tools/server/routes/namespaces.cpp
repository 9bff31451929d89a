// Namespace routes (runtime/namespaces/namespaces.hpp), outside any namespace: the
// server's admin creates, re-quotas and deletes them; any token lists and reads
// its own namespace, and sees any other as a missing one. A server with one
// namespace (no namespace_set) has none of these routes: 404.
#include "runtime/model/json_reader.hpp"
#include "runtime/model/json_writer.hpp"
#include "runtime/namespaces/namespaces.hpp"
#include "tools/server/routes/routes.hpp"

namespace skein::server {
namespace {

// {"name":..,"created_at_ms":..,"quota":{..}[,"usage":{..}]}
std::string namespace_json(const namespace_info& info, const namespace_usage* usage = nullptr) {
  std::string out;
  json_writer w{&out};
  w.begin_object();
  w.field("name", info.name);
  w.field_int("created_at_ms", info.created_at_ms);
  w.key("quota");
  write_namespace_quota(w, info.quota);
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

enum class body_kind { create, patch };

// A create body {"name":..,"quota":{..}} (quota optional), or a patch body
// {"quota":{..}}. Unknown fields are refused by name; a quota field absent from
// a patch keeps its value in *quota.
status namespace_body(const route_call& c, body_kind kind, std::string* name, namespace_quota* quota) {
  json::document doc;
  json::object_reader r;
  SKEIN_TRY(c.body(&doc, &r));
  SKEIN_TRY(kind == body_kind::create ? r.only({"name", "quota"}) : r.only({"quota"}));
  if (kind == body_kind::create) {
    SKEIN_TRY(r.string("name", name));
    // Named "body.name", prefix and all, in the field too: the one body field
    // not named as the body has it (tests/namespaces pins it).
    SKEIN_TRY(validate_namespace(*name, r.name("name")));
  }
  if (!r.has("quota")) return kind == body_kind::create ? status::ok() : r.invalid("quota", "required");
  json::dom::element q;
  SKEIN_TRY(r.element("quota", &q));
  json::object_reader qr;
  SKEIN_TRY(json::object_reader::open(q, r.name("quota"), &qr));
  SKEIN_TRY(qr.only({"threads_max", "events_per_day_max", "storage_bytes_max"}));
  return read_namespace_quota(qr, false, quota);
}

// No namespace_set behind the api: answers 404 and false.
bool has_namespaces(route_call& c) {
  if (c.env.namespaces != nullptr) return true;
  c.fail(status::not_found("no route " + quote_input(c.req.path) + ": this server has one namespace"));
  return false;
}

// The path's namespace, if the token may see it: another namespace answers
// as a missing one.
bool namespace_visible(route_call& c, const std::string& name) {
  if (status s = validate_namespace(name, "namespace"); !s) return c.fail(s), false;
  if (!c.scope.server_admin && name != c.scope.ns)
    return c.fail(status::not_found("namespace " + quote_input(name) + " not found")), false;
  return true;
}

void list_namespaces(route_call& c) {
  if (!has_namespaces(c)) return;
  std::vector<namespace_info> all;
  if (status s = c.env.namespaces->list(&all); !s) return c.fail(s);
  std::string body;
  json_writer w{&body};
  w.begin_object();
  w.key("namespaces");
  w.begin_array();
  for (const auto& info : all)
    if (c.scope.server_admin || info.name == c.scope.ns) w.raw(namespace_json(info));
  w.end_array();
  w.end_object();
  c.reply_json(200, body);
}

void create_namespace(route_call& c) {
  if (!has_namespaces(c)) return;
  std::string name;
  namespace_quota quota;
  if (status s = namespace_body(c, body_kind::create, &name, &quota); !s) return c.fail(s);
  namespace_info info;
  if (status s = c.env.namespaces->create(name, quota, &info); !s) return c.fail(s);
  c.reply_json(201, namespace_json(info));
}

void get_namespace(route_call& c) {
  const std::string& name = c.param("namespace");
  if (!has_namespaces(c) || !namespace_visible(c, name)) return;
  namespace_info info;
  if (status s = c.env.namespaces->get(name, &info); !s) return c.fail(s);
  namespace_usage usage;
  if (status s = c.env.namespaces->usage(name, &usage); !s) return c.fail(s);
  c.reply_json(200, namespace_json(info, &usage));
}

void patch_namespace(route_call& c) {
  const std::string& name = c.param("namespace");
  if (!has_namespaces(c) || !namespace_visible(c, name)) return;
  namespace_info info;
  if (status s = c.env.namespaces->get(name, &info); !s) return c.fail(s);
  std::string unused;
  namespace_quota quota = info.quota;
  if (status s = namespace_body(c, body_kind::patch, &unused, &quota); !s) return c.fail(s);
  if (status s = c.env.namespaces->set_quota(name, quota, &info); !s) return c.fail(s);
  c.reply_json(200, namespace_json(info));
}

void delete_namespace(route_call& c) {
  const std::string& name = c.param("namespace");
  if (!has_namespaces(c) || !namespace_visible(c, name)) return;
  if (status s = c.env.namespaces->remove(name); !s) return c.fail(s);
  c.reply(no_content());
}

constexpr route rows[] = {
    {.method = "GET", .pattern = "/v1/namespaces", .scope = route_scope::server, .handler = list_namespaces},
    {.method = "POST", .pattern = "/v1/namespaces", .scope = route_scope::server_admin,
     .denied = "create namespaces (the server's admin only)", .handler = create_namespace},
    {.method = "GET", .pattern = "/v1/namespaces/{namespace}", .scope = route_scope::server, .handler = get_namespace},
    {.method = "PATCH", .pattern = "/v1/namespaces/{namespace}", .scope = route_scope::server_admin,
     .denied = "change a namespace's quota (the server's admin only)", .handler = patch_namespace},
    {.method = "DELETE", .pattern = "/v1/namespaces/{namespace}", .scope = route_scope::server_admin,
     .denied = "delete namespaces (the server's admin only)", .handler = delete_namespace},
};

}  // namespace

std::span<const route> namespace_routes() { return rows; }

}  // namespace skein::server
