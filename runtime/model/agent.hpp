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
  // Spending per UTC day over all the agent's threads: a run that would start
  // past either is refused before it starts. 0: no budget.
  uint64_t tokens_per_day_max = 0;     // input + output tokens
  double cost_usd_per_day_max = 0;

  bool operator==(const run_budgets&) const = default;
};

// Derived work after runs (DESIGN §4, effects).
struct effect_settings {
  bool titles = true;                  // untitled threads with 2+ user messages get one from the engine
  std::string embedder = "hashing";    // a registered embedder; "": messages are not embedded
  std::string embedder_config = "{}";  // JSON object, given to the embedder factory

  bool operator==(const effect_settings&) const = default;
};

// Conversation compaction (DESIGN §6): strategies applied as stages, in order.
struct compaction_settings {
  // Estimated tokens of the working conversation past which the compaction
  // effect compacts it between runs; 0: only on request.
  uint64_t auto_tokens = 0;
  std::vector<std::string> stages = {"trim-tool-results", "drop-thinking", "summarize"};
  uint32_t keep_turns = 4;               // the last N turns stay verbatim
  uint64_t tool_result_bytes_max = 4096; // trim-tool-results cuts outputs past this

  bool operator==(const compaction_settings&) const = default;
};

// Threads untouched (updated_at) this many days are archived or erased by the
// retention effect. 0: never.
struct retention_policy {
  uint32_t archive_after_days = 0;
  uint32_t delete_after_days = 0;

  bool operator==(const retention_policy&) const = default;
};

// Delegation (the built-in ask_agent tool): which agents this agent may ask.
// Each ask creates a child thread of the asking thread, owned by the target.
struct delegation_settings {
  std::vector<std::string> agents;  // agent ids it may ask; empty: ask_agent is not offered
  uint32_t depth_max = 3;           // the deepest child depth this agent may create (a root is 0)
  bool self_allowed = false;        // may it ask itself (its own id in `agents`)

  bool operator==(const delegation_settings&) const = default;
};

// The name of the built-in delegation tool; no registered tool may take it.
inline constexpr std::string_view ask_agent_tool_name = "ask_agent";

struct agent_config {
  std::string id;
  std::string system_prompt;
  std::string engine = "scripted";
  std::string engine_config = "{}";  // JSON object, given to the engine factory
  std::vector<std::string> tools;    // names of registered tools
  mid_run_policy policy = mid_run_policy::queue;
  run_budgets budgets;
  effect_settings effects;
  compaction_settings compaction;
  retention_policy retention;
  delegation_settings delegation;
  int64_t created_at_ms = 0;

  bool operator==(const agent_config&) const = default;
};

// Checks ids, names and limits; `invalid_input` names the field.
status validate_agent(const agent_config& a);

//   agent := {"v":1,"id":id,"system_prompt":string,"engine":string,"engine_config":object,
//             "tools":[string...],"policy":"queue"|"reject"|"interrupt",
//             "budgets":{"ticks_max":uint,"run_time_ms_max":uint,"engine_idle_ms":uint,
//                        "tool_timeout_ms":uint,"output_bytes_max":uint,
//                        "tool_calls_max":uint,"tokens_per_day_max":uint,
//                        "cost_usd_per_day_max":number},
//             "effects":{"titles":bool,"embedder":string,"embedder_config":object},
//             "compaction":{"auto_tokens":uint,"stages":[string...],"keep_turns":uint,
//                           "tool_result_bytes_max":uint},
//             "retention":{"archive_after_days":uint,"delete_after_days":uint},
//             "delegation":{"agents":[id...],"depth_max":uint,"self_allowed":bool},
//             "created_at":int}
// Only id is required when decoding; the rest default as above. Encoding applies
// the storable rule of json_codec.hpp under `limits`.
status encode_agent(const agent_config& a, std::string* out, const json_limits& limits = {});
status check_storable(const agent_config& a, const json_limits& limits = {});
status decode_agent(std::string_view json, agent_config* out, const json_limits& limits = {});

}  // namespace skein
