#include "tools/server/api.hpp"

#include <charconv>
#include <ctime>
#include <functional>
#include <limits>

#include "runtime/model/ids.hpp"
#include "runtime/model/json_codec.hpp"
#include "runtime/model/json_reader.hpp"
#include "runtime/model/json_writer.hpp"
#include "runtime/model/text.hpp"
#include "runtime/namespaces/namespaces.hpp"
#include "tools/io/import_export.hpp"
#include "tools/server/namespace_json.hpp"
#include "tools/server/ui.hpp"
#include "tools/server/work_routes.hpp"

namespace skein::server {
namespace {

using http::request;
using http::response;
using exchange_ptr = std::shared_ptr<http::exchange>;

response json_response(int status, std::string body) { return response{status, "application/json", std::move(body), {}}; }

// The stored manifest and its derived `stage` (thread_stage, manifest.hpp):
// every manifest an answer holds, a listing's rows included. A thread read
// here was reconciled already, so a run shown is not stale ("stalled" is
// diagnose's word).
std::string manifest_json(const manifest& m) {
  std::string out;
  encode_manifest(m, &out).ignore();  // stored manifests always encode
  out.pop_back();  // the closing brace of the manifest object
  out += R"(,"stage":")";
  out += thread_stage(m.status, m.last_outcome, false);
  out += R"("})";
  return out;
}

std::string agent_json(const agent_config& a) {
  std::string out;
  encode_agent(a, &out).ignore();
  return out;
}

void write_run(json_writer& w, const run_result& r) {
  w.begin_object();
  w.field("thread_id", r.thread_id);
  w.field("run_id", r.run_id);
  w.field("outcome", to_string(r.outcome));
  w.field("text", r.text);
  w.field("error", r.error);
  w.key("usage");
  write_usage(w, r.usage);
  w.key("cost_usd");
  w.number(r.cost_usd);
  w.field_uint("duration_ms", r.duration_ms);
  w.field_uint("turns", r.turns);
  w.field_uint("first_seq", r.first_seq);
  w.field_uint("last_seq", r.last_seq);
  w.end_object();
}

// The segments of a path: "/v1/threads/x/entries" -> {"v1","threads","x","entries"}.
std::vector<std::string> segments(const std::string& path) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    if (j > i) out.push_back(path.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

// Bytes of an error message that reach a client; the rest is cut (messages
// quote input through quote_input, this is the last guard).
constexpr size_t error_message_bytes_max = 512;
constexpr uint64_t memory_k_default = 10;  // hits of a memory search without k

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

// The one answer for a thread the caller may not see: a missing thread and
// another agent's thread must be indistinguishable, byte for byte.
status missing_thread(const std::string& id, const std::string& field = "") {
  return status::not_found("thread " + quote_input(id) + ": not found").with_field(field);
}

// A query parameter as a number, or `fallback` when absent.
status query_uint(const request& req, const std::string& name, uint64_t fallback, uint64_t* out) {
  auto it = req.query.find(name);
  if (it == req.query.end()) {
    *out = fallback;
    return status::ok();
  }
  return parse_uint(it->second, name, out);
}

std::string query(const request& req, const std::string& name) {
  auto it = req.query.find(name);
  return it == req.query.end() ? std::string{} : it->second;
}

// A time parameter: ms since the epoch, or an RFC 3339 UTC date or date-time
// ("2026-11-23", "2026-11-23T10:00:00Z", with optional fractional seconds).
status parse_time_ms(const std::string& text, const std::string& field, int64_t* out) {
  if (!text.empty() && text.find_first_not_of("0123456789") == std::string::npos) {
    uint64_t v = 0;
    SKEIN_TRY(parse_uint(text, field, &v));
    if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return status::invalid_input(field + ": out of range").with_field(field);
    *out = static_cast<int64_t>(v);
    return status::ok();
  }
  auto bad = [&] {
    return status::invalid_input(field + ": expected ms since the epoch or an RFC 3339 UTC time like 2026-11-23 or 2026-11-23T10:00:00Z, got " +
                                 quote_input(text))
        .with_field(field);
  };
  auto digits = [&](size_t at, size_t n, int* v) {
    if (at + n > text.size()) return false;
    *v = 0;
    for (size_t i = at; i < at + n; ++i) {
      if (text[i] < '0' || text[i] > '9') return false;
      *v = *v * 10 + (text[i] - '0');
    }
    return true;
  };
  tm t{};
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0, ms = 0;
  if (!digits(0, 4, &year) || text.size() < 10 || text[4] != '-' || !digits(5, 2, &month) || text[7] != '-' ||
      !digits(8, 2, &day))
    return bad();
  size_t i = 10;
  if (i < text.size()) {
    if ((text[i] != 'T' && text[i] != 't') || !digits(i + 1, 2, &hour) || text.size() < i + 9 || text[i + 3] != ':' ||
        !digits(i + 4, 2, &minute) || text[i + 6] != ':' || !digits(i + 7, 2, &second))
      return bad();
    i += 9;
    if (i < text.size() && text[i] == '.') {  // fractional seconds: ms kept, the rest dropped
      size_t j = i + 1, n = 0;
      for (; j < text.size() && text[j] >= '0' && text[j] <= '9'; ++j, ++n)
        if (n < 3) ms = ms * 10 + (text[j] - '0');
      if (n == 0) return bad();
      for (; n < 3; ++n) ms *= 10;
      i = j;
    }
    std::string_view zone = std::string_view{text}.substr(i);
    if (zone != "Z" && zone != "z" && zone != "+00:00") return bad();
  }
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) return bad();
  t.tm_year = year - 1900;
  t.tm_mon = month - 1;
  t.tm_mday = day;
  t.tm_hour = hour;
  t.tm_min = minute;
  t.tm_sec = second;
  time_t secs = ::timegm(&t);
  if (t.tm_mday != day) return bad();  // 2026-02-30 normalizes to another day
  *out = static_cast<int64_t>(secs) * 1000 + ms;
  return status::ok();
}

// *out reads from *doc: the caller keeps the document alive while it reads.
status body_object(const request& req, const json_limits& limits, json::document* doc,
                   json::object_reader* out) {
  SKEIN_TRY(json::parse(req.body.empty() ? std::string_view{"{}"} : std::string_view{req.body}, limits,
                        "request body", doc));
  return json::object_reader::open(doc->root(), "body", out);
}

// An event's SSE frame from its JSON (encode_event's, as stored).
std::string sse_event_frame(uint64_t seq, event_type type, std::string_view json) {
  std::string id = std::to_string(seq);
  std::string_view name = to_string(type);
  std::string frame;
  frame.reserve(id.size() + name.size() + json.size() + 24);
  frame += "id: ";
  frame += id;
  frame += "\nevent: ";
  frame += name;
  frame += "\ndata: ";
  frame += json;
  frame += "\n\n";
  return frame;
}

std::string sse_end_frame(const std::string& thread_id, const std::string& reason) {
  std::string data;
  json_writer w{&data};
  w.begin_object();
  w.field("thread_id", thread_id);
  w.field("reason", reason);
  w.end_object();
  return "event: " + reason + "\ndata: " + data + "\n\n";
}

std::string sse_delta_frame(const std::string& run_id, const std::string& delta) {
  std::string data;
  json_writer w{&data};
  w.begin_object();
  w.field("run_id", run_id);
  w.field("text", delta);
  w.end_object();
  return "event: delta\ndata: " + data + "\n\n";
}

}  // namespace

int http_status(errc code) {
  switch (code) {
    case errc::ok: return 200;
    case errc::not_found: return 404;
    case errc::invalid_input: return 400;
    case errc::conflict: return 409;
    case errc::corruption: return 500;
    case errc::io_error: return 503;
    case errc::no_space: return 507;
    case errc::overloaded: return 429;
    // Not 429: a spent daily budget is no overload, and clients that retry 429
    // would retry this until midnight. 402 is never retried automatically.
    case errc::budget_exceeded: return 402;
    // A namespace's quota: 429 with the limit named, so that clients back off;
    // the events of a day pass at midnight UTC, threads and bytes when freed.
    case errc::quota_exceeded: return 429;
    // The owner node of the thread is down or unreachable: retry later, elsewhere nothing helps.
    case errc::unavailable: return 503;
  }
  return 500;
}

http::response error_response(const status& s, int http_status_override) {
  std::string body;
  json_writer w{&body};
  w.begin_object();
  w.key("error");
  w.begin_object();
  std::string_view code = to_string(s.code());
  if (http_status_override == 401) code = "unauthorized";
  if (http_status_override == 403) code = "forbidden";
  if (http_status_override == 405) code = "method_not_allowed";
  w.field("code", code);
  w.field("message", quote_input(to_valid_utf8(s.message()), error_message_bytes_max));
  if (!s.limit().empty()) w.field("limit", s.limit());
  if (!s.field().empty()) w.field("field", s.field());
  w.end_object();
  w.end_object();
  return json_response(http_status_override != 0 ? http_status_override : http_status(s.code()), std::move(body));
}

namespace {

response forbidden_response(const std::string& what) {
  return error_response(status::invalid_input("forbidden: the token may not " + what), 403);
}

response unauthorized_response() {
  auto r = error_response(status::invalid_input("unauthorized: a valid bearer token is required"), 401);
  r.headers.emplace_back("WWW-Authenticate", "Bearer");
  return r;
}

// The thread `id` if the scope may see it; missing_thread() when it is absent or
// another agent's, so neither answer tells the two apart.
status visible_thread(runtime& rt, const token_scope& scope, const std::string& id, const std::string& field,
                      manifest* m) {
  SKEIN_TRY(validate_id(id, field.empty() ? "thread id" : field));
  status s = rt.get_thread(id, m);
  if (s.code() == errc::not_found) return missing_thread(id, field);
  SKEIN_TRY(s);
  if (!scope.allows(m->agent_id)) return missing_thread(id, field);
  return status::ok();
}

}  // namespace

// Everything one request needs: the runtime, the caller's scope, the answer.
struct api::context {
  api& self;
  request& req;
  exchange_ptr ex;
  token_scope scope;
  std::shared_ptr<runtime> runtime_lease;

  runtime& rt() { return *runtime_lease; }
  void reply(response r) { ex->reply(std::move(r)); }
  void fail(const status& s, int code = 0) { ex->reply(error_response(s, code)); }
  void forbidden(const std::string& what) { reply(forbidden_response(what)); }

  // Reads the thread and checks the token may touch its agent; answers if not,
  // and the same way whether the thread is missing or another agent's.
  bool thread_allowed(const std::string& id, manifest* m) {
    status s = visible_thread(rt(), scope, id, "", m);
    if (!s) return fail(s), false;
    return true;
  }
};

api::api(runtime& rt, token_store tokens, api_options options, std::function<http::server_counters()> counters)
    : single_(&rt), tokens_(std::move(tokens)), options_(options), counters_(std::move(counters)) {}

api::api(namespace_set& namespaces, token_store tokens, api_options options,
         std::function<http::server_counters()> counters)
    : namespaces_(&namespaces), tokens_(std::move(tokens)), options_(options), counters_(std::move(counters)) {}

std::optional<http::response> api::lease(const http::request& req, const token_scope& scope,
                                         std::shared_ptr<runtime>* out) {
  std::string ns = scope.ns;
  std::string named = req.header("skein-namespace");
  if (!named.empty()) {
    if (status s = validate_namespace(named, "Skein-Namespace"); !s) return error_response(s);
    if (!scope.server_admin && named != scope.ns)
      return forbidden_response("act in namespace " + quote_input(named) + " (this token acts in " + scope.ns + ")");
    ns = named;
  }
  if (single_ != nullptr) {
    if (ns != default_namespace) return error_response(status::not_found("namespace " + quote_input(ns) + " not found"));
    *out = std::shared_ptr<runtime>(single_, [](runtime*) {});  // borrowed: the host closes it
    return std::nullopt;
  }
  if (status s = namespaces_->runtime_of(ns, out); !s) {
    if (s.code() == errc::not_found) s = status::not_found("namespace " + quote_input(ns) + " not found");
    return error_response(s);
  }
  return std::nullopt;
}

namespace {

using ctx = api::context;

void create_agent(ctx& c, const json_limits& limits) {
  if (!c.scope.admin) return c.forbidden("create agents (admin only)");
  agent_config a;
  status s = decode_agent(c.req.body, &a, limits);
  if (!s) return c.fail(s);
  agent_config out;
  if (s = c.rt().create_agent(a, &out); !s) return c.fail(s);
  c.reply(json_response(201, agent_json(out)));
}

void list_agents(ctx& c) {
  std::vector<agent_config> all;
  if (status s = c.rt().list_agents(&all); !s) return c.fail(s);
  std::string body;
  json_writer w{&body};
  w.begin_object();
  w.key("agents");
  w.begin_array();
  for (const auto& a : all)
    if (c.scope.allows(a.id)) w.raw(agent_json(a));
  w.end_array();
  w.end_object();
  c.reply(json_response(200, body));
}

void get_agent(ctx& c, const std::string& id) {
  if (!c.scope.allows(id)) return c.forbidden("read agent " + id);
  agent_config a;
  if (status s = c.rt().get_agent(id, &a); !s) return c.fail(s);
  c.reply(json_response(200, agent_json(a)));
}

// GET /v1/agents/{id}/memory?q=&k=: memory search over the agent's threads.
void memory_search_route(ctx& c, const std::string& agent) {
  if (!c.scope.allows(agent)) return c.forbidden("search the memory of agent " + quote_input(agent));
  uint64_t k = 0;
  if (status s = query_uint(c.req, "k", memory_k_default, &k); !s) return c.fail(s);
  std::string q = query(c.req, "q");
  if (q.empty()) return c.fail(status::invalid_input("q: the query is required").with_field("q"));
  std::vector<memory_hit> hits;
  if (status s = c.rt().memory_search(agent, q, static_cast<size_t>(k), &hits); !s) return c.fail(s);
  c.reply(json_response(200, memory_hits_json(hits)));
}

// A house's members from the body: [{"agent":id,"trigger":"always"|"on_mention"}].
status members_from(const json::object_reader& r, std::vector<house_member>* out) {
  if (!r.has("members")) return status::ok();
  json::dom::element el;
  SKEIN_TRY(r.element("members", &el));
  json::dom::array list;
  if (el.get_array().get(list) != simdjson::SUCCESS)
    return status::invalid_input("body.members: expected an array").with_field("members");
  for (json::dom::element item : list) {
    if (out->size() == house_members_max)
      return status::invalid_input("body.members: more than house_members_max (" + std::to_string(house_members_max) + ")")
          .with_limit("house_members_max")
          .with_field("members");
    json::object_reader m;
    SKEIN_TRY(json::object_reader::open(item, "body.members[]", &m));
    house_member member;
    std::string trigger = "always";
    SKEIN_TRY(m.string("agent", &member.agent_id));
    SKEIN_TRY(m.string("trigger", &trigger, false));
    auto t = parse_member_trigger(trigger);
    if (!t) return status::invalid_input("body.members[].trigger: must be always or on_mention").with_field("members");
    member.trigger = *t;
    out->push_back(std::move(member));
  }
  return status::ok();
}

// The manifest, and "existing":true when the answer is a thread that was there
// already (a task's or an agent's DM thread): 200 then, 201 for a new one.
response created_response(const manifest& m, bool created) {
  std::string body = manifest_json(m);
  if (!created) {
    body.pop_back();  // the closing brace of the manifest object
    body += R"(,"existing":true})";
  }
  return json_response(created ? 201 : 200, std::move(body));
}

void create_thread(ctx& c, const json_limits& limits) {
  json::document body;
  json::object_reader r;
  if (status s = body_object(c.req, limits, &body, &r); !s) return c.fail(s);
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

// GET /v1/tasks/{task_id}: the task's dedicated thread; another agent's answers as missing.
void get_task(ctx& c, const std::string& task_id) {
  if (status s = validate_id(task_id, "task id"); !s) return c.fail(std::move(s).with_field("task_id"));
  manifest m;
  status s = c.rt().find_task_thread(task_id, &m);
  if (s.code() == errc::not_found || (s && !c.scope.allows(m.agent_id)))
    return c.fail(status::not_found("task " + quote_input(task_id) + ": not found"));
  if (!s) return c.fail(s);
  c.reply(json_response(200, manifest_json(m)));
}

// Keeps the manifests that match every filter the index could not apply.
bool matches(const manifest& m, const request& req) {
  std::string agent = query(req, "agent"), status_name = query(req, "status"), tag = query(req, "tag"),
              parent = query(req, "parent");
  if (!agent.empty() && m.agent_id != agent) return false;
  if (!status_name.empty() && to_string(m.status) != status_name) return false;
  if (!parent.empty() && m.parent_id != parent) return false;
  if (!tag.empty() && std::find(m.tags.begin(), m.tags.end(), tag) == m.tags.end()) return false;
  return true;
}

void list_threads(ctx& c, size_t limit_max) {
  thread_query q;
  std::string agent = query(c.req, "agent");
  if (agent.empty() && !c.scope.admin) {
    if (c.scope.agents.size() != 1)
      return c.fail(status::invalid_input("agent: required for a token scoped to several agents"));
    agent = *c.scope.agents.begin();
  }
  if (!agent.empty() && !c.scope.allows(agent)) return c.forbidden("list threads of agent " + agent);
  if (!agent.empty()) q = {thread_query::by::agent, agent};
  else if (!query(c.req, "parent").empty()) q = {thread_query::by::parent, query(c.req, "parent")};
  else if (!query(c.req, "tag").empty()) q = {thread_query::by::tag, query(c.req, "tag")};
  else if (!query(c.req, "status").empty()) q = {thread_query::by::status, query(c.req, "status")};
  else q.index = thread_query::by::updated;
  uint64_t limit = 0;
  if (status s = query_uint(c.req, "limit", 100, &limit); !s) return c.fail(s);
  if (limit == 0 || limit > limit_max)
    return c.fail(status::invalid_input("limit: must be between 1 and list_limit_max (" + std::to_string(limit_max) + ")")
                      .with_limit("list_limit_max")
                      .with_field("limit"));
  q.limit = limit;
  q.cursor = query(c.req, "cursor");
  std::string archived = query(c.req, "archived");
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
    if (matches(m, c.req) && c.scope.allows(m.agent_id)) w.raw(manifest_json(m));
  w.end_array();
  w.field("next_cursor", page.next_cursor);
  w.end_object();
  c.reply(json_response(200, body));
}

void write_rebalance(json_writer& w, const cluster_rebalance_state& r) {
  w.key("rebalance");
  w.begin_object();
  w.field("phase", r.phase.empty() ? "none" : r.phase);
  w.field_uint("moved", r.moved);
  w.field_uint("events", r.events);
  w.field_uint("claims", r.claims);
  w.field_uint("schedules", r.schedules);
  w.field_uint("remaining", r.remaining);
  if (!r.error.empty()) w.field("error", r.error);
  w.end_object();
}

// POST /v1/cluster/rebalance: starts a membership change from this node
// (runtime::start_rebalance); 202, and GET /v1/cluster shows its progress.
void rebalance_route(ctx& c) {
  if (status s = c.rt().start_rebalance(); !s) return c.fail(s);
  cluster_rebalance_state r;
  if (status s = c.rt().rebalance_state(&r); !s) return c.fail(s);
  std::string body;
  json_writer w{&body};
  w.begin_object();
  write_rebalance(w, r);
  w.end_object();
  c.reply(json_response(202, body));
}

// GET /v1/cluster: the members of this node's cluster, their state and counts
// (admin only: it names every node), and the last rebalance started here.
// Alone, one member: this node.
void cluster_route(ctx& c) {
  std::vector<cluster_member_state> members;
  if (status s = c.rt().cluster_members(&members); !s) return c.fail(s);
  cluster_rebalance_state rebalance;
  if (status s = c.rt().rebalance_state(&rebalance); !s) return c.fail(s);
  std::string body;
  json_writer w{&body};
  w.begin_object();
  std::string self;
  for (const auto& m : members)
    if (m.self) self = m.id;
  w.field("node_id", self);
  w.key("members");
  w.begin_array();
  for (const auto& m : members) {
    w.begin_object();
    w.field("id", m.id);
    w.field("address", m.address);
    w.field("state", m.state);
    w.field("role", m.role);
    w.field_bool("self", m.self);
    w.field_uint("threads", m.threads);
    w.field_uint("active", m.active);
    w.field_uint("forwarded", m.forwarded);
    if (!m.last_error.empty()) w.field("error", m.last_error);
    w.end_object();
  }
  w.end_array();
  write_rebalance(w, rebalance);
  w.end_object();
  c.reply(json_response(200, body));
}

// GET /v1/usage: totals of the usage rows. A scoped token sees its agents only:
// another agent is refused as list_threads refuses it, another agent's thread
// answers as a missing one.
void usage_route(ctx& c) {
  usage_query q;
  q.agent_id = query(c.req, "agent");
  q.thread_id = query(c.req, "thread");
  if (!q.thread_id.empty()) {
    manifest m;
    if (status s = visible_thread(c.rt(), c.scope, q.thread_id, "thread", &m); !s) return c.fail(s);
  }
  if (q.agent_id.empty() && q.thread_id.empty() && !c.scope.admin) {
    if (c.scope.agents.size() != 1)
      return c.fail(status::invalid_input("agent: required for a token scoped to several agents").with_field("agent"));
    q.agent_id = *c.scope.agents.begin();
  }
  if (!q.agent_id.empty() && !c.scope.allows(q.agent_id)) return c.forbidden("read the usage of agent " + q.agent_id);
  if (!q.agent_id.empty())
    if (status s = validate_id(q.agent_id, "agent"); !s) return c.fail(std::move(s).with_field("agent"));
  for (auto [name, out] : {std::pair{"since", &q.since_ms}, std::pair{"until", &q.until_ms}}) {
    std::string v = query(c.req, name);
    if (v.empty()) continue;
    if (status s = parse_time_ms(v, name, out); !s) return c.fail(s);
  }
  if (q.since_ms > q.until_ms) return c.fail(status::invalid_input("since: after until").with_field("since"));
  std::string group = query(c.req, "group_by");
  if (!group.empty()) {
    auto g = parse_usage_group(group);
    if (!g) return c.fail(status::invalid_input("group_by: must be none, agent, thread or day").with_field("group_by"));
    q.group_by = *g;
  }
  usage_report r;
  if (status s = c.rt().usage(q, &r); !s) return c.fail(s);
  std::string body;
  json_writer w{&body};
  w.begin_object();
  w.field("group_by", to_string(q.group_by));
  w.key("groups");
  w.begin_array();
  for (const auto& g : r.groups) {
    w.begin_object();
    w.field("key", g.key);
    w.key("usage");
    write_usage(w, g.usage);
    w.key("cost_usd");
    w.number(g.cost_usd);
    w.field_uint("runs", g.runs);
    w.field_uint("duration_ms", g.duration_ms);
    w.end_object();
  }
  w.end_array();
  w.field_uint("rows", r.rows);
  w.field_uint("unreadable", r.unreadable);
  w.end_object();
  c.reply(json_response(200, body));
}

void get_thread(ctx& c, const std::string& id) {
  manifest m;
  if (!c.thread_allowed(id, &m)) return;
  // Reconcile on read: a stale running thread is closed before it is shown.
  bool closed = false;
  if (status s = c.rt().reconcile(id, &closed); !s) return c.fail(s);
  if (closed && !c.rt().get_thread(id, &m).is_ok()) return c.fail(missing_thread(id));
  c.reply(json_response(200, manifest_json(m)));
}

void delete_thread(ctx& c, const std::string& id) {
  if (status s = validate_id(id, "thread id"); !s) return c.fail(s);
  manifest m;
  status s = c.rt().get_thread(id, &m);
  if (s.code() == errc::not_found) return c.reply(response{204, "application/json", "", {}});  // idempotent
  if (!s) return c.fail(s);
  // Another agent's thread answers as a missing one: 204, and nothing is deleted.
  if (!c.scope.allows(m.agent_id)) return c.reply(response{204, "application/json", "", {}});
  if (s = c.rt().delete_thread(id); !s) return c.fail(s);
  c.reply(response{204, "application/json", "", {}});
}

// PATCH /v1/threads/{id} {"title":string}: a user's title, never replaced by the titles effect.
void patch_thread(ctx& c, const std::string& id, const json_limits& limits) {
  manifest m;
  if (!c.thread_allowed(id, &m)) return;
  json::document body;
  json::object_reader r;
  std::string title;
  status s = body_object(c.req, limits, &body, &r);
  if (s) s = r.string("title", &title);
  if (!s) return c.fail(s);
  if (s = c.rt().set_title(id, title, &m); !s) return c.fail(s);
  c.reply(json_response(200, manifest_json(m)));
}

void send_entry(ctx& c, const std::string& id, const json_limits& limits);

void post_entry(ctx& c, const std::string& id, const json_limits& limits) {
  // Admission read the manifest already for this request's token and namespace
  // (both come from the same headers); a thread deleted since fails the send.
  manifest m;
  if (c.req.admitted_thread != id && !c.thread_allowed(id, &m)) return;
  send_entry(c, id, limits);
}

// POST /v1/agents/{id}/dm with an entry body: the agent's DM thread, created on
// first use (one per agent, whatever races), then the entry sent to it.
void post_dm(ctx& c, const std::string& agent, const json_limits& limits) {
  if (!c.scope.allows(agent)) return c.forbidden("message agent " + quote_input(agent));
  if (status s = validate_id(agent, "agent id"); !s) return c.fail(s);
  // The body is checked before the thread is made: a bad entry creates nothing.
  json::document probe;
  json::object_reader r;
  if (status s = body_object(c.req, limits, &probe, &r); !s) return c.fail(s);
  manifest m;
  if (status s = c.rt().dm_thread(agent, &m); !s) return c.fail(s);
  send_entry(c, m.id, limits);
}

// Reads the entry body and sends it to thread `id` (already checked visible).
void send_entry(ctx& c, const std::string& id, const json_limits& limits) {
  json::document body;
  json::object_reader r;
  if (status s = body_object(c.req, limits, &body, &r); !s) return c.fail(s);
  run_input in;
  std::string role = "user";
  bool wait = false;
  status s = r.string("text", &in.text);
  if (s) s = r.string("role", &role, false);
  if (s) s = r.string("idempotency_key", &in.idempotency_key, false);
  if (s) s = r.boolean("wait", &wait, false);
  if (!s) return c.fail(s);
  if (in.idempotency_key.empty()) in.idempotency_key = c.req.header("idempotency-key");
  auto parsed_role = parse_role(role);
  if (!parsed_role || *parsed_role == message_role::assistant)
    return c.fail(r.invalid("role", "must be user or system"));
  in.role = *parsed_role;
  if (!wait) {
    std::string run_id;
    if (s = c.rt().submit(id, in, &run_id); !s) return c.fail(s);
    std::string body;
    json_writer w{&body};
    w.begin_object();
    w.field("thread_id", id);
    w.field("run_id", run_id);
    w.end_object();
    return c.reply(json_response(202, body));
  }
  auto ex = c.ex;
  c.rt().send(id, in).on_done([ex](const status& st, const run_result& result) {
    if (!st) return ex->reply(error_response(st));
    std::string body;
    json_writer w{&body};
    w.begin_object();
    w.key("run");
    write_run(w, result);
    w.end_object();
    ex->reply(json_response(200, body));
  });
}

void list_entries(ctx& c, const std::string& id, size_t limit_max) {
  manifest m;
  if (!c.thread_allowed(id, &m)) return;
  uint64_t from = 0, limit = 0;
  if (status s = query_uint(c.req, "from_seq", 1, &from); !s) return c.fail(s);
  if (status s = query_uint(c.req, "limit", 100, &limit); !s) return c.fail(s);
  if (limit == 0 || limit > limit_max)
    return c.fail(status::invalid_input("limit: must be between 1 and entries_limit_max (" + std::to_string(limit_max) + ")")
                      .with_limit("entries_limit_max")
                      .with_field("limit"));
  std::string view_name = query(c.req, "view");
  if (!view_name.empty() && view_name != "working" && view_name != "complete")
    return c.fail(status::invalid_input("view: must be working or complete"));
  auto view = view_name == "working" ? history_view::working : history_view::complete;
  group_filter groups;
  if (status s = parse_group_filter(query(c.req, "group"), &groups); !s) return c.fail(s);
  uint64_t next = from;
  std::string body, one;
  json_writer w{&body};
  w.begin_object();
  w.key("events");
  w.begin_array();
  if (view == history_view::complete) {
    // The stored bytes are the wire bytes: no decode, no encode.
    std::vector<raw_event> events;
    if (status s = c.rt().read_raw(id, from, limit, groups, &events, &next); !s) return c.fail(s);
    size_t bytes = 0;
    for (const auto& e : events) bytes += e.json.size() + 1;
    body.reserve(body.size() + bytes + 64);
    for (const auto& e : events) w.raw(e.json);
  } else {
    std::vector<event> events;
    if (status s = c.rt().read(id, view, from, limit, groups, &events, &next); !s) return c.fail(s);
    for (const auto& e : events) {
      encode_event(e, &one).ignore();
      w.raw(one);
    }
  }
  w.end_array();
  w.field_uint("next_seq", next);
  w.field_uint("last_seq", m.last_seq);
  w.end_object();
  c.reply(json_response(200, body));
}

void stream_entries(ctx& c, const std::string& id) {
  manifest m;
  if (!c.thread_allowed(id, &m)) return;
  uint64_t from = 1;
  if (status s = query_uint(c.req, "from_seq", 1, &from); !s) return c.fail(s);
  std::string last_event = c.req.header("last-event-id");
  if (!last_event.empty()) {
    uint64_t last = 0;
    if (status s = parse_uint(last_event, "Last-Event-ID", &last); !s) return c.fail(s);
    // The next seq must exist as a number: the largest one would wrap to 0 and
    // replay the whole history.
    if (last == std::numeric_limits<uint64_t>::max())
      return c.fail(status::invalid_input("Last-Event-ID: out of range (at most " +
                                          std::to_string(std::numeric_limits<uint64_t>::max() - 1) + ")")
                        .with_field("Last-Event-ID"));
    from = last + 1;  // resume after the last event the client saw
  }
  // Ids stay seqs under a filter, so Last-Event-ID resumes the filtered stream too.
  group_filter groups;
  if (status s = parse_group_filter(query(c.req, "group"), &groups); !s) return c.fail(s);
  auto stream = c.ex->stream({});
  if (!stream) return;
  event_sink sink;
  sink.on_event_json = [stream](uint64_t seq, event_type type, const std::string& json) {
    stream->send(sse_event_frame(seq, type, json));
  };
  sink.on_delta = [stream](const std::string& run, const std::string& delta) { stream->send(sse_delta_frame(run, delta)); };
  // The thread is gone (deleted): a last frame says why, then the stream ends
  // instead of idling on keepalives.
  sink.on_end = [stream, id](const std::string& reason) {
    stream->send(sse_end_frame(id, reason));
    stream->close();
  };
  uint64_t sub = 0;
  if (status s = c.rt().subscribe(id, from, groups, sink, &sub); !s) {
    stream->send("event: error\ndata: " + error_response(s).body + "\n\n");
    stream->close();
    return;
  }
  // Weak: an open stream must not keep a removed namespace's runtime open (its
  // close ends the subscription itself).
  std::weak_ptr<runtime> rt = c.runtime_lease;
  stream->on_close([rt, sub] {
    if (auto held = rt.lock()) held->unsubscribe(sub).ignore();
  });
}

// POST /v1/threads/{id}/members {"agent":id,"trigger":"always"|"on_mention"};
// DELETE /v1/threads/{id}/members/{agent}. The token must speak for the thread's
// agent and for the member's.
void add_member_route(ctx& c, const std::string& id, const json_limits& limits) {
  manifest m;
  if (!c.thread_allowed(id, &m)) return;
  json::document body;
  json::object_reader r;
  house_member member;
  std::string trigger = "always";
  status s = body_object(c.req, limits, &body, &r);
  if (s) s = r.string("agent", &member.agent_id);
  if (s) s = r.string("trigger", &trigger, false);
  if (!s) return c.fail(s);
  auto t = parse_member_trigger(trigger);
  if (!t) return c.fail(status::invalid_input("body.trigger: must be always or on_mention").with_field("trigger"));
  member.trigger = *t;
  if (s = validate_id(member.agent_id, "agent"); !s) return c.fail(std::move(s).with_field("agent"));
  if (!c.scope.allows(member.agent_id)) return c.forbidden("add agent " + quote_input(member.agent_id) + " to a house");
  if (s = c.rt().add_member(id, member, &m); !s) return c.fail(s);
  c.reply(json_response(200, manifest_json(m)));
}

void remove_member_route(ctx& c, const std::string& id, const std::string& agent) {
  manifest m;
  if (!c.thread_allowed(id, &m)) return;
  if (status s = c.rt().remove_member(id, agent, &m); !s) return c.fail(s);
  c.reply(json_response(200, manifest_json(m)));
}

void cancel_thread(ctx& c, const std::string& id) {
  manifest m;
  if (!c.thread_allowed(id, &m)) return;
  bool cancelled = false;
  if (status s = c.rt().cancel(id, &cancelled); !s) return c.fail(s);
  c.reply(json_response(200, std::string(R"({"cancelled":)") + (cancelled ? "true" : "false") + "}"));
}

void fork_thread(ctx& c, const std::string& id, const json_limits& limits) {
  manifest m;
  if (!c.thread_allowed(id, &m)) return;
  json::document body;
  json::object_reader r;
  uint64_t at = 0;
  status s = body_object(c.req, limits, &body, &r);
  if (s) s = r.uint("at_seq", &at);
  if (!s) return c.fail(s);
  manifest copy;
  if (s = c.rt().fork(id, at, &copy); !s) return c.fail(s);
  c.reply(json_response(201, manifest_json(copy)));
}

void diagnose_thread(ctx& c, const std::string& id) {
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
  c.reply(json_response(200, body));
}

void reconcile_thread(ctx& c, const std::string& id) {
  manifest m;
  if (!c.thread_allowed(id, &m)) return;
  bool closed = false;
  if (status s = c.rt().reconcile(id, &closed); !s) return c.fail(s);
  if (status s = c.rt().get_thread(id, &m); !s) return c.fail(s);
  c.reply(json_response(200, std::string(R"({"reconciled":)") + (closed ? "true" : "false") + R"(,"thread":)" +
                                 manifest_json(m) + "}"));
}

// POST /v1/threads/{id}/compact {"stages":[...],"keep_turns":N,"tool_result_bytes_max":N},
// every field optional. It waits for a run under way (no 409).
void compact_thread(ctx& c, const std::string& id, const json_limits& limits) {
  manifest m;
  if (!c.thread_allowed(id, &m)) return;
  json::document body;
  json::object_reader r;
  compact_options o;
  status s = body_object(c.req, limits, &body, &r);
  if (s) s = r.strings("stages", &o.stages, false);
  if (s && r.has("keep_turns")) {
    uint64_t keep = 0;
    s = r.uint("keep_turns", &keep);
    if (s && keep > compact_keep_turns_max)
      s = status::invalid_input("keep_turns: at most " + std::to_string(compact_keep_turns_max));
    if (s) o.keep_turns = static_cast<uint32_t>(keep);
    if (!s) s = std::move(s).with_field("keep_turns");
  }
  if (s && r.has("tool_result_bytes_max")) {
    uint64_t bytes = 0;
    s = r.uint("tool_result_bytes_max", &bytes);
    if (s) o.tool_result_bytes_max = bytes;
    else s = std::move(s).with_field("tool_result_bytes_max");
  }
  if (s && r.has("stages") && o.stages.empty()) s = status::invalid_input("stages: empty").with_field("stages");
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
  c.reply(json_response(200, out));
}

void prune(ctx& c) {
  if (!c.scope.admin) return c.forbidden("prune (admin only)");
  std::vector<std::string> closed;
  if (status s = c.rt().prune(&closed); !s) return c.fail(s);
  std::string body;
  json_writer w{&body};
  w.begin_object();
  w.key("reconciled");
  w.begin_array();
  for (const auto& id : closed) w.string(id);
  w.end_array();
  w.end_object();
  c.reply(json_response(200, body));
}

void export_thread_route(ctx& c, const std::string& id) {
  manifest m;
  if (!c.thread_allowed(id, &m)) return;
  std::vector<raw_event> events;
  uint64_t next = 1;
  if (status s = c.rt().read_raw(id, 1, 0, group_filter{}, &events, &next); !s) return c.fail(s);
  m.last_seq = events.size();  // the log as read, even if a run appended meanwhile
  std::string body;
  if (status s = export_thread_raw(m, events, &body); !s) return c.fail(s);
  c.reply(response{200, "application/x-ndjson", std::move(body), {}});
}

bool imports_thread(const import_result& parsed, const std::string& id) {
  for (const auto& t : parsed.threads)
    if (t.manifest.id == id) return true;
  return false;
}

void import_route(ctx& c) {
  std::string format_name = query(c.req, "format");
  auto format = parse_import_format(format_name.empty() ? "auto" : format_name);
  if (!format) return c.fail(status::invalid_input("format: must be auto, skein, opennova, lace or gitmem"));
  std::string agent = query(c.req, "agent");
  if (agent.empty() && c.scope.agents.size() == 1 && !c.scope.admin) agent = *c.scope.agents.begin();
  // Scope first: a body is parsed only for a caller who may import at all.
  if (!agent.empty() && !c.scope.allows(agent)) return c.forbidden("import threads of agent " + quote_input(agent));
  import_result parsed;
  if (status s = parse_import(c.req.body, *format, agent.empty() ? "imported" : agent, &parsed); !s) return c.fail(s);
  // Check everything before writing anything: a refused import leaves no trace.
  for (const auto& t : parsed.threads) {
    if (!c.scope.allows(t.manifest.agent_id)) return c.forbidden("import threads of agent " + t.manifest.agent_id);
    // An imported thread is indexed under its parent: a scoped token names only
    // a parent it may see (or one in the same import). Missing and foreign
    // parents answer alike. Admin sees every thread, so nothing is foreign to it.
    if (!c.scope.admin && t.manifest.parent == parent_kind::thread && !t.manifest.parent_id.empty() &&
        !imports_thread(parsed, t.manifest.parent_id)) {
      manifest parent;
      if (status s = visible_thread(c.rt(), c.scope, t.manifest.parent_id, "manifest.parent_id", &parent); !s)
        return c.fail(s);
    }
    manifest existing;
    if (c.rt().get_thread(t.manifest.id, &existing).is_ok())
      return c.fail(status::conflict("thread " + t.manifest.id + " already exists"));
    agent_config a;
    if (status s = c.rt().get_agent(t.manifest.agent_id, &a); !s) return c.fail(s);
  }
  std::string body;
  json_writer w{&body};
  w.begin_object();
  w.field("format", to_string(parsed.format));
  w.key("threads");
  w.begin_array();
  std::vector<thread_import> threads;
  threads.reserve(parsed.threads.size());
  for (auto& t : parsed.threads) threads.push_back({std::move(t.manifest), std::move(t.events)});
  std::vector<manifest> stored;
  if (status s = c.rt().import_threads(std::move(threads), &stored); !s) return c.fail(s);  // all or nothing
  for (const auto& m : stored) w.raw(manifest_json(m));
  w.end_array();
  w.key("torn_last_line");
  w.boolean(parsed.torn_last_line);
  w.field("torn_detail", parsed.torn_detail);
  w.end_object();
  c.reply(json_response(201, body));
}

void metric(std::string& out, const char* name, const char* type, const char* help, uint64_t value,
            const char* labels = "") {
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  out += std::string(name) + labels + " " + std::to_string(value) + "\n";
}

// Per effect (labels effect="titles"|"embeddings"): backlog, lag quantiles, done and failed counts.
void effect_metrics(std::string& out, const std::vector<effect_stats>& effects) {
  if (effects.empty()) return;
  auto family = [&](const char* name, const char* type, const char* help) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  };
  family("skein_effect_backlog", "gauge", "Threads an effect has work pending for.");
  for (const auto& e : effects)
    out += "skein_effect_backlog{effect=\"" + e.effect + "\"} " + std::to_string(e.backlog) + "\n";
  family("skein_effect_lag_seconds", "summary", "Seconds from commit to the effect's output, recent jobs.");
  for (const auto& e : effects) {
    char line[256];
    std::snprintf(line, sizeof line, "skein_effect_lag_seconds{effect=\"%s\",quantile=\"0.5\"} %.6f\n",
                  e.effect.c_str(), e.lag_p50_s);
    out += line;
    std::snprintf(line, sizeof line, "skein_effect_lag_seconds{effect=\"%s\",quantile=\"0.99\"} %.6f\n",
                  e.effect.c_str(), e.lag_p99_s);
    out += line;
  }
  family("skein_effect_done_total", "counter", "Effect jobs written (output and cursor).");
  for (const auto& e : effects)
    out += "skein_effect_done_total{effect=\"" + e.effect + "\"} " + std::to_string(e.done) + "\n";
  family("skein_effect_failed_total", "counter", "Effect jobs failed (each is retried).");
  for (const auto& e : effects)
    out += "skein_effect_failed_total{effect=\"" + e.effect + "\"} " + std::to_string(e.failed) + "\n";
  family("skein_effect_retries_total", "counter", "Effect retries scheduled.");
  for (const auto& e : effects)
    out += "skein_effect_retries_total{effect=\"" + e.effect + "\"} " + std::to_string(e.retries) + "\n";
  family("skein_effect_discarded_total", "counter", "Titles generated but not set: the thread had one by then.");
  for (const auto& e : effects)
    out += "skein_effect_discarded_total{effect=\"" + e.effect + "\"} " + std::to_string(e.discarded) + "\n";
}

}  // namespace

namespace {

// --- schedules (runtime/model/schedule.hpp) ----------------------------------
// A schedule belongs to its agent: a token of another agent gets the answer an
// unknown id gets, byte for byte, as the thread routes do.

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

// POST /v1/schedules: the definition; the state is the scheduler's.
status schedule_from_body(const request& req, const json_limits& limits, schedule* out) {
  json::document body;
  json::object_reader r;
  SKEIN_TRY(body_object(req, limits, &body, &r));
  schedule s;
  std::string kind, missed, role = "user";
  SKEIN_TRY(r.string("id", &s.id, false));
  SKEIN_TRY(r.string("agent_id", &s.agent_id));
  SKEIN_TRY(r.string("kind", &kind));
  auto k = parse_schedule_kind(kind);
  if (!k) return status::invalid_input("body.kind: must be cron, interval or once").with_field("kind");
  s.kind = *k;
  SKEIN_TRY(r.string("cron", &s.cron, false));
  SKEIN_TRY(r.string("time_zone", &s.time_zone, false));
  SKEIN_TRY(r.uint("interval_ms", &s.interval_ms, false));
  SKEIN_TRY(r.int64("anchor_ms", &s.anchor_ms, false));
  SKEIN_TRY(r.int64("at_ms", &s.at_ms, false));
  json::dom::element el;
  SKEIN_TRY(r.element("input", &el));
  json::object_reader in;
  SKEIN_TRY(json::object_reader::open(el, "body.input", &in));
  SKEIN_TRY(in.string("text", &s.input_text));
  SKEIN_TRY(in.string("role", &role, false));
  auto parsed = parse_role(role);
  if (!parsed) return status::invalid_input("body.input.role: must be user, assistant or system").with_field("input.role");
  s.input_role = *parsed;
  SKEIN_TRY(r.string("thread_id", &s.thread_id, false));
  SKEIN_TRY(r.string("title_prefix", &s.title_prefix, false));
  SKEIN_TRY(r.strings("tags", &s.tags, false));
  missed = "skip";
  SKEIN_TRY(r.string("missed", &missed, false));
  auto p = parse_missed_policy(missed);
  if (!p) return status::invalid_input("body.missed: must be skip or run_once").with_field("missed");
  s.missed = *p;
  SKEIN_TRY(r.boolean("paused", &s.paused, false));
  *out = std::move(s);
  return status::ok();
}

void create_schedule_route(ctx& c, const json_limits& limits) {
  schedule s;
  if (status st = schedule_from_body(c.req, limits, &s); !st) return c.fail(st);
  if (!c.scope.allows(s.agent_id)) return c.forbidden("create schedules of agent " + quote_input(s.agent_id));
  if (!s.thread_id.empty()) {
    manifest m;
    if (status st = visible_thread(c.rt(), c.scope, s.thread_id, "thread_id", &m); !st) return c.fail(st);
  }
  schedule out;
  if (status st = c.rt().create_schedule(s, &out); !st) return c.fail(st);
  c.reply(json_response(201, schedule_json(out)));
}

void list_schedules_route(ctx& c, size_t limit_max) {
  std::string agent = query(c.req, "agent");
  if (!agent.empty() && !c.scope.allows(agent)) return c.forbidden("list schedules of agent " + quote_input(agent));
  uint64_t limit = 0;
  if (status s = query_uint(c.req, "limit", 100, &limit); !s) return c.fail(s);
  size_t max = std::min(limit_max, schedule_page_max);
  if (limit == 0 || limit > max)
    return c.fail(status::invalid_input("limit: must be between 1 and " + std::to_string(max))
                      .with_limit("schedule_page_max")
                      .with_field("limit"));
  std::vector<schedule> page;
  std::string next;
  if (status s = c.rt().list_schedules(query(c.req, "cursor"), limit, &page, &next); !s) return c.fail(s);
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

void delete_schedule_route(ctx& c, const std::string& id) {
  schedule s;
  status st = visible_schedule(c.rt(), c.scope, id, &s);
  // Missing or another agent's: 204 and nothing deleted, as for threads.
  if (st.code() == errc::not_found) return c.reply(response{204, "application/json", "", {}});
  if (!st) return c.fail(st);
  if (st = c.rt().delete_schedule(id); !st) return c.fail(st);
  c.reply(response{204, "application/json", "", {}});
}

void pause_schedule_route(ctx& c, const std::string& id, bool pause) {
  schedule s;
  if (status st = visible_schedule(c.rt(), c.scope, id, &s); !st) return c.fail(st);
  status st = pause ? c.rt().pause_schedule(id, &s) : c.rt().resume_schedule(id, &s);
  if (st.code() == errc::not_found) return c.fail(missing_schedule(id));  // deleted meanwhile
  if (!st) return c.fail(st);
  c.reply(json_response(200, schedule_json(s)));
}

void schedule_history_route(ctx& c, const std::string& id) {
  schedule s;
  if (status st = visible_schedule(c.rt(), c.scope, id, &s); !st) return c.fail(st);
  uint64_t limit = 0, before = 0, next = 0;
  if (status st = query_uint(c.req, "limit", 100, &limit); !st) return c.fail(st);
  if (status st = query_uint(c.req, "before", 0, &before); !st) return c.fail(st);
  std::vector<schedule_firing> rows;
  if (status st = c.rt().schedule_history(id, before, limit, &rows, &next); !st) return c.fail(st);
  std::string body, row;
  json_writer w{&body};
  w.begin_object();
  w.key("firings");
  w.begin_array();
  for (const auto& f : rows) {
    encode_firing(f, &row).ignore();
    w.raw(row);
  }
  w.end_array();
  w.field_uint("next_before", next);
  w.end_object();
  c.reply(json_response(200, body));
}

void schedule_preview_route(ctx& c, const std::string& id) {
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

void schedules_routes(ctx& c, const std::vector<std::string>& seg, const json_limits& limits, size_t limit_max,
                      const std::function<void()>& not_allowed) {
  const std::string& m = c.req.method;
  if (seg.size() == 2) {
    if (m == "POST") return create_schedule_route(c, limits);
    if (m == "GET") return list_schedules_route(c, limit_max);
    return not_allowed();
  }
  const std::string& id = seg[2];
  if (seg.size() == 3) {
    if (m == "GET") {
      schedule s;
      if (status st = visible_schedule(c.rt(), c.scope, id, &s); !st) return c.fail(st);
      return c.reply(json_response(200, schedule_json(s)));
    }
    if (m == "DELETE") return delete_schedule_route(c, id);
    return not_allowed();
  }
  if (seg.size() == 4 && seg[3] == "pause") return m == "POST" ? pause_schedule_route(c, id, true) : not_allowed();
  if (seg.size() == 4 && seg[3] == "resume") return m == "POST" ? pause_schedule_route(c, id, false) : not_allowed();
  if (seg.size() == 4 && seg[3] == "history") return m == "GET" ? schedule_history_route(c, id) : not_allowed();
  if (seg.size() == 4 && seg[3] == "preview") return m == "GET" ? schedule_preview_route(c, id) : not_allowed();
  c.fail(status::not_found("no route " + quote_input(c.req.path)));
}

// GET /ui, /ui/app.js, /ui/style.css: the viewer's files, which need no token
// (ui.hpp). Any other name under /ui is a 404 like any unknown route.
response ui_method_not_allowed(const request& req) {
  response r = error_response(
      status::invalid_input("method " + quote_input(req.method) + " is not allowed on " + quote_input(req.path)), 405);
  r.headers.emplace_back("Allow", "GET");
  return r;
}

void serve_ui(const request& req, const exchange_ptr& ex) {
  if (req.method != "GET") return ex->reply(ui_method_not_allowed(req));
  const embedded_file* file = find_ui_file(req.path);
  if (!file) return ex->reply(error_response(status::not_found("no route " + quote_input(req.path))));
  ex->reply(ui_file_response(*file, req));
}

}  // namespace

// Decided from the head alone, so that a client refused here never makes the
// server read (or buffer) its body: auth, admin-only routes, the import's agent
// and, for writes to a thread, whether the token may see that thread. The
// handler checks all of it again (a body-less request skips admission's work).
http::admission api::admit(const http::request& head) {
  http::admission a;
  auto seg = segments(head.path);
  bool v1 = seg.size() >= 2 && seg[0] == "v1";
  bool import = v1 && seg.size() == 2 && seg[1] == "import";
  if (import) a.body = http::body_class::import;
  if (head.path == "/healthz") return a;
  // The viewer's files need no token; a body to them is refused unread.
  if (is_ui_path(head.path)) {
    if (head.method != "GET") a.refuse = ui_method_not_allowed(head);
    return a;
  }
  auto scope = tokens_.authenticate(head.header("authorization"));
  if (!scope) {
    a.refuse = unauthorized_response();
    return a;
  }
  std::string named = head.header("skein-namespace");
  if (!named.empty() && !scope->server_admin && named != scope->ns) {
    a.refuse = forbidden_response("act in namespace " + quote_input(named) + " (this token acts in " + scope->ns + ")");
    return a;
  }
  if (v1 && seg.size() >= 2 && seg[1] == "namespaces" && head.method != "GET" && !scope->server_admin) {
    a.refuse = forbidden_response("manage namespaces (the server's admin only)");
    return a;
  }
  if (scope->admin) return a;
  if (head.path == "/metrics") a.refuse = forbidden_response("read metrics (admin only)");
  else if (v1 && seg.size() == 2 && seg[1] == "prune") a.refuse = forbidden_response("prune (admin only)");
  else if (v1 && seg.size() >= 2 && seg[1] == "cluster") a.refuse = forbidden_response("manage the cluster (admin only)");
  else if (v1 && seg.size() == 2 && seg[1] == "agents" && head.method == "POST")
    a.refuse = forbidden_response("create agents (admin only)");
  if (a.refuse) return a;
  if (import) {
    auto it = head.query.find("agent");
    if (it != head.query.end() && !it->second.empty() && !scope->allows(it->second))
      a.refuse = forbidden_response("import threads of agent " + quote_input(it->second));
    return a;
  }
  if (v1 && seg.size() == 4 && seg[1] == "agents" && seg[3] == "dm" && head.method == "POST" &&
      !scope->allows(seg[2]))
    a.refuse = forbidden_response("message agent " + quote_input(seg[2]));
  if (auto refuse = admit_work(*scope, seg)) a.refuse = std::move(refuse);
  if (v1 && seg.size() == 4 && seg[1] == "threads" && head.method == "POST") {
    std::shared_ptr<runtime> rt;
    if (auto refuse = lease(head, *scope, &rt)) {
      a.refuse = std::move(refuse);
      return a;
    }
    if (!head.may_wait && !rt->serves_here(seg[2])) {
      a.defer = true;  // the thread is another node's: read it where waiting is allowed
      return a;
    }
    manifest m;
    if (status s = visible_thread(*rt, *scope, seg[2], "", &m); !s) a.refuse = error_response(s);
    else a.visible_thread = seg[2];
  }
  return a;
}

bool api::runs_inline(const http::request& req) {
  auto seg = segments(req.path);
  // An event stream of a thread served here: its subscription goes to the
  // thread's own actor, and its frames are written on the connection's strand.
  if (req.method == "GET" && seg.size() == 4 && seg[0] == "v1" && seg[1] == "threads" && seg[3] == "stream") {
    auto scope = tokens_.authenticate(req.header("authorization"));
    std::shared_ptr<runtime> rt;
    return scope && !lease(req, *scope, &rt) && rt->serves_here(seg[2]);
  }
  // The hot path: POST /v1/threads/{id}/entries {"wait":true}, its thread
  // admitted (seen) already. Anything else runs on a handler thread.
  if (req.method != "POST" || req.admitted_thread.empty()) return false;
  if (seg.size() != 4 || seg[1] != "threads" || seg[2] != req.admitted_thread || seg[3] != "entries") return false;
  auto scope = tokens_.authenticate(req.header("authorization"));
  std::shared_ptr<runtime> rt;
  if (!scope || lease(req, *scope, &rt) || !rt->serves_here(seg[2])) return false;
  json::document body;
  json::object_reader r;
  bool wait = false;
  return body_object(req, options_.limits, &body, &r).is_ok() && r.boolean("wait", &wait, false).is_ok() && wait;
}

// /v1/namespaces: the server's admin manages them; a namespace's own token sees
// its own namespace, and any other as a missing one.
void api::namespaces_route(context& c, const std::vector<std::string>& seg) {
  const std::string& m = c.req.method;
  auto not_allowed = [&] {
    c.fail(status::invalid_input("method " + quote_input(m) + " is not allowed on " + quote_input(c.req.path)), 405);
  };
  if (namespaces_ == nullptr) return c.fail(status::not_found("no route " + quote_input(c.req.path) + ": this server has one namespace"));
  auto missing = [&](const std::string& name) { c.fail(status::not_found("namespace " + quote_input(name) + " not found")); };
  if (seg.size() == 2) {
    if (m == "GET") {
      std::vector<namespace_info> all;
      if (status s = namespaces_->list(&all); !s) return c.fail(s);
      std::string body;
      json_writer w{&body};
      w.begin_object();
      w.key("namespaces");
      w.begin_array();
      for (const auto& info : all)
        if (c.scope.server_admin || info.name == c.scope.ns) w.raw(namespace_json(info));
      w.end_array();
      w.end_object();
      return c.reply(json_response(200, body));
    }
    if (m != "POST") return not_allowed();
    if (!c.scope.server_admin) return c.forbidden("create namespaces (the server's admin only)");
    std::string name;
    namespace_quota quota;
    if (status s = decode_namespace_body(c.req.body, options_.limits, true, &name, &quota); !s) return c.fail(s);
    namespace_info info;
    if (status s = namespaces_->create(name, quota, &info); !s) return c.fail(s);
    return c.reply(json_response(201, namespace_json(info)));
  }
  if (seg.size() != 3) return c.fail(status::not_found("no route " + quote_input(c.req.path)));
  const std::string& name = seg[2];
  if (status s = validate_namespace(name, "namespace"); !s) return c.fail(s);
  // Another namespace answers as a missing one, whatever the method.
  if (!c.scope.server_admin && name != c.scope.ns) {
    if (m != "GET" && m != "PATCH" && m != "DELETE") return not_allowed();
    return missing(name);
  }
  namespace_info info;
  if (m == "GET") {
    if (status s = namespaces_->get(name, &info); !s) return c.fail(s);
    namespace_usage usage;
    if (status s = namespaces_->usage(name, &usage); !s) return c.fail(s);
    return c.reply(json_response(200, namespace_json(info, &usage)));
  }
  if (m == "PATCH") {
    if (!c.scope.server_admin) return c.forbidden("change a namespace's quota (the server's admin only)");
    if (status s = namespaces_->get(name, &info); !s) return c.fail(s);
    std::string unused;
    namespace_quota quota = info.quota;
    if (status s = decode_namespace_body(c.req.body, options_.limits, false, &unused, &quota); !s) return c.fail(s);
    if (status s = namespaces_->set_quota(name, quota, &info); !s) return c.fail(s);
    return c.reply(json_response(200, namespace_json(info)));
  }
  if (m == "DELETE") {
    if (!c.scope.server_admin) return c.forbidden("delete namespaces (the server's admin only)");
    if (status s = namespaces_->remove(name); !s) return c.fail(s);
    return c.reply(response{204, "application/json", "", {}});
  }
  not_allowed();
}

void api::handle(http::request& req, std::shared_ptr<http::exchange> ex) {
  auto seg = segments(req.path);
  const std::string& m = req.method;
  if (req.path == "/healthz" && m == "GET") return ex->reply(json_response(200, R"({"status":"ok"})"));
  if (is_ui_path(req.path)) return serve_ui(req, ex);
  auto scope = tokens_.authenticate(req.header("authorization"));
  if (!scope) return ex->reply(unauthorized_response());
  context c{*this, req, ex, *scope, nullptr};
  if (seg.size() >= 2 && seg[0] == "v1" && seg[1] == "namespaces") return namespaces_route(c, seg);
  if (auto refuse = lease(req, c.scope, &c.runtime_lease)) return c.reply(std::move(*refuse));
  auto not_allowed = [&] {
    c.fail(status::invalid_input("method " + quote_input(m) + " is not allowed on " + quote_input(req.path)), 405);
  };
  const auto& limits = options_.limits;

  if (req.path == "/metrics") {
    if (m != "GET") return not_allowed();
    if (!c.scope.admin) return c.forbidden("read metrics (admin only)");
    runtime_stats rs;
    if (status s = c.rt().stats(&rs); !s) return c.fail(s);
    std::string out;
    metric(out, "skein_threads_active", "gauge", "Thread actors alive now.", rs.active_threads);
    metric(out, "skein_thread_activations_total", "counter", "Thread actors activated.", rs.activations);
    metric(out, "skein_thread_passivations_total", "counter", "Thread actors passivated.", rs.passivations);
    metric(out, "skein_agents", "gauge", "Agents loaded.", rs.agents);
    metric(out, "skein_log_writes_total", "counter", "RocksDB batch writes.", rs.log.writes);
    metric(out, "skein_log_commits_total", "counter", "Ticks committed.", rs.log.commits);
    metric(out, "skein_log_events_total", "counter", "Events committed.", rs.log.events);
    metric(out, "skein_log_bytes_total", "counter", "Bytes written in batches.", rs.log.bytes);
    metric(out, "skein_log_failed_total", "counter", "Ticks failed by storage errors.", rs.log.failed);
    metric(out, "skein_log_keys_total", "counter", "Batch entries written (puts, deletes, range deletes).",
           rs.log.keys);
    metric(out, "skein_log_manifests_total", "counter",
           "Manifest rows written by ticks (a tick that only appends leaves the row behind the log).",
           rs.log.manifests);
    metric(out, "skein_compactions_total", "counter", "Compaction events written.", rs.compactions);
    metric(out, "skein_compactions_failed_total", "counter", "Compactions that failed (thread.compaction_failed).",
           rs.compactions_failed);
    metric(out, "skein_compaction_tokens_saved_total", "counter",
           "Estimated tokens removed from working views by compactions.",
           rs.compaction_tokens_before - rs.compaction_tokens_after);
    metric(out, "skein_memory_rows", "gauge", "Embedded messages in the memory index.", rs.memory.rows);
    metric(out, "skein_memory_bytes", "gauge", "Bytes the memory index holds.", rs.memory.bytes);
    metric(out, "skein_memory_rebuild_skipped", "gauge", "Stored embeddings the rebuild at open skipped.",
           rs.memory_rebuild.skipped);
    metric(out, "skein_quota_threads", "gauge", "Threads stored (quota threads_max).", rs.quota_usage.threads);
    metric(out, "skein_quota_threads_max", "gauge", "Quota: threads stored at most; 0 unlimited.",
           rs.quota.threads_max);
    metric(out, "skein_quota_events_today", "gauge", "Events committed this UTC day (quota events_per_day_max).",
           rs.quota_usage.events_today);
    metric(out, "skein_quota_events_per_day_max", "gauge", "Quota: events per UTC day at most; 0 unlimited.",
           rs.quota.events_per_day_max);
    metric(out, "skein_quota_storage_bytes", "gauge",
           "Approximate bytes on disk: SST, memtables, live WAL (quota storage_bytes_max).",
           rs.quota_usage.storage_bytes);
    metric(out, "skein_quota_storage_bytes_max", "gauge", "Quota: approximate bytes on disk at most; 0 unlimited.",
           rs.quota.storage_bytes_max);
    effect_metrics(out, rs.effects);
    if (counters_ && c.scope.server_admin) {  // the server's own figures span every namespace
      auto hc = counters_();
      metric(out, "skein_http_requests_total", "counter", "HTTP requests read.", hc.requests);
      metric(out, "skein_http_requests_in_flight", "gauge", "HTTP requests being answered.", hc.in_flight);
      metric(out, "skein_http_body_bytes_buffered", "gauge", "Request body bytes held now.", hc.body_bytes_buffered);
      metric(out, "skein_http_rejected_total", "counter", "Requests answered before the handler.", hc.rejected);
      metric(out, "skein_http_connections", "gauge", "Open HTTP connections.", hc.connections);
      metric(out, "skein_sse_streams", "gauge", "Open event streams.", hc.streams);
      metric(out, "skein_sse_slow_clients_total", "counter", "Streams closed for falling behind.", hc.slow_clients);
      metric(out, "skein_http_handler_threads", "gauge", "Threads running admission and handlers now.",
             hc.handler_threads);
      metric(out, "skein_http_handlers_busy", "gauge", "Requests whose admission or handler runs now.",
             hc.handlers_busy);
      metric(out, "skein_http_handlers_queued", "gauge", "Requests waiting for a handler thread.",
             hc.handlers_queued);
      out += "# HELP skein_http_responses_total HTTP responses by status class.\n# TYPE skein_http_responses_total counter\n";
      out += "skein_http_responses_total{class=\"2xx\"} " + std::to_string(hc.responses_2xx) + "\n";
      out += "skein_http_responses_total{class=\"4xx\"} " + std::to_string(hc.responses_4xx) + "\n";
      out += "skein_http_responses_total{class=\"5xx\"} " + std::to_string(hc.responses_5xx) + "\n";
    }
    return c.reply(response{200, "text/plain; version=0.0.4", out, {}});
  }
  if (seg.size() < 2 || seg[0] != "v1") return c.fail(status::not_found("no route " + quote_input(req.path)));
  if (route_work(c.rt(), c.scope, limits, req, ex, seg)) return;  // work items, sessions, graph

  if (seg[1] == "agents" && seg.size() == 2) {
    if (m == "POST") return create_agent(c, limits);
    if (m == "GET") return list_agents(c);
    return not_allowed();
  }
  if (seg[1] == "agents" && seg.size() == 3) return m == "GET" ? get_agent(c, seg[2]) : not_allowed();
  if (seg[1] == "agents" && seg.size() == 4 && seg[3] == "dm")
    return m == "POST" ? post_dm(c, seg[2], limits) : not_allowed();
  if (seg[1] == "tasks" && seg.size() == 3) return m == "GET" ? get_task(c, seg[2]) : not_allowed();
  if (seg[1] == "agents" && seg.size() == 4 && seg[3] == "memory")
    return m == "GET" ? memory_search_route(c, seg[2]) : not_allowed();
  if (seg[1] == "prune" && seg.size() == 2) return m == "POST" ? prune(c) : not_allowed();
  if (seg[1] == "usage" && seg.size() == 2) return m == "GET" ? usage_route(c) : not_allowed();
  if (seg[1] == "cluster" && seg.size() == 2) {
    if (m != "GET") return not_allowed();
    if (!c.scope.admin) return c.forbidden("read the cluster (admin only)");
    return cluster_route(c);
  }
  if (seg[1] == "cluster" && seg.size() == 3 && seg[2] == "rebalance") {
    if (m != "POST") return not_allowed();
    if (!c.scope.admin) return c.forbidden("rebalance the cluster (admin only)");
    return rebalance_route(c);
  }
  if (seg[1] == "import" && seg.size() == 2) return m == "POST" ? import_route(c) : not_allowed();
  if (seg[1] == "schedules") return schedules_routes(c, seg, limits, options_.list_limit_max, not_allowed);
  if (seg[1] != "threads") return c.fail(status::not_found("no route " + quote_input(req.path)));
  if (seg.size() == 2) {
    if (m == "POST") return create_thread(c, limits);
    if (m == "GET") return list_threads(c, options_.list_limit_max);
    return not_allowed();
  }
  const std::string& id = seg[2];
  if (seg.size() == 3) {
    if (m == "GET") return get_thread(c, id);
    if (m == "DELETE") return delete_thread(c, id);
    if (m == "PATCH") return patch_thread(c, id, limits);
    return not_allowed();
  }
  if (seg.size() == 5 && seg[3] == "members") return m == "DELETE" ? remove_member_route(c, id, seg[4]) : not_allowed();
  if (seg.size() != 4) return c.fail(status::not_found("no route " + quote_input(req.path)));
  const std::string& action = seg[3];
  if (action == "members") return m == "POST" ? add_member_route(c, id, limits) : not_allowed();
  if (action == "entries") {
    if (m == "POST") return post_entry(c, id, limits);
    if (m == "GET") return list_entries(c, id, options_.entries_limit_max);
    return not_allowed();
  }
  if (action == "stream") return m == "GET" ? stream_entries(c, id) : not_allowed();
  if (action == "cancel") return m == "POST" ? cancel_thread(c, id) : not_allowed();
  if (action == "fork") return m == "POST" ? fork_thread(c, id, limits) : not_allowed();
  if (action == "diagnose") return m == "GET" ? diagnose_thread(c, id) : not_allowed();
  if (action == "reconcile") return m == "POST" ? reconcile_thread(c, id) : not_allowed();
  if (action == "compact") return m == "POST" ? compact_thread(c, id, limits) : not_allowed();
  if (action == "export") return m == "GET" ? export_thread_route(c, id) : not_allowed();
  c.fail(status::not_found("no route " + quote_input(req.path)));
}

}  // namespace skein::server
