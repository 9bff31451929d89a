// engine_policy: what a thread may change of its agent's engine config.
//
// A thread's engine_config patch (thread_options.engine_config, merged by RFC
// 7386) is set by whoever creates the thread — a token scoped to the agent, not
// the admin who configured the agent. For the built-in engines that reach
// outside the process, the patch may touch only the settings of a conversation:
//   openai   model, temperature, max_tokens   (never base_url, api_key_env or
//            ca_file: a thread must not send the server's key elsewhere)
//   process  nothing                            (never command, env or cwd: a
//            thread must not choose what the server runs)
// Other engines (scripted, a host's own) take any patch: their host decides.
// The rule is checked when a thread is created (refused, naming the key) and
// again when its engine is built (a thread imported or created before the rule
// fails its runs, saying why).
#pragma once

#include <string_view>

#include "runtime/model/status.hpp"

namespace skein {

// ok when `patch` (a JSON object; "" or "{}": none) only holds keys a thread of
// an agent with engine `engine` may set; invalid_input naming the first other
// key as field "engine_config.<key>" otherwise.
status check_thread_engine_patch(std::string_view engine, std::string_view patch);

}  // namespace skein
