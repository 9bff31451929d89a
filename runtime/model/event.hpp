// event: one immutable record in a thread's log.
//
// The envelope (seq, ts, run id, type) is common to all events; the payload fields
// a type uses are listed beside each type below, the others stay empty. Fields
// holding JSON (`json`) carry one complete, valid JSON text, minified by the codec.
// A plain value type: copy and move freely; not synchronized.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "runtime/model/status.hpp"

namespace skein {

enum class event_type : uint8_t {
  message,               // role, text
  assistant_text,        // text (a streamed or partial assistant text block)
  thinking,              // text
  tool_call,             // call_id, name (tool), json (arguments)
  tool_result,           // call_id, name (tool), text (output), is_error
  system_prompt,         // text
  local_system_message,  // text (shown to people, never sent to the engine)
  result,                // usage, cost_usd, duration_ms, turns, outcome
  compaction,            // name (strategy), from_seq, to_seq, json (compacted events),
                         // original_events, tokens_before, tokens_after, prompt_seq
  signal,                // name ("thread.start", "thread.stop", ...), json (data object)
};
inline constexpr int event_type_count = 10;

enum class message_role : uint8_t { user, assistant, system };

// What a client shows of a thread: the conversation people read (chat), what the
// model did to get there (model: thinking, tool calls and results, metrics,
// prompts and compactions), and the runtime's signals (signal).
enum class payload_group : uint8_t { chat, model, signal };
inline constexpr int payload_group_count = 3;

payload_group event_group(event_type type);
std::string_view to_string(payload_group g);
std::optional<payload_group> parse_payload_group(std::string_view name);

// A set of payload groups ("chat,signal"); the default admits every group.
struct group_filter {
  uint8_t mask = (1u << payload_group_count) - 1;
  bool admits(event_type type) const { return (mask >> static_cast<int>(event_group(type))) & 1u; }
  bool all() const { return mask == (1u << payload_group_count) - 1; }
};
// Parses a comma-separated list of group names; "" is every group. A bad name is
// invalid_input naming the field `group`.
status parse_group_filter(std::string_view text, group_filter* out);

std::string_view to_string(event_type type);
std::optional<event_type> parse_event_type(std::string_view name);
std::string_view to_string(message_role r);
std::optional<message_role> parse_role(std::string_view name);

struct token_usage {
  uint64_t input_tokens = 0;
  uint64_t output_tokens = 0;
  uint64_t cache_read_tokens = 0;
  uint64_t cache_write_tokens = 0;

  token_usage& operator+=(const token_usage& other);
  bool operator==(const token_usage&) const = default;
};

struct event {
  // Envelope.
  uint64_t seq = 0;     // 1, 2, 3, ... per thread; assigned by the thread's single writer
  int64_t ts_ms = 0;    // wall clock at creation, ms since the Unix epoch
  std::string run_id;   // the run that produced it ("" outside runs, e.g. imports)
  event_type type = event_type::message;

  // Payload: which fields a type uses is listed at event_type.
  message_role role = message_role::user;
  std::string text;
  std::string call_id;
  std::string name;
  std::string json;     // raw JSON text; empty means absent
  bool is_error = false;
  token_usage usage;
  double cost_usd = 0;
  uint64_t duration_ms = 0;
  uint32_t turns = 0;
  std::string outcome;  // result: "completed" | "failed" | "cancelled"
  uint64_t from_seq = 0;
  uint64_t to_seq = 0;
  // compaction: what it replaced (0 in events written before these existed).
  uint64_t original_events = 0;  // events of the working view it compacted
  uint64_t tokens_before = 0;    // estimate_tokens of that view (compaction.hpp)
  uint64_t tokens_after = 0;     // estimate_tokens of the compacted events
  uint64_t prompt_seq = 0;       // seq of the system prompt in force at it; 0: none

  bool operator==(const event&) const = default;
};

// Constructors for each type; the envelope (seq, ts, run) is filled by the caller.
event make_message(message_role r, std::string text);
event make_assistant_text(std::string text);
event make_thinking(std::string text);
event make_tool_call(std::string call_id, std::string tool, std::string arguments_json);
event make_tool_result(std::string call_id, std::string tool, std::string output, bool is_error);
event make_system_prompt(std::string text);
event make_local_system_message(std::string text);
event make_result(token_usage usage, double cost_usd, uint64_t duration_ms, uint32_t turns,
                  std::string outcome);
event make_compaction(std::string strategy, uint64_t from_seq, uint64_t to_seq,
                      std::string events_json);
event make_signal(std::string name, std::string data_json = "{}");

}  // namespace skein
