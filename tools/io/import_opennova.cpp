// opennova JSONL, as read here:
//
//   body     := manifest "\n" (event "\n")*
//   manifest := {"id"?:id,"agentId"?:id,"sessionId"?:string,"taskId"?:string,
//                "title"?:string,"createdAt"?:time,"updatedAt"?:time,"channel"?:any}
//   event    := {"type":"message","role":role,("content":text | "text":string)}
//             | {"role":role,("content":text | "text":string)}          (no type: a message)
//             | {"type":"assistant_text","text":string}
//             | {"type":"tool_use","id"?:string,"name":string,"input"?:any}
//             | {"type":"tool_result","tool_use_id"?:string,"content"?:text,"is_error"?:bool,
//                "name"?:string}
//             | {"type":"result","usage"?:{"input_tokens","output_tokens",
//                "cache_read_input_tokens","cache_creation_input_tokens"},"total_cost_usd"?:number,
//                "duration_ms"?:uint,"num_turns"?:uint,"is_error"?:bool,"subtype"?:string,
//                "cost"?:number,"durationMs"?:uint,"turns"?:uint,"inputTokens"?:uint,
//                "outputTokens"?:uint,"cacheReadTokens"?:uint}
//             each with an optional "timestamp":time
//   time     := ISO-8601 string | epoch ms
//   text     := string | [string | {"type":"text","text":string}, ...]
//
// OpenNova itself writes no manifest id (the file name is the thread id), no
// tool_use id, no tool_result lines and camelCase result fields (cost, durationMs,
// turns, inputTokens, ...); the snake_case forms come from Claude SDK style
// exports. Both are read. A tool_use without an id gets "opennova_line_<N>", N its
// line, so that importing the same file again gives the same call ids; a
// tool_result without a tool_use_id answers the earliest tool_use still waiting
// for one, as results follow their calls in the log.
//
// Unknown fields are ignored; unknown event types are errors (nothing is dropped).
// A manifest id that is no valid skein id is replaced by a fresh one, unless it is
// longer than id_bytes_max: that is an error. The thread rests at "open", as a chat
// thread does after a run.
#include <deque>

#include "runtime/model/ids.hpp"
#include "tools/io/import_formats.hpp"

namespace skein::io {
namespace {

using json::object_reader;

// Tool calls seen and not yet answered, oldest first: pairs results without an id.
struct open_calls {
  std::deque<std::string> ids;

  void called(const std::string& id) { ids.push_back(id); }
  void answered(const std::string& id) {
    for (auto it = ids.begin(); it != ids.end(); ++it) {
      if (*it != id) continue;
      ids.erase(it);
      return;
    }
  }
};

std::string minted_call_id(size_t line) { return "opennova_line_" + std::to_string(line); }

status read_manifest(const object_reader& r, const std::string& default_agent,
                     thread_builder* t) {
  if (r.has("type") || r.has("role"))
    return status::invalid_input(
        "manifest: expected the opennova manifest (agentId, sessionId, createdAt, ...) on the "
        "first line, found an event");
  manifest& m = t->m;
  std::string id;
  SKEIN_TRY(r.string("id", &id, false));
  if (id.size() > id_bytes_max) return validate_id(id, r.name("id"));
  if (validate_id(id, "manifest.id").is_ok()) m.id = id;  // else finish() mints one
  if (r.has("agentId")) {
    SKEIN_TRY(r.string("agentId", &m.agent_id));
    SKEIN_TRY(validate_id(m.agent_id, r.name("agentId")));
  } else {
    SKEIN_TRY(check_default_agent(default_agent));
    m.agent_id = default_agent;
  }
  SKEIN_TRY(r.string("sessionId", &m.session_id, false));
  SKEIN_TRY(r.string("taskId", &m.task_id, false));
  SKEIN_TRY(r.string("title", &m.title, false));
  SKEIN_TRY(read_time(r, "createdAt", &t->created_ms));
  SKEIN_TRY(read_time(r, "updatedAt", &t->updated_ms));
  m.status = thread_status::open;
  return status::ok();
}

status read_message(const object_reader& r, event* e) {
  std::string role_name;
  SKEIN_TRY(r.string("role", &role_name));
  auto role = parse_role(role_name);
  if (!role) return status::invalid_input(r.name("role") + ": must be user, assistant or system");
  std::string text;
  if (r.has("content")) {
    dom::element content;
    SKEIN_TRY(r.element("content", &content));
    SKEIN_TRY(read_text(content, r.name("content"), &text));
  } else if (r.has("text")) {
    SKEIN_TRY(r.string("text", &text));
  } else {
    return status::invalid_input(r.name("content") + ": missing (and no text)");
  }
  *e = make_message(*role, std::move(text));
  return status::ok();
}

status read_tool_result(const object_reader& r, const thread_builder& t, open_calls* calls,
                        event* e) {
  std::string call_id;
  SKEIN_TRY(r.string("tool_use_id", &call_id, false));
  if (!r.has("tool_use_id")) {
    if (calls->ids.empty())
      return status::invalid_input(r.name("tool_use_id") +
                                   ": missing, and no earlier tool_use waits for a result");
    call_id = calls->ids.front();
  }
  calls->answered(call_id);
  std::string output;
  if (r.has("content")) {
    dom::element content;
    SKEIN_TRY(r.element("content", &content));
    SKEIN_TRY(read_text(content, r.name("content"), &output));
  }
  bool is_error = false;
  SKEIN_TRY(r.boolean("is_error", &is_error, false));
  std::string tool = t.tool_name(call_id);
  SKEIN_TRY(r.string("name", &tool, false));
  *e = make_tool_result(std::move(call_id), std::move(tool), std::move(output), is_error);
  return status::ok();
}

// The camelCase fields OpenNova writes; each overrides its snake_case twin.
status read_camel_result(const object_reader& r, token_usage* usage, double* cost_usd,
                         uint64_t* duration_ms, uint64_t* turns) {
  SKEIN_TRY(r.uint("inputTokens", &usage->input_tokens, false));
  SKEIN_TRY(r.uint("outputTokens", &usage->output_tokens, false));
  SKEIN_TRY(r.uint("cacheReadTokens", &usage->cache_read_tokens, false));
  SKEIN_TRY(r.number("cost", cost_usd, false));
  SKEIN_TRY(r.uint("durationMs", duration_ms, false));
  return r.uint("turns", turns, false);
}

status read_result(const object_reader& r, event* e) {
  token_usage usage;
  if (r.has("usage")) {
    dom::element el;
    SKEIN_TRY(r.element("usage", &el));
    object_reader u;
    SKEIN_TRY(object_reader::open(el, r.name("usage"), &u));
    SKEIN_TRY(u.uint("input_tokens", &usage.input_tokens, false));
    SKEIN_TRY(u.uint("output_tokens", &usage.output_tokens, false));
    SKEIN_TRY(u.uint("cache_read_input_tokens", &usage.cache_read_tokens, false));
    SKEIN_TRY(u.uint("cache_creation_input_tokens", &usage.cache_write_tokens, false));
  }
  double cost_usd = 0;
  SKEIN_TRY(r.number("total_cost_usd", &cost_usd, false));
  uint64_t duration_ms = 0;
  SKEIN_TRY(r.uint("duration_ms", &duration_ms, false));
  uint64_t turns = 0;
  SKEIN_TRY(r.uint("num_turns", &turns, false));
  SKEIN_TRY(read_camel_result(r, &usage, &cost_usd, &duration_ms, &turns));
  if (turns > UINT32_MAX) return status::invalid_input(r.name("num_turns") + ": out of range");
  bool is_error = false;
  SKEIN_TRY(r.boolean("is_error", &is_error, false));
  std::string subtype;
  SKEIN_TRY(r.string("subtype", &subtype, false));
  std::string outcome = "completed";
  if (is_error || subtype.starts_with("error")) outcome = "failed";
  else if (subtype == "cancelled" || subtype == "canceled" || subtype == "interrupted")
    outcome = "cancelled";
  *e = make_result(usage, cost_usd, duration_ms, static_cast<uint32_t>(turns), std::move(outcome));
  return status::ok();
}

status read_event(const object_reader& r, size_t line, const thread_builder& t,
                  open_calls* calls, event* e) {
  if (!r.has("type")) return read_message(r, e);
  std::string type;
  SKEIN_TRY(r.string("type", &type));
  if (type == "message") return read_message(r, e);
  if (type == "assistant_text") {
    std::string text;
    SKEIN_TRY(r.string("text", &text));
    *e = make_assistant_text(std::move(text));
    return status::ok();
  }
  if (type == "tool_use") {
    std::string call_id = minted_call_id(line), tool, input = "{}";
    SKEIN_TRY(r.string("id", &call_id, false));
    SKEIN_TRY(r.string("name", &tool));
    if (r.has("input")) SKEIN_TRY(r.any_raw("input", &input));
    calls->called(call_id);
    *e = make_tool_call(std::move(call_id), std::move(tool), std::move(input));
    return status::ok();
  }
  if (type == "tool_result") return read_tool_result(r, t, calls, e);
  if (type == "result") return read_result(r, e);
  return status::invalid_input(r.name("type") + ": unknown opennova event type '" + type + "'");
}

}  // namespace

status import_opennova(std::string_view body, const std::string& default_agent, int64_t now,
                       import_result* r) {
  thread_builder t;
  open_calls calls;
  bool have_manifest = false;
  SKEIN_TRY(for_each_line(body, [&](const jsonl_line& line) -> status {
    const char* what = have_manifest ? "event" : "manifest";
    json::document doc;
    SKEIN_TRY(parse_line(line.text, what, &doc));
    object_reader obj;
    SKEIN_TRY(object_reader::open(doc.root(), what, &obj));
    if (!have_manifest) {
      SKEIN_TRY(read_manifest(obj, default_agent, &t));
      have_manifest = true;
      return status::ok();
    }
    event e;
    SKEIN_TRY(read_event(obj, line.number, t, &calls, &e));
    std::optional<int64_t> ts;
    SKEIN_TRY(read_time(obj, "timestamp", &ts));
    return t.add(std::move(e), ts);
  }, r));
  if (!have_manifest) return status::invalid_input("no manifest line (" + r->torn_detail + ")");
  r->threads.push_back(t.finish(now));
  return status::ok();
}

}  // namespace skein::io
