// jsonrpc: JSON-RPC 2.0 over newline-delimited messages, as the MCP stdio
// transport frames them: one message a line, UTF-8, no embedded newlines.
//
// `endpoint` turns one line into at most one answer line: requests get a result
// or an error, notifications and responses get nothing, malformed input gets
// -32700 (not JSON, or a line past line_bytes_max) or -32600 (not a request).
// Ids (string or number) are echoed as the client wrote them, minified. Batches
// (arrays) are answered when allow_batches is set (the 2025-03-26 revision has
// them), else refused as an invalid request. Not thread-safe: one reader.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "runtime/model/json_codec.hpp"

namespace skein::mcp {

inline constexpr size_t line_bytes_max = 4 << 20;  // one message, without its newline
inline constexpr size_t message_depth_max = 64;     // nesting of one message

enum rpc_code : int {
  parse_error = -32700,
  invalid_request = -32600,
  method_not_found = -32601,
  invalid_params = -32602,
  internal_error = -32603,
};

struct rpc_error {
  int code = internal_error;
  std::string message;
};

struct rpc_request {
  std::string method;
  std::string id_json;      // the id as sent, minified; "" for a notification
  std::string params_json;  // the params object, minified; "" when absent
  bool notification() const { return id_json.empty(); }
};

// A method's answer: a result (valid minified JSON) or an error. Ignored for
// notifications.
struct rpc_outcome {
  std::string result_json = "{}";
  std::optional<rpc_error> error;
  static rpc_outcome fail(int code, std::string message) { return {"", rpc_error{code, std::move(message)}}; }
};

using method_fn = std::function<rpc_outcome(const rpc_request&)>;

class endpoint {
 public:
  explicit endpoint(method_fn methods) : methods_(std::move(methods)) {}

  void allow_batches(bool allow) { batches_ = allow; }
  // The answer to one line (its newline stripped), "" when none is due. A blank
  // line is skipped.
  std::string handle_line(std::string_view line);
  // Reads lines from `in` until end of input, writes each answer and a newline
  // to `out` and flushes it. A line past line_bytes_max is skipped to its end
  // and answered with a parse error that names the limit.
  void serve(std::FILE* in, std::FILE* out);

 private:
  std::string handle_message(const void* element);  // a dom::element, kept out of this header

  method_fn methods_;
  bool batches_ = false;
};

// Renders an answer line (without newline).
std::string rpc_result(std::string_view id_json, std::string_view result_json);
std::string rpc_error_line(std::string_view id_json, const rpc_error& e);

}  // namespace skein::mcp
