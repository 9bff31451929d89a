// entries: the `skein entries` commands (create, list, read): send an entry to
// a thread or an agent's direct-message thread, list a thread's entries and
// follow them, render a run as it streams. Each row with the routes it calls.
#include <cstdio>

#include "runtime/model/json_codec.hpp"
#include "runtime/model/json_writer.hpp"
#include "tools/cli/command.hpp"

namespace skein::tools::cli {
namespace {

// {"run":{..., "outcome", "text"}} of a send that waited.
status decode_run(const std::string& body, std::string* text, std::string* outcome) {
  json::document doc;
  json::dom::element run_el;
  json::object_reader o, run;
  SKEIN_TRY(open_response(body, &doc, &o));
  SKEIN_TRY(o.element("run", &run_el));
  SKEIN_TRY(json::object_reader::open(run_el, "response.run", &run));
  SKEIN_TRY(run.string("outcome", outcome));
  if (outcome->empty()) return status::invalid_input("response.run.outcome: empty");
  return run.string("text", text, false);
}

// Routes: 0 the thread's entries, 1 the agent's direct-message thread, 2 the
// thread's manifest. An entry goes to the thread when `ref` names a thread the
// token sees, else to the agent's DM route, which reuses or creates the
// agent's one DM thread on the server, atomically.
int entries_create(client& c, const invocation& in) {
  const given& a = in.a;
  const std::string ref = a.get("thread|agent");
  http::response probe;
  bool thread = c.http.call(std::string{in.method(2)}, in.path(2, {{"id", ref}}), "", &probe, c.headers).is_ok() &&
                probe.status == 200;
  std::string body;
  json_writer w{&body};
  w.begin_object();
  w.field("text", a.get("msg"));
  if (!a.get("key").empty()) w.field("idempotency_key", a.get("key"));
  if (!a.get("role").empty()) w.field("role", a.get("role"));
  w.key("wait");
  w.boolean(a.has("wait"));
  w.end_object();
  http::response r;
  int code = ok;
  if (!c.call(in, thread ? 0 : 1, "", body, &r, &code, {{"id", ref}})) return code;
  if (!a.has("wait")) {
    std::string run_id, thread_id;
    status s = string_field(r.body, "run_id", true, &run_id);
    if (s) s = string_field(r.body, "thread_id", true, &thread_id);
    if (s && run_id.empty()) s = status::invalid_input("response.run_id: empty");
    if (!s) return c.unreadable_response(s);
    if (c.json) return c.print_json(r);
    std::printf("%s %s\n", thread_id.c_str(), run_id.c_str());
    return ok;
  }
  std::string text, outcome;
  if (status s = decode_run(r.body, &text, &outcome); !s) return c.unreadable_response(s);
  if (c.json) c.print_json(r);
  else std::printf("%s\n", text.c_str());
  return outcome == "completed" ? ok : run_failed;
}

void print_event_line(const event& e) {
  std::string what;
  switch (e.type) {
    case event_type::message: what = std::string{to_string(e.role)} + ": " + e.text; break;
    case event_type::tool_call: what = e.name + " " + e.json; break;
    case event_type::tool_result: what = e.name + " -> " + e.text + (e.is_error ? " (error)" : ""); break;
    case event_type::signal: what = e.name + " " + e.json; break;
    case event_type::result:
      what = e.outcome + ", " + std::to_string(e.usage.input_tokens) + " in / " + std::to_string(e.usage.output_tokens) +
             " out tokens, " + std::to_string(e.duration_ms) + " ms";
      break;
    case event_type::compaction: what = e.name + " " + std::to_string(e.from_seq) + ".." + std::to_string(e.to_seq); break;
    default: what = e.text;
  }
  std::printf("%6llu  %-20s %s\n", static_cast<unsigned long long>(e.seq), std::string{to_string(e.type)}.c_str(),
              what.c_str());
}

// Decodes an event of a listing or a stream; prints it.
status print_event(const client& c, const std::string& text, event* ev) {
  SKEIN_TRY(decode_event(text, ev));
  if (c.json) std::printf("%s\n", text.c_str());
  else print_event_line(*ev);
  return status::ok();
}

// Routes: 0 the entries, page by page; 1 the stream (--follow).
int entries_list(client& c, const invocation& in) {
  const given& a = in.a;
  uint64_t from = a.number("from", 1);
  constexpr size_t page_events_max = 1000;
  std::string group = a.get("group").empty() ? "" : "&group=" + q(a.get("group"));
  int code = ok;
  for (;;) {
    const uint64_t page_from = from;
    http::response r;
    if (!c.call(in, 0, "?limit=" + std::to_string(page_events_max) + "&from_seq=" + std::to_string(from) + group, "",
                &r, &code))
      return code;
    std::vector<std::string> items;
    if (status s = json_items(r.body, "events", &items); !s) return c.unreadable_response(s);
    for (const auto& text : items) {
      event ev;
      if (status s = print_event(c, text, &ev); !s) return c.unreadable_response(s);
      from = ev.seq + 1;
    }
    if (group.empty()) {
      if (items.size() < page_events_max) break;
      continue;
    }
    // A filtered page may hold fewer events than it read: next_seq says where
    // the read stopped, and a read that found nothing is the end.
    uint64_t next = 0;
    if (status s = uint_field(r.body, "next_seq", &next); !s) return c.unreadable_response(s);
    if (next <= page_from) break;
    from = next;
  }
  std::fflush(stdout);
  if (!a.has("follow")) return ok;
  int http_status = 0;
  status bad;
  bool deleted = false;
  const std::string id = a.get("id");
  c.last_request = std::string{in.method(1)} + " " + in.path(1);
  status s = c.http.stream(in.path(1) + "?from_seq=" + std::to_string(from) + group, c.headers,
                           [&](const http::sse_event& e) {
                             if (e.event == "delta") return true;
                             if (e.event == "deleted") {  // the server's last frame: the thread is gone
                               deleted = true;
                               return false;
                             }
                             event ev;
                             bad = print_event(c, e.data, &ev);
                             std::fflush(stdout);
                             return bad.is_ok();
                           },
                           &http_status);
  if (!s) return std::fprintf(stderr, "skein: %s\n", s.to_string().c_str()), failed;
  if (!bad) return c.unreadable_response(bad);
  if (deleted) return std::fprintf(stderr, "skein: thread %s was deleted\n", id.c_str()), not_found;
  return http_status == 200 ? ok : c.code_for(http_status);
}

// Renders the current (or next) run's text as it streams; exits when it ends.
// Routes: 0 the stream, 1 the manifest (where the run starts).
int entries_read(client& c, const invocation& in) {
  const std::string id = in.a.get("id");
  http::response r;
  int code = ok;
  if (!c.call(in, 1, "", "", &r, &code)) return code;
  manifest m;
  if (status s = decode_manifest(r.body, &m); !s) return c.unreadable_response(s);
  // From the start of the last run if one is going, so its whole text shows.
  uint64_t from = m.last_seq + 1;
  if (m.status == thread_status::running) from = m.last_seq > 32 ? m.last_seq - 31 : 1;
  int result = ok;
  bool printed_delta = false;
  bool stopped = false;
  bool deleted = false;
  status bad;
  int http_status = 0;
  c.last_request = std::string{in.method(0)} + " " + in.path(0);
  status s = c.http.stream(
      in.path(0) + "?from_seq=" + std::to_string(from), c.headers,
      [&](const http::sse_event& e) {
        if (e.event == "deleted") {  // the server's last frame: the thread is gone
          deleted = true;
          return false;
        }
        if (e.event == "delta") {
          std::string text;
          bad = string_field(e.data, "text", true, &text);
          std::fputs(text.c_str(), stdout);
          std::fflush(stdout);
          printed_delta = true;
          return bad.is_ok();
        }
        event ev;
        bad = decode_event(e.data, &ev);
        if (!bad) return false;
        if (ev.type == event_type::message && ev.role == message_role::assistant) {
          if (!printed_delta) std::printf("%s", ev.text.c_str());
          std::printf("\n");
        }
        if (ev.type == event_type::signal && ev.name == "thread.stop") {
          if (ev.json.find("\"completed\"") == std::string::npos) result = run_failed;
          stopped = true;
          return false;
        }
        if (ev.type == event_type::signal && ev.name == "thread.start") printed_delta = false;
        return true;
      },
      &http_status);
  if (!s) return std::fprintf(stderr, "skein: %s\n", s.to_string().c_str()), failed;
  if (!bad) return c.unreadable_response(bad);
  if (http_status != 200) return c.code_for(http_status);
  if (deleted) return std::fprintf(stderr, "skein: thread %s was deleted\n", id.c_str()), not_found;
  if (!stopped)  // the server closed the stream before the run ended: no outcome to report
    return std::fprintf(stderr, "skein: the stream of %s ended before its run did\n", id.c_str()), failed;
  return result;
}

constexpr arg id = pos("id", "the thread");

}  // namespace

const std::vector<command>& entries_commands() {
  static const std::vector<command> rows = {
      {"entries", "create", {"POST /v1/threads/{id}/entries", "POST /v1/agents/{id}/dm", "GET /v1/threads/{id}"},
       "sends a message; prints the thread and run ids, or with --wait the reply",
       {pos("thread|agent", "a thread, or an agent: its direct-message thread, created on first use"),
        pos("msg", "the message"), flag("--wait", "wait for the run and print its reply"),
        opt("--key", "IDEMPOTENCY-KEY", "a retry with the same key sends nothing twice"),
        opt("--role", "R", "the entry's role (default user)")},
       entries_create, "exit 2: the run (--wait) failed"},
      {"entries", "list", {"GET /v1/threads/{id}/entries", "GET /v1/threads/{id}/stream"}, "a thread's entries",
       {id, opt("--from", "N", "from this seq on (default 1)").num(),
        flag("--follow", "then follow new entries as they come"),
        opt("--group", "chat,model,signal", "only these payload groups")},
       entries_list, "exit 4: the followed thread was deleted"},
      {"entries", "read", {"GET /v1/threads/{id}/stream", "GET /v1/threads/{id}"},
       "prints the run's text as it streams; exits when the run ends", {id}, entries_read,
       "exit 2: the run failed; 1: the stream ended before the run did"},
  };
  return rows;
}

}  // namespace skein::tools::cli
