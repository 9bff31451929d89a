// Work session and suggestion routes (runtime/model/work_api.hpp): a session's
// start (its project's items, suggestions and a sweep) and close (open items
// and topics, which become suggestions when they recur), an agent's
// suggestions, and promoting or dismissing one.
#include "runtime/model/ids.hpp"
#include "runtime/model/json_reader.hpp"
#include "runtime/model/json_writer.hpp"
#include "tools/server/routes/routes.hpp"
#include "tools/server/routes/work_common.hpp"
#include "tools/server/work_json.hpp"

namespace skein::server {
namespace {

constexpr size_t session_texts_max = 256;  // open_items or topics of one close

status missing_suggestion(const std::string& id) {
  return status::not_found("suggestion " + quote_input(id) + ": not found").with_field("suggestion_id");
}

void list_suggestions(route_call& c) {
  const std::string& agent = c.param("agent");
  bool all = false;
  if (status s = query_bool(c.req, "all", &all); !s) return c.fail(s);
  std::vector<work_suggestion> out;
  if (status s = c.rt().list_suggestions(agent, all, &out); !s) return c.fail(s);
  std::string body;
  json_writer w{&body};
  w.begin_object();
  w.key("suggestions");
  w.begin_array();
  for (const auto& s : out) w.raw(suggestion_json(s));
  w.end_array();
  w.end_object();
  c.reply_json(200, body);
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

void promote_suggestion(route_call& c) {
  const std::string& id = c.param("suggestion");
  if (status s = visible_suggestion(c.rt(), c.scope, id); !s) return c.fail(s);
  json::document doc;
  json::object_reader r;
  std::string project;  // "": the suggestion's own
  status s = c.body(&doc, &r);
  if (s && r.has("project")) s = body_project(r, &project);
  if (!s) return c.fail(s);
  work_create_result out;
  s = c.rt().promote_suggestion(id, &out, project);
  if (s.code() == errc::not_found) return c.fail(missing_suggestion(id));
  if (!s) return c.fail(s);
  work_entry e;
  work_vitality v;
  if (c.rt().get_item(out.thread.id, &e)) v = e.vitality;
  std::string body;
  json_writer w{&body};
  w.begin_object();
  write_created_fields(w, out, v);
  w.key("suggestion");
  w.raw(suggestion_now(c.rt(), out.thread.agent_id, id));
  w.end_object();
  c.reply_json(200, body);
}

void dismiss_suggestion(route_call& c) {
  const std::string& id = c.param("suggestion");
  if (status s = visible_suggestion(c.rt(), c.scope, id); !s) return c.fail(s);
  work_suggestion out;
  status s = c.rt().dismiss_suggestion(id, &out);
  if (s.code() == errc::not_found) return c.fail(missing_suggestion(id));
  if (!s) return c.fail(s);
  // The suggestion, with the seed's {suggestion} beside.
  std::string one = suggestion_json(out), body = one;
  body.pop_back();
  body += R"(,"suggestion":)" + one + "}";
  c.reply_json(200, body);
}

void start_session(route_call& c) {
  json::document doc;
  json::object_reader r;
  work_session_start in;
  status s = agent_body(c, &doc, &r, &in);
  if (s) s = r.string("session_id", &in.session_id, false);
  if (s) s = r.boolean("auto_archive", &in.auto_archive, false);
  if (s) s = body_project(r, &in.project);
  if (s && !in.session_id.empty()) s = r.about("session_id", validate_id(in.session_id, "session_id"));
  if (!s) return c.fail(s);
  work_session_started out;
  if (s = c.rt().session_start(in, &out); !s) return c.fail(s);
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
  write_sweep_fields(w, out.sweep);
  w.end_object();
  w.end_object();
  c.reply_json(201, body);
}

status bounded_texts(const json::object_reader& r, std::string_view field, std::vector<std::string>* out) {
  SKEIN_TRY(r.strings(field, out, false));
  std::string f{field};
  if (out->size() > session_texts_max)
    return r.invalid(field, "at most " + std::to_string(session_texts_max) + " texts").with_limit("session_texts_max");
  for (size_t i = 0; i < out->size(); ++i) SKEIN_TRY(validate_work_text((*out)[i], f + "[" + std::to_string(i) + "]"));
  return status::ok();
}

// The seed's open_threads: each a text, or a thread object whose `text` (or
// `note`) is one; an object whose status is resolved is no open item.
status seed_threads(const json::object_reader& r, std::vector<std::string>* out) {
  json::dom::element el;
  SKEIN_TRY(r.element("open_threads", &el));
  json::dom::array a;
  if (el.get_array().get(a) != simdjson::SUCCESS) return r.invalid("open_threads", "must be an array");
  if (a.size() > session_texts_max)
    return r.invalid("open_threads", "at most " + std::to_string(session_texts_max) + " texts")
        .with_limit("session_texts_max");
  out->clear();
  size_t i = 0;
  for (json::dom::element x : a) {
    std::string f = "open_threads[" + std::to_string(i++) + "]";
    std::string_view text;
    if (x.get_string().get(text) != simdjson::SUCCESS) {
      json::object_reader o;
      if (!json::object_reader::open(x, f, &o)) return r.invalid(f, "expected a text or an object");
      std::string st, t;
      SKEIN_TRY(o.string("status", &st, false));
      if (st == "resolved") continue;
      SKEIN_TRY(o.about("text", o.string(o.has("note") && !o.has("text") ? "note" : "text", &t)));
      SKEIN_TRY(validate_work_text(t, f + ".text"));
      out->push_back(std::move(t));
      continue;
    }
    SKEIN_TRY(validate_work_text(text, f));
    out->emplace_back(text);
  }
  return status::ok();
}

status close_from(const json::object_reader& r, work_session_close* in) {
  SKEIN_TRY(r.string("summary", &in->summary, false));
  if (in->summary.size() > work_note_bytes_max)
    return r.invalid("summary", "longer than " + std::to_string(work_note_bytes_max) + " bytes")
        .with_limit("work_note_bytes_max");
  if (r.has("open_items") && r.has("open_threads"))
    return r.about("open_threads", status::invalid_input(r.name("open_items") + ", " + r.name("open_threads") +
                                                         ": one field under two names; give one"));
  SKEIN_TRY(r.has("open_threads") ? seed_threads(r, &in->open_items) : bounded_texts(r, "open_items", &in->open_items));
  SKEIN_TRY(bounded_texts(r, "topics", &in->topics));
  // Absent: the session's own project (from its start).
  if (r.has("project")) SKEIN_TRY(body_project(r, &in->project));
  return status::ok();
}

void close_session(route_call& c) {
  const std::string& agent = c.param("agent");
  const std::string& sid = c.param("session");
  json::document doc;
  json::object_reader r;
  work_session_close in;
  in.agent_id = agent;
  in.session_id = sid;
  status s = validate_id(sid, "session_id").with_field("session_id");
  if (s) s = c.body(&doc, &r);
  if (s) s = close_from(r, &in);
  if (!s) return c.fail(s);
  work_session_closed out;
  if (s = c.rt().session_close(in, &out); !s) return c.fail(s);
  std::string body;
  json_writer w{&body};
  w.begin_object();
  w.key("items");
  w.begin_array();
  for (const auto& x : out.items) w.raw(created_answer(c.rt(), x));
  w.end_array();
  w.key("suggestions");
  w.begin_array();
  for (const auto& x : out.suggestions) w.raw(suggestion_json(x));
  w.end_array();
  w.end_object();
  c.reply_json(200, body);
}

constexpr auto agent = route_scope::agent_hidden;
constexpr auto suggestion = route_scope::suggestion;

constexpr route rows[] = {
    {.method = "GET", .pattern = "/v1/agents/{agent}/suggestions", .scope = agent, .handler = list_suggestions},
    {.method = "POST", .pattern = "/v1/suggestions/{suggestion}/promote", .scope = suggestion,
     .handler = promote_suggestion},
    {.method = "POST", .pattern = "/v1/suggestions/{suggestion}/dismiss", .scope = suggestion,
     .handler = dismiss_suggestion},
    {.method = "POST", .pattern = "/v1/agents/{agent}/sessions", .scope = agent, .handler = start_session},
    {.method = "POST", .pattern = "/v1/agents/{agent}/sessions/{session}/close", .scope = agent,
     .handler = close_session},
};

}  // namespace

std::span<const route> work_session_routes() { return rows; }

}  // namespace skein::server
