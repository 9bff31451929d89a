// process_protocol: the process engine's config and its wire format, apart
// from the supervision of the program (process_engine.cpp). Wire format,
// version 1, one JSON
// object per line in each direction (docs/engines.md, "The process engine protocol"):
//
//   to the program   := call | cancel
//   call   := {"type":"call","id":string,"purpose":"run"|"title"|"summary",
//              "thread_id":string,"task_id":string,"run_id":string,"turn":uint,
//              "session_id":string,"conversation":[event...],"tools":[tool...]}
//   event  := an event as skein stores it (json_codec.cpp)
//   tool   := {"name":string,"description":string,"parameters":object}
//   cancel := {"type":"cancel","id":string}
//
//   from the program := delta | step | error
//   delta  := {"id":string,"type":"delta","text":string}
//   step   := {"id":string,"type":"step","text":string,"thinking":string,
//              "tool_calls":[{"id":string,"name":string,"arguments":object}],
//              "usage":{"input_tokens":uint,"output_tokens":uint,
//                       "cache_read_tokens":uint,"cache_write_tokens":uint},
//              "cost_usd":number,"session_id":string}        (every field but id optional)
//   error  := {"id":string,"type":"error","message":string,"resume_failed":bool}
//
// step and error end the call. A line that is not a JSON object, names an unknown
// id (a cancelled or finished call) or an unknown type is dropped and logged (at
// most process_dropped_lines_logged_max per program start); unknown fields are
// ignored. A step or error whose fields have the wrong type fails the call with an
// error naming the field.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/model/engine.hpp"
#include "runtime/model/json_reader.hpp"
#include "runtime/engines/process_engine.hpp"

namespace skein::process_protocol {

// Nesting the program's lines may have.
constexpr size_t line_depth_max = 64;

struct process_config {
  std::vector<std::string> argv;
  std::string path;  // argv[0] resolved
  std::vector<std::pair<std::string, std::string>> env;
  std::string cwd;
  uint64_t restart_backoff_ms = process_restart_backoff_ms_default;
  uint64_t restart_backoff_max_ms = process_restart_backoff_max_ms_default;
  uint64_t line_bytes_max = process_line_bytes_max_default;
  uint64_t calls_in_flight_max = process_calls_in_flight_max_default;
};

// The engine's config (the grammar in process_engine.hpp); argv[0] is resolved
// on PATH here. Errors name the field.
status parse_config(std::string_view config_json, process_config* out);
// The call line of a request, newline included.
status encode_call(const std::string& id, const engine_request& req, std::string* out);
// The cancel line of a call, newline included.
std::string encode_cancel(const std::string& id);
// The reply a step or error line (of `type`) ends its call with.
engine_reply read_reply(const json::object_reader& r, std::string_view type);

}  // namespace skein::process_protocol
