// Pieces shared by the import formats; private to tools/io (not installed, not
// included from outside this folder). Each format lives in its own .cpp:
// import_export.cpp (skein, detection, export), import_opennova.cpp,
// import_lace.cpp, import_gitmem.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "runtime/model/json_reader.hpp"
#include "tools/io/import_export.hpp"

namespace skein::io {

namespace dom = simdjson::dom;

// One non-blank line of a JSONL body.
struct jsonl_line {
  size_t number = 0;              // from 1; blank lines count
  std::string_view text;          // without the newline and a trailing '\r'
  bool unterminated = false;      // the body ends without a newline after it
};

// Calls `fn` for each non-blank line. A failure becomes "line N: <message>", except
// on an unterminated final line that is not valid JSON: that line is skipped and
// recorded in r->torn_last_line / r->torn_detail.
using line_fn = std::function<status(const jsonl_line&)>;
status for_each_line(std::string_view body, const line_fn& fn, import_result* r);

// Parses one line within json_limits{}; `what` names it in errors ("event", ...).
// Its elements live as long as *doc.
status parse_line(std::string_view text, std::string_view what, json::document* doc);

// "2025-03-01T10:00:00.000Z", with or without fraction, 'Z', "+hh:mm" or no zone
// (read as UTC), or a date alone. nullopt when malformed or out of range.
std::optional<int64_t> parse_iso8601_ms(std::string_view s);

// An optional time field: an ISO-8601 string or epoch milliseconds (>= 0). Absent or
// null leaves *out unchanged.
status read_time(const json::object_reader& r, std::string_view field,
                 std::optional<int64_t>* out);

// A text value: a string, or an array of strings and {"type":"text","text":...}
// blocks, joined by "\n". Other block types are an error (data would be lost).
status read_text(dom::element el, const std::string& what, std::string* out);

// Checks the agent a format falls back on.
status check_default_agent(const std::string& agent);

// Whether the event, once stored, can be read back: its stored JSON within
// json_limits{} in bytes and in nesting. The envelope is measured at its widest
// (seq at import_events_max, `ts_ms` or the widest time), so a check passed here
// holds for the seq and time finish() assigns.
status check_stored(const event& e, std::optional<int64_t> ts_ms);
// The same for a manifest as finish() leaves it.
status check_stored(const manifest& m);

// Builds one thread event by event; finish() sets seqs, fills the times the source
// lacks, sums result events into the manifest and mints an id when none is set.
class thread_builder {
 public:
  manifest m;                         // id "" until finish() mints one
  std::optional<int64_t> created_ms;  // from the source, when it says
  std::optional<int64_t> updated_ms;

  // Fails past import_events_max, or when the event could not be read back once
  // stored (check_stored).
  status add(event e, std::optional<int64_t> ts_ms);
  size_t size() const { return events_.size(); }
  // The tool of an earlier tool_call with this call id, or "".
  std::string tool_name(const std::string& call_id) const;

  // `now` is the created time when neither the source nor an event gives one.
  imported_thread finish(int64_t now);

 private:
  std::vector<event> events_;
  std::vector<std::optional<int64_t>> times_;  // parallel to events_
  std::unordered_map<std::string, std::string> tool_names_;
};

// Each format reads a non-empty body and appends its threads to r->threads.
status import_skein(std::string_view body, import_result* r);
status import_opennova(std::string_view body, const std::string& default_agent, int64_t now,
                       import_result* r);
status import_lace(std::string_view body, const std::string& default_agent, int64_t now,
                   import_result* r);
status import_gitmem(std::string_view body, const std::string& default_agent, int64_t now,
                     import_result* r);

}  // namespace skein::io
