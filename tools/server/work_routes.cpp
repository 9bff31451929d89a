#include "tools/server/work_routes.hpp"

#include <charconv>
#include <map>
#include <set>

#include "runtime/model/ids.hpp"
#include "runtime/model/json_writer.hpp"
#include "runtime/model/work_graph.hpp"
#include "tools/server/api.hpp"
#include "tools/server/work_json.hpp"

namespace skein::server {
namespace {

using http::request;
using http::response;
using exchange_ptr = std::shared_ptr<http::exchange>;

constexpr size_t work_list_limit_default = 100;
constexpr size_t graph_limit_default = 100;
constexpr uint64_t graph_depth_default = 2;
constexpr size_t relates_to_max = 64;  // issue ids one create names
constexpr size_t session_texts_max = 256;  // open_items or topics of one close

response json_response(int code, std::string body) { return response{code, "application/json", std::move(body), {}}; }

// The one answer for an agent the caller may not see: a missing agent and
// another agent's id must be indistinguishable, byte for byte.
status missing_agent(const std::string& id) {
  return status::not_found("agent " + quote_input(id) + ": not found").with_field("agent");
}
status missing_thread(const std::string& id, const std::string& field = "") {
  return status::not_found("thread " + quote_input(id) + ": not found").with_field(field);
}
status missing_suggestion(const std::string& id) {
  return status::not_found("suggestion " + quote_input(id) + ": not found").with_field("suggestion_id");
}

std::string query(const request& req, const std::string& name) {
  auto it = req.query.find(name);
  return it == req.query.end() ? std::string{} : it->second;
}

// A bounded count from the query: `fallback` when absent, else 1..max.
status query_count(const request& req, const std::string& name, size_t fallback, size_t max, std::string_view limit,
                   size_t* out) {
  auto it = req.query.find(name);
  if (it == req.query.end()) {
    *out = fallback;
    return status::ok();
  }
  const std::string& t = it->second;
  uint64_t v = 0;
  auto r = std::from_chars(t.data(), t.data() + t.size(), v);
  if (t.empty() || r.ptr != t.data() + t.size() || r.ec != std::errc{} || v == 0 || v > max)
    return status::invalid_input(name + ": must be an integer between 1 and " + std::to_string(max))
        .with_limit(std::string{limit})
        .with_field(name);
  *out = static_cast<size_t>(v);
  return status::ok();
}

status query_bool(const request& req, const std::string& name, bool* out) {
  std::string v = query(req, name);
  if (v.empty() || v == "false") *out = false;
  else if (v == "true") *out = true;
  else return status::invalid_input(name + ": must be true or false").with_field(name);
  return status::ok();
}

status named(status s, std::string_view field);

// The seed's `project`: absent is its default project ("default"), never "every
// project" (the runtime's "" for a query).
status project_of(std::string text, std::string* out) {
  if (text.empty()) text = std::string{work_default_project};
  SKEIN_TRY(validate_work_project(text, "project"));
  *out = std::move(text);
  return status::ok();
}
status body_project(const json::object_reader& r, std::string* out) {
  std::string text;
  SKEIN_TRY(named(r.string("project", &text, false), "project"));
  if (r.has("project") && text.empty()) return status::invalid_input("body.project: empty").with_field("project");
  return project_of(std::move(text), out);
}

// One of two names for one field (skein's and the seed's): the one given, or
// an error naming both when both are.
status aliased_string(const json::object_reader& r, std::string_view name, std::string_view alias, std::string* out) {
  if (r.has(name) && r.has(alias))
    return status::invalid_input("body." + std::string{name} + ", body." + std::string{alias} +
                                 ": one field under two names; give one")
        .with_field(std::string{alias});
  std::string_view given = r.has(alias) ? alias : name;
  return named(r.string(given, out, false), given);
}

status body_object(const request& req, const json_limits& limits, json::document* doc, json::object_reader* out) {
  SKEIN_TRY(json::parse(req.body.empty() ? std::string_view{"{}"} : std::string_view{req.body}, limits,
                        "request body", doc));
  return json::object_reader::open(doc->root(), "body", out);
}

// An error about a body field names the field as the route's caller knows it
// (an alias, an element of a list), over what the reader named.
status named(status s, std::string_view field) {
  if (s) return s;
  return std::move(s).with_field(std::string{field});
}

// The agent of an agent route, if the scope may see it and it exists.
status visible_agent(runtime& rt, const token_scope& scope, const std::string& id) {
  SKEIN_TRY(validate_id(id, "agent").with_field("agent"));
  if (!scope.allows(id)) return missing_agent(id);
  agent_config a;
  status s = rt.get_agent(id, &a);
  if (s.code() == errc::not_found) return missing_agent(id);
  return s;
}

status visible_thread(runtime& rt, const token_scope& scope, const std::string& id, const std::string& field) {
  SKEIN_TRY(validate_id(id, field.empty() ? "thread id" : field));
  manifest m;
  status s = rt.get_thread(id, &m);
  if (s.code() == errc::not_found || (s && !scope.allows(m.agent_id))) return missing_thread(id, field);
  return s;
}

// A create result's entry: the runtime answers the manifest; its vitality is
// read back through get_item (the clock's view now).
std::string created_answer(runtime& rt, const work_create_result& r) {
  work_entry e;
  work_vitality v;
  if (rt.get_item(r.thread.id, &e)) v = e.vitality;
  return created_json(r, v);
}

// ---- items ----

struct call {
  runtime& rt;
  const token_scope& scope;
  const json_limits& limits;
  request& req;
  const exchange_ptr& ex;

  void reply(int code, std::string body) { ex->reply(json_response(code, std::move(body))); }
  void fail(const status& s) { ex->reply(error_response(s)); }
  void not_allowed() {
    ex->reply(error_response(
        status::invalid_input("method " + quote_input(req.method) + " is not allowed on " + quote_input(req.path)), 405));
  }
};

void create_item_route(call& c, const std::string& agent) {
  if (status s = visible_agent(c.rt, c.scope, agent); !s) return c.fail(s);
  json::document doc;
  json::object_reader r;
  work_create in;
  in.agent_id = agent;
  status s = body_object(c.req, c.limits, &doc, &r);
  if (s) s = named(r.string("text", &in.text), "text");
  if (s) s = named(r.string("session_id", &in.session_id, false), "session_id");
  if (s) s = named(r.strings("relates_to", &in.relates_to, false), "relates_to");
  if (s) s = named(r.strings("tags", &in.tags, false), "tags");
  if (s) s = body_project(r, &in.project);
  if (s) s = named(r.string("linear_issue", &in.linear_issue, false), "linear_issue");
  if (s && r.has("linear_issue")) s = validate_id(in.linear_issue, "linear_issue").with_field("linear_issue");
  if (s && in.relates_to.size() > relates_to_max)
    s = status::invalid_input("body.relates_to: at most " + std::to_string(relates_to_max) + " issue ids")
            .with_limit("relates_to_max")
            .with_field("relates_to");
  if (s) s = validate_work_text(in.text, "text");
  if (!s) return c.fail(s);
  work_create_result out;
  if (s = c.rt.create_item(in, &out); !s) return c.fail(s);
  c.reply(out.deduplicated ? 200 : 201, created_answer(c.rt, out));
}

status parse_stages(const std::string& text, std::vector<work_stage>* out) {
  size_t i = 0;
  while (i < text.size()) {
    size_t j = text.find(',', i);
    if (j == std::string::npos) j = text.size();
    auto st = parse_work_stage(text.substr(i, j - i));
    if (!st)
      return status::invalid_input("stage: " + quote_input(text.substr(i, j - i)) +
                                   " is not one of emerging, active, cooling, dormant, archived, resolved")
          .with_field("stage");
    out->push_back(*st);
    i = j + 1;
  }
  return status::ok();
}

// The seed's status and include_resolved as stages: open (the default), resolved,
// or every stage; `stage` names them itself and excludes both.
status seed_stages(const request& req, std::vector<work_stage>* out) {
  std::string st = query(req, "status");
  bool all = false;
  SKEIN_TRY(query_bool(req, "include_resolved", &all));
  if (!req.query.count("status") && !req.query.count("include_resolved")) return status::ok();
  if (req.query.count("stage"))
    return status::invalid_input("stage: give stage, or status and include_resolved, not both").with_field("stage");
  if (all) {
    *out = {work_stage::emerging, work_stage::active,   work_stage::cooling,
            work_stage::dormant,  work_stage::archived, work_stage::resolved};
  } else if (st == "resolved") {
    *out = {work_stage::resolved};
  } else if (st != "open" && !st.empty()) {
    return status::invalid_input("status: must be open or resolved").with_field("status");
  }
  return status::ok();
}

void list_items_route(call& c, const std::string& agent) {
  if (status s = visible_agent(c.rt, c.scope, agent); !s) return c.fail(s);
  work_list_query q;
  q.agent_id = agent;
  q.cursor = query(c.req, "cursor");
  status s = parse_stages(query(c.req, "stage"), &q.stages);
  if (s) s = seed_stages(c.req, &q.stages);
  if (s) s = project_of(query(c.req, "project"), &q.project);
  if (s) s = query_bool(c.req, "project_state", &q.project_state);
  if (s) s = query_count(c.req, "limit", work_list_limit_default, work_list_limit_max, "work_list_limit_max", &q.limit);
  if (!s) return c.fail(s);
  work_list_page page;
  if (s = c.rt.list_items(q, &page); !s) return c.fail(s);
  std::string body;
  json_writer w{&body};
  w.begin_object();
  write_entries(w, "items", page.items);
  w.field("next_cursor", page.next_cursor);
  write_entries(w, "threads", page.items);  // the seed's name
  w.field_uint("total_open", page.total_open);
  w.field_uint("total_resolved", page.total_resolved);
  w.end_object();
  c.reply(200, body);
}

void resolve_item_route(call& c, const std::string& agent) {
  if (status s = visible_agent(c.rt, c.scope, agent); !s) return c.fail(s);
  json::document doc;
  json::object_reader r;
  work_resolve in;
  in.agent_id = agent;
  status s = body_object(c.req, c.limits, &doc, &r);
  std::string text_field = s && r.has("text_match") ? "text_match" : "text";
  if (s) s = named(r.string("thread_id", &in.thread_id, false), "thread_id");
  if (s) s = aliased_string(r, "text", "text_match", &in.text_match);
  if (s) s = aliased_string(r, "note", "resolution_note", &in.note);
  if (s) s = named(r.string("session_id", &in.session_id, false), "session_id");
  // By text the seed's default project is searched; by id no project is
  // checked unless one is named.
  if (s && (r.has("project") || in.thread_id.empty())) s = body_project(r, &in.project);
  if (s && in.thread_id.empty() == in.text_match.empty())
    s = status::invalid_input("body.thread_id: give exactly one of thread_id and text (text_match)").with_field("thread_id");
  if (s && in.note.size() > work_note_bytes_max)
    s = status::invalid_input("body.note: longer than " + std::to_string(work_note_bytes_max) + " bytes")
            .with_limit("work_note_bytes_max")
            .with_field("note");
  if (s && !in.thread_id.empty()) {
    s = visible_thread(c.rt, c.scope, in.thread_id, "thread_id");
    manifest m;
    // An item of another agent of the same token is still not this agent's.
    if (s && c.rt.get_thread(in.thread_id, &m) && m.agent_id != agent) s = missing_thread(in.thread_id, "thread_id");
  }
  if (!s) return c.fail(s);
  work_entry out;
  if (s = c.rt.resolve_item(in, &out); !s) {
    // The runtime names its own field (text_match); the client may have sent `text`.
    if (s.field() == "text_match") s = status{s}.with_field(text_field);
    return c.fail(s);
  }
  // The item, as skein answered it, with the seed's {success, resolved_thread} beside.
  std::string body;
  json_writer w{&body};
  w.begin_object();
  write_item_fields(w, out);
  w.field_bool("success", true);
  w.key("resolved_thread");
  w.raw(work_item_json(out));
  w.end_object();
  c.reply(200, body);
}

void sweep_route(call& c, const std::string& agent) {
  if (status s = visible_agent(c.rt, c.scope, agent); !s) return c.fail(s);
  json::document doc;
  json::object_reader r;
  work_sweep_options o;
  o.agent_id = agent;
  status s = body_object(c.req, c.limits, &doc, &r);
  if (s) s = named(r.boolean("auto_archive", &o.auto_archive, false), "auto_archive");
  if (s) s = body_project(r, &o.project);
  if (!s) return c.fail(s);
  work_sweep_result out;
  if (s = c.rt.sweep_items(o, &out); !s) return c.fail(s);
  // The seed's triage: the project's open items after the sweep, by stage.
  std::vector<work_entry> open;
  work_list_query q;
  q.agent_id = agent;
  q.project = o.project;
  q.limit = work_list_limit_max;
  q.totals = false;
  do {
    work_list_page page;
    if (s = c.rt.list_items(q, &page); !s) return c.fail(s);
    for (auto& e : page.items) open.push_back(std::move(e));
    q.cursor = page.next_cursor;
  } while (!q.cursor.empty());
  int64_t now = c.rt.now_ms();
  const work_stage stages[] = {work_stage::emerging, work_stage::active, work_stage::cooling, work_stage::dormant};
  std::string body;
  json_writer w{&body};
  w.begin_object();
  w.field_uint("examined", out.examined);
  write_strings(w, "dormant", out.dormant);
  write_strings(w, "archived", out.archived);
  w.key("summary");
  w.begin_object();
  for (auto st : stages)
    w.field_uint(to_string(st), static_cast<uint64_t>(std::count_if(open.begin(), open.end(), [&](const work_entry& e) {
                   return e.vitality.stage == st;
                 })));
  w.field_uint("total_open", open.size());
  w.end_object();
  w.key("groups");
  w.begin_object();
  for (auto st : stages) {
    w.key(to_string(st));
    w.begin_array();
    for (const auto& e : open)
      if (e.vitality.stage == st) w.raw(item_summary_json(e, now));
    w.end_array();
  }
  w.end_object();
  w.field_uint("archived_count", out.archived.size());
  write_strings(w, "archived_ids", out.archived);
  w.end_object();
  c.reply(200, body);
}

void thread_item_route(call& c, const std::string& id, const std::string& action) {
  if (status s = visible_thread(c.rt, c.scope, id, ""); !s) return c.fail(s);
  work_entry out;
  status s;
  if (action == "item") {
    if (c.req.method != "GET") return c.not_allowed();
    s = c.rt.get_item(id, &out);
  } else if (action == "touch") {
    if (c.req.method != "POST") return c.not_allowed();
    s = c.rt.touch_item(id, &out);
  } else {
    if (c.req.method != "POST") return c.not_allowed();
    json::document doc;
    json::object_reader r;
    std::string issue;
    s = body_object(c.req, c.limits, &doc, &r);
    if (s) s = named(r.string("issue_id", &issue), "issue_id");
    if (s && (issue.empty() || issue.size() > work_text_bytes_max))
      s = status::invalid_input("body.issue_id: 1.." + std::to_string(work_text_bytes_max) + " bytes")
              .with_limit("work_text_bytes_max")
              .with_field("issue_id");
    if (s) s = c.rt.relate_item(id, issue, &out);
  }
  if (!s) return c.fail(s);
  c.reply(200, work_item_json(out));
}

// ---- suggestions and sessions ----

void list_suggestions_route(call& c, const std::string& agent) {
  if (status s = visible_agent(c.rt, c.scope, agent); !s) return c.fail(s);
  bool all = false;
  if (status s = query_bool(c.req, "all", &all); !s) return c.fail(s);
  std::vector<work_suggestion> out;
  if (status s = c.rt.list_suggestions(agent, all, &out); !s) return c.fail(s);
  std::string body;
  json_writer w{&body};
  w.begin_object();
  w.key("suggestions");
  w.begin_array();
  for (const auto& s : out) w.raw(suggestion_json(s));
  w.end_array();
  w.end_object();
  c.reply(200, body);
}

// Whether the scope may act on suggestion `id`: admin always (the runtime
// answers a missing one); a scoped token when one of its agents holds it.
status visible_suggestion(runtime& rt, const token_scope& scope, const std::string& id) {
  SKEIN_TRY(validate_id(id, "suggestion id").with_field("suggestion_id"));
  if (scope.admin) return status::ok();
  for (const auto& agent : scope.agents) {
    std::vector<work_suggestion> all;
    SKEIN_TRY(rt.list_suggestions(agent, true, &all));
    for (const auto& s : all)
      if (s.id == id) return status::ok();
  }
  return missing_suggestion(id);
}

// The suggestion as it is now (the seed's promote answers it beside the item).
std::string suggestion_now(runtime& rt, const std::string& agent, const std::string& id) {
  std::vector<work_suggestion> all;
  if (rt.list_suggestions(agent, true, &all))
    for (const auto& x : all)
      if (x.id == id) return suggestion_json(x);
  return "null";
}

void suggestion_route(call& c, const std::string& id, const std::string& action) {
  if (c.req.method != "POST") return c.not_allowed();
  if (status s = visible_suggestion(c.rt, c.scope, id); !s) return c.fail(s);
  if (action == "promote") {
    json::document doc;
    json::object_reader r;
    std::string project;  // "": the suggestion's own
    status s = body_object(c.req, c.limits, &doc, &r);
    if (s && r.has("project")) s = body_project(r, &project);
    if (!s) return c.fail(s);
    work_create_result out;
    s = c.rt.promote_suggestion(id, &out, project);
    if (s.code() == errc::not_found) return c.fail(missing_suggestion(id));
    if (!s) return c.fail(s);
    work_entry e;
    work_vitality v;
    if (c.rt.get_item(out.thread.id, &e)) v = e.vitality;
    std::string body;
    json_writer w{&body};
    w.begin_object();
    write_created_fields(w, out, v);
    w.key("suggestion");
    w.raw(suggestion_now(c.rt, out.thread.agent_id, id));
    w.end_object();
    return c.reply(200, body);
  }
  work_suggestion out;
  status s = c.rt.dismiss_suggestion(id, &out);
  if (s.code() == errc::not_found) return c.fail(missing_suggestion(id));
  if (!s) return c.fail(s);
  // The suggestion, with the seed's {suggestion} beside.
  std::string one = suggestion_json(out), body = one;
  body.pop_back();
  body += R"(,"suggestion":)" + one + "}";
  c.reply(200, body);
}

void session_start_route(call& c, const std::string& agent) {
  if (status s = visible_agent(c.rt, c.scope, agent); !s) return c.fail(s);
  json::document doc;
  json::object_reader r;
  work_session_start in;
  in.agent_id = agent;
  status s = body_object(c.req, c.limits, &doc, &r);
  if (s) s = named(r.string("session_id", &in.session_id, false), "session_id");
  if (s) s = named(r.boolean("auto_archive", &in.auto_archive, false), "auto_archive");
  if (s) s = body_project(r, &in.project);
  if (s && !in.session_id.empty()) s = validate_id(in.session_id, "session_id").with_field("session_id");
  if (!s) return c.fail(s);
  work_session_started out;
  if (s = c.rt.session_start(in, &out); !s) return c.fail(s);
  std::string body;
  json_writer w{&body};
  w.begin_object();
  w.field("session_id", out.session_id);
  w.field("project", out.project);
  write_entries(w, "items", out.items);
  write_entries(w, "project_state", out.project_state);
  for (std::string_view key : {"suggestions", "suggested_threads"}) {  // skein's name, the seed's
    w.key(key);
    w.begin_array();
    for (const auto& x : out.suggestions) w.raw(suggestion_json(x));
    w.end_array();
  }
  w.key("sweep");
  w.begin_object();
  w.field_uint("examined", out.sweep.examined);
  write_strings(w, "dormant", out.sweep.dormant);
  write_strings(w, "archived", out.sweep.archived);
  w.end_object();
  w.end_object();
  c.reply(201, body);
}

status bounded_texts(const json::object_reader& r, std::string_view field, std::vector<std::string>* out) {
  SKEIN_TRY(named(r.strings(field, out, false), field));
  std::string f{field};
  if (out->size() > session_texts_max)
    return status::invalid_input("body." + f + ": at most " + std::to_string(session_texts_max) + " texts")
        .with_limit("session_texts_max")
        .with_field(f);
  for (size_t i = 0; i < out->size(); ++i) SKEIN_TRY(validate_work_text((*out)[i], f + "[" + std::to_string(i) + "]"));
  return status::ok();
}

// The seed's open_threads: each a text, or a thread object whose `text` (or
// `note`) is one; an object whose status is resolved is no open item.
status seed_threads(const json::object_reader& r, std::vector<std::string>* out) {
  json::dom::element el;
  SKEIN_TRY(named(r.element("open_threads", &el), "open_threads"));
  json::dom::array a;
  if (el.get_array().get(a) != simdjson::SUCCESS)
    return status::invalid_input("body.open_threads: must be an array").with_field("open_threads");
  if (a.size() > session_texts_max)
    return status::invalid_input("body.open_threads: at most " + std::to_string(session_texts_max) + " texts")
        .with_limit("session_texts_max")
        .with_field("open_threads");
  out->clear();
  size_t i = 0;
  for (json::dom::element x : a) {
    std::string f = "open_threads[" + std::to_string(i++) + "]";
    std::string_view text;
    if (x.get_string().get(text) != simdjson::SUCCESS) {
      json::object_reader o;
      if (!json::object_reader::open(x, f, &o))
        return status::invalid_input(f + ": expected a text or an object").with_field(f);
      std::string st, t;
      SKEIN_TRY(named(o.string("status", &st, false), f + ".status"));
      if (st == "resolved") continue;
      SKEIN_TRY(named(o.string(o.has("note") && !o.has("text") ? "note" : "text", &t), f + ".text"));
      SKEIN_TRY(validate_work_text(t, f + ".text"));
      out->push_back(std::move(t));
      continue;
    }
    SKEIN_TRY(validate_work_text(text, f));
    out->emplace_back(text);
  }
  return status::ok();
}

void session_close_route(call& c, const std::string& agent, const std::string& sid) {
  if (status s = visible_agent(c.rt, c.scope, agent); !s) return c.fail(s);
  json::document doc;
  json::object_reader r;
  work_session_close in;
  in.agent_id = agent;
  in.session_id = sid;
  status s = validate_id(sid, "session_id").with_field("session_id");
  if (s) s = body_object(c.req, c.limits, &doc, &r);
  if (s) s = named(r.string("summary", &in.summary, false), "summary");
  if (s && in.summary.size() > work_note_bytes_max)
    s = status::invalid_input("body.summary: longer than " + std::to_string(work_note_bytes_max) + " bytes")
            .with_limit("work_note_bytes_max")
            .with_field("summary");
  if (s && r.has("open_items") && r.has("open_threads"))
    s = status::invalid_input("body.open_items, body.open_threads: one field under two names; give one")
            .with_field("open_threads");
  if (s) s = r.has("open_threads") ? seed_threads(r, &in.open_items) : bounded_texts(r, "open_items", &in.open_items);
  if (s) s = bounded_texts(r, "topics", &in.topics);
  // Absent: the session's own project (from its start).
  if (s && r.has("project")) s = body_project(r, &in.project);
  if (!s) return c.fail(s);
  work_session_closed out;
  if (s = c.rt.session_close(in, &out); !s) return c.fail(s);
  std::string body;
  json_writer w{&body};
  w.begin_object();
  w.key("items");
  w.begin_array();
  for (const auto& x : out.items) w.raw(created_answer(c.rt, x));
  w.end_array();
  w.key("suggestions");
  w.begin_array();
  for (const auto& x : out.suggestions) w.raw(suggestion_json(x));
  w.end_array();
  w.end_object();
  c.reply(200, body);
}

// ---- graph ----

void reply_triples(call& c, const std::vector<work_triple>& triples) {
  std::string body;
  json_writer w{&body};
  w.begin_object();
  w.key("triples");
  w.begin_array();
  for (const auto& t : triples)
    if (c.scope.allows(t.agent_id)) write_triple(w, t);
  w.end_array();
  w.end_object();
  c.reply(200, body);
}

status required_query(const request& req, const std::string& name, std::string* out) {
  *out = query(req, name);
  if (out->empty()) return status::invalid_input(name + ": required").with_field(name);
  if (out->size() > work_text_bytes_max)
    return status::invalid_input(name + ": longer than " + std::to_string(work_text_bytes_max) + " bytes")
        .with_limit("work_text_bytes_max")
        .with_field(name);
  return status::ok();
}

// Stats over what the scope may see: the runtime's own for admin; for a scoped
// token, counted from its agents' triples.
status scoped_stats(runtime& rt, const token_scope& scope, const std::string& project, work_graph_stats* out) {
  if (scope.admin) return rt.graph_stats(out, project);
  work_graph_filter filter;
  filter.project = project;
  work_graph_tally tally;
  for (const auto& agent : scope.agents) {
    std::vector<work_triple> ts;
    SKEIN_TRY(rt.graph_produced_by(agent, work_list_limit_max, &ts, filter));
    for (const auto& t : ts) tally.add(t);
  }
  *out = tally.stats();
  return status::ok();
}

void graph_route(call& c, const std::string& lens) {
  if (c.req.method != "GET") return c.not_allowed();
  std::vector<work_triple> out;
  std::string node;
  size_t limit = 0, depth = 0;
  work_graph_filter filter;
  filter.predicate = query(c.req, "predicate");
  status s = query_count(c.req, "limit", graph_limit_default, work_list_limit_max, "work_list_limit_max", &limit);
  if (s) s = project_of(query(c.req, "project"), &filter.project);
  if (!s) return c.fail(s);
  if (lens == "connected" || lens == "connected_to") {  // skein's name, the seed's
    if (s = required_query(c.req, "node", &node); s) s = c.rt.graph_connected_to(node, limit, &out, filter);
  } else if (lens == "produced_by") {
    // The agent: `agent`, or the seed's `node` (an id, or agent:id).
    std::string agent = query(c.req, "agent");
    if (agent.empty()) agent = query(c.req, "node");
    if (agent.starts_with("agent:")) agent.erase(0, 6);
    if (agent.empty()) s = status::invalid_input("agent: required").with_field("agent");
    if (s) s = visible_agent(c.rt, c.scope, agent);
    if (s) s = c.rt.graph_produced_by(agent, limit, &out, filter);
  } else if (lens == "provenance") {
    s = required_query(c.req, "node", &node);
    if (s) s = query_count(c.req, "depth", graph_depth_default, work_graph_depth_max, "work_graph_depth_max", &depth);
    if (s) s = c.rt.graph_provenance(node, depth, limit, &out, filter);
  } else if (lens == "stats") {
    work_graph_stats st;
    if (s = scoped_stats(c.rt, c.scope, filter.project, &st); !s) return c.fail(s);
    return c.reply(200, graph_stats_json(st));
  } else {
    return c.fail(status::not_found("no route " + quote_input(c.req.path)));
  }
  if (!s) return c.fail(s);
  reply_triples(c, out);
}

bool agent_routes(call& c, const std::vector<std::string>& seg) {
  const std::string& agent = seg[2];
  const std::string& m = c.req.method;
  const std::string& what = seg[3];
  if (what == "items" && seg.size() == 4) {
    if (m == "POST") return create_item_route(c, agent), true;
    if (m == "GET") return list_items_route(c, agent), true;
    return c.not_allowed(), true;
  }
  if (what == "items" && seg.size() == 5 && (seg[4] == "resolve" || seg[4] == "sweep")) {
    if (m != "POST") return c.not_allowed(), true;
    return (seg[4] == "resolve" ? resolve_item_route(c, agent) : sweep_route(c, agent)), true;
  }
  if (what == "suggestions" && seg.size() == 4) return (m == "GET" ? list_suggestions_route(c, agent) : c.not_allowed()), true;
  if (what == "sessions" && seg.size() == 4) return (m == "POST" ? session_start_route(c, agent) : c.not_allowed()), true;
  if (what == "sessions" && seg.size() == 6 && seg[5] == "close")
    return (m == "POST" ? session_close_route(c, agent, seg[4]) : c.not_allowed()), true;
  return false;
}

}  // namespace

std::optional<http::response> admit_work(const token_scope& scope, const std::vector<std::string>& seg) {
  bool agent_route = seg.size() >= 4 && seg[0] == "v1" && seg[1] == "agents" &&
                     (seg[3] == "items" || seg[3] == "suggestions" || seg[3] == "sessions");
  if (!agent_route || scope.allows(seg[2]) || !validate_id(seg[2], "agent")) return std::nullopt;
  return error_response(missing_agent(seg[2]));
}

bool route_work(runtime& rt, const token_scope& scope, const json_limits& limits, http::request& req,
                const exchange_ptr& ex, const std::vector<std::string>& seg) {
  if (seg.size() < 3 || seg[0] != "v1") return false;
  call c{rt, scope, limits, req, ex};
  if (seg[1] == "agents" && seg.size() >= 4) return agent_routes(c, seg);
  if (seg[1] == "threads" && seg.size() == 4 && (seg[3] == "item" || seg[3] == "touch" || seg[3] == "relate"))
    return thread_item_route(c, seg[2], seg[3]), true;
  if (seg[1] == "suggestions" && seg.size() == 4 && (seg[3] == "promote" || seg[3] == "dismiss"))
    return suggestion_route(c, seg[2], seg[3]), true;
  if (seg[1] == "graph" && seg.size() == 3) return graph_route(c, seg[2]), true;
  return false;
}

}  // namespace skein::server
