// The work-item calls of the runtime (runtime.hpp): their arguments and answers.
// Plain values.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "runtime/model/manifest.hpp"
#include "runtime/model/work.hpp"

namespace skein {

// Knowledge-graph triples (graph column family), each written in the same batch
// as the event that causes it. Nodes are typed names: "agent:<id>",
// "thread:<id>", "session:<id>", "issue:<external id>".
//   created_thread    agent:A or session:S -> thread:T   (an item is created)
//   resolves_thread   session:S or agent:A -> thread:T   (an item is resolved)
//   relates_to_thread thread:T -> issue:X                (an item names an external issue)
struct work_triple {
  std::string subject;
  std::string predicate;
  std::string object;
  std::string agent_id;   // whose action wrote it (produced_by)
  std::string thread_id;  // the thread whose event caused it
  uint64_t seq = 0;       // that event's seq
  int64_t at_ms = 0;
  std::string project = std::string{work_default_project};  // the item's project
  bool operator==(const work_triple&) const = default;
};

inline constexpr size_t work_predicate_bytes_max = 64;  // a lens's predicate filter
// A lens's filter (the seed's predicate and project); "" matches any.
struct work_graph_filter {
  std::string predicate;
  std::string project;
  bool matches(const work_triple& t) const {
    return (predicate.empty() || t.predicate == predicate) && (project.empty() || t.project == project);
  }
};

using work_counts = std::vector<std::pair<std::string, uint64_t>>;
inline constexpr size_t work_graph_top_max = 10;         // top subjects, objects, agents (the seed's)
inline constexpr size_t work_graph_top_issues_max = 15;  // top issues (the seed's)
struct work_graph_stats {
  uint64_t triples = 0;
  uint64_t nodes = 0;
  work_counts by_predicate;  // sorted by predicate
  // The seed's lists, most first, then by name: nodes by the triples naming
  // them as subject, and as object; issue: nodes by the triples naming them
  // either way; agents ("agent:" id) by the triples their actions wrote.
  work_counts top_subjects;
  work_counts top_objects;
  work_counts top_issues;
  work_counts top_agents;
};

// Creating an item. Dedup: cosine similarity > work_dedup_similarity against the
// agent's open items (the agent's embedder; `hashing` where it names none) returns
// the existing item, touched; equal normalized text is the fallback (and the only
// test when the embedder fails). Concurrent creates of one text yield one item.
inline constexpr double work_dedup_similarity = 0.85;
inline constexpr size_t work_items_per_agent_max = 1000000;  // open items of one agent (overloaded past it)
inline constexpr size_t work_relates_max = 64;                // relates_to of one create
inline constexpr size_t work_session_texts_max = 256;         // open_items, and topics, of one close
// A close compares with the latest work_sessions_compared_max sessions closed
// before it, of its agent and project, closed within work_sessions_compared_ms
// (the seed's window: the last 20 sessions of the last 30 days).
inline constexpr size_t work_sessions_compared_max = 20;
inline constexpr int64_t work_sessions_compared_ms = 30LL * 24 * 3600 * 1000;
inline constexpr int64_t work_embed_timeout_ms = 5000;        // an embedding waited for, then text only
struct work_create {
  std::string agent_id;
  std::string text;
  std::string session_id;               // "" if none: the created_thread subject is the agent
  std::vector<std::string> relates_to;  // external issue ids: relates_to_thread triples
  std::vector<std::string> tags;
  // "": work_default_project. Dedup compares with this project's open items only.
  std::string project;
  // The external issue the item is for (the seed's linear_issue): kept with the
  // item, and named by a relates_to_thread triple as relates_to's are.
  std::string linear_issue;
};
struct work_create_result {
  manifest thread;   // the item (new, or the existing one touched)
  bool deduplicated = false;
  std::string matched_by;  // "embedding" | "text" | "" when new
  double similarity = 0;   // of the match
};

// Resolving: by thread id, or by case-insensitive text match among the agent's
// open items (substring of the text; exactly one match required — otherwise
// not_found, or conflict listing the candidates' ids and texts).
struct work_resolve {
  std::string agent_id;
  std::string thread_id;   // one of thread_id / text_match
  std::string text_match;
  std::string note;        // the resolution note (may be empty)
  std::string session_id;  // the resolving session, "" if none
  // By text: the project whose open items are matched ("": every project). By
  // id: "" any; else the item must be of this project (invalid_input naming project).
  std::string project;
};

struct work_entry {
  manifest thread;
  work_vitality vitality;
};

struct work_list_query {
  std::string agent_id;
  // Which items: open ones by default (stages emerging..dormant, archived by
  // the clock excluded unless asked).
  std::vector<work_stage> stages;  // empty: emerging, active, cooling, dormant
  bool project_state = false;      // true: the PROJECT STATE: items only
  size_t limit = 100;              // 1..work_list_limit_max
  std::string cursor;              // "" first page
  std::string project;             // "": every project
  // false: total_open and total_resolved are left 0, and the agent's stored
  // rows are not scanned for the resolved ones (a caller paging every item).
  bool totals = true;
};
inline constexpr size_t work_list_limit_max = 1000;
inline constexpr size_t work_graph_depth_max = 8;
struct work_list_page {
  std::vector<work_entry> items;   // by vitality, highest first, then thread id
  std::string next_cursor;
  // Over every page: the agent's open and resolved items of the query's project
  // and kind (project_state), whatever the stages asked (the seed's totals).
  uint64_t total_open = 0;
  uint64_t total_resolved = 0;
};

struct work_sweep_options {
  std::string agent_id;       // "": every agent
  bool auto_archive = false;  // archive items dormant >= 30 days (else only record dormancy)
  std::string project;        // "": every project
};
struct work_sweep_result {
  uint64_t examined = 0;
  std::vector<std::string> dormant;   // dormancy recorded now
  std::vector<std::string> archived;  // archived now
};

// Suggestions: topics recurring across sessions (suggestions column family).
inline constexpr double work_suggest_similarity = 0.70;   // a topic recurs
inline constexpr double work_suggest_covered = 0.80;      // an open item covers it
inline constexpr size_t work_suggest_sessions_min = 3;    // sessions a topic recurs in
inline constexpr uint32_t work_suggest_dismissals_max = 3; // then suppressed for good
enum class suggestion_status : uint8_t { pending, promoted, dismissed, suppressed };
std::string_view to_string(suggestion_status s);
struct work_suggestion {
  std::string id;
  std::string agent_id;
  std::string text;
  suggestion_status status = suggestion_status::pending;
  std::vector<std::string> sessions;  // evidence: the sessions the topic recurred in
  uint32_t dismissals = 0;
  std::string promoted_thread;        // the item it became
  int64_t created_at_ms = 0;
  int64_t updated_at_ms = 0;
  std::string project = std::string{work_default_project};  // of the sessions it recurred in
  bool operator==(const work_suggestion&) const = default;
};

// Sessions (sessions column family). start returns what the agent carries and
// runs the archive sweep for it; close turns the payload's open items into items
// (deduplicated), records the session and its texts, and derives suggestions.
// A session belongs to one project: it lists, sweeps and suggests within it.
struct work_session_start {
  std::string agent_id;
  std::string session_id;        // "": minted
  bool auto_archive = true;      // the sweep's
  std::string project;           // "": work_default_project
};
struct work_session_started {
  std::string session_id;
  std::vector<work_entry> items;          // open items, highest vitality first
  std::vector<work_entry> project_state;  // PROJECT STATE: items, apart
  std::vector<work_suggestion> suggestions;  // pending, of the project
  work_sweep_result sweep;
  std::string project;                       // the session's
};
struct work_session_close {
  std::string agent_id;
  std::string session_id;
  std::string summary;                  // free text, one of the session's texts
  std::vector<std::string> open_items;  // each becomes an item (deduplicated)
  std::vector<std::string> topics;      // further session texts for suggestions
  std::string project;                  // "": the session's (from its start), else work_default_project
};
struct work_session_closed {
  std::vector<work_create_result> items;
  std::vector<work_suggestion> suggestions;  // created or given evidence by this close
};

}  // namespace skein
