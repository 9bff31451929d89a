// tool: a capability an engine may call. Its output enters the thread as a
// tool_result event: tools are the only way information enters a thread during
// a run.
//
// Contract: invoke() returns at once; `done` is called exactly once unless the
// call was cancelled first (after cancel() it may still come and is ignored);
// `done` may run on any thread and must not block. One tool object serves every
// thread: invoke() must be thread-safe. Lives in runtime/model/ for the same
// reason as engine.hpp.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "runtime/model/cancel_token.hpp"
#include "runtime/model/engine.hpp"

namespace skein {

// The per-run context a tool call gets: which thread, run and agent it serves,
// the thread's task and delegation depth, and a token the thread actor cancels
// when the run stops wanting the answer (cancel, run end, tool timeout).
struct tool_invocation {
  std::string thread_id;
  std::string run_id;
  std::string call_id;
  std::string arguments_json = "{}";  // valid JSON, checked before invoke()
  std::string agent_id;               // the agent that owns the thread
  std::string task_id;                // the thread's task; "": none
  uint32_t depth = 0;                 // the thread's delegation depth (0: a root)
  std::shared_ptr<cancel_token> cancel;  // never null when the thread actor invokes
};

struct tool_output {
  std::string text;
  bool is_error = false;
};

class tool {
 public:
  virtual ~tool() = default;
  virtual const tool_spec& spec() const = 0;
  virtual std::unique_ptr<call_handle> invoke(tool_invocation call,
                                              std::function<void(tool_output)> done) = 0;
};

// A tool from a function that answers synchronously (quick, non-blocking work).
std::shared_ptr<tool> make_function_tool(tool_spec spec,
                                         std::function<tool_output(const tool_invocation&)> fn);

}  // namespace skein
