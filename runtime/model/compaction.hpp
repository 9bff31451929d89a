// Conversation compaction (DESIGN §6): the strategies that shrink a thread's
// working view, and the checks a compaction must pass before it is stored.
//
// A compaction works on the working view without its system prompt, a previous
// compaction replaced by the events it holds (compaction_input). Stages run in
// order over those events; each is registered by name:
//   trim-tool-results  tool outputs past tool_result_bytes_max are cut, with a
//                      marker naming the original size; call_id and name stay,
//                      so the result still pairs with its call.
//   drop-thinking      thinking events are removed.
//   summarize          the events before the kept tail (the last keep_turns
//                      turns, a turn starting at a user message) become one
//                      summary message written by the agent's engine. It needs
//                      an engine call, so it is split: summary_boundary() says
//                      what to summarize, apply_summary() puts the answer in.
// No boundary ever separates a tool call from its result: it moves back to
// before the call. The result — the compacted events — is stored in a
// `compaction` event (json_codec.cpp grammar) and is the new working prefix.
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/model/event.hpp"
#include "runtime/model/json_codec.hpp"
#include "runtime/model/status.hpp"

namespace skein {

// Token estimate, a heuristic good enough for thresholds and reporting (no
// tokenizer): one token per token_estimate_bytes bytes of an event's text,
// JSON, tool name and call id, plus token_estimate_event_overhead per event for
// the role and framing an engine adds around it.
inline constexpr uint64_t token_estimate_bytes = 4;
inline constexpr uint64_t token_estimate_event_overhead = 4;
uint64_t estimate_tokens(const event& e);
uint64_t estimate_tokens(const std::vector<event>& events);

struct compaction_options {
  std::vector<std::string> stages;      // in order; names from compaction_stage_names()
  uint32_t keep_turns = 4;              // summarize: turns kept verbatim at the end
  uint64_t tool_result_bytes_max = 4096;  // trim-tool-results: longest output kept
};

// A caller's compaction: unset fields take the agent's compaction settings.
struct compact_options {
  std::vector<std::string> stages;  // empty: the agent's
  std::optional<uint32_t> keep_turns;
  std::optional<uint64_t> tool_result_bytes_max;
};

// What a compaction did.
struct compact_result {
  bool compacted = false;        // a compaction event was written
  bool failed = false;           // it was tried and failed: thread.compaction_failed was written
  std::string reason;            // why not compacted; "" when it was
  uint64_t seq = 0;              // the compaction event's seq
  uint64_t tokens_before = 0;    // estimate_tokens of the working view, before and after
  uint64_t tokens_after = 0;
  uint64_t events_before = 0;    // events of the working view, before and after
  uint64_t events_after = 0;
};

// Bounds of compact_options, as for an agent's compaction settings (agent.cpp).
inline constexpr uint32_t compact_keep_turns_max = 10000;
inline constexpr uint64_t compact_tool_result_bytes_min = 64;
inline constexpr uint64_t compact_tool_result_bytes_max = 3 << 20;
// invalid_input names the field ("stages", "keep_turns", "tool_result_bytes_max").
status validate_compact_options(const compact_options& o);

inline constexpr const char* stage_trim_tool_results = "trim-tool-results";
inline constexpr const char* stage_drop_thinking = "drop-thinking";
inline constexpr const char* stage_summarize = "summarize";

// Every registered stage name, in registration order.
std::vector<std::string> compaction_stage_names();
bool is_compaction_stage(std::string_view name);
// The stages are known, not empty and at most compaction_stages_max;
// invalid_input names `field`.
inline constexpr size_t compaction_stages_max = 16;
status validate_stages(const std::vector<std::string>& stages, std::string_view field);
// "trim-tool-results+summarize": the strategy a compaction event records.
std::string strategy_name(const std::vector<std::string>& stages);

// Applies a pure stage (not summarize) to `events`. False if `name` is not a
// pure stage.
bool apply_pure_stage(std::string_view name, const compaction_options& options, std::vector<event>* events);

// The events a compaction starts from: `view` (a working view) without its
// system prompt, a compaction event replaced by its events. *prompt_seq gets
// the seq of the view's system prompt (0: none).
status compaction_input(const std::vector<event>& view, std::vector<event>* out, uint64_t* prompt_seq,
                        const json_limits& limits = {});

// Moves `boundary` back until no tool result at or after it answers a call
// before it. The result is <= boundary.
size_t safe_boundary(const std::vector<event>& events, size_t boundary);

// Where the kept tail starts: the first event of the last `keep_turns` turns,
// made safe. 0: nothing to summarize.
size_t summary_boundary(const std::vector<event>& events, uint32_t keep_turns);

// Replaces events[0, boundary) by one system message carrying `summary`.
void apply_summary(std::vector<event>* events, size_t boundary, std::string summary);

// Marker appended to a trimmed tool output and to a summary.
std::string trim_marker(size_t original_bytes);
inline constexpr const char* summary_prefix = "[summary of earlier conversation] ";

// A compaction's events as stored in its payload: a JSON array of events.
status encode_compacted(const std::vector<event>& events, std::string* out, const json_limits& limits = {});
status decode_compacted(std::string_view json, std::vector<event>* out, const json_limits& limits = {});

// The seq of the latest compaction event of `log` (a complete history, seqs
// 1..n; an event without a seq counts by its position); 0: none. What an
// imported or forked thread's manifest.compaction_seq must be.
uint64_t latest_compaction_seq(const std::vector<event>& log);

// Checks compacted events before they are stored: every tool result follows the
// call it answers. invalid_input names the orphan.
status check_compacted(const std::vector<event>& events);

}  // namespace skein
