// work items: threads an agent carries across sessions as open items (docs/architecture.md, "Work items").
//
// Any thread may carry work-item fields (manifest.work). Every transition of an
// item — created, touched, resolved, dormant, revived, archived, related — is a
// signal event in the thread's log, written in the same tick as the manifest's
// new fields and the knowledge-graph triples it implies. Vitality and lifecycle
// are computed on read from the stored fields and the runtime's clock; the
// sweep records what the clock made of them (dormant, and archived when asked).
//
// A plain value header: no actor, no storage.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/model/status.hpp"

namespace skein {

// Stored: the order is the stored enum's; new values go last.
enum class work_status : uint8_t { open, resolved, archived };
std::string_view to_string(work_status s);
std::optional<work_status> parse_work_status(std::string_view name);

// operational: the text mentions deploy, fix, debug, hotfix, urgent, broken,
// incident or blocker (as words, any case): half-life 3 days. backlog: 21 days.
enum class work_class : uint8_t { operational, backlog };
std::string_view to_string(work_class c);
std::optional<work_class> parse_work_class(std::string_view name);

// The lifecycle, computed on read: emerging (< 24 h old) -> active (vitality >
// 0.5) -> cooling (0.2..0.5) -> dormant (< 0.2) -> archived (dormant >= 30 days);
// resolved from any stage. archived and resolved are terminal.
enum class work_stage : uint8_t { emerging, active, cooling, dormant, archived, resolved };
std::string_view to_string(work_stage s);
std::optional<work_stage> parse_work_stage(std::string_view name);

inline constexpr size_t work_text_bytes_max = 4096;        // an item's text, valid UTF-8
inline constexpr size_t work_note_bytes_max = 16384;       // a resolution note
inline constexpr int64_t work_emerging_ms = 24LL * 3600 * 1000;
inline constexpr int64_t work_archive_after_dormant_ms = 30LL * 24 * 3600 * 1000;
inline constexpr double work_half_life_operational_days = 3;
inline constexpr double work_half_life_backlog_days = 21;
// Items whose text starts with this (any case) are project state: listed apart,
// never in ordinary listings, never deduplicated against ordinary items.
inline constexpr std::string_view work_project_state_prefix = "PROJECT STATE:";
// The project of an item created without one (the seed's default scope).
inline constexpr std::string_view work_default_project = "default";
inline constexpr size_t work_project_bytes_max = 128;  // a project's name, valid UTF-8

// The work-item fields of a thread (manifest.work).
struct work_item {
  std::string text;
  work_status status = work_status::open;
  work_class cls = work_class::backlog;
  bool project_state = false;
  uint64_t touch_count = 0;         // touches, creation not counted
  int64_t created_at_ms = 0;
  int64_t last_touched_at_ms = 0;   // creation counts as the first touch time
  int64_t dormant_since_ms = 0;     // recorded by the sweep; 0: not recorded; cleared on revival
  int64_t resolved_at_ms = 0;
  std::string resolution;           // the resolution note
  std::string resolved_session;     // the session that resolved it, "" if none
  int64_t archived_at_ms = 0;
  // The scope of work the item belongs to (the seed's `project`): dedup, text
  // matches, listings, sweeps and suggestions stay within one project.
  std::string project = std::string{work_default_project};
  std::string linear_issue;  // the external issue it was created for, "" if none
  bool operator==(const work_item&) const = default;
};

// vitality = 0.55 * recency + 0.45 * frequency, each in [0, 1]:
//   recency   = exp(-ln 2 * days_since_touch / half_life)
//   frequency = min(log(touch_count + 1) / log(days_alive + 1), 1), days_alive
//               floored at 1 day so a young item never divides by log 1.
struct work_vitality {
  double vitality = 0;
  double recency = 0;
  double frequency = 0;
  work_stage stage = work_stage::emerging;
  // When the item became (or becomes, computed) dormant; 0 while it is not.
  int64_t dormant_since_ms = 0;
};

work_class classify_work(std::string_view text);
bool is_project_state(std::string_view text);
// Lowercase, ASCII punctuation stripped, whitespace runs collapsed to one space,
// trimmed: the text dedup's fallback compares these.
std::string normalize_work_text(std::string_view text);
// The vitality and stage of `w` at `now_ms` (status resolved/archived are their
// stages whatever the clock says). An open item that is dormant by the clock but
// has no recorded dormant_since gets the computed moment vitality fell below 0.2.
work_vitality assess_work(const work_item& w, int64_t now_ms);
// Checks text (1..work_text_bytes_max bytes, valid UTF-8, not blank); `field`
// names it in the error.
status validate_work_text(std::string_view text, std::string_view field);
// Checks a project name (1..work_project_bytes_max bytes, valid UTF-8, no
// control characters); `field` names it in the error.
status validate_work_project(std::string_view project, std::string_view field);

}  // namespace skein
