// The built-in `scripted` engine: deterministic replies from JSON rules, for the
// demo, the tests and the benchmarks.
//
//   config := {"latency_ms":uint, "rules":[rule...], "default":rule, "summary":rule, "title":rule}
//   rule   := {"match":regex, "turn":uint,                 (both optional: match any)
//              "reply":string, "thinking":string,
//              "tool_calls":[{"name":string,"arguments":object,"id":string}],
//              "latency_ms":uint, "deltas":[string], "error":string, "stall":bool,
//              "resume_fails":bool, "usage":{"input_tokens":uint,"output_tokens":uint},
//              "cost_usd":number}
//
// A rule matches when its regex finds a match in the run's input (the last user
// message; its first scripted_match_bytes_max bytes) and its turn, if given,
// equals the step's turn. The first match wins;
// without one the `default` rule applies, and without that the reply echoes the
// input (a step with tool calls says nothing unless it has a reply). `error` fails the call, `stall` never answers (until cancelled),
// `resume_fails` fails any call that resumes a session, `deltas` stream before
// the reply. "{tool_result}" in a run's reply becomes the text of the
// conversation's last tool result (a delegating agent passes its child's answer
// on). Latency runs on the runtime's timer_service. A summary call
// (engine_purpose::summary, for compaction) answers with the `summary` rule's
// reply, error, stall or latency; without a reply, with a deterministic one:
// "(scripted summary of N events) | <first 40 bytes of each user message>...". A title call (engine
// purpose title, from the titles effect) uses the `title` rule: its reply, with
// "{n}" replaced by the engine's title call count, or its error/stall/latency;
// without one the reply is the first user message (the effect cuts it to words).
#pragma once

#include <memory>
#include <string_view>

#include "runtime/model/engine.hpp"

namespace skein {

inline constexpr size_t scripted_match_bytes_max = 4096;  // of the input a rule's regex sees

status make_scripted_engine(std::string_view config_json, timer_service& timers,
                            std::shared_ptr<engine>* out);

}  // namespace skein
