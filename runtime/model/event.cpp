#include "runtime/model/event.hpp"

#include <array>

namespace skein {
namespace {

constexpr std::array<std::string_view, event_type_count> event_type_names = {
    "message", "assistant_text", "thinking", "tool_call", "tool_result",
    "system_prompt", "local_system_message", "result", "compaction", "signal"};

constexpr std::array<std::string_view, 3> role_names = {"user", "assistant", "system"};

}  // namespace

std::string_view to_string(event_type type) { return event_type_names[static_cast<size_t>(type)]; }

payload_group event_group(event_type type) {
  switch (type) {
    case event_type::message:
    case event_type::assistant_text:
    case event_type::local_system_message:
      return payload_group::chat;
    case event_type::thinking:
    case event_type::tool_call:
    case event_type::tool_result:
    case event_type::system_prompt:
    case event_type::result:
    case event_type::compaction:
      return payload_group::model;
    case event_type::signal:
      return payload_group::signal;
  }
  return payload_group::signal;  // unreachable: every type is listed above
}

namespace {
constexpr std::array<std::string_view, payload_group_count> group_names = {"chat", "model", "signal"};
}  // namespace

std::string_view to_string(payload_group g) { return group_names[static_cast<size_t>(g)]; }

std::optional<payload_group> parse_payload_group(std::string_view name) {
  for (size_t i = 0; i < group_names.size(); ++i)
    if (group_names[i] == name) return static_cast<payload_group>(i);
  return std::nullopt;
}

status parse_group_filter(std::string_view text, group_filter* out) {
  if (text.empty()) {
    *out = group_filter{};
    return status::ok();
  }
  group_filter f;
  f.mask = 0;
  size_t i = 0;
  while (i <= text.size()) {
    size_t j = text.find(',', i);
    if (j == std::string_view::npos) j = text.size();
    auto g = parse_payload_group(text.substr(i, j - i));
    if (!g)
      return status::invalid_input("group: " + quote_input(text.substr(i, j - i)) +
                                   " is not chat, model or signal")
          .with_field("group");
    f.mask |= static_cast<uint8_t>(1u << static_cast<int>(*g));
    i = j + 1;
  }
  *out = f;
  return status::ok();
}

std::optional<event_type> parse_event_type(std::string_view name) {
  for (size_t i = 0; i < event_type_names.size(); ++i)
    if (event_type_names[i] == name) return static_cast<event_type>(i);
  return std::nullopt;
}

std::string_view to_string(message_role r) { return role_names[static_cast<size_t>(r)]; }

std::optional<message_role> parse_role(std::string_view name) {
  for (size_t i = 0; i < role_names.size(); ++i)
    if (role_names[i] == name) return static_cast<message_role>(i);
  return std::nullopt;
}

token_usage& token_usage::operator+=(const token_usage& other) {
  input_tokens += other.input_tokens;
  output_tokens += other.output_tokens;
  cache_read_tokens += other.cache_read_tokens;
  cache_write_tokens += other.cache_write_tokens;
  return *this;
}

namespace {
// An event of `type` whose one payload is `text`.
event text_event(event_type type, std::string text) {
  event e;
  e.type = type;
  e.text = std::move(text);
  return e;
}
}  // namespace

event make_message(message_role r, std::string text) {
  event e = text_event(event_type::message, std::move(text));
  e.role = r;
  return e;
}

event make_assistant_text(std::string text) { return text_event(event_type::assistant_text, std::move(text)); }

event make_thinking(std::string text) { return text_event(event_type::thinking, std::move(text)); }

event make_tool_call(std::string call_id, std::string tool, std::string arguments_json) {
  event e;
  e.type = event_type::tool_call;
  e.call_id = std::move(call_id);
  e.name = std::move(tool);
  e.json = arguments_json.empty() ? "{}" : std::move(arguments_json);
  return e;
}

event make_tool_result(std::string call_id, std::string tool, std::string output, bool is_error) {
  event e;
  e.type = event_type::tool_result;
  e.call_id = std::move(call_id);
  e.name = std::move(tool);
  e.text = std::move(output);
  e.is_error = is_error;
  return e;
}

event make_system_prompt(std::string text) { return text_event(event_type::system_prompt, std::move(text)); }

event make_local_system_message(std::string text) { return text_event(event_type::local_system_message, std::move(text)); }

event make_result(token_usage usage, double cost_usd, uint64_t duration_ms, uint32_t turns,
                  std::string outcome) {
  event e;
  e.type = event_type::result;
  e.usage = usage;
  e.cost_usd = cost_usd;
  e.duration_ms = duration_ms;
  e.turns = turns;
  e.outcome = std::move(outcome);
  return e;
}

event make_compaction(std::string strategy, uint64_t from_seq, uint64_t to_seq,
                      std::string events_json) {
  event e;
  e.type = event_type::compaction;
  e.name = std::move(strategy);
  e.from_seq = from_seq;
  e.to_seq = to_seq;
  e.json = events_json.empty() ? "[]" : std::move(events_json);
  return e;
}

event make_signal(std::string name, std::string data_json) {
  event e;
  e.type = event_type::signal;
  e.name = std::move(name);
  e.json = data_json.empty() ? "{}" : std::move(data_json);
  return e;
}

}  // namespace skein
