// manifest: the row that describes a thread (its log is separate).
//
// Stored in the same atomic batch as the events of a tick that changes it; a
// tick that only appends may leave the stored row behind, and the event log
// reads `last_seq` (and then updated_at) from the log itself
// (persistence/event_log_tick.cpp), so `last_seq` as read always equals the seq of
// the log's last event. A plain value type.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/model/event.hpp"
#include "runtime/model/status.hpp"
#include "runtime/model/work.hpp"

namespace skein {

enum class thread_status : uint8_t { open, idle, running, completed, failed, cancelled };
inline constexpr int thread_status_count = 6;

std::string_view to_string(thread_status s);
std::optional<thread_status> parse_thread_status(std::string_view name);

// How a run ended (run.cpp has the names).
enum class run_outcome : uint8_t { completed, failed, cancelled };
std::string_view to_string(run_outcome o);
std::optional<run_outcome> parse_run_outcome(std::string_view name);

// What a thread shows, after each outcome at any depth — the one rule that
// diagnose, the HTTP manifests and listings, and the /ui viewer all apply:
// - status (stored): `running` while a run is under way. After a run a root
//   thread (parent kind none) is `open` again, whatever the outcome, since it
//   takes the next input; a bound thread (a child, a task's, a schedule's, a
//   DM thread) keeps its last outcome: completed, failed or cancelled. A run
//   closed from the log (a crash, an orphaned run) leaves `failed` at any depth.
// - stage (derived): `running`, or `stalled` when its heartbeat is stale;
//   otherwise the last run's outcome when it was failed or cancelled, else
//   `idle` (the last run completed, or none ran).
std::string_view thread_stage(thread_status status, std::optional<run_outcome> last_outcome, bool stale);

// What a thread hangs from, if anything: a parent thread (delegation, a sub-job), a
// task, a schedule, or an agent (that agent's DM thread: parent_id is the agent id).
// A thread with no parent is a root thread, a house when it has members.
// New kinds go last: the order is the stored enum's.
enum class parent_kind : uint8_t { none, thread, task, schedule, agent };

std::string_view to_string(parent_kind k);
std::optional<parent_kind> parse_parent_kind(std::string_view name);

// When a house member runs on an input to its house thread: on every input, or
// only when the input's text mentions it (`@<agent id>` as a word).
enum class member_trigger : uint8_t { always, on_mention };

std::string_view to_string(member_trigger t);
std::optional<member_trigger> parse_member_trigger(std::string_view name);

struct house_member {
  std::string agent_id;
  member_trigger trigger = member_trigger::always;
  bool operator==(const house_member&) const = default;
};

inline constexpr size_t house_members_max = 32;  // members of one house thread

// Checks ids, duplicates and house_members_max; `field` names the list in errors.
status validate_members(const std::vector<house_member>& members, std::string_view field);
// Whether `text` mentions `agent_id` as `@agent_id` followed by no id character.
bool mentions(std::string_view text, std::string_view agent_id);
// The members an input with `text` triggers, in member order.
std::vector<std::string> triggered_members(const std::vector<house_member>& members,
                                           std::string_view text);

struct manifest {
  std::string id;
  std::string agent_id;
  parent_kind parent = parent_kind::none;
  std::string parent_id;           // empty iff parent == none
  std::string session_id;          // the engine's session, to resume it
  std::string task_id;
  std::string title;
  std::string name;
  std::vector<std::string> tags;   // each a valid id, no duplicates
  int64_t pinned_at_ms = 0;        // 0: not pinned
  std::string environment_id;
  thread_status status = thread_status::open;
  std::optional<run_outcome> last_outcome;  // of the last finished run; none before one ends
  token_usage usage;               // totals over all runs
  double cost_usd = 0;             // total
  std::string config = "{}";       // per-thread overrides, a JSON object
  int64_t created_at_ms = 0;
  int64_t updated_at_ms = 0;
  uint64_t last_seq = 0;           // seq of the log's last event; 0 for an empty log
  uint64_t children_count = 0;     // counter that mints child ids (parent.1, parent.2, ...)
  int64_t heartbeat_at_ms = 0;     // 0: none yet
  bool title_generated = false;    // the title came from the titles effect (a user's replaces it)
  uint64_t compaction_seq = 0;     // seq of the latest compaction event; 0: none
  int64_t archived_at_ms = 0;      // 0: not archived (retention); archived threads leave default listings
  uint32_t depth = 0;              // delegation depth: 0 for a root, a child's is its parent's + 1
  // A house's members (each input runs every triggered member in turn); empty: an
  // ordinary thread, run by agent_id alone. A DM thread holds its agent, `always`.
  std::vector<house_member> members;
  // The work-item fields (work.hpp) when the thread is an item an agent carries
  // across sessions; empty for an ordinary thread.
  std::optional<work_item> work;

  bool operator==(const manifest&) const = default;
};

}  // namespace skein
