// schedule: a persisted timetable that sends an input to an agent's threads
// (issue 10, DESIGN §4 scheduler). Value types, their validation, their JSON
// codec (grammar at the top of schedule.cpp) and the pure timing rules: when a
// schedule fires next, which firings a stop missed, a preview. No clocks: every
// function takes the time it reasons about. Pure functions; thread-safe.
//
// Kinds:
//   cron      5-field expression in an IANA zone (cron.hpp has the rules, DST included)
//   interval  firings at anchor_ms + k * interval_ms, k >= 0: no drift, whatever the
//             lateness of the wakeup that fires them
//   once      one firing at at_ms; afterwards next_fire_at_ms is 0 and the schedule is kept
// A firing either creates a new trigger thread (thread_id empty; its manifest's
// parent is the schedule) or delivers to the bound thread `thread_id`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/model/event.hpp"
#include "runtime/model/json_codec.hpp"
#include "runtime/model/status.hpp"

namespace skein {

namespace json {
class object_reader;
}

enum class schedule_kind : uint8_t { cron, interval, once };
enum class missed_policy : uint8_t { skip, run_once };
enum class firing_outcome : uint8_t { fired, skipped, failed };

std::string_view to_string(schedule_kind k);
std::optional<schedule_kind> parse_schedule_kind(std::string_view name);
std::string_view to_string(missed_policy p);
std::optional<missed_policy> parse_missed_policy(std::string_view name);
std::string_view to_string(firing_outcome o);
std::optional<firing_outcome> parse_firing_outcome(std::string_view name);

// Shortest and longest interval; the shortest keeps a schedule from flooding its agent.
inline constexpr uint64_t schedule_interval_ms_min = 10;
inline constexpr uint64_t schedule_interval_ms_max = 366ull * 24 * 3600 * 1000;
// Text of a schedule's input, as any input (run.hpp's input_bytes_max) but smaller:
// the schedule row holds it and is read at every open.
inline constexpr size_t schedule_input_bytes_max = 64 << 10;
inline constexpr size_t schedule_title_prefix_bytes_max = 256;
inline constexpr size_t schedule_tags_max = 16;
// History rows kept per schedule; the oldest goes in the batch that adds one more.
inline constexpr uint64_t schedule_history_max = 1000;
// Fire times one preview returns at most.
inline constexpr size_t schedule_preview_max = 100;
// Rows one page of a listing or a history returns at most.
inline constexpr size_t schedule_page_max = 1000;
// Due times counted after a long stop: past this a skip row says "at least".
inline constexpr uint64_t schedule_missed_count_max = 100000;
// Latest instant a schedule may name (cron.hpp's horizon).
inline constexpr int64_t schedule_time_ms_max = 253402300799999;

struct schedule {
  // --- definition ---
  std::string id;        // a valid id (ids.hpp); minted "sc_..." when created without one
  std::string agent_id;
  schedule_kind kind = schedule_kind::cron;
  std::string cron;                 // kind cron
  std::string time_zone = "UTC";    // kind cron: an IANA zone
  uint64_t interval_ms = 0;         // kind interval
  int64_t anchor_ms = 0;            // kind interval: 0 at creation means created_at + interval
  int64_t at_ms = 0;                // kind once
  std::string input_text;           // the input each firing sends (source "scheduler")
  message_role input_role = message_role::user;
  std::string thread_id;            // "": a new trigger thread per firing; else the bound thread
  std::string title_prefix;         // trigger threads: title = prefix + " " + scheduled time (UTC)
  std::vector<std::string> tags;    // trigger threads' tags
  missed_policy missed = missed_policy::skip;
  bool paused = false;
  int64_t created_at_ms = 0;
  // --- state ---
  int64_t next_fire_at_ms = 0;  // 0: never again
  int64_t last_fire_at_ms = 0;  // the scheduled time of the last firing (fired or failed); 0: none
  uint64_t fire_count = 0;      // firings that delivered their input (outcome fired)
  uint64_t history_seq = 0;     // history rows ever written: the last row's key

  bool operator==(const schedule&) const = default;
};

// One row of a schedule's firing history.
struct schedule_firing {
  std::string schedule_id;
  uint64_t seq = 0;             // 1, 2, ...: the schedule's history_seq when written
  int64_t scheduled_at_ms = 0;  // the due time (skipped: the first missed one)
  int64_t fired_at_ms = 0;      // the wall time of the decision
  std::string thread_id;        // the thread created or targeted ("" when skipped)
  std::string run_id;           // the run the input starts ("" unless fired)
  firing_outcome outcome = firing_outcome::fired;
  std::string reason;           // failed: why; skipped: how many were missed
  uint64_t missed = 0;          // skipped: due times missed

  bool operator==(const schedule_firing&) const = default;
};

// Checks the definition; errors name the field ("schedule.cron", "schedule.interval_ms")
// and the limit they hit. The state fields are not checked.
status validate_schedule(const schedule& s);

status encode_schedule(const schedule& s, std::string* out, const json_limits& limits = {});
// The definition fields of a schedule from the object `r` — a stored value's
// (decode_schedule) or a create request's body: id (required when
// `id_required`), agent_id, kind, cron, time_zone, interval_ms, anchor_ms,
// at_ms, input {text, role}, thread_id, title_prefix, tags, missed, paused. An
// error names its field as `r` names it; the values are not validated
// (validate_schedule is).
status read_schedule_definition(const json::object_reader& r, bool id_required, schedule* out);
status decode_schedule(std::string_view json, schedule* out, const json_limits& limits = {});
status encode_firing(const schedule_firing& f, std::string* out, const json_limits& limits = {});
status decode_firing(std::string_view json, schedule_firing* out, const json_limits& limits = {});

// A new schedule id: "sc_" + the thread id form's date and random part.
std::string new_schedule_id(int64_t now_ms);

// The first due time strictly after `after_ms`; 0 when there is none (a once
// schedule past its time, a cron expression that never fires again).
status schedule_next_after(const schedule& s, int64_t after_ms, int64_t* out);
// The first due time at or after `from_ms` (the first firing of a new or resumed schedule).
status schedule_next_from(const schedule& s, int64_t from_ms, int64_t* out);
// Due times from s.next_fire_at_ms up to `now_ms` inclusive: how many (at most
// schedule_missed_count_max), the latest of them, and the first one after now.
struct missed_firings {
  uint64_t count = 0;
  bool capped = false;     // count stopped at schedule_missed_count_max
  int64_t latest_ms = 0;   // the last due time <= now
  int64_t next_ms = 0;     // the first due time > now; 0: none
};
status schedule_missed(const schedule& s, int64_t now_ms, missed_firings* out);
// The next `n` (<= schedule_preview_max) due times after `after_ms`.
status schedule_preview(const schedule& s, int64_t after_ms, size_t n, std::vector<int64_t>* out);

}  // namespace skein
