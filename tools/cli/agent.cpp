// agent: the `skein agent` commands (create, list, show), each row with the
// route it calls.
#include <algorithm>
#include <cstdio>

#include "runtime/model/agent.hpp"
#include "tools/cli/command.hpp"

namespace skein::tools::cli {
namespace {

int agent_create(client& c, const invocation& in) {
  const given& a = in.a;
  agent_config ag;
  ag.id = a.get("id");
  ag.system_prompt = a.get("prompt");
  ag.engine = a.get("engine", "scripted");
  ag.engine_config = a.get("engine-config", "{}");
  ag.tools = a.all("tool");
  if (!a.get("policy").empty()) {
    auto p = parse_mid_run_policy(a.get("policy"));
    if (!p) return misuse("--policy must be queue, reject or interrupt");
    ag.policy = *p;
  }
  // Delegation: --delegate-to a,b (repeatable), --depth-max N, --delegate-self.
  for (const auto& list : a.all("delegate-to"))
    for (size_t at = 0; at <= list.size();) {
      size_t comma = std::min(list.find(',', at), list.size());
      if (comma > at) ag.delegation.agents.push_back(list.substr(at, comma - at));
      at = comma + 1;
    }
  if (a.has("depth-max")) {
    const std::string text = a.get("depth-max");
    if (text.size() > 3) return misuse("--depth-max must be a small whole number");
    ag.delegation.depth_max = static_cast<uint32_t>(a.number("depth-max"));
  }
  ag.delegation.self_allowed = a.has("delegate-self");
  std::string body;
  if (status s = encode_agent(ag, &body); !s) return misuse(s.to_string());
  http::response r;
  int code = ok;
  if (!c.call(in, 0, "", body, &r, &code)) return code;
  agent_config stored;
  if (status s = decode_agent(r.body, &stored); !s) return c.unreadable_response(s);
  if (c.json) return c.print_json(r);
  std::printf("%s\n", stored.id.c_str());
  return ok;
}

int agent_list(client& c, const invocation& in) {
  http::response r;
  int code = ok;
  if (!c.call(in, 0, "", "", &r, &code)) return code;
  std::vector<std::string> items;
  if (status s = json_items(r.body, "agents", &items); !s) return c.unreadable_response(s);
  std::vector<agent_config> agents;
  for (const auto& text : items)
    if (status s = decode_agent(text, &agents.emplace_back()); !s) return c.unreadable_response(s);
  if (c.json) return c.print_json(r);
  std::printf("%-24s %-10s %-10s %s\n", "ID", "ENGINE", "POLICY", "TOOLS");
  for (const auto& ag : agents) {
    std::string tools;
    for (const auto& t : ag.tools) tools += (tools.empty() ? "" : ",") + t;
    std::printf("%-24s %-10s %-10s %s\n", ag.id.c_str(), ag.engine.c_str(), std::string{to_string(ag.policy)}.c_str(),
                tools.c_str());
  }
  return ok;
}

int agent_show(client& c, const invocation& in) {
  http::response r;
  int code = ok;
  if (!c.call(in, 0, "", "", &r, &code)) return code;
  agent_config ag;
  if (status s = decode_agent(r.body, &ag); !s) return c.unreadable_response(s);
  return c.print_json(r);
}

}  // namespace

const std::vector<command>& agent_commands() {
  static const std::vector<command> rows = {
      {"agent", "create", {"POST /v1/agents"}, "creates an agent; prints its id",
       {pos("id", "the agent's id"), opt("--prompt", "P", "its system prompt"),
        opt("--engine", "E", "scripted (default), openai or process"),
        opt("--engine-config", "JSON", "the engine's config (default {})"),
        opt("--tool", "T", "a tool it may call (again for more)").many(),
        opt("--policy", "P", "input while a run goes on: queue, reject or interrupt"),
        opt("--delegate-to", "A,B", "agents it may ask (ask_agent; again for more)").many(),
        opt("--depth-max", "N", "how deep delegations may nest").num(),
        flag("--delegate-self", "it may ask itself")},
       agent_create},
      {"agent", "list", {"GET /v1/agents"}, "every agent", {}, agent_list},
      {"agent", "show", {"GET /v1/agents/{id}"}, "an agent's config (JSON)", {pos("id", "the agent")}, agent_show},
  };
  return rows;
}

}  // namespace skein::tools::cli
