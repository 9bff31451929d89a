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
constexpr int64_t project_bytes_max = 128;  // work_project_bytes_max
constexpr int64_t predicate_bytes_max = 64; // work_predicate_bytes_max

param_spec str(std::string name, bool required, int64_t max, std::string description) {
  return {std::move(name), param_type::string, required, 1, max, {}, std::move(description), {}};
}
param_spec integer(std::string name, int64_t min, int64_t max, std::string description) {
  return {std::move(name), param_type::integer, false, min, max, {}, std::move(description), {}};
}
param_spec flag(std::string name, std::string description) {
  return {std::move(name), param_type::boolean, false, 0, 0, {}, std::move(description), {}};
}
param_spec list(std::string name, int64_t max, std::string description) {
  return {std::move(name), param_type::strings, false, 0, max, {}, std::move(description), {}};
}
param_spec one_of(param_spec p, std::vector<std::string> values) {
  p.one_of = std::move(values);
  return p;
}
// Skein's name `name` for the seed's parameter `of` (same type and bounds).
param_spec alias(std::string name, const param_spec& of) {
  param_spec p = of;
  p.name = std::move(name);
  p.required = false;
  p.alias_of = of.name;
  p.description = "Alias of " + of.name + " (skein's name).";
  return p;
}
param_spec project() {
  return str("project", false, project_bytes_max,
             "Project namespace (e.g. 'my-project'): scopes items, sessions and the graph (default: the session's "
             "project, else 'default').");
}

std::vector<tool_spec> make_specs() {
  param_spec stages = one_of(list("stages", 6, "Stages to list, instead of status (default: emerging, active, "
                                               "cooling, dormant)."),
                             {"emerging", "active", "cooling", "dormant", "archived", "resolved"});
  param_spec lens = one_of(str("lens", true, 16,
                               "Traversal mode: connected_to (all connections to a node), produced_by (what an agent "
                               "produced), provenance (trace the origin chain), stats (aggregate counts); connected "
                               "is skein's name of connected_to."),
                           {"connected_to", "produced_by", "provenance", "stats", "connected"});
  param_spec text_match = str("text_match", false, text_bytes_max,
                              "Case-insensitive text match against open items (exactly one must match), if no thread_id.");
  param_spec resolution_note = str("resolution_note", false, note_bytes_max, "Brief note on how/why it was resolved.");
  param_spec open_threads{"open_threads", param_type::threads, false, 0, texts_max, {},
                          "Threads still open: texts, or thread objects ({text, status}); each becomes a work item "
                          "(deduplicated), a resolved one is skipped.", {}};
  return {
      {"create_thread", "POST /v1/agents/{agent}/items",
       "Create an open thread (work item) to track unresolved work across sessions. Includes semantic dedup: if a "
       "similar open thread exists (cosine similarity > 0.85), returns the existing thread instead; check the "
       "'deduplicated' field. 'PROJECT STATE:' first marks project state.",
       {str("text", true, text_bytes_max, "Thread description: what needs to be tracked or resolved."),
        str("linear_issue", false, id_bytes_max, "Associated issue (e.g. PROJ-123): kept, and linked in the graph."),
        project(), str("session_id", false, id_bytes_max, "The session creating it."),
        list("relates_to", issues_max, "Further external issue ids the item relates to."),
        list("tags", 64, "Tags of the thread.")}},
      {"resolve_thread", "POST /v1/agents/{agent}/items/resolve",
       "Mark an open thread as resolved. Use thread_id for exact match or text_match for a case-insensitive match "
       "that must hit exactly one open thread.",
       {str("thread_id", false, id_bytes_max, "Thread ID for exact resolution."), text_match, resolution_note,
        alias("text", text_match), alias("note", resolution_note), project(),
        str("session_id", false, id_bytes_max, "The resolving session.")}},
      {"list_threads", "GET /v1/agents/{agent}/items",
       "List threads (work items), highest vitality first: unresolved work that carries over between sessions.",
       {one_of(str("status", false, 16, "Filter by status (default: open)."), {"open", "resolved"}),
        flag("include_resolved", "Include resolved (and archived) threads (default: false)."), project(), stages,
        flag("project_state", "List the PROJECT STATE: items only."),
        integer("limit", 1, list_limit_max, "Items per page (default 100)."),
        str("cursor", false, 1024, "next_cursor of the previous page.")},
       {"status", "include_resolved", "project", "stages=stage", "project_state", "limit", "cursor"}},
      {"cleanup_threads", "POST /v1/agents/{agent}/items/sweep",
       "Triage open threads by lifecycle health: groups them as emerging/active/cooling/dormant with vitality scores. "
       "auto_archive=true archives threads dormant 30+ days.",
       {project(), flag("auto_archive", "Archive threads dormant for 30 days or more.")}},
      {"promote_suggestion", "POST /v1/suggestions/{suggestion_id}/promote", "Promote a suggested thread (from session_start's suggested_threads) to an open thread.",
       {str("suggestion_id", true, id_bytes_max, "The suggestion's id."),
        str("project", false, project_bytes_max, "Project of the new thread (default: the suggestion's).")}},
      {"dismiss_suggestion", "POST /v1/suggestions/{suggestion_id}/dismiss", "Dismiss a suggested thread (after 3 dismissals it is suppressed for good).",
       {str("suggestion_id", true, id_bytes_max, "The suggestion's id.")}},
      {"graph_traverse", "GET /v1/graph/{lens}",
       "Traverse the knowledge graph of work items: everything connected to a node, what an agent produced, the "
       "provenance of a node, or aggregate stats. Nodes: agent:<id>, thread:<id>, session:<id>, issue:<id>.",
       {lens, str("node", false, text_bytes_max, "Starting node; required for all lenses but stats (produced_by: an agent)."),
        one_of(str("predicate", false, predicate_bytes_max, "Filter by predicate."),
               {"created_thread", "resolves_thread", "relates_to_thread", "created_in", "influenced_by", "supersedes",
                "demonstrates", "affects_doc"}),
        integer("depth", 1, graph_depth_max, "Max chain depth for provenance (default 2)."), project(),
        integer("limit", 1, list_limit_max, "Max triples to return (default 100)."),
        str("agent", false, id_bytes_max, "The agent of produced_by, instead of node (default: this server's agent).")}},
      {"session_start", "POST /v1/agents/{agent}/sessions",
       "Start a session: returns the open items, project state and pending suggestions (suggested_threads) the "
       "agent carries in the project.",
       {str("session_id", false, id_bytes_max, "The session id (default: minted)."), project(),
        flag("auto_archive", "Archive long-dormant items first (default true).")}},
      {"session_close", "POST /v1/agents/{agent}/sessions/{session_id}/close",
       "Close a session: its open threads become work items (deduplicated); its texts feed suggestions.",
       {str("session_id", true, id_bytes_max, "Session ID from session_start."),
        one_of(str("close_type", false, 16, "Type of close (skein checks no closing ceremony: every type closes alike)."),
               {"standard", "quick", "autonomous"}),
        open_threads, alias("open_items", list("open_threads", texts_max, "")),
        str("summary", false, note_bytes_max, "What the session did."),
        list("topics", texts_max, "Further topics of the session."),
        str("project", false, project_bytes_max, "Project of the session (default: its own, from session_start).")},
       {},
       {"close_type"}},
      {"send_entry", "POST /v1/threads/{thread_id}/entries", "Send a user message to a thread; with wait, answer with the run's result.",
       {str("thread_id", true, id_bytes_max, "The thread."), str("text", true, entry_bytes_max, "The message."),
        flag("wait", "Wait for the run to end.")}},
      {"read_thread", "GET /v1/threads/{thread_id}/entries", "Read a thread's conversation from a seq on.",
       {str("thread_id", true, id_bytes_max, "The thread."),
        integer("from_seq", 1, INT64_MAX, "The first seq to read (default 1)."),
        integer("limit", 1, list_limit_max, "Events at most (default 100).")},
       {"from_seq", "limit"}},
  };
}

const char* type_name(param_type t) {
  switch (t) {
    case param_type::string: return "string";
    case param_type::integer: return "integer";
    case param_type::boolean: return "boolean";
    case param_type::strings: return "array";
    case param_type::threads: return "array";
  }
  return "string";
}

void write_items_schema(json_writer& w, const param_spec& p) {
  w.field_int("maxItems", p.max);
  w.key("items");
  if (p.type == param_type::threads) {
    w.raw(R"({"anyOf":[{"type":"string","minLength":1,"maxLength":)" + std::to_string(item_bytes_max) +
          R"(},{"type":"object","properties":{"text":{"type":"string"},"note":{"type":"string"},)"
          R"("status":{"type":"string"}}}]})");
    return;
  }
  w.begin_object();
  w.field("type", "string");
  w.field_int("minLength", 1);
  w.field_int("maxLength", item_bytes_max);
  if (!p.one_of.empty()) {
    w.field_strings("enum", p.one_of);
  }
  w.end_object();
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
    } else if (p.type == param_type::strings || p.type == param_type::threads) {
      write_items_schema(w, p);
    }
    if (!p.one_of.empty() && p.type == param_type::string) {
      w.field_strings("enum", p.one_of);
    }
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

// Checked arguments, by parameter name (an alias's under the name it stands for).
struct args {
  std::map<std::string, std::string> text;
  std::map<std::string, int64_t> number;
  std::map<std::string, bool> truth;
  std::map<std::string, std::vector<std::string>> lists;
  std::map<std::string, std::string> raw;  // threads: the array as given (minified JSON)
  bool has(const std::string& n) const {
    return text.count(n) || number.count(n) || truth.count(n) || lists.count(n) || raw.count(n);
  }
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

// Reads argument `field` (p's own name) as parameter p, stored under `key`.
status read_param(const param_spec& p, dom::element el, const std::string& key, args* out) {
  const std::string& n = p.name;
  switch (p.type) {
    case param_type::string: {
      std::string_view v;
      if (el.get_string().get(v) != simdjson::SUCCESS) return bad(n, "must be a string");
      SKEIN_TRY(check_string(p, v, n));
      out->text[key] = std::string{v};
      return status::ok();
    }
    case param_type::integer: {
      int64_t v = 0;
      if (el.get_int64().get(v) != simdjson::SUCCESS) return bad(n, "must be an integer");
      if (v < p.min || v > p.max)
        return bad(n, "must be between " + std::to_string(p.min) + " and " + std::to_string(p.max));
      out->number[key] = v;
      return status::ok();
    }
    case param_type::boolean: {
      bool v = false;
      if (el.get_bool().get(v) != simdjson::SUCCESS) return bad(n, "must be true or false");
      out->truth[key] = v;
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
      auto& list = out->lists[key];
      for (dom::element x : a) {
        std::string field = n + "[" + std::to_string(list.size()) + "]";
        std::string_view v;
        if (x.get_string().get(v) != simdjson::SUCCESS) return bad(field, "must be a string");
        SKEIN_TRY(check_string(item, v, field));
        list.emplace_back(v);
      }
      return status::ok();
    }
    case param_type::threads: {
      dom::array a;
      if (el.get_array().get(a) != simdjson::SUCCESS) return bad(n, "must be an array of texts or thread objects");
      if (static_cast<int64_t>(a.size()) > p.max)
        return bad(n, "more than " + std::to_string(p.max) + " items").with_limit(n + ".maxItems");
      out->raw[key] = simdjson::minify(el);  // each item is checked by the route, naming it
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
    const std::string& canonical = p->alias_of.empty() ? p->name : p->alias_of;
    if (out->has(canonical))
      return bad(p->name, "the same parameter as " + (p->alias_of.empty() ? std::string{"its alias"} : p->alias_of) +
                              ": give one of them");
    SKEIN_TRY(read_param(*p, field.value, canonical, out));
  }
  for (const auto& p : t.params)
    if (p.required && !out->has(p.name)) return bad(p.name, "required");
  return status::ok();
}

// The arguments as a JSON body, but those named in `skip` (path and query) and
// aliases (given under the name they stand for).
std::string body_of(const tool_spec& t, const args& a, const std::set<std::string>& skip) {
  std::string out;
  json_writer w{&out};
  w.begin_object();
  for (const auto& p : t.params) {
    const std::string& n = p.name;
    if (!p.alias_of.empty() || skip.count(n) || !a.has(n)) continue;
    if (a.text.count(n)) w.field(n, a.text.at(n));
    if (a.number.count(n)) w.field_int(n, a.number.at(n));
    if (a.truth.count(n)) w.field_bool(n, a.truth.at(n));
    if (a.raw.count(n)) {
      w.key(n);
      w.raw(a.raw.at(n));
    }
    if (a.lists.count(n)) w.field_strings(n, a.lists.at(n));
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

// The route's method and path, each {name} filled: {agent} with `agent`, any
// other with the parameter's value (named in *in_path).
void fill_route(const tool_spec& t, const args& a, const std::string& agent, std::string* method, std::string* path,
                std::set<std::string>* in_path) {
  size_t space = t.route.find(' ');
  *method = t.route.substr(0, space);
  const std::string p = t.route.substr(space + 1);
  path->clear();
  for (size_t at = 0; at < p.size();) {
    size_t open = p.find('{', at);
    if (open == std::string::npos) {
      *path += p.substr(at);
      break;
    }
    size_t close = p.find('}', open);
    *path += p.substr(at, open - at);
    std::string name = p.substr(open + 1, close - open - 1);
    *path += enc(name == "agent" ? agent : a.get(name));
    in_path->insert(name);
    at = close + 1;
  }
}

// graph_traverse: the lens picks the path and which parameters its query takes.
status build_graph(const tool_spec& t, const args& a, const std::string& agent, http_call* out) {
  args in = a;
  std::string& lens = in.text["lens"];
  if (lens == "connected") lens = "connected_to";
  std::vector<std::string> query;
  if (lens == "connected_to" || lens == "provenance") {
    if (!a.has("node")) return bad("node", "required for the " + lens + " lens");
    query = lens == "connected_to" ? std::vector<std::string>{"node", "predicate", "project", "limit"}
                                   : std::vector<std::string>{"node", "depth", "predicate", "project", "limit"};
  } else if (lens == "produced_by") {
    if (!a.has("agent") && !a.has("node")) in.text["agent"] = agent;
    query = {"agent", "node", "predicate", "project", "limit"};
  } else {
    query = {"project"};
  }
  std::set<std::string> in_path;
  fill_route(t, in, agent, &out->method, &out->target, &in_path);
  out->target += query_of(in, query);
  out->body.clear();
  return status::ok();
}

// The request of tool `t` from its route: a GET's query, another method's body.
status build(const tool_spec& t, const args& a, const std::string& agent, http_call* out) {
  if (t.name == "resolve_thread" && a.has("thread_id") == a.has("text_match"))
    return bad("thread_id", "give exactly one of thread_id and text_match");
  if (t.name == "graph_traverse") return build_graph(t, a, agent, out);
  std::set<std::string> skip;
  fill_route(t, a, agent, &out->method, &out->target, &skip);
  if (out->method == "GET") {
    out->target += query_of(a, t.query);
    out->body.clear();
    return status::ok();
  }
  skip.insert(t.unsent.begin(), t.unsent.end());
  out->body = body_of(t, a, skip);
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

status tool_request(std::string_view name, std::string_view args_json, const std::string& agent, http_call* out,
                    const std::string& project) {
  const auto& specs = tool_specs();
  auto t = std::find_if(specs.begin(), specs.end(), [&](const tool_spec& s) { return s.name == name; });
  if (t == specs.end()) return status::not_found("tool " + quote_input(name) + ": not found").with_field("name");
  args a;
  SKEIN_TRY(read_args(*t, args_json, &a));
  // The session's project where none is given (promote_suggestion and
  // session_close default to the suggestion's and the session's own).
  bool takes = std::any_of(t->params.begin(), t->params.end(), [](const param_spec& p) { return p.name == "project"; });
  if (takes && !project.empty() && !a.has("project") && name != "promote_suggestion" && name != "session_close")
    a.text["project"] = project;
  return build(*t, a, agent, out);
}

}  // namespace skein::mcp
