// agent_config: the owner of threads — its system prompt, engine, tools and the
// policies its threads run under. Immutable once created; stored as JSON.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/model/json_codec.hpp"
#include "runtime/model/status.hpp"

namespace skein {

// What happens to an input that arrives while the thread is running.
enum class mid_run_policy : uint8_t {
  queue,      // it waits its turn (default)
  reject,     // it is refused with `conflict` at once
  interrupt,  // the current run stops as cancelled, then the new input runs
};

std::string_view to_string(mid_run_policy p);
std::optional<mid_run_policy> parse_mid_run_policy(std::string_view name);

struct run_budgets {
  uint32_t ticks_max = 32;             // engine calls per run
  uint64_t run_time_ms_max = 600000;   // wall time of one run
  uint64_t engine_idle_ms = 180000;    // an engine call silent this long fails the run
  uint64_t tool_timeout_ms = 60000;    // one tool call
  // Tool output and engine text (each text, thinking block and tool result) past
  // this many bytes is cut with a visible marker before it is stored.
  uint64_t output_bytes_max = 1 << 20;
  uint32_t tool_calls_max = 128;       // tool calls in one engine step

  bool operator==(const run_budgets&) const = default;
};

struct agent_config {
  std::string id;
  std::string system_prompt;
  std::string engine = "scripted";
  std::string engine_config = "{}";  // JSON object, given to the engine factory
  std::vector<std::string> tools;    // names of registered tools
  mid_run_policy policy = mid_run_policy::queue;
  run_budgets budgets;
  int64_t created_at_ms = 0;

  bool operator==(const agent_config&) const = default;
};

// Checks ids, names and limits; `invalid_input` names the field.
status validate_agent(const agent_config& a);

//   agent := {"v":1,"id":id,"system_prompt":string,"engine":string,"engine_config":object,
//             "tools":[string...],"policy":"queue"|"reject"|"interrupt",
//             "budgets":{"ticks_max":uint,"run_time_ms_max":uint,"engine_idle_ms":uint,
//                        "tool_timeout_ms":uint,"output_bytes_max":uint,
//                        "tool_calls_max":uint},"created_at":int}
// Only id is required when decoding; the rest default as above. Encoding applies
// the storable rule of json_codec.hpp under `limits`.
status encode_agent(const agent_config& a, std::string* out, const json_limits& limits = {});
status check_storable(const agent_config& a, const json_limits& limits = {});
status decode_agent(std::string_view json, agent_config* out, const json_limits& limits = {});

}  // namespace skein
