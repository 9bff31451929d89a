// namespace: the `skein namespace` commands (create, list, show, quota,
// delete), each row with the route it calls. The server's admin manages
// namespaces (docs/api.md, Namespaces); a namespace's own token may list and
// show its own.
#include <cstdio>

#include "runtime/model/json_writer.hpp"
#include "tools/cli/command.hpp"

namespace skein::tools::cli {
namespace {

// The quota options given, as a JSON object (the parser checked the numbers).
std::string quota_json(const given& a) {
  std::string body;
  json_writer w{&body};
  w.begin_object();
  for (auto [key, field] : {std::pair{"threads-max", "threads_max"}, std::pair{"events-per-day-max", "events_per_day_max"},
                            std::pair{"storage-bytes-max", "storage_bytes_max"}})
    if (a.has(key)) w.field_uint(field, a.number(key));
  w.end_object();
  return body;
}

int namespace_create(client& c, const invocation& in) {
  std::string body;
  json_writer w{&body};
  w.begin_object();
  w.field("name", in.a.get("name"));
  w.key("quota");
  w.raw(quota_json(in.a));
  w.end_object();
  http::response r;
  int code = ok;
  if (!c.call(in, 0, "", body, &r, &code)) return code;
  return c.print_json(r);
}

int namespace_list(client& c, const invocation& in) {
  http::response r;
  int code = ok;
  if (!c.call(in, 0, "", "", &r, &code)) return code;
  if (c.json) return c.print_json(r);
  std::vector<std::string> items;
  if (status s = json_items(r.body, "namespaces", &items); !s) return c.unreadable_response(s);
  std::printf("%-24s %14s %18s %18s\n", "NAME", "THREADS_MAX", "EVENTS_PER_DAY_MAX", "STORAGE_BYTES_MAX");
  for (const auto& text : items) {
    json::document doc;
    json::object_reader o, quota;
    std::string name;
    uint64_t threads = 0, events = 0, bytes = 0;
    json::dom::element qel;
    status s = open_response(text, &doc, &o);
    if (s) s = o.string("name", &name);
    if (s) s = o.element("quota", &qel);
    if (s) s = json::object_reader::open(qel, "quota", &quota);
    if (s) s = quota.uint("threads_max", &threads);
    if (s) s = quota.uint("events_per_day_max", &events);
    if (s) s = quota.uint("storage_bytes_max", &bytes);
    if (!s) return c.unreadable_response(s);
    auto shown = [](uint64_t v) { return v == 0 ? std::string("-") : std::to_string(v); };
    std::printf("%-24s %14s %18s %18s\n", name.c_str(), shown(threads).c_str(), shown(events).c_str(),
                shown(bytes).c_str());
  }
  return ok;
}

int namespace_show(client& c, const invocation& in) {
  http::response r;
  int code = ok;
  if (!c.call(in, 0, "", "", &r, &code)) return code;
  return c.print_json(r);
}

int namespace_quota(client& c, const invocation& in) {
  http::response r;
  int code = ok;
  if (!c.call(in, 0, "", "{\"quota\":" + quota_json(in.a) + "}", &r, &code)) return code;
  return c.print_json(r);
}

int namespace_delete(client& c, const invocation& in) {
  http::response r;
  int code = ok;
  if (!c.call(in, 0, "", "", &r, &code)) return code;
  if (!c.json) std::printf("namespace %s deleted\n", in.a.get("name").c_str());
  return ok;
}

constexpr arg name = pos("name", "the namespace");

// The quota options of create and quota; 0 is unlimited.
std::vector<arg> with_quota(arg first) {
  return {first, opt("--threads-max", "N", "threads at most (0: unlimited)").num(),
          opt("--events-per-day-max", "N", "events a day at most (0: unlimited)").num(),
          opt("--storage-bytes-max", "N", "bytes stored at most (0: unlimited)").num()};
}

}  // namespace

const std::vector<command>& namespace_commands() {
  static const std::vector<command> rows = {
      {"namespace", "create", {"POST /v1/namespaces"}, "a new namespace (the server's admin)", with_quota(name),
       namespace_create},
      {"namespace", "list", {"GET /v1/namespaces"}, "the namespaces and their quotas", {}, namespace_list},
      {"namespace", "show", {"GET /v1/namespaces/{name}"}, "its quota and what it holds now", {name}, namespace_show},
      {"namespace", "quota", {"PATCH /v1/namespaces/{name}"}, "changes its quota (the options given)",
       with_quota(name), namespace_quota},
      {"namespace", "delete", {"DELETE /v1/namespaces/{name}"}, "erases all of its data (the server's admin)", {name},
       namespace_delete},
  };
  return rows;
}

}  // namespace skein::tools::cli
