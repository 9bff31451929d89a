#include "runtime/model/compaction.hpp"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "runtime/model/json_reader.hpp"

namespace skein {
namespace {

// Cuts `text` to at most `bytes_max` bytes at a UTF-8 character boundary.
void cut_utf8(std::string* text, size_t bytes_max) {
  if (text->size() <= bytes_max) return;
  size_t n = bytes_max;
  // Continuation bytes are 10xxxxxx: back up to the first byte of a character.
  while (n > 0 && (static_cast<unsigned char>((*text)[n]) & 0xC0) == 0x80) --n;
  text->resize(n);
}

void trim_tool_results(const compaction_options& o, std::vector<event>* events) {
  for (auto& e : *events) {
    if (e.type != event_type::tool_result || e.text.size() <= o.tool_result_bytes_max) continue;
    size_t original = e.text.size();
    cut_utf8(&e.text, o.tool_result_bytes_max);
    e.text += trim_marker(original);
  }
}

void drop_thinking(std::vector<event>* events) {
  events->erase(std::remove_if(events->begin(), events->end(),
                               [](const event& e) { return e.type == event_type::thinking; }),
                events->end());
}

}  // namespace

uint64_t estimate_tokens(const event& e) {
  uint64_t bytes = e.text.size() + e.json.size() + e.name.size() + e.call_id.size();
  return bytes / token_estimate_bytes + token_estimate_event_overhead;
}

uint64_t estimate_tokens(const std::vector<event>& events) {
  uint64_t total = 0;
  for (const auto& e : events) total += estimate_tokens(e);
  return total;
}

std::vector<std::string> compaction_stage_names() {
  return {stage_trim_tool_results, stage_drop_thinking, stage_summarize};
}

bool is_compaction_stage(std::string_view name) {
  for (const auto& s : compaction_stage_names())
    if (s == name) return true;
  return false;
}

status validate_stages(const std::vector<std::string>& stages, std::string_view field) {
  if (stages.empty()) return status::invalid_input(std::string{field} + ": no stages");
  if (stages.size() > compaction_stages_max)
    return status::invalid_input(std::string{field} + ": more than compaction_stages_max (" +
                                 std::to_string(compaction_stages_max) + ")")
        .with_limit("compaction_stages_max");
  for (const auto& s : stages) {
    if (is_compaction_stage(s)) continue;
    std::string known;
    for (const auto& n : compaction_stage_names()) known += (known.empty() ? "" : ", ") + n;
    return status::invalid_input(std::string{field} + ": unknown stage '" + s.substr(0, 64) +
                                 "' (known: " + known + ")");
  }
  return status::ok();
}

status validate_compact_options(const compact_options& o) {
  if (!o.stages.empty())
    if (status s = validate_stages(o.stages, "stages"); !s) return std::move(s).with_field("stages");
  if (o.keep_turns && *o.keep_turns > compact_keep_turns_max)
    return status::invalid_input("keep_turns: at most " + std::to_string(compact_keep_turns_max))
        .with_field("keep_turns");
  if (o.tool_result_bytes_max &&
      (*o.tool_result_bytes_max < compact_tool_result_bytes_min || *o.tool_result_bytes_max > compact_tool_result_bytes_max))
    return status::invalid_input("tool_result_bytes_max: must be between " +
                                 std::to_string(compact_tool_result_bytes_min) + " and " +
                                 std::to_string(compact_tool_result_bytes_max))
        .with_field("tool_result_bytes_max");
  return status::ok();
}

std::string strategy_name(const std::vector<std::string>& stages) {
  std::string out;
  for (const auto& s : stages) out += (out.empty() ? "" : "+") + s;
  return out;
}

bool apply_pure_stage(std::string_view name, const compaction_options& options, std::vector<event>* events) {
  if (name == stage_trim_tool_results) {
    trim_tool_results(options, events);
    return true;
  }
  if (name == stage_drop_thinking) {
    drop_thinking(events);
    return true;
  }
  return false;
}

status compaction_input(const std::vector<event>& view, std::vector<event>* out, uint64_t* prompt_seq,
                        const json_limits& limits) {
  out->clear();
  *prompt_seq = 0;
  for (const auto& e : view) {
    if (e.type == event_type::system_prompt) {
      *prompt_seq = e.seq;
      continue;
    }
    if (e.type != event_type::compaction) {
      out->push_back(e);
      continue;
    }
    // A view holds at most one compaction, first after the prompt: what it
    // compacted comes before everything after it.
    std::vector<event> inner;
    SKEIN_TRY(decode_compacted(e.json, &inner, limits));
    out->insert(out->end(), std::make_move_iterator(inner.begin()), std::make_move_iterator(inner.end()));
  }
  return status::ok();
}

size_t safe_boundary(const std::vector<event>& events, size_t boundary) {
  boundary = std::min(boundary, events.size());
  // Where each call before the boundary sits; a result after it pulls the
  // boundary back to its call, which may uncover earlier pairs: repeat.
  bool moved = true;
  while (moved && boundary > 0) {
    moved = false;
    std::unordered_map<std::string, size_t> calls;
    for (size_t i = 0; i < boundary; ++i)
      if (events[i].type == event_type::tool_call) calls[events[i].call_id] = i;
    for (size_t i = boundary; i < events.size(); ++i) {
      if (events[i].type != event_type::tool_result) continue;
      auto it = calls.find(events[i].call_id);
      if (it == calls.end() || it->second >= boundary) continue;
      boundary = it->second;
      moved = true;
      break;
    }
  }
  return boundary;
}

size_t summary_boundary(const std::vector<event>& events, uint32_t keep_turns) {
  size_t boundary = events.size();
  uint32_t turns = 0;
  if (keep_turns == 0) return safe_boundary(events, boundary);
  for (size_t i = events.size(); i-- > 0;) {
    const event& e = events[i];
    if (e.type != event_type::message || e.role != message_role::user) continue;
    boundary = i;
    if (++turns == keep_turns) break;
  }
  if (turns < keep_turns) return 0;  // fewer turns than are kept: nothing to summarize
  return safe_boundary(events, boundary);
}

void apply_summary(std::vector<event>* events, size_t boundary, std::string summary) {
  boundary = std::min(boundary, events->size());
  if (boundary == 0) return;
  event s = make_message(message_role::system, summary_prefix + std::move(summary));
  s.run_id.clear();
  s.ts_ms = (*events)[boundary - 1].ts_ms;
  events->erase(events->begin(), events->begin() + static_cast<std::ptrdiff_t>(boundary));
  events->insert(events->begin(), std::move(s));
}

std::string trim_marker(size_t original_bytes) {
  return "\n[trimmed by compaction: original " + std::to_string(original_bytes) + " bytes]";
}

status encode_compacted(const std::vector<event>& events, std::string* out, const json_limits& limits) {
  out->assign("[");
  std::string one;
  for (size_t i = 0; i < events.size(); ++i) {
    SKEIN_TRY(encode_event(events[i], &one, limits));
    if (i > 0) out->push_back(',');
    out->append(one);
  }
  out->push_back(']');
  return status::ok();
}

status decode_compacted(std::string_view json, std::vector<event>* out, const json_limits& limits) {
  out->clear();
  json::document doc;
  SKEIN_TRY(json::parse(json, limits, "compaction.events", &doc));
  json::dom::array arr;
  if (doc.root().get(arr) != simdjson::SUCCESS)
    return status::invalid_input("compaction.events: expected an array");
  size_t i = 0;
  for (json::dom::element el : arr) {
    event e;
    status s = decode_event(simdjson::minify(el), &e, limits);
    if (!s) return status::invalid_input("compaction.events[" + std::to_string(i) + "]: " + s.message());
    out->push_back(std::move(e));
    ++i;
  }
  return status::ok();
}

uint64_t latest_compaction_seq(const std::vector<event>& log) {
  for (size_t i = log.size(); i-- > 0;)
    if (log[i].type == event_type::compaction) return log[i].seq != 0 ? log[i].seq : i + 1;
  return 0;
}

status check_compacted(const std::vector<event>& events) {
  std::unordered_set<std::string> called;
  for (size_t i = 0; i < events.size(); ++i) {
    const event& e = events[i];
    if (e.type == event_type::tool_call) called.insert(e.call_id);
    if (e.type == event_type::tool_result && !called.count(e.call_id))
      return status::invalid_input("compaction: tool result " + e.call_id.substr(0, 64) + " (event " +
                                   std::to_string(i) + ") has no call before it");
    if (e.type == event_type::compaction || e.type == event_type::system_prompt)
      return status::invalid_input("compaction: event " + std::to_string(i) + " is a " +
                                   std::string{to_string(e.type)} + ", which a compaction never holds");
  }
  return status::ok();
}

}  // namespace skein
