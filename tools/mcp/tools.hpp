// tools: the MCP tools of `skein mcp`, each one HTTP route of the skein API
// (docs/api.md). A tool is declared once (tool_spec): its route, from which
// its request is built, and its parameters, from which its input schema is
// rendered and against which its arguments are checked, so a bad argument is
// an error naming the field before any request is made.
// The work-item tools speak their seed's (gitmem's) contract: its parameter
// names and meanings, skein's own names kept as aliases of them.
// Plain functions and constant tables: thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/model/status.hpp"

namespace skein::mcp {

// threads: the seed's open_threads, an array of texts or of thread objects
// ({text | note, status}), passed on as given (the route reads them).
enum class param_type : uint8_t { string, integer, boolean, strings, threads };

struct param_spec {
  std::string name;
  param_type type = param_type::string;
  bool required = false;
  // string: length in bytes; integer: value; strings: item count (items 1..item_bytes_max).
  int64_t min = 0;
  int64_t max = 0;
  std::vector<std::string> one_of;  // string: the allowed values; empty: any
  std::string description;
  // Another name of the parameter `alias_of` (skein's name of a seed parameter):
  // read as that one; giving both is an error naming them.
  std::string alias_of;
};

struct tool_spec {
  std::string name;
  // The route it calls, "METHOD /path": {agent} is the session's agent, {p}
  // the value of parameter p. A GET sends `query` as its query, any other
  // method the parameters but those in the path and `unsent` as its body.
  std::string route;
  std::string description;
  std::vector<param_spec> params;
  std::vector<std::string> query = {};   // "stages=stage": parameter stages sent as stage
  std::vector<std::string> unsent = {};  // checked, not sent
};

inline constexpr int64_t item_bytes_max = 4096;  // each string of a `strings` parameter

const std::vector<tool_spec>& tool_specs();
// {"tools":[{"name","description","inputSchema"}...]}
std::string tools_list_json();

// The HTTP request one tool call makes.
struct http_call {
  std::string method;
  std::string target;  // path and query, percent-encoded
  std::string body;    // JSON, "" for none
};

// Checks `args_json` (a JSON object, "" for none) against the tool's parameters
// and builds its request for `agent`. `project`, if not empty, is the project
// of a tool that takes one and was given none (the session's, as the seed
// scopes every call by its session's project). invalid_input naming the field
// for a bad argument; not_found naming `name` for an unknown tool.
status tool_request(std::string_view name, std::string_view args_json, const std::string& agent, http_call* out,
                    const std::string& project = "");

}  // namespace skein::mcp
