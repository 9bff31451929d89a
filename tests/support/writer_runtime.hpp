// The opening the runtime writers share (child programs that tests SIGKILL at
// moments of their choosing): a runtime on the caller's options holding one
// agent of the scripted engine. A failed step is printed to stderr as
// "<program>: <step>: <status>" and answered with exit code 1.
#pragma once

#include <cstdio>
#include <memory>
#include <string>

#include "runtime/runtime.hpp"

namespace skein::test {

// Prints why `program` stops at `step`; returns the exit code, 1.
inline int writer_fail(const char* program, const char* step, const status& s) {
  std::fprintf(stderr, "%s: %s: %s\n", program, step, s.to_string().c_str());
  return 1;
}

// Opens a runtime with `o` into *rt and creates agent `agent_id` whose scripted
// engine follows `rules`. Returns 0, or writer_fail's exit code.
inline int open_with_agent(const char* program, const runtime_options& o, const std::string& agent_id,
                           const std::string& rules, std::unique_ptr<runtime>* rt) {
  if (auto s = runtime::open(o, rt); !s) return writer_fail(program, "open", s);
  agent_config a;
  a.id = agent_id;
  a.engine_config = rules;
  if (auto s = (*rt)->create_agent(a); !s) return writer_fail(program, "agent", s);
  return 0;
}

}  // namespace skein::test
