#include "tools/mcp/tools.hpp"

#include <map>
#include <set>

#include "runtime/model/json_reader.hpp"
#include "runtime/model/json_writer.hpp"
#include "tools/server/http.hpp"

namespace skein::mcp {
namespace {

namespace dom = json::dom;

constexpr int64_t id_bytes_max = 128;       // validate_id's bound
constexpr int64_t text_bytes_max = 4096;    // work_text_bytes_max
constexpr int64_t note_bytes_max = 16384;   // work_note_bytes_max
constexpr int64_t entry_bytes_max = 1 << 20;  // an entry's text: the API's body bound
constexpr int64_t list_limit_max = 1000;    // work_list_limit_max and the API's entries_limit_max
constexpr int64_t graph_depth_max = 8;      // work_graph_depth_max
constexpr int64_t texts_max = 256;          // open_items or topics of one session close
constexpr int64_t issues_max = 64;          // relates_to of one create

param_spec str(std::string name, bool required, int64_t max, std::string description) {
  return {std::move(name), param_type::string, required, 1, max, {}, std::move(description)};
}
param_spec integer(std::string name, int64_t min, int64_t max, std::string description) {
  return {std::move(name), param_type::integer, false, min, max, {}, std::move(description)};
}
param_spec flag(std::string name, std::string description) {
  return {std::move(name), param_type::boolean, false, 0, 0, {}, std::move(description)};
}
param_spec list(std::string name, int64_t max, std::string description) {
  return {std::move(name), param_type::strings, false, 0, max, {}, std::move(description)};
}

std::vector<tool_spec> make_specs() {
  param_spec stages = list("stages", 6, "Stages to list (default: emerging, active, cooling, dormant).");
  stages.one_of = {"emerging", "active", "cooling", "dormant", "archived", "resolved"};
  param_spec lens = str("lens", true, 16, "Which lens of the knowledge graph.");
  lens.one_of = {"connected", "produced_by", "provenance", "stats"};
  return {
      {"create_thread",
       "Create a work item (a thread the agent carries across sessions). A text close to an open item's "
       "returns that item, touched (deduplicated).",
       {str("text", true, text_bytes_max, "What the item is about; 'PROJECT STATE:' first marks project state."),
        str("session_id", false, id_bytes_max, "The session creating it."),
        list("relates_to", issues_max, "External issue ids the item relates to."),
        list("tags", 64, "Tags of the thread.")}},
      {"resolve_thread",
       "Resolve an open work item, by thread_id or by a text that matches exactly one open item.",
       {str("thread_id", false, id_bytes_max, "The item's thread id (or give text)."),
        str("text", false, text_bytes_max, "A case-insensitive substring of exactly one open item's text."),
        str("note", false, note_bytes_max, "The resolution note."),
        str("session_id", false, id_bytes_max, "The resolving session.")}},
      {"list_threads",
       "List the agent's work items, highest vitality first.",
       {stages, flag("project_state", "List the PROJECT STATE: items only."),
        integer("limit", 1, list_limit_max, "Items per page (default 100)."),
        str("cursor", false, 1024, "next_cursor of the previous page.")}},
      {"cleanup_threads",
       "Sweep the agent's items: record dormancy, and archive items dormant 30 days when auto_archive.",
       {flag("auto_archive", "Archive items dormant for 30 days or more.")}},
      {"promote_suggestion", "Turn a suggestion into a work item.",
       {str("suggestion_id", true, id_bytes_max, "The suggestion's id.")}},
      {"dismiss_suggestion", "Dismiss a suggestion (after 3 dismissals it is suppressed for good).",
       {str("suggestion_id", true, id_bytes_max, "The suggestion's id.")}},
      {"graph_traverse",
       "Read the knowledge graph: triples connected to a node, produced by an agent, the provenance of a node, "
       "or counts. Nodes: agent:<id>, thread:<id>, session:<id>, issue:<id>.",
       {lens, str("node", false, text_bytes_max, "The node (connected, provenance)."),
        str("agent", false, id_bytes_max, "The agent (produced_by; default: this server's agent)."),
        integer("depth", 1, graph_depth_max, "Hops for provenance (default 2)."),
        integer("limit", 1, list_limit_max, "Triples at most (default 100).")}},
      {"session_start",
       "Start a session: returns the open items, project state and pending suggestions the agent carries.",
       {str("session_id", false, id_bytes_max, "The session id (default: minted)."),
        flag("auto_archive", "Archive long-dormant items first (default true).")}},
      {"session_close",
       "Close a session: its open items become work items (deduplicated); its texts feed suggestions.",
       {str("session_id", true, id_bytes_max, "The session to close."),
        str("summary", false, note_bytes_max, "What the session did."),
        list("open_items", texts_max, "Texts of items still open."),
        list("topics", texts_max, "Further topics of the session.")}},
      {"send_entry", "Send a user message to a thread; with wait, answer with the run's result.",
       {str("thread_id", true, id_bytes_max, "The thread."), str("text", true, entry_bytes_max, "The message."),
        flag("wait", "Wait for the run to end.")}},
      {"read_thread", "Read a thread's conversation from a seq on.",
       {str("thread_id", true, id_bytes_max, "The thread."),
        integer("from_seq", 1, INT64_MAX, "The first seq to read (default 1)."),
        integer("limit", 1, list_limit_max, "Events at most (default 100).")}},
  };
}

const char* type_name(param_type t) {
  switch (t) {
    case param_type::string: return "string";
    case param_type::integer: return "integer";
    case param_type::boolean: return "boolean";
    case param_type::strings: return "array";
  }
  return "string";
}

void write_schema(json_writer& w, const tool_spec& t) {
  w.begin_object();
  w.field("type", "object");
  w.key("properties");
  w.begin_object();
  for (const auto& p : t.params) {
    w.key(p.name);
    w.begin_object();
    w.field("type", type_name(p.type));
    w.field("description", p.description);
    if (p.type == param_type::string) {
      w.field_int("minLength", p.min);
      w.field_int("maxLength", p.max);
    } else if (p.type == param_type::integer) {
      w.field_int("minimum", p.min);
      w.field_int("maximum", p.max);
    } else if (p.type == param_type::strings) {
      w.field_int("maxItems", p.max);
      w.key("items");
      w.begin_object();
      w.field("type", "string");
      w.field_int("minLength", 1);
      w.field_int("maxLength", item_bytes_max);
    }
    if (!p.one_of.empty()) {
      w.key("enum");
      w.begin_array();
      for (const auto& v : p.one_of) w.string(v);
      w.end_array();
    }
    if (p.type == param_type::strings) w.end_object();
    w.end_object();
  }
  w.end_object();
  w.key("required");
  w.begin_array();
  for (const auto& p : t.params)
    if (p.required) w.string(p.name);
  w.end_array();
  w.field_bool("additionalProperties", false);
  w.end_object();
}

// Checked arguments, by parameter name.
struct args {
  std::map<std::string, std::string> text;
  std::map<std::string, int64_t> number;
  std::map<std::string, bool> truth;
  std::map<std::string, std::vector<std::string>> lists;
  bool has(const std::string& n) const { return text.count(n) || number.count(n) || truth.count(n) || lists.count(n); }
  std::string get(const std::string& n) const { return text.count(n) ? text.at(n) : std::string{}; }
};

status bad(const std::string& field, const std::string& why) {
  return status::invalid_input("arguments." + field + ": " + why).with_field(field);
}

status check_string(const param_spec& p, std::string_view v, const std::string& field) {
  if (static_cast<int64_t>(v.size()) < p.min) return bad(field, "must not be empty");
  if (static_cast<int64_t>(v.size()) > p.max)
    return bad(field, "longer than " + std::to_string(p.max) + " bytes").with_limit(field + ".maxLength");
  if (!p.one_of.empty() && std::find(p.one_of.begin(), p.one_of.end(), v) == p.one_of.end()) {
    std::string all;
    for (const auto& o : p.one_of) all += (all.empty() ? "" : ", ") + o;
    return bad(field, "must be one of " + all);
  }
  return status::ok();
}

status read_param(const param_spec& p, dom::element el, args* out) {
  const std::string& n = p.name;
  switch (p.type) {
    case param_type::string: {
      std::string_view v;
      if (el.get_string().get(v) != simdjson::SUCCESS) return bad(n, "must be a string");
      SKEIN_TRY(check_string(p, v, n));
      out->text[n] = std::string{v};
      return status::ok();
    }
    case param_type::integer: {
      int64_t v = 0;
      if (el.get_int64().get(v) != simdjson::SUCCESS) return bad(n, "must be an integer");
      if (v < p.min || v > p.max)
        return bad(n, "must be between " + std::to_string(p.min) + " and " + std::to_string(p.max));
      out->number[n] = v;
      return status::ok();
    }
    case param_type::boolean: {
      bool v = false;
      if (el.get_bool().get(v) != simdjson::SUCCESS) return bad(n, "must be true or false");
      out->truth[n] = v;
      return status::ok();
    }
    case param_type::strings: {
      dom::array a;
      if (el.get_array().get(a) != simdjson::SUCCESS) return bad(n, "must be an array of strings");
      if (static_cast<int64_t>(a.size()) > p.max)
        return bad(n, "more than " + std::to_string(p.max) + " items").with_limit(n + ".maxItems");
      param_spec item = p;
      item.min = 1;
      item.max = item_bytes_max;
      auto& list = out->lists[n];
      for (dom::element x : a) {
        std::string field = n + "[" + std::to_string(list.size()) + "]";
        std::string_view v;
        if (x.get_string().get(v) != simdjson::SUCCESS) return bad(field, "must be a string");
        SKEIN_TRY(check_string(item, v, field));
        list.emplace_back(v);
      }
      return status::ok();
    }
  }
  return status::ok();
}

status read_args(const tool_spec& t, std::string_view json_text, args* out) {
  json::document doc;
  SKEIN_TRY(json::parse(json_text.empty() ? std::string_view{"{}"} : json_text, json_limits{}, "arguments", &doc));
  dom::object obj;
  if (doc.root().get_object().get(obj) != simdjson::SUCCESS)
    return status::invalid_input("arguments: must be an object").with_field("arguments");
  for (auto field : obj) {
    std::string_view key = field.key;  // a plain variable: clang 14 lambdas cannot capture a structured binding
    auto p = std::find_if(t.params.begin(), t.params.end(), [&](const param_spec& s) { return s.name == key; });
    if (p == t.params.end()) return bad(std::string{key}, "unknown parameter of " + t.name);
    SKEIN_TRY(read_param(*p, field.value, out));
  }
  for (const auto& p : t.params)
    if (p.required && !out->has(p.name)) return bad(p.name, "required");
  return status::ok();
}

// The arguments as a JSON body, but those named in `skip` (path and query).
std::string body_of(const tool_spec& t, const args& a, const std::set<std::string>& skip) {
  std::string out;
  json_writer w{&out};
  w.begin_object();
  for (const auto& p : t.params) {
    if (skip.count(p.name) || !a.has(p.name)) continue;
    if (p.type == param_type::string) w.field(p.name, a.text.at(p.name));
    if (p.type == param_type::integer) w.field_int(p.name, a.number.at(p.name));
    if (p.type == param_type::boolean) w.field_bool(p.name, a.truth.at(p.name));
    if (p.type == param_type::strings) {
      w.key(p.name);
      w.begin_array();
      for (const auto& x : a.lists.at(p.name)) w.string(x);
      w.end_array();
    }
  }
  w.end_object();
  return out;
}

std::string enc(const std::string& s) { return http::percent_encode(s); }

// "?a=1&b=2" from the given parameters that are present ("" when none are); a
// parameter whose route calls it otherwise is given as "name=key".
std::string query_of(const args& a, const std::vector<std::string>& names) {
  std::string q;
  for (const auto& spec : names) {
    auto eq = spec.find('=');
    std::string n = spec.substr(0, eq), key = eq == std::string::npos ? n : spec.substr(eq + 1);
    std::string v;
    if (a.text.count(n)) v = a.text.at(n);
    else if (a.number.count(n)) v = std::to_string(a.number.at(n));
    else if (a.truth.count(n)) v = a.truth.at(n) ? "true" : "false";
    else if (a.lists.count(n)) {
      for (const auto& x : a.lists.at(n)) v += (v.empty() ? "" : ",") + x;
      if (v.empty()) continue;
    } else continue;
    q += (q.empty() ? "?" : "&") + key + "=" + enc(v);
  }
  return q;
}

status build(const tool_spec& t, const args& a, const std::string& agent, http_call* out) {
  const std::string& n = t.name;
  std::string items = "/v1/agents/" + enc(agent) + "/items";
  if (n == "create_thread") *out = {"POST", items, body_of(t, a, {})};
  else if (n == "resolve_thread") {
    if (a.has("thread_id") == a.has("text")) return bad("thread_id", "give exactly one of thread_id and text");
    *out = {"POST", items + "/resolve", body_of(t, a, {})};
  } else if (n == "list_threads") {
    *out = {"GET", items + query_of(a, {"stages=stage", "project_state", "limit", "cursor"}), ""};
  } else if (n == "cleanup_threads") *out = {"POST", items + "/sweep", body_of(t, a, {})};
  else if (n == "promote_suggestion" || n == "dismiss_suggestion")
    *out = {"POST", "/v1/suggestions/" + enc(a.get("suggestion_id")) + (n[0] == 'p' ? "/promote" : "/dismiss"), "{}"};
  else if (n == "graph_traverse") {
    std::string lens = a.get("lens");
    std::string q;
    if (lens == "connected" || lens == "provenance") {
      if (!a.has("node")) return bad("node", "required for the " + lens + " lens");
      q = query_of(a, lens == "connected" ? std::vector<std::string>{"node", "limit"}
                                          : std::vector<std::string>{"node", "depth", "limit"});
    } else if (lens == "produced_by") {
      args with_agent = a;
      if (!a.has("agent")) with_agent.text["agent"] = agent;
      q = query_of(with_agent, {"agent", "limit"});
    }
    *out = {"GET", "/v1/graph/" + lens + q, ""};
  } else if (n == "session_start") *out = {"POST", "/v1/agents/" + enc(agent) + "/sessions", body_of(t, a, {})};
  else if (n == "session_close")
    *out = {"POST", "/v1/agents/" + enc(agent) + "/sessions/" + enc(a.get("session_id")) + "/close",
            body_of(t, a, {"session_id"})};
  else if (n == "send_entry")
    *out = {"POST", "/v1/threads/" + enc(a.get("thread_id")) + "/entries", body_of(t, a, {"thread_id"})};
  else if (n == "read_thread")
    *out = {"GET", "/v1/threads/" + enc(a.get("thread_id")) + "/entries" + query_of(a, {"from_seq", "limit"}), ""};
  else return status::not_found("tool " + quote_input(n) + ": not found").with_field("name");
  return status::ok();
}

}  // namespace

const std::vector<tool_spec>& tool_specs() {
  static const std::vector<tool_spec> specs = make_specs();
  return specs;
}

std::string tools_list_json() {
  std::string out;
  json_writer w{&out};
  w.begin_object();
  w.key("tools");
  w.begin_array();
  for (const auto& t : tool_specs()) {
    w.begin_object();
    w.field("name", t.name);
    w.field("description", t.description);
    w.key("inputSchema");
    write_schema(w, t);
    w.end_object();
  }
  w.end_array();
  w.end_object();
  return out;
}

status tool_request(std::string_view name, std::string_view args_json, const std::string& agent, http_call* out) {
  const auto& specs = tool_specs();
  auto t = std::find_if(specs.begin(), specs.end(), [&](const tool_spec& s) { return s.name == name; });
  if (t == specs.end()) return status::not_found("tool " + quote_input(name) + ": not found").with_field("name");
  args a;
  SKEIN_TRY(read_args(*t, args_json, &a));
  return build(*t, a, agent, out);
}

}  // namespace skein::mcp
