// child_process: runs a program (the kernl baselines' Node scripts) as a child of
// skein-bench, collects what it prints and how it ended, and kills it past a
// timeout. Blocking; any thread, one child per call.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace skein::bench {

// The first executable `name` on PATH, or "".
std::string find_on_path(const char* name);

// What the child printed (stdout and stderr together) and how it ended.
struct child_outcome {
  std::string output;     // at most child_output_bytes_max, the rest dropped
  int exit_code = -1;     // -1: killed by a signal, or by the timeout
  bool timed_out = false;
};

inline constexpr size_t child_output_bytes_max = 1 << 20;

// Runs args[0] (a path) with its stdout and stderr on one pipe until it ends or
// `timeout_s` passes (then kills it). "" or why it could not start.
std::string run_child(const std::vector<std::string>& args, double timeout_s, child_outcome* out);

// The last non-empty line of `text`, without its line end.
std::string last_line(std::string_view text);

}  // namespace skein::bench
