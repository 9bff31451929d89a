// skein demo: a scripted conversation with a tool call, run through the runtime,
// its events printed as they become durable (and token deltas as they stream).
#include <cstdio>
#include <cstring>
#include <string>

#include "runtime/namespaces/namespaces.hpp"
#include "runtime/runtime.hpp"
#include "tools/cli/args.hpp"
#include "tools/tool_util.hpp"

namespace skein::tools {
namespace {

void print_event(const event& e) {
  std::printf("  #%-3llu %-22s", static_cast<unsigned long long>(e.seq),
              std::string{to_string(e.type)}.c_str());
  switch (e.type) {
    case event_type::message:
      std::printf("%s: %s\n", std::string{to_string(e.role)}.c_str(), e.text.c_str());
      break;
    case event_type::tool_call:
      std::printf("%s %s  [%s]\n", e.name.c_str(), e.json.c_str(), e.call_id.c_str());
      break;
    case event_type::tool_result:
      std::printf("%s -> %s%s  [%s]\n", e.name.c_str(), e.text.c_str(),
                  e.is_error ? " (error)" : "", e.call_id.c_str());
      break;
    case event_type::result:
      std::printf("%s: %llu in / %llu out tokens, $%.4f, %llu ms, %u turn(s)\n",
                  e.outcome.c_str(), static_cast<unsigned long long>(e.usage.input_tokens),
                  static_cast<unsigned long long>(e.usage.output_tokens), e.cost_usd,
                  static_cast<unsigned long long>(e.duration_ms), e.turns);
      break;
    case event_type::signal:
      std::printf("%s %s\n", e.name.c_str(), e.json.c_str());
      break;
    default:
      std::printf("%s\n", e.text.c_str());
  }
}

constexpr const char* demo_rules = R"({
  "rules": [
    {"match": "weather", "turn": 1, "thinking": "The user wants the weather; ask the weather tool.",
     "tool_calls": [{"name": "weather", "arguments": {"city": "Lisbon"}}], "latency_ms": 120},
    {"match": "weather", "turn": 2, "reply": "It is 18°C in Lisbon with a light northerly wind.",
     "deltas": ["It is 18°C ", "in Lisbon ", "with a light northerly wind."], "latency_ms": 300,
     "usage": {"input_tokens": 412, "output_tokens": 37}, "cost_usd": 0.00121}
  ]
})";

std::shared_ptr<tool> weather_tool() {
  tool_spec spec{"weather", "Current weather for a city", R"({"type":"object","properties":{"city":{"type":"string"}}})"};
  return make_function_tool(spec, [](const tool_invocation&) {
    return tool_output{"18°C, light wind from the north", false};
  });
}

}  // namespace

int run_demo(const cli::given& a) {
  runtime_options options;
  if (a.has("data")) options.data_dir = a.get("data");
  if (a.has("durability") && !parse_durability(a.get("durability"), &options.mode)) {
    std::fprintf(stderr, "skein demo: --durability must be sync, flush or memory\n");
    return 64;
  }
  if (a.has("key-file") && a.has("key-env")) {
    std::fprintf(stderr, "skein demo: --key-file and --key-env: give one, not both\n");
    return 64;
  }
  if (status s = load_key_flags(a.get("key-file"), a.get("key-env"), &options.encryption); !s) {
    std::fprintf(stderr, "skein demo: %s\n", s.to_string().c_str());
    return 1;
  }
  options.tools.push_back(weather_tool());
  embedded_namespace opened;
  auto fail = [](const char* what, const status& s) {
    std::fprintf(stderr, "skein demo: %s: %s\n", what, s.to_string().c_str());
    return 1;
  };
  if (status s = open_embedded(options, std::string(default_namespace), &opened); !s) return fail("open", s);
  runtime* rt = opened.rt.get();
  if (!rt->repaired_at_open().empty())
    std::printf("recovery closed %zu interrupted run(s)\n", rt->repaired_at_open().size());

  agent_config agent;
  agent.id = "demo";
  agent.system_prompt = "You are a concise weather assistant.";
  agent.engine_config = demo_rules;
  agent.tools = {"weather"};
  if (status s = rt->create_agent(agent); !s) return fail("create agent", s);
  manifest thread;
  thread_options topts;
  topts.agent_id = "demo";
  topts.title = "Weather in Lisbon";
  if (status s = rt->create_thread(topts, &thread); !s) return fail("create thread", s);
  std::printf("skein demo: thread %s of agent demo in %s (durability %s)\n\n", thread.id.c_str(),
              options.data_dir.c_str(), std::string{to_string(options.mode)}.c_str());

  event_sink sink;
  sink.on_event = [](const event& e) {
    print_event(e);
    std::fflush(stdout);
  };
  sink.on_delta = [](const std::string&, const std::string& delta) {
    std::printf("        ~ %s\n", delta.c_str());
    std::fflush(stdout);
  };
  uint64_t sub = 0;
  if (status s = rt->subscribe(thread.id, 1, sink, &sub); !s) return fail("subscribe", s);
  run_input in;
  in.text = "What is the weather in Lisbon?";
  run_result result;
  if (status s = rt->send(thread.id, in).wait(&result); !s) return fail("run", s);
  rt->unsubscribe(sub).ignore();
  std::printf("\nrun %s %s in %llu ms, %u turn(s), %llu events\n", result.run_id.c_str(),
              std::string{to_string(result.outcome)}.c_str(),
              static_cast<unsigned long long>(result.duration_ms), result.turns,
              static_cast<unsigned long long>(result.last_seq));
  std::printf("assistant: %s\n", result.text.c_str());
  return opened.close().is_ok() ? 0 : 1;
}

namespace cli {

const subcommand& demo_subcommand() {
  static const subcommand sub{
      "demo",
      "one scripted conversation, embedded, no server",
      "Runs one scripted conversation with a tool call through an embedded runtime (no\n"
      "server) and prints its events as they become durable.",
      {opt("--data", "DIR", "the data directory (default ./skein-data)"),
       opt("--durability", "sync|flush|memory", "(default sync)"),
       opt("--key-file", "P", "an encrypted DIR's master key: a file of 64 hex characters"),
       opt("--key-env", "NAME", "or the environment variable holding them")},
      run_demo};
  return sub;
}

}  // namespace cli
}  // namespace skein::tools
