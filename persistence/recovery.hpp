// Recovery at open: repair every thread left `running` by a crash.
//
// Each one gets, in one commit: an error tool_result for every tool call of its
// last run that has no result, signal thread.interrupted, thread.stop with
// outcome failed, and status failed. Only threads indexed as running are read:
// start-up cost grows with the number of interrupted runs, not with the log.
//
// A running thread whose manifest or events cannot be decoded is quarantined
// instead of failing the open: status failed, a `thread.quarantined` signal whose
// data names the record's key and the reason, and a thread.stop — appended after
// the last event key, whatever the values hold. When the manifest itself is
// unreadable a fresh minimal one is written from the index (agent, parent when
// the id says it is a child, tags). Only storage errors (io_error, no_space) fail
// recovery. Call before the journal starts: it writes through the log directly.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "persistence/event_log.hpp"

namespace skein {

struct quarantined_thread {
  std::string thread_id;
  std::string key;       // the unreadable record, printable: "events key t#4", "threads key t"
  std::string reason;    // why it could not be read or repaired
  bool written = false;  // false: not even the quarantine could be committed (see reason)
};

// `only`, when given, selects the threads to repair (a replicated cluster's
// partition, taken over by this node); the others are left as they are.
status repair_interrupted(event_log& log, std::vector<std::string>* repaired,
                          std::vector<quarantined_thread>* quarantined = nullptr,
                          const std::function<bool(std::string_view)>& only = {});

// The events that close a thread's last run, given its log: error results for
// its unanswered tool calls, signal `signal_name` (thread.interrupted after a
// crash, thread.orphaned when reconciled), thread.stop failed.
std::vector<event> interrupted_run_closing(const std::vector<event>& log,
                                           const std::string& signal_name = "thread.interrupted");

}  // namespace skein
