// Work item routes (runtime/model/work_api.hpp): an agent's items — create
// (deduplicated), list, resolve, sweep — and one item by its thread: read,
// touch, relate to an issue. Answers hold skein's fields and the seed's
// (gitmem's) names beside them (work_json.hpp).
#include <algorithm>

#include "runtime/model/ids.hpp"
#include "runtime/model/json_reader.hpp"
#include "runtime/model/json_writer.hpp"
#include "tools/server/routes/routes.hpp"
#include "tools/server/routes/work_common.hpp"
#include "tools/server/work_json.hpp"

namespace skein::server {
namespace {

constexpr size_t relates_to_max = 64;  // issue ids one create names

// One of two names for one field (skein's and the seed's): the one given, or
// an error naming the seed's when both are.
status aliased_string(const json::object_reader& r, std::string_view name, std::string_view alias, std::string* out) {
  if (r.has(name) && r.has(alias))
    return r.about(alias, status::invalid_input(r.name(name) + ", " + r.name(alias) +
                                                ": one field under two names; give one"));
  return r.string(r.has(alias) ? alias : name, out, false);
}

status create_from(const json::object_reader& r, work_create* in) {
  SKEIN_TRY(r.string("text", &in->text));
  SKEIN_TRY(r.string("session_id", &in->session_id, false));
  SKEIN_TRY(r.strings("relates_to", &in->relates_to, false));
  SKEIN_TRY(r.strings("tags", &in->tags, false));
  SKEIN_TRY(body_project(r, &in->project));
  SKEIN_TRY(r.string("linear_issue", &in->linear_issue, false));
  if (r.has("linear_issue")) SKEIN_TRY(r.about("linear_issue", validate_id(in->linear_issue, "linear_issue")));
  if (in->relates_to.size() > relates_to_max)
    return r.invalid("relates_to", "at most " + std::to_string(relates_to_max) + " issue ids")
        .with_limit("relates_to_max");
  return r.about("text", validate_work_text(in->text, "text"));
}

void create_item(route_call& c) {
  json::document doc;
  json::object_reader r;
  work_create in;
  status s = agent_body(c, &doc, &r, &in);
  if (s) s = create_from(r, &in);
  if (!s) return c.fail(s);
  work_create_result out;
  if (s = c.rt().create_item(in, &out); !s) return c.fail(s);
  c.reply_json(out.deduplicated ? 200 : 201, created_answer(c.rt(), out));
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
status seed_stages(const http::request& req, std::vector<work_stage>* out) {
  auto st_it = req.query.find("status");
  std::string st = st_it == req.query.end() ? std::string{} : st_it->second;
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

void list_items(route_call& c) {
  const std::string& agent = c.param("agent");
  work_list_query q;
  q.agent_id = agent;
  q.cursor = c.query("cursor");
  status s = parse_stages(c.query("stage"), &q.stages);
  if (s) s = seed_stages(c.req, &q.stages);
  if (s) s = project_of(c.query("project"), &q.project);
  if (s) s = query_bool(c.req, "project_state", &q.project_state);
  if (s) s = query_count(c.req, "limit", work_list_limit_default, work_list_limit_max, "work_list_limit_max", &q.limit);
  if (!s) return c.fail(s);
  work_list_page page;
  if (s = c.rt().list_items(q, &page); !s) return c.fail(s);
  std::string body;
  json_writer w{&body};
  w.begin_object();
  write_entries(w, "items", page.items);
  w.field("next_cursor", page.next_cursor);
  write_entries(w, "threads", page.items);  // the seed's name
  w.field_uint("total_open", page.total_open);
  w.field_uint("total_resolved", page.total_resolved);
  w.end_object();
  c.reply_json(200, body);
}

status resolve_from(const json::object_reader& r, work_resolve* in) {
  SKEIN_TRY(r.string("thread_id", &in->thread_id, false));
  SKEIN_TRY(aliased_string(r, "text", "text_match", &in->text_match));
  SKEIN_TRY(aliased_string(r, "note", "resolution_note", &in->note));
  SKEIN_TRY(r.string("session_id", &in->session_id, false));
  // By text the seed's default project is searched; by id no project is
  // checked unless one is named.
  if (r.has("project") || in->thread_id.empty()) SKEIN_TRY(body_project(r, &in->project));
  if (in->thread_id.empty() == in->text_match.empty())
    return r.invalid("thread_id", "give exactly one of thread_id and text (text_match)");
  if (in->note.size() > work_note_bytes_max)
    return r.invalid("note", "longer than " + std::to_string(work_note_bytes_max) + " bytes")
        .with_limit("work_note_bytes_max");
  return status::ok();
}

void resolve_item(route_call& c) {
  json::document doc;
  json::object_reader r;
  work_resolve in;
  status s = agent_body(c, &doc, &r, &in);
  std::string text_field = s && r.has("text_match") ? "text_match" : "text";
  if (s) s = resolve_from(r, &in);
  if (s && !in.thread_id.empty()) {
    manifest m;
    s = visible_thread(c.rt(), c.scope, in.thread_id, "thread_id", &m);
    // An item of another agent of the same token is still not this agent's.
    if (s && m.agent_id != in.agent_id) s = missing_thread(in.thread_id, "thread_id");
  }
  if (!s) return c.fail(s);
  work_entry out;
  if (s = c.rt().resolve_item(in, &out); !s) {
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
  c.reply_json(200, body);
}

// The seed's triage: the project's open items after a sweep, by stage.
void reply_triage(route_call& c, const work_sweep_result& out, const std::vector<work_entry>& open) {
  int64_t now = c.rt().now_ms();
  const work_stage stages[] = {work_stage::emerging, work_stage::active, work_stage::cooling, work_stage::dormant};
  std::string body;
  json_writer w{&body};
  w.begin_object();
  write_sweep_fields(w, out);
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
  w.field_strings("archived_ids", out.archived);
  w.end_object();
  c.reply_json(200, body);
}

void sweep_items(route_call& c) {
  json::document doc;
  json::object_reader r;
  work_sweep_options o;
  status s = agent_body(c, &doc, &r, &o);
  if (s) s = r.boolean("auto_archive", &o.auto_archive, false);
  if (s) s = body_project(r, &o.project);
  if (!s) return c.fail(s);
  work_sweep_result out;
  if (s = c.rt().sweep_items(o, &out); !s) return c.fail(s);
  std::vector<work_entry> open;
  work_list_query q;
  q.agent_id = o.agent_id;
  q.project = o.project;
  q.limit = work_list_limit_max;
  q.totals = false;
  do {
    work_list_page page;
    if (s = c.rt().list_items(q, &page); !s) return c.fail(s);
    for (auto& e : page.items) open.push_back(std::move(e));
    q.cursor = page.next_cursor;
  } while (!q.cursor.empty());
  reply_triage(c, out, open);
}

// The item of the path's thread, if the token sees the thread; answers and
// false if not (a missing thread's bytes).
bool item_thread_visible(route_call& c) {
  manifest m;
  status s = visible_thread(c.rt(), c.scope, c.param("thread"), "", &m);
  if (!s) return c.fail(s), false;
  return true;
}

void reply_item(route_call& c, const status& s, const work_entry& out) {
  if (!s) return c.fail(s);
  c.reply_json(200, work_item_json(out));
}

void get_item(route_call& c) {
  if (!item_thread_visible(c)) return;
  work_entry out;
  reply_item(c, c.rt().get_item(c.param("thread"), &out), out);
}

void touch_item(route_call& c) {
  if (!item_thread_visible(c)) return;
  work_entry out;
  reply_item(c, c.rt().touch_item(c.param("thread"), &out), out);
}

void relate_item(route_call& c) {
  if (!item_thread_visible(c)) return;
  json::document doc;
  json::object_reader r;
  std::string issue;
  work_entry out;
  status s = c.body(&doc, &r);
  if (s) s = r.string("issue_id", &issue);
  if (s && (issue.empty() || issue.size() > work_text_bytes_max))
    s = r.invalid("issue_id", "1.." + std::to_string(work_text_bytes_max) + " bytes").with_limit("work_text_bytes_max");
  if (s) s = c.rt().relate_item(c.param("thread"), issue, &out);
  reply_item(c, s, out);
}

constexpr auto agent = route_scope::agent_hidden;
constexpr auto thread = route_scope::thread;

constexpr route rows[] = {
    {.method = "POST", .pattern = "/v1/agents/{agent}/items", .scope = agent, .handler = create_item},
    {.method = "GET", .pattern = "/v1/agents/{agent}/items", .scope = agent, .handler = list_items},
    {.method = "POST", .pattern = "/v1/agents/{agent}/items/resolve", .scope = agent, .handler = resolve_item},
    {.method = "POST", .pattern = "/v1/agents/{agent}/items/sweep", .scope = agent, .handler = sweep_items},
    {.method = "GET", .pattern = "/v1/threads/{thread}/item", .scope = thread, .handler = get_item},
    {.method = "POST", .pattern = "/v1/threads/{thread}/touch", .scope = thread, .handler = touch_item},
    {.method = "POST", .pattern = "/v1/threads/{thread}/relate", .scope = thread, .handler = relate_item},
};

}  // namespace

std::span<const route> work_item_routes() { return rows; }

}  // namespace skein::server
