#include "runtime/model/agent.hpp"

#include <array>

#include "runtime/model/ids.hpp"
#include "runtime/model/json_reader.hpp"
#include "runtime/model/json_writer.hpp"

namespace skein {
namespace {

constexpr std::array<std::string_view, 3> policy_names = {"queue", "reject", "interrupt"};
constexpr int64_t agent_format_version = 1;
constexpr size_t system_prompt_bytes_max = 256 << 10;
constexpr size_t agent_tools_max = 256;
// output_bytes_max stays well under json_bytes_max: a cut text must still fit in
// its event once escaped, with the envelope around it.
constexpr uint64_t output_bytes_floor = 1024;
constexpr uint64_t output_bytes_ceiling = 3 << 20;
// A step's tool calls, their results and a run's closing events fit in one tick
// (tick_events_max, 4096 by default).
constexpr uint32_t tool_calls_ceiling = 1024;
constexpr size_t agent_envelope_depth = 1;  // the agent object above engine_config

}  // namespace

std::string_view to_string(mid_run_policy p) { return policy_names[static_cast<size_t>(p)]; }

std::optional<mid_run_policy> parse_mid_run_policy(std::string_view name) {
  for (size_t i = 0; i < policy_names.size(); ++i)
    if (policy_names[i] == name) return static_cast<mid_run_policy>(i);
  return std::nullopt;
}

status validate_agent(const agent_config& a) {
  SKEIN_TRY(validate_id(a.id, "agent.id"));
  SKEIN_TRY(validate_id(a.engine, "agent.engine"));
  if (a.system_prompt.size() > system_prompt_bytes_max)
    return status::invalid_input("agent.system_prompt: longer than system_prompt_bytes_max (" +
                                 std::to_string(system_prompt_bytes_max) + ")")
        .with_limit("system_prompt_bytes_max");
  if (!valid_utf8(a.system_prompt)) return status::invalid_input("agent.system_prompt: invalid UTF-8");
  if (a.tools.size() > agent_tools_max)
    return status::invalid_input("agent.tools: more than agent_tools_max (" +
                                 std::to_string(agent_tools_max) + ")")
        .with_limit("agent_tools_max");
  for (const auto& t : a.tools) SKEIN_TRY(validate_id(t, "agent.tools"));
  if (a.budgets.ticks_max == 0) return status::invalid_input("agent.budgets.ticks_max: must be at least 1");
  if (a.budgets.run_time_ms_max == 0)
    return status::invalid_input("agent.budgets.run_time_ms_max: must be at least 1");
  if (a.budgets.engine_idle_ms == 0)
    return status::invalid_input("agent.budgets.engine_idle_ms: must be at least 1");
  if (a.budgets.tool_timeout_ms == 0)
    return status::invalid_input("agent.budgets.tool_timeout_ms: must be at least 1");
  if (a.budgets.output_bytes_max < output_bytes_floor || a.budgets.output_bytes_max > output_bytes_ceiling)
    return status::invalid_input("agent.budgets.output_bytes_max: must be between " +
                                 std::to_string(output_bytes_floor) + " and " +
                                 std::to_string(output_bytes_ceiling));
  if (a.budgets.tool_calls_max == 0 || a.budgets.tool_calls_max > tool_calls_ceiling)
    return status::invalid_input("agent.budgets.tool_calls_max: must be between 1 and " +
                                 std::to_string(tool_calls_ceiling));
  std::string normalized;
  SKEIN_TRY(normalize_json(a.engine_config.empty() ? "{}" : a.engine_config, "agent.engine_config",
                           &normalized));
  if (normalized[0] != '{') return status::invalid_input("agent.engine_config: expected an object");
  return status::ok();
}

status encode_agent(const agent_config& a, std::string* out, const json_limits& limits) {
  SKEIN_TRY(validate_agent(a));
  std::string config;
  SKEIN_TRY(normalize_json(a.engine_config.empty() ? "{}" : a.engine_config, "agent.engine_config",
                           &config, limits));
  if (size_t depth = json_depth(config); depth + agent_envelope_depth > limits.json_depth_max)
    return status::invalid_input("agent.engine_config: nesting " + std::to_string(depth) +
                                 " plus the 1 level above it exceeds json_depth_max (" +
                                 std::to_string(limits.json_depth_max) + ")");
  out->clear();
  json_writer w{out};
  w.begin_object();
  w.field_int("v", agent_format_version);
  w.field("id", a.id);
  w.field("system_prompt", a.system_prompt);
  w.field("engine", a.engine);
  w.key("engine_config");
  w.raw(config);
  w.key("tools");
  w.begin_array();
  for (const auto& t : a.tools) w.string(t);
  w.end_array();
  w.field("policy", to_string(a.policy));
  w.key("budgets");
  w.begin_object();
  w.field_uint("ticks_max", a.budgets.ticks_max);
  w.field_uint("run_time_ms_max", a.budgets.run_time_ms_max);
  w.field_uint("engine_idle_ms", a.budgets.engine_idle_ms);
  w.field_uint("tool_timeout_ms", a.budgets.tool_timeout_ms);
  w.field_uint("output_bytes_max", a.budgets.output_bytes_max);
  w.field_uint("tool_calls_max", a.budgets.tool_calls_max);
  w.end_object();
  w.field_int("created_at", a.created_at_ms);
  w.end_object();
  if (out->size() > limits.json_bytes_max)
    return status::invalid_input("agent: encoded " + std::to_string(out->size()) +
                                 " bytes exceeds json_bytes_max (" +
                                 std::to_string(limits.json_bytes_max) + ")");
  return status::ok();
}

status check_storable(const agent_config& a, const json_limits& limits) {
  std::string scratch;
  return encode_agent(a, &scratch, limits);
}

status decode_agent(std::string_view text, agent_config* out, const json_limits& limits) {
  json::document doc;
  SKEIN_TRY(json::parse(text, limits, "agent", &doc));
  json::object_reader r;
  SKEIN_TRY(json::object_reader::open(doc.root(), "agent", &r));
  int64_t version = agent_format_version;
  SKEIN_TRY(r.int64("v", &version, false));
  if (version > agent_format_version)
    return status::invalid_input("agent.v: format version " + std::to_string(version) +
                                 " is newer than this skein understands");
  agent_config a;
  SKEIN_TRY(r.string("id", &a.id));
  SKEIN_TRY(r.string("system_prompt", &a.system_prompt, false));
  SKEIN_TRY(r.string("engine", &a.engine, false));
  SKEIN_TRY(r.raw("engine_config", json::dom::element_type::OBJECT, &a.engine_config, false));
  SKEIN_TRY(r.strings("tools", &a.tools, false));
  std::string policy;
  SKEIN_TRY(r.string("policy", &policy, false));
  if (!policy.empty()) {
    auto p = parse_mid_run_policy(policy);
    if (!p) return status::invalid_input("agent.policy: must be queue, reject or interrupt");
    a.policy = *p;
  }
  if (r.has("budgets")) {
    json::dom::element el;
    SKEIN_TRY(r.element("budgets", &el));
    json::object_reader b;
    SKEIN_TRY(json::object_reader::open(el, "agent.budgets", &b));
    uint64_t ticks = a.budgets.ticks_max;
    SKEIN_TRY(b.uint("ticks_max", &ticks, false));
    if (ticks > UINT32_MAX) return status::invalid_input("agent.budgets.ticks_max: out of range");
    a.budgets.ticks_max = static_cast<uint32_t>(ticks);
    SKEIN_TRY(b.uint("run_time_ms_max", &a.budgets.run_time_ms_max, false));
    SKEIN_TRY(b.uint("engine_idle_ms", &a.budgets.engine_idle_ms, false));
    SKEIN_TRY(b.uint("tool_timeout_ms", &a.budgets.tool_timeout_ms, false));
    SKEIN_TRY(b.uint("output_bytes_max", &a.budgets.output_bytes_max, false));
    uint64_t calls = a.budgets.tool_calls_max;
    SKEIN_TRY(b.uint("tool_calls_max", &calls, false));
    if (calls > UINT32_MAX) return status::invalid_input("agent.budgets.tool_calls_max: out of range");
    a.budgets.tool_calls_max = static_cast<uint32_t>(calls);
  }
  SKEIN_TRY(r.int64("created_at", &a.created_at_ms, false));
  SKEIN_TRY(validate_agent(a));
  *out = std::move(a);
  return status::ok();
}

}  // namespace skein
