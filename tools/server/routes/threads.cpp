// Thread routes: create, list, read, retitle, delete; a task's thread; a
// house's members; cancel, fork, diagnose, reconcile, compact; prune. What a
// thread holds — its entries and streams — is entries.cpp's; its export
// import_export.cpp's; its work item work_items.cpp's.
#include <algorithm>

#include "runtime/model/ids.hpp"
#include "runtime/model/json_reader.hpp"
#include "runtime/model/json_writer.hpp"
#include "tools/server/routes/routes.hpp"

namespace skein::server {
namespace {

// A house's members from the body: [{"agent":id,"trigger":"always"|"on_mention"}].
status members_from(const json::object_reader& r, std::vector<house_member>* out) {
  if (!r.has("members")) return status::ok();
  json::dom::element el;
  SKEIN_TRY(r.element("members", &el));
  json::dom::array list;
  if (el.get_array().get(list) != simdjson::SUCCESS) return r.invalid("members", "expected an array");
  for (json::dom::element item : list) {
    if (out->size() == house_members_max)
      return r.invalid("members", "more than house_members_max (" + std::to_string(house_members_max) + ")")
          .with_limit("house_members_max");
    json::object_reader m;
    SKEIN_TRY(json::object_reader::open(item, r.name("members") + "[]", &m));
    house_member member;
    std::string trigger = "always";
    SKEIN_TRY(m.string("agent", &member.agent_id));
    SKEIN_TRY(m.string("trigger", &trigger, false));
    auto t = parse_member_trigger(trigger);
    if (!t) return m.invalid("trigger", "must be always or on_mention");
    member.trigger = *t;
    out->push_back(std::move(member));
  }
  return status::ok();
}

// The manifest, and "existing":true when the answer is a thread that was there
// already (a task's or an agent's DM thread): 200 then, 201 for a new one.
http::response created_response(const manifest& m, bool created) {
  std::string body = manifest_json(m);
  if (!created) {
    body.pop_back();  // the closing brace of the manifest object
    body += R"(,"existing":true})";
  }
  return json_response(created ? 201 : 200, std::move(body));
}

void create_thread(route_call& c) {
  json::document body;
  json::object_reader r;
  if (status s = c.body(&body, &r); !s) return c.fail(s);
  thread_options o;
  std::string policy;
  status s = r.string("agent_id", &o.agent_id);
  if (s) s = r.string("title", &o.title, false);
  if (s) s = r.string("name", &o.name, false);
  if (s) s = r.strings("tags", &o.tags, false);
  if (s) s = r.string("parent_thread_id", &o.parent_thread_id, false);
  if (s) s = r.string("task_id", &o.task_id, false);
  if (s) s = r.string("policy", &policy, false);
  if (s && r.has("engine_config")) s = r.raw("engine_config", json::dom::element_type::OBJECT, &o.engine_config);
  if (s) s = members_from(r, &o.members);
  if (!s) return c.fail(s);
  if (!policy.empty()) {
    o.policy = parse_mid_run_policy(policy);
    if (!o.policy) return c.fail(r.invalid("policy", "must be queue, reject or interrupt"));
  }
  if (!c.scope.allows(o.agent_id)) return c.forbidden("create threads of agent " + o.agent_id);
  // A member runs under its own agent on this thread: the token must speak for each.
  for (const auto& member : o.members)
    if (!c.scope.allows(member.agent_id)) return c.forbidden("add agent " + quote_input(member.agent_id) + " to a house");
  if (!o.parent_thread_id.empty()) {
    // The parent's counter is bumped and the child indexed under it: only a
    // parent the token may see qualifies.
    manifest parent;
    if (s = visible_thread(c.rt(), c.scope, o.parent_thread_id, "parent_thread_id", &parent); !s) return c.fail(s);
  }
  manifest m;
  bool created = false;
  if (s = c.rt().create_thread(o, &m, &created); !s) {
    // A parent deleted since the check answers as one that never was.
    manifest parent;
    if (s.code() == errc::not_found && !o.parent_thread_id.empty() &&
        !visible_thread(c.rt(), c.scope, o.parent_thread_id, "parent_thread_id", &parent).is_ok())
      return c.fail(missing_thread(o.parent_thread_id, "parent_thread_id"));
    return c.fail(s);
  }
  c.reply(created_response(m, created));
}

// GET /v1/tasks/{task}: the task's dedicated thread; another agent's answers as missing.
void get_task(route_call& c) {
  const std::string& task_id = c.param("task");
  if (status s = validate_id(task_id, "task id"); !s) return c.fail(std::move(s).with_field("task_id"));
  manifest m;
  status s = c.rt().find_task_thread(task_id, &m);
  if (s.code() == errc::not_found || (s && !c.scope.allows(m.agent_id)))
    return c.fail(status::not_found("task " + quote_input(task_id) + ": not found"));
  if (!s) return c.fail(s);
  c.reply_json(200, manifest_json(m));
}

// Keeps the manifests that match every filter the index could not apply.
bool matches(const manifest& m, const route_call& c) {
  std::string agent = c.query("agent"), status_name = c.query("status"), tag = c.query("tag"),
              parent = c.query("parent");
  if (!agent.empty() && m.agent_id != agent) return false;
  if (!status_name.empty() && to_string(m.status) != status_name) return false;
  if (!parent.empty() && m.parent_id != parent) return false;
  if (!tag.empty() && std::find(m.tags.begin(), m.tags.end(), tag) == m.tags.end()) return false;
  return true;
}

// GET /v1/threads: the scope (agent_query) refused another agent already.
void list_threads(route_call& c) {
  const size_t limit_max = c.env.options.list_limit_max;
  thread_query q;
  std::string agent = c.query("agent");
  if (agent.empty() && !c.scope.admin) {
    if (c.scope.agents.size() != 1)
      return c.fail(status::invalid_input("agent: required for a token scoped to several agents"));
    agent = *c.scope.agents.begin();
  }
  if (!agent.empty()) q = {thread_query::by::agent, agent};
  else if (!c.query("parent").empty()) q = {thread_query::by::parent, c.query("parent")};
  else if (!c.query("tag").empty()) q = {thread_query::by::tag, c.query("tag")};
  else if (!c.query("status").empty()) q = {thread_query::by::status, c.query("status")};
  else q.index = thread_query::by::updated;
  uint64_t limit = 0;
  if (status s = query_uint(c.req, "limit", 100, &limit); !s) return c.fail(s);
  if (limit == 0 || limit > limit_max)
    return c.fail(status::invalid_input("limit: must be between 1 and list_limit_max (" + std::to_string(limit_max) + ")")
                      .with_limit("list_limit_max")
                      .with_field("limit"));
  q.limit = limit;
  q.cursor = c.query("cursor");
  std::string archived = c.query("archived");
  if (archived == "include") q.archived_filter = thread_query::archived::include;
  else if (archived == "only") q.archived_filter = thread_query::archived::only;
  else if (!archived.empty() && archived != "exclude")
    return c.fail(status::invalid_input("archived: must be exclude, include or only").with_field("archived"));
  thread_page page;
  if (status s = c.rt().list_threads(q, &page); !s) return c.fail(s);
  std::string body;
  json_writer w{&body};
  w.begin_object();
  w.key("threads");
  w.begin_array();
  for (const auto& m : page.threads)
    if (matches(m, c) && c.scope.allows(m.agent_id)) w.raw(manifest_json(m));
  w.end_array();
  w.field("next_cursor", page.next_cursor);
  w.end_object();
  c.reply_json(200, body);
}

void get_thread(route_call& c) {
  const std::string& id = c.param("thread");
  manifest m;
  if (!c.thread_allowed(id, &m)) return;
  // Reconcile on read: a stale running thread is closed before it is shown.
  bool closed = false;
  if (status s = c.rt().reconcile(id, &closed); !s) return c.fail(s);
  if (closed && !c.rt().get_thread(id, &m).is_ok()) return c.fail(missing_thread(id));
  c.reply_json(200, manifest_json(m));
}

void delete_thread(route_call& c) {
  const std::string& id = c.param("thread");
  if (status s = validate_id(id, "thread id"); !s) return c.fail(s);
  manifest m;
  status s = c.rt().get_thread(id, &m);
  if (s.code() == errc::not_found) return c.reply(no_content());  // idempotent
  if (!s) return c.fail(s);
  // Another agent's thread answers as a missing one: 204, and nothing is deleted.
  if (!c.scope.allows(m.agent_id)) return c.reply(no_content());
  if (s = c.rt().delete_thread(id); !s) return c.fail(s);
  c.reply(no_content());
}

// PATCH /v1/threads/{thread} {"title":string}: a user's title, never replaced by the titles effect.
void patch_thread(route_call& c) {
  const std::string& id = c.param("thread");
  manifest m;
  if (!c.thread_allowed(id, &m)) return;
  json::document body;
  json::object_reader r;
  std::string title;
  status s = c.body(&body, &r);
  if (s) s = r.string("title", &title);
  if (!s) return c.fail(s);
  if (s = c.rt().set_title(id, title, &m); !s) return c.fail(s);
  c.reply_json(200, manifest_json(m));
}

// POST /v1/threads/{thread}/members {"agent":id,"trigger":"always"|"on_mention"};
// DELETE /v1/threads/{thread}/members/{agent}. The token must speak for the
// thread's agent and for the member's.
void add_member(route_call& c) {
  const std::string& id = c.param("thread");
  manifest m;
  if (!c.thread_allowed(id, &m)) return;
  json::document body;
  json::object_reader r;
  house_member member;
  std::string trigger = "always";
  status s = c.body(&body, &r);
  if (s) s = r.string("agent", &member.agent_id);
  if (s) s = r.string("trigger", &trigger, false);
  if (!s) return c.fail(s);
  auto t = parse_member_trigger(trigger);
  if (!t) return c.fail(r.invalid("trigger", "must be always or on_mention"));
  member.trigger = *t;
  if (s = r.about("agent", validate_id(member.agent_id, "agent")); !s) return c.fail(s);
  if (!c.scope.allows(member.agent_id)) return c.forbidden("add agent " + quote_input(member.agent_id) + " to a house");
  if (s = c.rt().add_member(id, member, &m); !s) return c.fail(s);
  c.reply_json(200, manifest_json(m));
}

void remove_member(route_call& c) {
  const std::string& id = c.param("thread");
  manifest m;
  if (!c.thread_allowed(id, &m)) return;
  if (status s = c.rt().remove_member(id, c.param("agent"), &m); !s) return c.fail(s);
  c.reply_json(200, manifest_json(m));
}

void cancel_thread(route_call& c) {
  const std::string& id = c.param("thread");
  manifest m;
  if (!c.thread_allowed(id, &m)) return;
  bool cancelled = false;
  if (status s = c.rt().cancel(id, &cancelled); !s) return c.fail(s);
  c.reply_json(200, std::string(R"({"cancelled":)") + (cancelled ? "true" : "false") + "}");
}

void fork_thread(route_call& c) {
  const std::string& id = c.param("thread");
  manifest m;
  if (!c.thread_allowed(id, &m)) return;
  json::document body;
  json::object_reader r;
  uint64_t at = 0;
  status s = c.body(&body, &r);
  if (s) s = r.uint("at_seq", &at);
  if (!s) return c.fail(s);
  manifest copy;
  if (s = c.rt().fork(id, at, &copy); !s) return c.fail(s);
  c.reply_json(201, manifest_json(copy));
}

void diagnose_thread(route_call& c) {
  const std::string& id = c.param("thread");
  manifest m;
  if (!c.thread_allowed(id, &m)) return;
  diagnosis d;
  if (status s = c.rt().diagnose(id, &d); !s) return c.fail(s);
  std::string body;
  json_writer w{&body};
  w.begin_object();
  w.field("thread_id", d.thread_id);
  w.field("status", to_string(d.status));
  w.field("stage", d.stage);
  w.field_uint("last_seq", d.last_seq);
  w.field_int("heartbeat_age_ms", d.heartbeat_age_ms);
  w.field("last_run_id", d.last_run_id);
  w.field("last_outcome", d.last_outcome);
  w.field("last_error", d.last_error);
  w.key("quarantined");
  w.boolean(d.quarantined);
  w.end_object();
  c.reply_json(200, body);
}

void reconcile_thread(route_call& c) {
  const std::string& id = c.param("thread");
  manifest m;
  if (!c.thread_allowed(id, &m)) return;
  bool closed = false;
  if (status s = c.rt().reconcile(id, &closed); !s) return c.fail(s);
  if (status s = c.rt().get_thread(id, &m); !s) return c.fail(s);
  c.reply_json(200, std::string(R"({"reconciled":)") + (closed ? "true" : "false") + R"(,"thread":)" +
                        manifest_json(m) + "}");
}

// POST /v1/threads/{thread}/compact {"stages":[...],"keep_turns":N,"tool_result_bytes_max":N},
// every field optional. It waits for a run under way (no 409).
status compact_options_from(const json::object_reader& r, compact_options* o) {
  SKEIN_TRY(r.strings("stages", &o->stages, false));
  if (r.has("keep_turns")) {
    uint64_t keep = 0;
    SKEIN_TRY(r.uint("keep_turns", &keep));
    if (keep > compact_keep_turns_max)
      return r.invalid("keep_turns", "at most " + std::to_string(compact_keep_turns_max));
    o->keep_turns = static_cast<uint32_t>(keep);
  }
  if (r.has("tool_result_bytes_max")) {
    uint64_t bytes = 0;
    SKEIN_TRY(r.uint("tool_result_bytes_max", &bytes));
    o->tool_result_bytes_max = bytes;
  }
  if (r.has("stages") && o->stages.empty()) return r.invalid("stages", "empty");
  return status::ok();
}

void compact_thread(route_call& c) {
  const std::string& id = c.param("thread");
  manifest m;
  if (!c.thread_allowed(id, &m)) return;
  json::document body;
  json::object_reader r;
  compact_options o;
  status s = c.body(&body, &r);
  if (s) s = compact_options_from(r, &o);
  if (!s) return c.fail(s);
  compact_result res;
  if (s = c.rt().compact(id, o, &res); !s) return c.fail(s);
  std::string out;
  json_writer w{&out};
  w.begin_object();
  w.key("compacted");
  w.boolean(res.compacted);
  w.key("failed");
  w.boolean(res.failed);
  w.field("reason", res.reason);
  w.field_uint("seq", res.seq);
  w.field_uint("tokens_before", res.tokens_before);
  w.field_uint("tokens_after", res.tokens_after);
  w.field_uint("events_before", res.events_before);
  w.field_uint("events_after", res.events_after);
  w.end_object();
  c.reply_json(200, out);
}

void prune(route_call& c) {
  std::vector<std::string> closed;
  if (status s = c.rt().prune(&closed); !s) return c.fail(s);
  std::string body;
  json_writer w{&body};
  w.begin_object();
  w.field_strings("reconciled", closed);
  w.end_object();
  c.reply_json(200, body);
}

constexpr auto thread = route_scope::thread;

constexpr route rows[] = {
    {.method = "POST", .pattern = "/v1/threads", .scope = route_scope::ns, .handler = create_thread},
    {.method = "GET", .pattern = "/v1/threads", .scope = route_scope::agent_query, .denied = "list threads of agent",
     .handler = list_threads},
    {.method = "GET", .pattern = "/v1/tasks/{task}", .scope = route_scope::task, .handler = get_task},
    {.method = "GET", .pattern = "/v1/threads/{thread}", .scope = thread, .handler = get_thread},
    {.method = "PATCH", .pattern = "/v1/threads/{thread}", .scope = thread, .handler = patch_thread},
    {.method = "DELETE", .pattern = "/v1/threads/{thread}", .scope = thread, .handler = delete_thread},
    {.method = "POST", .pattern = "/v1/threads/{thread}/members", .scope = thread, .handler = add_member},
    {.method = "DELETE", .pattern = "/v1/threads/{thread}/members/{agent}", .scope = thread, .handler = remove_member},
    {.method = "POST", .pattern = "/v1/threads/{thread}/cancel", .scope = thread, .handler = cancel_thread},
    {.method = "POST", .pattern = "/v1/threads/{thread}/fork", .scope = thread, .handler = fork_thread},
    {.method = "GET", .pattern = "/v1/threads/{thread}/diagnose", .scope = thread, .handler = diagnose_thread},
    {.method = "POST", .pattern = "/v1/threads/{thread}/reconcile", .scope = thread, .handler = reconcile_thread},
    {.method = "POST", .pattern = "/v1/threads/{thread}/compact", .scope = thread, .handler = compact_thread},
    {.method = "POST", .pattern = "/v1/prune", .scope = route_scope::admin, .denied = "prune (admin only)",
     .handler = prune},
};

}  // namespace

std::span<const route> thread_routes() { return rows; }

}  // namespace skein::server
