// Values that cross the runtime's surface: an input to a thread, the result of a
// run, and the options of a new thread. Plain value types.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/model/agent.hpp"
#include "runtime/model/event.hpp"
#include "runtime/model/manifest.hpp"
#include "runtime/model/status.hpp"

namespace skein {

inline constexpr size_t input_bytes_max = 1 << 20;  // text of one input
inline constexpr size_t title_bytes_max = 1024;
inline constexpr size_t tags_max = 64;

struct run_input {
  std::string text;
  message_role role = message_role::user;
  std::string idempotency_key;  // optional: a retried send with the same key gets the first run
  std::string source = "api";   // who sent it: api, user, scheduler, agent
  std::string run_id;           // minted by the runtime when empty
  // House threads only, set by the thread actor (a caller's values are ignored):
  // the member agent whose run this is, and whether the input is in the log
  // already (a later member's turn on it: its run appends no message). Kept in
  // the inbox so that a crash between two members' runs loses none of them.
  std::string member;
  bool follow_up = false;
};

// Checks text (UTF-8, input_bytes_max), key and source; names the field.
status validate_input(const run_input& in);

// An accepted input waiting in a thread's inbox (the `inbox` column family):
//   inbox value := {"v":1,"run_id":id,"role":"user"|"assistant"|"system","text":string,
//                   "source":id,"idempotency_key":string
//                   [,"member":id,"follow_up":true]}           (format version 1)
// (member and follow_up came later in version 1: written only when set.)
// Decoding checks what validate_input checks.
status encode_inbox_input(const run_input& in, std::string* out);
status decode_inbox_input(std::string_view json, run_input* out, const json_limits& limits = {});

// run_outcome and its names: manifest.hpp (a manifest keeps its last run's).

struct run_result {
  std::string thread_id;
  std::string run_id;
  run_outcome outcome = run_outcome::completed;
  std::string text;    // the assistant message that ended the run
  std::string error;   // failed runs: what went wrong
  token_usage usage;
  double cost_usd = 0;
  uint64_t duration_ms = 0;
  uint32_t turns = 0;
  uint64_t first_seq = 0;  // the run's first and last events in the log
  uint64_t last_seq = 0;
};

// Rebuilds the result of run `run_id` from a slice of the log that starts at the
// run's first event; not_found when the slice holds no thread.stop for it.
status result_from_log(const std::string& thread_id, const std::string& run_id,
                       const std::vector<event>& events, run_result* out);

struct thread_options {
  std::string agent_id;
  std::string title;
  std::string name;
  std::vector<std::string> tags;
  std::string parent_thread_id;  // a child thread: its id is minted from the parent
  std::string task_id;           // a thread bound to a task: at most one thread per task
  std::optional<mid_run_policy> policy;  // overrides the agent's
  // The agent's DM thread (parent kind agent): one per agent, its agent an `always`
  // member. Use runtime::dm_thread(), which creates or reuses it.
  bool dm = false;
  // A house (root thread only): members run on each input they trigger.
  std::vector<house_member> members;
  // A JSON object merge-patched (RFC 7386) onto the agent's engine_config for this
  // thread's engine calls; "" or "{}": none. At most engine_config_bytes_max bytes.
  std::string engine_config;
};

inline constexpr size_t engine_config_bytes_max = 64 << 10;  // a thread's engine_config patch
inline constexpr size_t engine_config_depth_max = 16;        // its nesting

status validate_thread_options(const thread_options& o);

// RFC 7386 JSON merge patch: `patch` applied to `target` (both valid JSON; a
// non-object patch replaces the target). *out is minified JSON.
status merge_patch(std::string_view target, std::string_view patch, std::string* out);
// The engine_config patch a manifest's config holds ("" when none).
std::string thread_engine_patch(const std::string& manifest_config);

// The mid-run policy a thread runs under: its manifest's override, else the agent's.
mid_run_policy effective_policy(const std::string& manifest_config, mid_run_policy agent_policy);

}  // namespace skein
