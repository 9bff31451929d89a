#include "runtime/engines/process_protocol.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>

#include "runtime/model/json_codec.hpp"
#include "runtime/model/json_writer.hpp"

namespace skein::process_protocol {
namespace {

// Sanity bounds of the config's numbers.
constexpr uint64_t line_bytes_max_max = 1ull << 30;
constexpr uint64_t restart_backoff_ms_max_max = 3600000;

bool executable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

status resolve_program(const std::string& name, std::string* out) {
  const std::string field = "engine_config.command[0]";
  if (name.empty()) return status::invalid_input(field + ": empty").with_field("command");
  if (name.find('/') != std::string::npos) {
    if (name.front() != '/')
      return status::invalid_input(field + ": '" + quote_input(name) + "' is neither absolute nor a bare name")
          .with_field("command");
    if (!executable_file(name))
      return status::invalid_input(field + ": '" + quote_input(name) + "' is not an executable file")
          .with_field("command");
    *out = name;
    return status::ok();
  }
  const char* path_env = std::getenv("PATH");
  std::string dirs = path_env != nullptr ? path_env : "/usr/local/bin:/usr/bin:/bin";
  for (size_t from = 0; from <= dirs.size();) {
    size_t to = dirs.find(':', from);
    if (to == std::string::npos) to = dirs.size();
    std::string dir = dirs.substr(from, to - from);
    if (!dir.empty() && dir.front() == '/') {
      std::string candidate = dir + "/" + name;
      if (executable_file(candidate)) {
        *out = candidate;
        return status::ok();
      }
    }
    from = to + 1;
  }
  return status::invalid_input(field + ": '" + quote_input(name) + "' is not found on PATH").with_field("command");
}

// A string the program gets through exec: NUL would cut it silently.
status no_nul(const std::string& s, const std::string& field) {
  if (s.find('\0') != std::string::npos)
    return status::invalid_input(field + ": contains a NUL character").with_field(field);
  return status::ok();
}

std::string_view purpose_name(engine_purpose p) {
  switch (p) {
    case engine_purpose::run: return "run";
    case engine_purpose::title: return "title";
    case engine_purpose::summary: return "summary";
  }
  return "run";
}

status read_usage(const json::object_reader& r, token_usage* out) {
  if (!r.has("usage")) return status::ok();
  json::dom::element el;
  SKEIN_TRY(r.element("usage", &el));
  json::object_reader u;
  SKEIN_TRY(json::object_reader::open(el, r.name("usage"), &u));
  SKEIN_TRY(u.uint("input_tokens", &out->input_tokens, false));
  SKEIN_TRY(u.uint("output_tokens", &out->output_tokens, false));
  SKEIN_TRY(u.uint("cache_read_tokens", &out->cache_read_tokens, false));
  SKEIN_TRY(u.uint("cache_write_tokens", &out->cache_write_tokens, false));
  return status::ok();
}

status read_tool_calls(const json::object_reader& r, std::vector<requested_tool_call>* out) {
  if (!r.has("tool_calls")) return status::ok();
  json::dom::element el;
  SKEIN_TRY(r.element("tool_calls", &el));
  json::dom::array arr;
  if (el.get(arr) != simdjson::SUCCESS) return status::invalid_input(r.name("tool_calls") + ": expected an array");
  size_t i = 0;
  for (json::dom::element c : arr) {
    json::object_reader cr;
    SKEIN_TRY(json::object_reader::open(c, r.name("tool_calls") + "[" + std::to_string(i++) + "]", &cr));
    requested_tool_call call;
    SKEIN_TRY(cr.string("id", &call.call_id));
    SKEIN_TRY(cr.string("name", &call.name));
    if (cr.has("arguments")) SKEIN_TRY(cr.raw("arguments", json::dom::element_type::OBJECT, &call.arguments_json));
    out->push_back(std::move(call));
  }
  return status::ok();
}

}  // namespace

status parse_config(std::string_view config_json, process_config* out) {
  json::document doc;
  SKEIN_TRY(json::parse(config_json.empty() ? "{}" : config_json, json_limits{}, "engine_config", &doc));
  json::dom::object obj;
  if (doc.root().get(obj) != simdjson::SUCCESS) return status::invalid_input("engine_config: expected an object");
  static constexpr std::string_view known[] = {"command", "env", "cwd", "restart_backoff_ms",
                                               "restart_backoff_max_ms", "line_bytes_max", "calls_in_flight_max"};
  for (auto field : obj)
    if (std::find(std::begin(known), std::end(known), field.key) == std::end(known))
      return status::invalid_input("engine_config." + quote_input(field.key) + ": unknown field")
          .with_field(std::string{field.key});
  json::object_reader r{obj, "engine_config"};
  process_config c;
  SKEIN_TRY(r.strings("command", &c.argv));
  if (c.argv.empty()) return status::invalid_input("engine_config.command: empty").with_field("command");
  for (size_t i = 0; i < c.argv.size(); ++i)
    SKEIN_TRY(no_nul(c.argv[i], "engine_config.command[" + std::to_string(i) + "]"));
  SKEIN_TRY(resolve_program(c.argv[0], &c.path));
  if (r.has("env")) {
    json::dom::element el;
    SKEIN_TRY(r.element("env", &el));
    json::dom::object env;
    if (el.get(env) != simdjson::SUCCESS)
      return status::invalid_input("engine_config.env: expected an object").with_field("env");
    for (auto kv : env) {
      std::string name{kv.key};
      std::string field = "engine_config.env." + quote_input(name);
      std::string_view value;
      if (kv.value.get(value) != simdjson::SUCCESS)
        return status::invalid_input(field + ": expected a string").with_field("env");
      if (name.empty() || name.find('=') != std::string::npos)
        return status::invalid_input(field + ": a variable name is non-empty and has no '='").with_field("env");
      SKEIN_TRY(no_nul(name, field));
      c.env.emplace_back(name, std::string{value});
      SKEIN_TRY(no_nul(c.env.back().second, field));
    }
  }
  SKEIN_TRY(r.string("cwd", &c.cwd, false));
  SKEIN_TRY(no_nul(c.cwd, "engine_config.cwd"));
  SKEIN_TRY(r.uint("restart_backoff_ms", &c.restart_backoff_ms, false));
  SKEIN_TRY(r.uint("restart_backoff_max_ms", &c.restart_backoff_max_ms, false));
  SKEIN_TRY(r.uint("line_bytes_max", &c.line_bytes_max, false));
  SKEIN_TRY(r.uint("calls_in_flight_max", &c.calls_in_flight_max, false));
  // A zero backoff would restart a program that dies at once in a hot loop.
  if (c.restart_backoff_ms == 0 || c.restart_backoff_ms > restart_backoff_ms_max_max)
    return status::invalid_input("engine_config.restart_backoff_ms: between 1 and " +
                                 std::to_string(restart_backoff_ms_max_max))
        .with_field("restart_backoff_ms");
  if (c.restart_backoff_max_ms < c.restart_backoff_ms || c.restart_backoff_max_ms > restart_backoff_ms_max_max)
    return status::invalid_input("engine_config.restart_backoff_max_ms: between restart_backoff_ms and " +
                                 std::to_string(restart_backoff_ms_max_max))
        .with_field("restart_backoff_max_ms");
  if (c.line_bytes_max == 0 || c.line_bytes_max > line_bytes_max_max)
    return status::invalid_input("engine_config.line_bytes_max: between 1 and " + std::to_string(line_bytes_max_max))
        .with_field("line_bytes_max");
  if (c.calls_in_flight_max == 0)
    return status::invalid_input("engine_config.calls_in_flight_max: at least 1").with_field("calls_in_flight_max");
  *out = std::move(c);
  return status::ok();
}

// The call line (grammar above), newline included.
status encode_call(const std::string& id, const engine_request& req, std::string* out) {
  std::string line;
  json_writer w{&line};
  w.begin_object();
  w.field("type", "call");
  w.field("id", id);
  w.field("purpose", purpose_name(req.purpose));
  w.field("thread_id", req.thread_id);
  w.field("task_id", req.task_id);
  w.field("run_id", req.run_id);
  w.field_uint("turn", req.turn);
  w.field("session_id", req.session_id);
  w.key("conversation");
  w.begin_array();
  std::string encoded;
  for (const auto& e : req.conversation) {
    encoded.clear();
    SKEIN_TRY(encode_event(e, &encoded));
    w.raw(encoded);
  }
  w.end_array();
  w.key("tools");
  w.begin_array();
  for (const auto& t : req.tools) {
    w.begin_object();
    w.field("name", t.name);
    w.field("description", t.description);
    w.key("parameters");
    w.raw(t.schema_json.empty() ? "{}" : t.schema_json);
    w.end_object();
  }
  w.end_array();
  w.end_object();
  line += '\n';
  *out = std::move(line);
  return status::ok();
}

std::string encode_cancel(const std::string& id) {
  std::string line;
  json_writer w{&line};
  w.begin_object();
  w.field("type", "cancel");
  w.field("id", id);
  w.end_object();
  line += '\n';
  return line;
}

// The reply a step or error line carries; a malformed one fails the call.
engine_reply read_reply(const json::object_reader& r, std::string_view type) {
  engine_reply reply;
  status s;
  if (type == "error") {
    std::string message = "the engine process reported an error";
    s = r.string("message", &message, false);
    if (s) s = r.boolean("resume_failed", &reply.resume_failed, false);
    reply.result = s ? status::io_error(message) : s;
    return reply;
  }
  engine_step& step = reply.step;
  s = r.string("text", &step.text, false);
  if (s) s = r.string("thinking", &step.thinking, false);
  if (s) s = r.string("session_id", &step.session_id, false);
  if (s) s = r.number("cost_usd", &step.cost_usd, false);
  if (s && (!std::isfinite(step.cost_usd) || step.cost_usd < 0))
    s = status::invalid_input(r.name("cost_usd") + ": expected a finite number >= 0");
  if (s) s = read_usage(r, &step.usage);
  if (s) s = read_tool_calls(r, &step.tool_calls);
  if (!s) {
    reply = engine_reply{};
    reply.result = status::io_error("engine process sent a bad step: " + s.message());
  }
  return reply;
}


}  // namespace skein::process_protocol
