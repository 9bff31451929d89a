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
#include "runtime/model/event_list.hpp"

namespace skein {

// `log` is a thread's complete history in seq order.
std::vector<event> working_conversation(const std::vector<event>& log);

// Extends a working conversation by one new event of its log, by the same rules
// (a compaction starts the view again; a system prompt replaces the one in
// front). For a log whose tool calls all have results, folding this over the
// log gives working_conversation(log).
void extend_working_conversation(std::vector<event>* view, const event& e);

// A working conversation as the list a thread keeps and lends to its engine
// calls: its system prompt (first, if it has one) pinned, so that it can be
// replaced in O(1).
event_list working_list(std::vector<event> view);

// As above, on such a list: O(1) per event, whatever the length of the view.
void extend_working_conversation(event_list* view, const event& e);

// The text of the synthesized result for a tool call that never got one.
inline constexpr const char* missing_tool_result_text = "(error: tool call has no result)";

}  // namespace skein
