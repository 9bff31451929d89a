// engine: the model adapter interface. Given the working conversation and the
// tools, an engine produces the next step of a run: text, thinking, tool calls,
// usage and its session id — asynchronously.
//
// Contract for implementers:
// - start() returns at once; the work happens elsewhere (a timer, a thread, I/O).
// - callbacks.on_done is called exactly once per call unless the call was
//   cancelled first; after cancel() it may still come and is ignored.
// - callbacks may run on any thread and must not block; on_delta (optional) may
//   be called any number of times before on_done.
// - an engine object is shared by every thread of an agent: start() must be
//   thread-safe.
//
// This header lives in runtime/model/ (not runtime/) so that the thread actor,
// one layer down, can drive engines without an upward include.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/model/event.hpp"
#include "runtime/model/event_list.hpp"
#include "runtime/model/status.hpp"

namespace skein {

struct tool_spec {
  std::string name;
  std::string description;
  std::string schema_json = "{}";  // JSON schema of the arguments
};

// Why an engine is called: a step of a run, or a one-off call of an effect
// outside any run (no tools are offered; the reply's text is the answer).
enum class engine_purpose : uint8_t {
  run,      // a step of a run
  title,    // a 3-6 word title for the conversation
  summary,  // a summary of the conversation, for compaction
};

struct engine_request {
  engine_purpose purpose = engine_purpose::run;
  std::string thread_id;
  std::string task_id;              // the task the thread is dedicated to; "" when none
  std::string run_id;
  uint32_t turn = 1;                // 1-based step of the run
  std::string session_id;           // non-empty: resume this engine session
  // The working conversation; never empty. Shared with the thread, not copied
  // (event_list.hpp): an engine that keeps it past start() keeps a snapshot.
  event_list conversation;
  std::vector<tool_spec> tools;
};

struct requested_tool_call {
  std::string call_id;
  std::string name;
  std::string arguments_json = "{}";
};

struct engine_step {
  std::string text;
  std::string thinking;
  std::vector<requested_tool_call> tool_calls;  // empty: this is the final step
  token_usage usage;
  double cost_usd = 0;
  std::string session_id;
};

struct engine_reply {
  status result;               // not ok: the call failed
  bool resume_failed = false;  // the session in the request could not be resumed
  engine_step step;
};

// A call in flight. Destroying the handle does not cancel the call.
class call_handle {
 public:
  virtual ~call_handle() = default;
  virtual void cancel() = 0;
};

struct engine_callbacks {
  std::function<void(std::string delta)> on_delta;  // may be empty
  std::function<void(engine_reply reply)> on_done;
};

class engine {
 public:
  virtual ~engine() = default;
  virtual std::unique_ptr<call_handle> start(engine_request request, engine_callbacks callbacks) = 0;
};

// Timers for engines and tools that simulate or wait: the runtime provides one
// backed by the actor system's clock, so deterministic tests control time.
class timer_service {
 public:
  virtual ~timer_service() = default;
  // Runs `fn` once after `delay`, on some thread of the runtime.
  virtual void after(std::chrono::milliseconds delay, std::function<void()> fn) = 0;
};

// Builds an engine from an agent's engine configuration (a JSON object).
// `timers` outlives every engine built with it.
using engine_factory = std::function<status(std::string_view config_json, timer_service& timers,
                                            std::shared_ptr<engine>* out)>;

}  // namespace skein
