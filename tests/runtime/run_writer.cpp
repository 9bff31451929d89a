// skein-run-writer DIR: starts a run whose tool never answers, prints
// "ready <bystander> <running>" once the tool call is durable, then waits to be
// killed. The bystander thread has one completed run.
// skein-run-writer DIR delegate: a run of agent p asks agent c (ask_agent),
// whose run calls the tool that never answers; prints "ready <parent> <child>"
// once the child's tool call is durable, then waits to be killed.
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <unistd.h>

#include "runtime/runtime.hpp"

using namespace skein;

namespace {

class hanging_tool : public tool {
 public:
  const tool_spec& spec() const override { return spec_; }
  std::unique_ptr<call_handle> invoke(tool_invocation, std::function<void(tool_output)>) override {
    return nullptr;  // never answers
  }

 private:
  tool_spec spec_{"hang", "never answers", "{}"};
};

int fail(const char* what, const status& s) {
  std::fprintf(stderr, "run-writer: %s: %s\n", what, s.to_string().c_str());
  return 1;
}

}  // namespace

int delegate(runtime& rt) {
  agent_config c;
  c.id = "c";
  c.tools = {"hang"};
  c.engine_config = R"({"rules": [{"turn": 1, "tool_calls": [{"name": "hang", "id": "h1"}]}], "default": {"reply": "ok"}})";
  if (auto s = rt.create_agent(c); !s) return fail("agent", s);
  agent_config p;
  p.id = "p";
  p.delegation.agents = {"c"};
  p.engine_config = R"({"rules": [{"turn": 1, "tool_calls": [{"name": "ask_agent", "id": "a1", "arguments": {"agent": "c", "question": "hang"}}]}], "default": {"reply": "ok"}})";
  if (auto s = rt.create_agent(p); !s) return fail("agent", s);
  thread_options to;
  to.agent_id = "p";
  manifest parent;
  if (auto s = rt.create_thread(to, &parent); !s) return fail("thread", s);
  run_input in;
  in.text = "go";
  auto handle = rt.send(parent.id, in);
  std::string child = parent.id + ".1";
  // The child exists only once the parent minted it: poll for its tool call.
  for (;;) {
    std::vector<event> log;
    if (rt.read(child, history_view::complete, 1, 0, &log).is_ok()) {
      bool called = false;
      for (const auto& e : log) called = called || e.type == event_type::tool_call;
      if (called) break;
    }
    usleep(10000);
  }
  std::printf("ready %s %s\n", parent.id.c_str(), child.c_str());
  std::fflush(stdout);
  for (;;) pause();
}

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3) return 64;
  runtime_options o;
  o.data_dir = argv[1];
  o.tools.push_back(std::make_shared<hanging_tool>());
  std::unique_ptr<runtime> rt;
  if (auto s = runtime::open(o, &rt); !s) return fail("open", s);
  if (argc == 3 && std::string(argv[2]) == "delegate") return delegate(*rt);
  agent_config a;
  a.id = "r";
  a.tools = {"hang"};
  a.engine_config = R"({"rules": [{"match": "hang", "turn": 1, "tool_calls": [{"name": "hang", "id": "h1"}, {"name": "hang", "id": "h2"}]}], "default": {"reply": "ok"}})";
  if (auto s = rt->create_agent(a); !s) return fail("agent", s);
  thread_options to;
  to.agent_id = "r";
  manifest bystander, running;
  if (auto s = rt->create_thread(to, &bystander); !s) return fail("thread", s);
  if (auto s = rt->create_thread(to, &running); !s) return fail("thread", s);
  run_input in;
  in.text = "hello";
  run_result r;
  if (auto s = rt->send(bystander.id, in).wait(&r); !s) return fail("run", s);

  std::mutex mu;
  std::condition_variable cv;
  int calls = 0;
  event_sink sink;
  sink.on_event = [&](const event& e) {
    std::lock_guard<std::mutex> lock{mu};
    if (e.type == event_type::tool_call) ++calls;
    cv.notify_all();
  };
  uint64_t sub = 0;
  if (auto s = rt->subscribe(running.id, 1, sink, &sub); !s) return fail("subscribe", s);
  in.text = "please hang";
  auto handle = rt->send(running.id, in);
  {
    std::unique_lock<std::mutex> lock{mu};
    cv.wait(lock, [&] { return calls == 2; });
  }
  std::printf("ready %s %s\n", bystander.id.c_str(), running.id.c_str());
  std::fflush(stdout);
  for (;;) pause();
}
