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
constexpr size_t effects_envelope_depth = 2;  // agent and effects objects above embedder_config
constexpr size_t compaction_stages_max = 16;
constexpr uint32_t keep_turns_max = 10000;
constexpr uint32_t retention_days_max = 36500;
constexpr size_t delegation_agents_max = 64;
// Each level is a thread whose run waits on the next: a bound on the chain.
constexpr uint32_t delegation_depth_ceiling = 16;

status validate_delegation(const agent_config& a) {
  const delegation_settings& d = a.delegation;
  if (d.agents.size() > delegation_agents_max)
    return status::invalid_input("agent.delegation.agents: more than delegation_agents_max (" +
                                 std::to_string(delegation_agents_max) + ")")
        .with_limit("delegation_agents_max");
  for (size_t i = 0; i < d.agents.size(); ++i) {
    SKEIN_TRY(validate_id(d.agents[i], "agent.delegation.agents"));
    for (size_t j = 0; j < i; ++j)
      if (d.agents[j] == d.agents[i])
        return status::invalid_input("agent.delegation.agents: '" + d.agents[i] + "' is listed twice");
  }
  if (d.depth_max > delegation_depth_ceiling)
    return status::invalid_input("agent.delegation.depth_max: at most " + std::to_string(delegation_depth_ceiling))
        .with_limit("delegation_depth_ceiling");
  for (const auto& t : a.tools)
    if (t == ask_agent_tool_name)
      return status::invalid_input("agent.tools: 'ask_agent' is built in (agent.delegation), not a registered tool");
  return status::ok();
}

status check_config_object(const std::string& text, const char* field, size_t envelope,
                           const json_limits& limits, std::string* normalized) {
  SKEIN_TRY(normalize_json(text.empty() ? "{}" : text, field, normalized, limits));
  if ((*normalized)[0] != '{') return status::invalid_input(std::string(field) + ": expected an object");
  if (size_t depth = json_depth(*normalized); depth + envelope > limits.json_depth_max)
    return status::invalid_input(std::string(field) + ": nesting " + std::to_string(depth) + " plus the " +
                                 std::to_string(envelope) + " levels above it exceeds json_depth_max (" +
                                 std::to_string(limits.json_depth_max) + ")")
        .with_limit("json_depth_max");
  return status::ok();
}

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
  if (!(a.budgets.cost_usd_per_day_max >= 0) || a.budgets.cost_usd_per_day_max > 1e12)
    return status::invalid_input("agent.budgets.cost_usd_per_day_max: must be between 0 and 1e12");
  if (!a.effects.embedder.empty()) SKEIN_TRY(validate_id(a.effects.embedder, "agent.effects.embedder"));
  if (a.compaction.stages.size() > compaction_stages_max)
    return status::invalid_input("agent.compaction.stages: more than compaction_stages_max (" +
                                 std::to_string(compaction_stages_max) + ")")
        .with_limit("compaction_stages_max");
  for (const auto& st : a.compaction.stages) SKEIN_TRY(validate_id(st, "agent.compaction.stages"));
  if (a.compaction.keep_turns > keep_turns_max)
    return status::invalid_input("agent.compaction.keep_turns: at most " + std::to_string(keep_turns_max));
  if (a.compaction.tool_result_bytes_max < 64 || a.compaction.tool_result_bytes_max > output_bytes_ceiling)
    return status::invalid_input("agent.compaction.tool_result_bytes_max: must be between 64 and " +
                                 std::to_string(output_bytes_ceiling));
  if (a.retention.archive_after_days > retention_days_max || a.retention.delete_after_days > retention_days_max)
    return status::invalid_input("agent.retention: days at most " + std::to_string(retention_days_max));
  SKEIN_TRY(validate_delegation(a));
  std::string normalized;
  SKEIN_TRY(check_config_object(a.engine_config, "agent.engine_config", agent_envelope_depth, {}, &normalized));
  SKEIN_TRY(check_config_object(a.effects.embedder_config, "agent.effects.embedder_config",
                                effects_envelope_depth, {}, &normalized));
  return status::ok();
}

status encode_agent(const agent_config& a, std::string* out, const json_limits& limits) {
  SKEIN_TRY(validate_agent(a));
  std::string config, embedder_config;
  SKEIN_TRY(check_config_object(a.engine_config, "agent.engine_config", agent_envelope_depth, limits, &config));
  SKEIN_TRY(check_config_object(a.effects.embedder_config, "agent.effects.embedder_config",
                                effects_envelope_depth, limits, &embedder_config));
  out->clear();
  json_writer w{out};
  w.begin_object();
  w.field_int("v", agent_format_version);
  w.field("id", a.id);
  w.field("system_prompt", a.system_prompt);
  w.field("engine", a.engine);
  w.key("engine_config");
  w.raw(config);
  w.field_strings("tools", a.tools);
  w.field("policy", to_string(a.policy));
  w.key("budgets");
  w.begin_object();
  w.field_uint("ticks_max", a.budgets.ticks_max);
  w.field_uint("run_time_ms_max", a.budgets.run_time_ms_max);
  w.field_uint("engine_idle_ms", a.budgets.engine_idle_ms);
  w.field_uint("tool_timeout_ms", a.budgets.tool_timeout_ms);
  w.field_uint("output_bytes_max", a.budgets.output_bytes_max);
  w.field_uint("tool_calls_max", a.budgets.tool_calls_max);
  w.field_uint("tokens_per_day_max", a.budgets.tokens_per_day_max);
  w.field_number("cost_usd_per_day_max", a.budgets.cost_usd_per_day_max);
  w.end_object();
  w.key("effects");
  w.begin_object();
  w.field_bool("titles", a.effects.titles);
  w.field("embedder", a.effects.embedder);
  w.key("embedder_config");
  w.raw(embedder_config);
  w.end_object();
  w.key("compaction");
  w.begin_object();
  w.field_uint("auto_tokens", a.compaction.auto_tokens);
  w.field_strings("stages", a.compaction.stages);
  w.field_uint("keep_turns", a.compaction.keep_turns);
  w.field_uint("tool_result_bytes_max", a.compaction.tool_result_bytes_max);
  w.end_object();
  w.key("retention");
  w.begin_object();
  w.field_uint("archive_after_days", a.retention.archive_after_days);
  w.field_uint("delete_after_days", a.retention.delete_after_days);
  w.end_object();
  w.key("delegation");
  w.begin_object();
  w.field_strings("agents", a.delegation.agents);
  w.field_uint("depth_max", a.delegation.depth_max);
  w.field_bool("self_allowed", a.delegation.self_allowed);
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
  json::object_reader r;
  SKEIN_TRY(json::parse_versioned(text, limits, "agent", agent_format_version, &doc, &r));
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
    SKEIN_TRY(b.uint("tokens_per_day_max", &a.budgets.tokens_per_day_max, false));
    SKEIN_TRY(b.number("cost_usd_per_day_max", &a.budgets.cost_usd_per_day_max, false));
  }
  if (r.has("effects")) {
    json::dom::element el;
    SKEIN_TRY(r.element("effects", &el));
    json::object_reader e;
    SKEIN_TRY(json::object_reader::open(el, "agent.effects", &e));
    SKEIN_TRY(e.boolean("titles", &a.effects.titles, false));
    SKEIN_TRY(e.string("embedder", &a.effects.embedder, false));
    SKEIN_TRY(e.raw("embedder_config", json::dom::element_type::OBJECT, &a.effects.embedder_config, false));
  }
  if (r.has("compaction")) {
    json::dom::element el;
    SKEIN_TRY(r.element("compaction", &el));
    json::object_reader c;
    SKEIN_TRY(json::object_reader::open(el, "agent.compaction", &c));
    SKEIN_TRY(c.uint("auto_tokens", &a.compaction.auto_tokens, false));
    SKEIN_TRY(c.strings("stages", &a.compaction.stages, false));
    uint64_t keep = a.compaction.keep_turns;
    SKEIN_TRY(c.uint("keep_turns", &keep, false));
    if (keep > UINT32_MAX) return status::invalid_input("agent.compaction.keep_turns: out of range");
    a.compaction.keep_turns = static_cast<uint32_t>(keep);
    SKEIN_TRY(c.uint("tool_result_bytes_max", &a.compaction.tool_result_bytes_max, false));
  }
  if (r.has("retention")) {
    json::dom::element el;
    SKEIN_TRY(r.element("retention", &el));
    json::object_reader t;
    SKEIN_TRY(json::object_reader::open(el, "agent.retention", &t));
    uint64_t archive = 0, erase = 0;
    SKEIN_TRY(t.uint("archive_after_days", &archive, false));
    SKEIN_TRY(t.uint("delete_after_days", &erase, false));
    if (archive > UINT32_MAX || erase > UINT32_MAX)
      return status::invalid_input("agent.retention: days out of range");
    a.retention.archive_after_days = static_cast<uint32_t>(archive);
    a.retention.delete_after_days = static_cast<uint32_t>(erase);
  }
  if (r.has("delegation")) {
    json::dom::element el;
    SKEIN_TRY(r.element("delegation", &el));
    json::object_reader d;
    SKEIN_TRY(json::object_reader::open(el, "agent.delegation", &d));
    SKEIN_TRY(d.strings("agents", &a.delegation.agents, false));
    uint64_t depth = a.delegation.depth_max;
    SKEIN_TRY(d.uint("depth_max", &depth, false));
    if (depth > UINT32_MAX) return status::invalid_input("agent.delegation.depth_max: out of range");
    a.delegation.depth_max = static_cast<uint32_t>(depth);
    SKEIN_TRY(d.boolean("self_allowed", &a.delegation.self_allowed, false));
  }
  SKEIN_TRY(r.int64("created_at", &a.created_at_ms, false));
  SKEIN_TRY(validate_agent(a));
  *out = std::move(a);
  return status::ok();
}

}  // namespace skein
