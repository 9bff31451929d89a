// Runtime calls a test needs to succeed: the test stops, printing the status,
// unless they do. Callers add their own context with INFO before the call.
#pragma once

#include <catch2/catch.hpp>
#include <string>

#include "runtime/runtime.hpp"

namespace skein::test {

// One call of a runtime method that answers into its second argument
// (create_item, list_items, session_close, ...); returns the answer.
template <class Out, class In>
Out answer_of(runtime& rt, status (runtime::*call)(const In&, Out*), const In& request) {
  Out out;
  status s = (rt.*call)(request, &out);
  INFO(s.to_string());
  REQUIRE(s.is_ok());
  return out;
}

// Creates agent `id` on `rt`, its scripted engine following `rules`.
inline void scripted_agent_on(runtime& rt, const std::string& id, const std::string& rules) {
  agent_config a;
  a.id = id;
  a.engine_config = rules;
  status s = rt.create_agent(a);
  INFO(s.to_string());
  REQUIRE(s.is_ok());
}

}  // namespace skein::test
