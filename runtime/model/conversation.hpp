// The working conversation: what an engine is shown of a thread.
//
// It is the latest system prompt, then the latest compaction (if any) and every
// event after it — without local_system_message, signal and result events, which
// are for people and accounting. A tool_call with no tool_result gets a
// synthesized error result right after its tick, in the view only: the log is
// never changed by building a view. Pure functions.
#pragma once

#include <vector>

#include "runtime/model/event.hpp"

namespace skein {

// `log` is a thread's complete history in seq order.
std::vector<event> working_conversation(const std::vector<event>& log);

// The text of the synthesized result for a tool call that never got one.
inline constexpr const char* missing_tool_result_text = "(error: tool call has no result)";

}  // namespace skein
