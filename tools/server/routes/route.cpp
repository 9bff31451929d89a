// What route.hpp declares: the call's helpers and the answers every resource's
// handlers share.
#include "tools/server/routes/route.hpp"

#include <algorithm>
#include <cassert>
#include <charconv>
#include <limits>

#include "runtime/model/ids.hpp"
#include "runtime/model/json_codec.hpp"
#include "runtime/model/json_reader.hpp"

namespace skein::server {

std::string_view to_string(route_scope s) {
  switch (s) {
    case route_scope::open: return "open";
    case route_scope::server: return "server";
    case route_scope::server_admin: return "server_admin";
    case route_scope::admin: return "admin";
    case route_scope::ns: return "ns";
    case route_scope::agent_query: return "agent_query";
    case route_scope::agent: return "agent";
    case route_scope::agent_hidden: return "agent_hidden";
    case route_scope::thread: return "thread";
    case route_scope::schedule: return "schedule";
    case route_scope::task: return "task";
    case route_scope::suggestion: return "suggestion";
  }
  return "unknown";
}

const std::string& param_of(const route_params& params, std::string_view name) {
  for (const auto& [key, value] : params)
    if (key == name) return value;
  static const std::string none;
  return none;
}

const std::string& route_call::param(std::string_view name) const {
  // A handler names only the segments of its own row's pattern.
  assert(std::any_of(params.begin(), params.end(), [&](const auto& p) { return p.first == name; }) &&
         "route_call::param: the row's pattern has no such segment");
  return param_of(params, name);
}

std::string route_call::query(std::string_view name) const {
  auto it = req.query.find(std::string{name});
  return it == req.query.end() ? std::string{} : it->second;
}

void route_call::reply_json(int http_status, std::string body) { reply(json_response(http_status, std::move(body))); }

void route_call::forbidden(const std::string& what) { reply(forbidden_response(what)); }

bool route_call::thread_allowed(const std::string& id, manifest* m) {
  status s = visible_thread(rt(), scope, id, "", m);
  if (!s) return fail(s), false;
  return true;
}

status route_call::body(json::document* doc, json::object_reader* out) const {
  return open_body(req, limits(), doc, out);
}

status open_body(const http::request& req, const json_limits& limits, json::document* doc, json::object_reader* out) {
  SKEIN_TRY(json::parse(req.body.empty() ? std::string_view{"{}"} : std::string_view{req.body}, limits,
                        "request body", doc));
  return json::object_reader::open(doc->root(), "body", out);
}

http::response json_response(int http_status, std::string body) {
  return http::response{http_status, "application/json", std::move(body), {}};
}

http::response no_content() { return http::response{204, "application/json", "", {}}; }

http::response forbidden_response(const std::string& what) {
  return error_response(status::invalid_input("forbidden: the token may not " + what), 403);
}

status missing_thread(const std::string& id, const std::string& field) {
  return status::not_found("thread " + quote_input(id) + ": not found").with_field(field);
}

status missing_agent(const std::string& id) {
  return status::not_found("agent " + quote_input(id) + ": not found").with_field("agent");
}

status visible_agent(runtime& rt, const token_scope& scope, const std::string& id) {
  SKEIN_TRY(validate_id(id, "agent").with_field("agent"));
  if (!scope.allows(id)) return missing_agent(id);
  agent_config a;
  status s = rt.get_agent(id, &a);
  if (s.code() == errc::not_found) return missing_agent(id);
  return s;
}

status visible_thread(runtime& rt, const token_scope& scope, const std::string& id, const std::string& field,
                      manifest* m) {
  SKEIN_TRY(validate_id(id, field.empty() ? "thread id" : field));
  status s = rt.get_thread(id, m);
  if (s.code() == errc::not_found) return missing_thread(id, field);
  SKEIN_TRY(s);
  if (!scope.allows(m->agent_id)) return missing_thread(id, field);
  return status::ok();
}

status parse_uint(const std::string& text, const std::string& field, uint64_t* out) {
  auto r = std::from_chars(text.data(), text.data() + text.size(), *out);
  bool whole = !text.empty() && r.ptr == text.data() + text.size();
  if (whole && r.ec == std::errc::result_out_of_range)
    return status::invalid_input(field + ": out of range (at most " +
                                 std::to_string(std::numeric_limits<uint64_t>::max()) + ")")
        .with_field(field);
  if (!whole || r.ec != std::errc{})
    return status::invalid_input(field + ": expected an unsigned integer").with_field(field);
  return status::ok();
}

status query_uint(const http::request& req, const std::string& name, uint64_t fallback, uint64_t* out) {
  auto it = req.query.find(name);
  if (it == req.query.end()) {
    *out = fallback;
    return status::ok();
  }
  return parse_uint(it->second, name, out);
}

std::string manifest_json(const manifest& m) {
  std::string out;
  encode_manifest(m, &out).ignore();  // stored manifests always encode
  out.pop_back();  // the closing brace of the manifest object
  out += R"(,"stage":")";
  out += thread_stage(m.status, m.last_outcome, false);
  out += R"("})";
  return out;
}

}  // namespace skein::server
