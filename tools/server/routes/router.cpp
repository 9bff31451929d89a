// The matcher of router.hpp over the compiled patterns of routes.hpp.
#include "tools/server/routes/router.hpp"

#include <cassert>
#include <vector>

#include "tools/server/routes/routes.hpp"

namespace skein::server {
namespace {

struct segment {
  std::string_view text;  // a literal, or the name of a named segment
  bool named = false;
};

struct compiled_route {
  const route* row;
  std::vector<segment> segments;
  size_t literals = 0;
};

std::vector<segment> compile_pattern(std::string_view pattern) {
  // Patterns are constant data: a malformed one is a programmer's error.
  assert(!pattern.empty() && pattern.front() == '/' && "a route pattern starts with '/'");
  std::vector<segment> out;
  size_t i = 1;
  while (i <= pattern.size()) {
    size_t j = pattern.find('/', i);
    if (j == std::string_view::npos) j = pattern.size();
    std::string_view text = pattern.substr(i, j - i);
    assert(!text.empty() && "a route pattern has no empty segment");
    if (text.front() == '{') {
      assert(text.back() == '}' && text.size() > 2 && "a named segment is a whole segment: {name}");
      out.push_back({text.substr(1, text.size() - 2), true});
    } else {
      assert(text.find('{') == std::string_view::npos && "a named segment is a whole segment: {name}");
      out.push_back({text, false});
    }
    i = j + 1;
  }
  return out;
}

[[maybe_unused]] bool same_shape(const compiled_route& a, const compiled_route& b) {
  if (a.segments.size() != b.segments.size()) return false;
  for (size_t i = 0; i < a.segments.size(); ++i) {
    const segment &x = a.segments[i], &y = b.segments[i];
    if (x.named != y.named || (!x.named && x.text != y.text)) return false;
  }
  return true;
}

bool needs_param(route_scope s) {
  return s == route_scope::agent || s == route_scope::agent_hidden || s == route_scope::thread ||
         s == route_scope::schedule || s == route_scope::task || s == route_scope::suggestion;
}

std::string_view scope_param(route_scope s) {
  switch (s) {
    case route_scope::agent:
    case route_scope::agent_hidden: return "agent";
    case route_scope::thread: return "thread";
    case route_scope::schedule: return "schedule";
    case route_scope::task: return "task";
    case route_scope::suggestion: return "suggestion";
    default: return "";
  }
}

std::vector<compiled_route> compile_all() {
  std::vector<compiled_route> out;
  for (const route& row : api_routes()) {
    compiled_route c{&row, compile_pattern(row.pattern)};
    for (const auto& s : c.segments) c.literals += s.named ? 0 : 1;
    assert(row.handler != nullptr && "every row has a handler");
    // A scope that checks a path segment reads the one of its name.
    if (needs_param(row.scope)) {
      bool has = false;
      for (const auto& s : c.segments) has = has || (s.named && s.text == scope_param(row.scope));
      assert(has && "the row's scope reads a segment its pattern names");
      (void)has;
    }
    // The 403 of a checked scope says what the token may not do.
    assert((row.denied.empty() == (row.scope != route_scope::admin && row.scope != route_scope::server_admin &&
                                   row.scope != route_scope::agent && row.scope != route_scope::agent_query)) &&
           "denied is set exactly for the scopes that answer 403");
    for ([[maybe_unused]] const auto& other : out)
      assert(!(other.row->method == row.method && same_shape(other, c)) && "two rows serve one method and path");
    out.push_back(std::move(c));
  }
  return out;
}

const std::vector<compiled_route>& compiled() {
  static const std::vector<compiled_route> all = compile_all();
  return all;
}

bool matches(const compiled_route& c, const std::vector<std::string>& segments) {
  if (c.segments.size() != segments.size()) return false;
  for (size_t i = 0; i < segments.size(); ++i)
    if (!c.segments[i].named && c.segments[i].text != segments[i]) return false;
  return true;
}

}  // namespace

const std::string& route_match::param(std::string_view name) const { return param_of(params, name); }

route_match match_route(const http::request& req) {
  route_match m;
  std::vector<std::string> segments;
  // A request built in process may carry its decoded path alone.
  std::string_view target = req.target.empty() ? std::string_view{req.path} : std::string_view{req.target};
  if (!http::target_segments(target, &segments)) {
    m.malformed = true;
    return m;
  }
  // Only an absolute path names a route: "ui" or "http://host/ui" is no "/ui".
  if (!target.starts_with('/')) return m;
  const compiled_route* best = nullptr;
  bool open = true;
  for (const compiled_route& c : compiled()) {
    if (!matches(c, segments)) continue;
    if (c.row->method == req.method) {
      if (best == nullptr || c.literals > best->literals) best = &c;
      continue;
    }
    if (m.allow.find(c.row->method) == std::string::npos)
      m.allow += (m.allow.empty() ? "" : ", ") + std::string{c.row->method};
    open = open && c.row->scope == route_scope::open;
  }
  if (best == nullptr) {
    m.open = !m.allow.empty() && open;
    return m;
  }
  m.allow.clear();
  m.row = best->row;
  for (size_t i = 0; i < segments.size(); ++i)
    if (best->segments[i].named) m.params.emplace_back(best->segments[i].text, std::move(segments[i]));
  return m;
}

}  // namespace skein::server

namespace skein::server {

std::span<const route> api_routes() {
  static const std::vector<route> all = [] {
    std::vector<route> out;
    for (auto table : {health_routes(), agent_routes(), thread_routes(), entry_routes(), transfer_routes(),
                       schedule_routes(), usage_routes(), cluster_routes(), work_item_routes(),
                       work_session_routes(), work_graph_routes(), namespace_routes(), ui_routes()})
      out.insert(out.end(), table.begin(), table.end());
    return out;
  }();
  return all;
}

}  // namespace skein::server
