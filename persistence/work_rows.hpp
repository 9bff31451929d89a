// work_rows: the rows of the work-item column families (work, graph, sessions,
// suggestions) as side rows of a tick, and their decoders. The grammar is at the
// top of work_rows.cpp. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "persistence/event_log.hpp"
#include "runtime/model/work_api.hpp"

namespace skein {

// What the work column family keeps of one item: enough for dedup, listings and
// the sweep without reading the threads column family.
struct work_row {
  std::string agent_id;
  std::string thread_id;
  work_item item;
  std::vector<float> vector;  // empty: not embedded yet (the embedder failed)
};

// A recorded session (sessions column family).
struct work_session_row {
  std::string agent_id;
  std::string id;
  int64_t started_at_ms = 0;
  int64_t closed_at_ms = 0;  // 0: open
  std::vector<std::string> texts;
  std::vector<std::vector<float>> vectors;  // one per text, or none (not embedded)
  std::string project = std::string{work_default_project};
};

namespace keys {
std::string work_key(std::string_view agent, std::string_view thread);
std::string work_prefix(std::string_view agent);  // agent "/"
std::string graph_subject_prefix(std::string_view subject);  // "s/" subject 0x00
std::string graph_object_prefix(std::string_view object);    // "o/" object 0x00
std::string graph_agent_prefix(std::string_view agent);      // "g/" agent 0x00
std::string session_key(std::string_view agent, std::string_view id);
std::string suggestion_key(std::string_view agent, std::string_view id);
}  // namespace keys

side_row work_row_put(const work_row& r);
side_row work_row_erase(std::string_view agent, std::string_view thread);
// The three keys of one triple (by subject, by object, by agent), all holding it.
std::vector<std::string> triple_keys(const work_triple& t);
std::vector<side_row> triple_rows(const work_triple& t);
side_row session_row_put(const work_session_row& s);
side_row suggestion_row_put(const work_suggestion& s);

status decode_work_row(std::string_view value, work_row* out);
status decode_triple(std::string_view value, work_triple* out);
status decode_session_row(std::string_view value, work_session_row* out);
status decode_suggestion(std::string_view value, work_suggestion* out);

}  // namespace skein
