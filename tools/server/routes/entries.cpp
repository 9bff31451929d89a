// Entry routes: what a thread holds and what goes into it — send an entry
// (and wait for its run), read entries, follow them as server-sent events —
// and an agent's DM thread, created on first use and sent an entry.
#include <limits>

#include "runtime/model/ids.hpp"
#include "runtime/model/json_codec.hpp"
#include "runtime/model/json_reader.hpp"
#include "runtime/model/json_writer.hpp"
#include "tools/server/routes/routes.hpp"

namespace skein::server {
namespace {

void write_run(json_writer& w, const run_result& r) {
  w.begin_object();
  w.field("thread_id", r.thread_id);
  w.field("run_id", r.run_id);
  w.field("outcome", to_string(r.outcome));
  w.field("text", r.text);
  w.field("error", r.error);
  write_spend(w, r.usage, r.cost_usd);
  w.field_uint("duration_ms", r.duration_ms);
  w.field_uint("turns", r.turns);
  w.field_uint("first_seq", r.first_seq);
  w.field_uint("last_seq", r.last_seq);
  w.end_object();
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

// Reads the entry body and sends it to thread `id` (already checked visible).
void send_entry(route_call& c, const std::string& id) {
  json::document body;
  json::object_reader r;
  if (status s = c.body(&body, &r); !s) return c.fail(s);
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

// POST /v1/threads/{thread}/entries. Admission read the manifest already for
// this request's token and namespace (both come from the same headers); a
// thread deleted since fails the send.
void post_entry(route_call& c) {
  const std::string& id = c.param("thread");
  manifest m;
  if (c.req.admitted_thread != id && !c.thread_allowed(id, &m)) return;
  send_entry(c, id);
}

// POST /v1/agents/{agent}/dm with an entry body: the agent's DM thread, created
// on first use (one per agent, whatever races), then the entry sent to it.
void post_dm(route_call& c) {
  const std::string& agent = c.param("agent");
  if (status s = validate_id(agent, "agent id"); !s) return c.fail(s);
  // The body is checked before the thread is made: a bad entry creates nothing.
  json::document probe;
  json::object_reader r;
  if (status s = c.body(&probe, &r); !s) return c.fail(s);
  manifest m;
  if (status s = c.rt().dm_thread(agent, &m); !s) return c.fail(s);
  send_entry(c, m.id);
}

void list_entries(route_call& c) {
  const std::string& id = c.param("thread");
  const size_t limit_max = c.env.options.entries_limit_max;
  manifest m;
  if (!c.thread_allowed(id, &m)) return;
  uint64_t from = 0, limit = 0;
  if (status s = query_uint(c.req, "from_seq", 1, &from); !s) return c.fail(s);
  if (status s = query_uint(c.req, "limit", 100, &limit); !s) return c.fail(s);
  if (limit == 0 || limit > limit_max)
    return c.fail(status::invalid_input("limit: must be between 1 and entries_limit_max (" + std::to_string(limit_max) + ")")
                      .with_limit("entries_limit_max")
                      .with_field("limit"));
  std::string view_name = c.query("view");
  if (!view_name.empty() && view_name != "working" && view_name != "complete")
    return c.fail(status::invalid_input("view: must be working or complete"));
  auto view = view_name == "working" ? history_view::working : history_view::complete;
  group_filter groups;
  if (status s = parse_group_filter(c.query("group"), &groups); !s) return c.fail(s);
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

void stream_entries(route_call& c) {
  const std::string& id = c.param("thread");
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
  if (status s = parse_group_filter(c.query("group"), &groups); !s) return c.fail(s);
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

constexpr auto thread = route_scope::thread;

constexpr route rows[] = {
    {.method = "POST", .pattern = "/v1/threads/{thread}/entries", .scope = thread, .waits = true,
     .handler = post_entry},
    {.method = "GET", .pattern = "/v1/threads/{thread}/entries", .scope = thread, .handler = list_entries},
    {.method = "GET", .pattern = "/v1/threads/{thread}/stream", .scope = thread, .streams = true,
     .handler = stream_entries},
    {.method = "POST", .pattern = "/v1/agents/{agent}/dm", .scope = route_scope::agent, .denied = "message agent",
     .handler = post_dm},
};

}  // namespace

std::span<const route> entry_routes() { return rows; }

}  // namespace skein::server
