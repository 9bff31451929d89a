// client: what every noun of the CLI shares — routes filled from the command
// line, the client's calls and exit codes, the response readers, the list of
// nouns.
#include <cstdio>

#include "runtime/model/ids.hpp"
#include "runtime/model/json_codec.hpp"
#include "tools/cli/command.hpp"
#include "tools/tool_util.hpp"

namespace skein::tools::cli {

const std::vector<noun>& nouns() {
  static const std::vector<noun> all = {
      {"thread", "threads: create, list, inspect, compact, export and import them", thread_commands},
      {"entries", "a thread's entries: send one, list them, follow a run", entries_commands},
      {"task", "a task's dedicated thread", task_commands},
      {"house", "a house's members (a thread several agents answer in)", house_commands},
      {"agent", "agents: create, list, show", agent_commands},
      {"usage", "token and cost totals", usage_commands},
      {"memory", "an agent's messages closest to a query", memory_commands},
      {"schedule", "schedules: inputs sent to an agent on a cron, an interval or once", schedule_commands},
      {"cluster", "a cluster's members and their rebalance (admin)", cluster_commands},
      {"namespace", "tenants, each its own database (the server's admin)", namespace_commands},
  };
  return all;
}

route route::parse(std::string_view text) {
  size_t space = text.find(' ');
  if (space == std::string_view::npos) return {{}, text};
  return {text.substr(0, space), text.substr(space + 1)};
}

std::string given::get(std::string_view key, std::string_view fallback) const {
  auto it = values.find(key);
  return it == values.end() || it->second.empty() ? std::string{fallback} : it->second.back();
}

const std::vector<std::string>& given::all(std::string_view key) const {
  static const std::vector<std::string> none;
  auto it = values.find(key);
  return it == values.end() ? none : it->second;
}

uint64_t given::number(std::string_view key, uint64_t fallback) const {
  uint64_t n = fallback;
  if (has(key)) parse_u64(get(key), &n);
  return n;
}

std::string_view invocation::method(size_t i) const { return route::parse(cmd.routes.at(i)).method; }

std::string invocation::path(size_t i, const std::map<std::string, std::string, std::less<>>& values) const {
  std::string_view p = route::parse(cmd.routes.at(i)).path;
  std::string out;
  for (size_t at = 0; at < p.size();) {
    size_t open = p.find('{', at);
    if (open == std::string_view::npos) {
      out += p.substr(at);
      break;
    }
    size_t close = p.find('}', open);
    out += p.substr(at, open - at);
    std::string_view name = p.substr(open + 1, close - open - 1);
    auto v = values.find(name);
    out += q(v != values.end() ? v->second : a.get(name));
    at = close + 1;
  }
  return out;
}

std::string q(const std::string& s) { return http::percent_encode(s); }

std::string query_params(const given& a, std::initializer_list<std::string_view> keys) {
  std::string out;
  for (std::string_view key : keys) {
    if (a.get(key).empty()) continue;
    std::string name{key};
    for (auto& ch : name)
      if (ch == '-') ch = '_';
    out += "&" + name + "=" + q(a.get(key));
  }
  return out;
}

bool client::call(const invocation& in, size_t route, const std::string& query, const std::string& body,
                  http::response* r, int* code, const std::map<std::string, std::string, std::less<>>& values) {
  return call(std::string{in.method(route)}, in.path(route, values) + query, body, r, code);
}

bool client::call(const std::string& method, const std::string& target, const std::string& body, http::response* r,
                  int* code) {
  last_request = method + " " + target;
  if (status s = http.call(method, target, body, r, headers); !s) {
    std::fprintf(stderr, "skein: %s\n", s.to_string().c_str());
    *code = failed;
    return false;
  }
  if (r->status >= 300) {
    std::fprintf(stderr, "skein: %s %s: HTTP %d %s\n", method.c_str(), target.c_str(), r->status, r->body.c_str());
    *code = code_for(r->status, r->body);
    return false;
  }
  return true;
}

// A 429 is a quota of the database when its error code says so (a passing
// overload stays `failed`, worth a retry).
int client::code_for(int http_status, const std::string& body) const {
  if (http_status == 404) return not_found;
  if (http_status == 401 || http_status == 403) return denied;
  if (http_status == 409) return conflict;
  if (http_status == 402) return budget;  // the agent's daily budget is spent
  if (http_status != 429) return failed;
  json::document doc;
  json::object_reader o, e;
  json::dom::element error;
  std::string code;
  status s = open_response(body, &doc, &o);
  if (s) s = o.element("error", &error);
  if (s) s = json::object_reader::open(error, "error", &e);
  if (s) s = e.string("code", &code);
  return s && code == "quota_exceeded" ? quota : failed;
}

int client::unreadable_response(const status& why) const {
  std::fprintf(stderr, "skein: cannot decode the response to %s: %s\n", last_request.c_str(), why.message().c_str());
  return unreadable;
}

int client::print_json(const http::response& r) const {
  json::document doc;
  if (status s = json::parse(r.body, response_limits, "response", &doc); !s) return unreadable_response(s);
  std::fwrite(r.body.data(), 1, r.body.size(), stdout);
  if (!r.body.empty() && r.body.back() != '\n') std::fputc('\n', stdout);
  return ok;
}

status open_response(const std::string& body, json::document* doc, json::object_reader* out) {
  return json::parse_object(body, response_limits, "response", doc, out);
}

status json_items(const std::string& body, const char* field, std::vector<std::string>* out) {
  json::document doc;
  json::dom::element items;
  json::object_reader o;
  json::dom::array arr;
  SKEIN_TRY(open_response(body, &doc, &o));
  SKEIN_TRY(o.element(field, &items));
  if (items.get(arr) != simdjson::SUCCESS) return status::invalid_input(o.name(field) + ": expected an array");
  out->clear();
  for (json::dom::element e : arr) out->push_back(simdjson::minify(e));
  return status::ok();
}

status string_field(const std::string& body, const char* field, bool required, std::string* out) {
  json::document doc;
  json::object_reader o;
  SKEIN_TRY(open_response(body, &doc, &o));
  return o.string(field, out, required);
}

status uint_field(const std::string& body, const char* field, uint64_t* out) {
  json::document doc;
  json::object_reader o;
  SKEIN_TRY(open_response(body, &doc, &o));
  return o.uint(field, out);
}

int print_manifest_id(client& c, const http::response& r) {
  manifest m;
  if (status s = decode_manifest(r.body, &m); !s) return c.unreadable_response(s);
  if (c.json) return c.print_json(r);
  std::printf("%s\n", m.id.c_str());
  return ok;
}

int print_manifest(client& c, const http::response& r) {
  manifest m;
  if (status s = decode_manifest(r.body, &m); !s) return c.unreadable_response(s);
  if (c.json) return c.print_json(r);
  std::printf("id        %s\nagent     %s\nstatus    %s\ntitle     %s\nevents    %llu\nsession   %s\ntokens    %llu in / %llu out\n",
              m.id.c_str(), m.agent_id.c_str(), std::string{to_string(m.status)}.c_str(), m.title.c_str(),
              static_cast<unsigned long long>(m.last_seq), m.session_id.c_str(),
              static_cast<unsigned long long>(m.usage.input_tokens), static_cast<unsigned long long>(m.usage.output_tokens));
  if (!m.parent_id.empty()) std::printf("parent    %s %s\n", std::string{to_string(m.parent)}.c_str(), m.parent_id.c_str());
  if (!m.task_id.empty()) std::printf("task      %s\n", m.task_id.c_str());
  for (const auto& member : m.members)
    std::printf("member    %s %s\n", member.agent_id.c_str(), std::string{to_string(member.trigger)}.c_str());
  return ok;
}

int misuse(const std::string& message) {
  std::fprintf(stderr, "skein: %s\n", message.c_str());
  return usage;
}

}  // namespace skein::tools::cli
