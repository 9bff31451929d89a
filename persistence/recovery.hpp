// Recovery at open: repair every thread left `running` by a crash.
//
// Each one gets, in one commit: an error tool_result for every tool call of its
// last run that has no result, signal thread.interrupted, thread.stop with
// outcome failed, and status failed. Only threads indexed as running are read:
// start-up cost grows with the number of interrupted runs, not with the log.
// Call before the journal starts: it writes through the log directly.
#pragma once

#include <string>
#include <vector>

#include "persistence/event_log.hpp"

namespace skein {

status repair_interrupted(event_log& log, std::vector<std::string>* repaired);

// The events that close a thread's last run, given its log: error results for
// its unanswered tool calls, signal `signal_name` (thread.interrupted after a
// crash, thread.orphaned when reconciled), thread.stop failed.
std::vector<event> interrupted_run_closing(const std::vector<event>& log,
                                           const std::string& signal_name = "thread.interrupted");

}  // namespace skein
