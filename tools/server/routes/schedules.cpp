// Schedule routes (runtime/model/schedule.hpp): create, list, read, delete,
// pause and resume, a schedule's firing history and its next fire times. A
// schedule belongs to its agent: a token of another agent gets the answer an
// unknown id gets, byte for byte, as the thread routes do.
#include <algorithm>

#include "runtime/model/ids.hpp"
#include "runtime/model/json_reader.hpp"
#include "runtime/model/json_writer.hpp"
#include "runtime/model/schedule.hpp"
#include "tools/server/routes/routes.hpp"

namespace skein::server {
namespace {

status missing_schedule(const std::string& id) {
  return status::not_found("schedule " + quote_input(id) + ": not found");
}

std::string schedule_json(const schedule& s) {
  std::string out;
  encode_schedule(s, &out).ignore();  // stored schedules always encode
  return out;
}

status visible_schedule(runtime& rt, const token_scope& scope, const std::string& id, schedule* out) {
  SKEIN_TRY(validate_id(id, "schedule id"));
  status s = rt.get_schedule(id, out);
  if (s.code() == errc::not_found) return missing_schedule(id);
  SKEIN_TRY(s);
  if (!scope.allows(out->agent_id)) return missing_schedule(id);
  return status::ok();
}

// POST /v1/schedules: the definition (the model's codec reads it); the state
// is the scheduler's.
void create_schedule(route_call& c) {
  json::document body;
  json::object_reader r;
  schedule s;
  status st = c.body(&body, &r);
  if (st) st = read_schedule_definition(r, false, &s);
  if (!st) return c.fail(st);
  if (!c.scope.allows(s.agent_id)) return c.forbidden("create schedules of agent " + quote_input(s.agent_id));
  if (!s.thread_id.empty()) {
    manifest m;
    if (status st = visible_thread(c.rt(), c.scope, s.thread_id, "thread_id", &m); !st) return c.fail(st);
  }
  schedule out;
  if (status st = c.rt().create_schedule(s, &out); !st) return c.fail(st);
  c.reply(json_response(201, schedule_json(out)));
}

// GET /v1/schedules: the scope (agent_query) refused another agent already.
void list_schedules(route_call& c) {
  const size_t limit_max = c.env.options.list_limit_max;
  std::string agent = c.query("agent");
  uint64_t limit = 0;
  if (status s = query_uint(c.req, "limit", 100, &limit); !s) return c.fail(s);
  size_t max = std::min(limit_max, schedule_page_max);
  if (limit == 0 || limit > max)
    return c.fail(status::invalid_input("limit: must be between 1 and " + std::to_string(max))
                      .with_limit("schedule_page_max")
                      .with_field("limit"));
  std::vector<schedule> page;
  std::string next;
  if (status s = c.rt().list_schedules(c.query("cursor"), limit, &page, &next); !s) return c.fail(s);
  std::string body;
  json_writer w{&body};
  w.begin_object();
  w.key("schedules");
  w.begin_array();
  for (const auto& s : page)
    if (c.scope.allows(s.agent_id) && (agent.empty() || s.agent_id == agent)) w.raw(schedule_json(s));
  w.end_array();
  w.field("next_cursor", next);
  w.end_object();
  c.reply(json_response(200, body));
}

void delete_schedule(route_call& c) {
  const std::string& id = c.param("schedule");
  schedule s;
  status st = visible_schedule(c.rt(), c.scope, id, &s);
  // Missing or another agent's: 204 and nothing deleted, as for threads.
  if (st.code() == errc::not_found) return c.reply(no_content());
  if (!st) return c.fail(st);
  if (st = c.rt().delete_schedule(id); !st) return c.fail(st);
  c.reply(no_content());
}

void pause_or_resume(route_call& c, bool pause) {
  const std::string& id = c.param("schedule");
  schedule s;
  if (status st = visible_schedule(c.rt(), c.scope, id, &s); !st) return c.fail(st);
  status st = pause ? c.rt().pause_schedule(id, &s) : c.rt().resume_schedule(id, &s);
  if (st.code() == errc::not_found) return c.fail(missing_schedule(id));  // deleted meanwhile
  if (!st) return c.fail(st);
  c.reply(json_response(200, schedule_json(s)));
}

void schedule_history(route_call& c) {
  const std::string& id = c.param("schedule");
  schedule s;
  if (status st = visible_schedule(c.rt(), c.scope, id, &s); !st) return c.fail(st);
  uint64_t limit = 0, before = 0, next = 0;
  if (status st = query_uint(c.req, "limit", 100, &limit); !st) return c.fail(st);
  if (status st = query_uint(c.req, "before", 0, &before); !st) return c.fail(st);
  std::vector<schedule_firing> firings;
  if (status st = c.rt().schedule_history(id, before, limit, &firings, &next); !st) return c.fail(st);
  std::string body, row;
  json_writer w{&body};
  w.begin_object();
  w.key("firings");
  w.begin_array();
  for (const auto& f : firings) {
    encode_firing(f, &row).ignore();
    w.raw(row);
  }
  w.end_array();
  w.field_uint("next_before", next);
  w.end_object();
  c.reply(json_response(200, body));
}

void schedule_preview(route_call& c) {
  const std::string& id = c.param("schedule");
  schedule s;
  if (status st = visible_schedule(c.rt(), c.scope, id, &s); !st) return c.fail(st);
  uint64_t n = 0;
  if (status st = query_uint(c.req, "n", 10, &n); !st) return c.fail(st);
  std::vector<int64_t> times;
  if (status st = c.rt().preview_schedule(id, n, &times); !st) return c.fail(st);
  std::string body;
  json_writer w{&body};
  w.begin_object();
  w.key("fire_at_ms");
  w.begin_array();
  for (int64_t t : times) w.int64(t);
  w.end_array();
  w.end_object();
  c.reply(json_response(200, body));
}

void get_schedule(route_call& c) {
  schedule s;
  if (status st = visible_schedule(c.rt(), c.scope, c.param("schedule"), &s); !st) return c.fail(st);
  c.reply_json(200, schedule_json(s));
}

void pause_schedule(route_call& c) { pause_or_resume(c, true); }
void resume_schedule(route_call& c) { pause_or_resume(c, false); }

constexpr auto owned = route_scope::schedule;

constexpr route rows[] = {
    {.method = "POST", .pattern = "/v1/schedules", .scope = route_scope::ns, .handler = create_schedule},
    {.method = "GET", .pattern = "/v1/schedules", .scope = route_scope::agent_query,
     .denied = "list schedules of agent", .handler = list_schedules},
    {.method = "GET", .pattern = "/v1/schedules/{schedule}", .scope = owned, .handler = get_schedule},
    {.method = "DELETE", .pattern = "/v1/schedules/{schedule}", .scope = owned, .handler = delete_schedule},
    {.method = "POST", .pattern = "/v1/schedules/{schedule}/pause", .scope = owned, .handler = pause_schedule},
    {.method = "POST", .pattern = "/v1/schedules/{schedule}/resume", .scope = owned, .handler = resume_schedule},
    {.method = "GET", .pattern = "/v1/schedules/{schedule}/history", .scope = owned, .handler = schedule_history},
    {.method = "GET", .pattern = "/v1/schedules/{schedule}/preview", .scope = owned, .handler = schedule_preview},
};

}  // namespace

std::span<const route> schedule_routes() { return rows; }

}  // namespace skein::server
