// embed-skein: a host that embeds skein. It opens a runtime in a data directory,
// registers a tool of its own, creates an agent (the built-in scripted engine
// stands in for a model) and a thread, sends one input and prints the run.
//
//   embed-skein DATA_DIR
#include <skein/skein.hpp>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

int fail(const char* what, const skein::status& s) {
  std::fprintf(stderr, "embed-skein: %s: %s\n", what, s.to_string().c_str());
  return 1;
}

// The model asks for the host's clock tool, then answers with what it said.
constexpr const char* rules = R"({"rules": [
  {"match": "time", "turn": 1, "tool_calls": [{"name": "host_clock", "arguments": {}}]},
  {"match": "time", "turn": 2, "reply": "The host says it is tea time."}
]})";

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: embed-skein DATA_DIR\n");
    return 64;
  }
  // The headers this host was built with and the library it runs with agree.
  if (std::strcmp(skein::library_version(), SKEIN_VERSION) != 0) {
    std::fprintf(stderr, "embed-skein: built against skein %s, running with %s\n", SKEIN_VERSION,
                 skein::library_version());
    return 1;
  }

  skein::runtime_options options;
  options.data_dir = argv[1];
  skein::tool_spec clock_spec{"host_clock", "The host's idea of the time", R"({"type":"object"})"};
  options.tools.push_back(skein::make_function_tool(clock_spec, [](const skein::tool_invocation&) {
    return skein::tool_output{"tea time", false};
  }));

  std::unique_ptr<skein::runtime> rt;
  if (skein::status s = skein::runtime::open(options, &rt); !s) return fail("open", s);

  skein::agent_config agent;
  agent.id = "host-agent";
  agent.system_prompt = "Answer with the host's clock.";
  agent.engine_config = rules;
  agent.tools = {"host_clock"};
  if (skein::status s = rt->create_agent(agent); !s && s.code() != skein::errc::conflict)
    return fail("create agent", s);

  skein::thread_options topts;
  topts.agent_id = agent.id;
  skein::manifest thread;
  if (skein::status s = rt->create_thread(topts, &thread); !s) return fail("create thread", s);

  skein::run_input input;
  input.text = "What time is it?";
  skein::run_result result;
  if (skein::status s = rt->send(thread.id, input).wait(&result); !s) return fail("run", s);

  std::vector<skein::event> events;
  if (skein::status s = rt->read(thread.id, skein::history_view::complete, 1, 1000, &events); !s) return fail("read", s);
  std::printf("skein %s: thread %s, run %s %s, %zu events\n", skein::library_version(),
              thread.id.c_str(), result.run_id.c_str(), std::string{to_string(result.outcome)}.c_str(),
              events.size());
  std::printf("assistant: %s\n", result.text.c_str());
  return rt->close().is_ok() ? 0 : 1;
}
