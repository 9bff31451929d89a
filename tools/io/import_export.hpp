// import_export: brings threads in from other agent tools' logs, and writes a
// thread out as skein JSONL.
//
// Pure functions over strings: no files, no network, no actors. The caller reads
// the body and hands the imported threads to the runtime (which assigns nothing
// here: ids, seqs and times are already set). Safe to call from any thread; each
// call parses with that thread's own JSON parser.
//
// Formats (one thread per body unless said otherwise):
//   skein     our own export: a manifest line ({"v":1,"agent_id":...}), then one
//             event per line, seqs 1..n.
//   opennova  JSONL: a camelCase manifest line (agentId, sessionId, taskId, title,
//             createdAt, updatedAt, id), then event lines keyed by "type"
//             (message, tool_use, tool_result, assistant_text, result; no type: a message).
//   lace      JSONL event dumps, no manifest: {"type":"USER_MESSAGE","data":...,
//             "timestamp":...,"threadId":...}; one thread per threadId.
//   gitmem    one JSON document: an array of work items (or {"threads":[...]}); one
//             thread per item.
//
// Errors are invalid_input naming where: "line N: ..." for JSONL (lines count from 1,
// blank lines included), "item N: ..." for gitmem (N is the array index, from 0).
// What parses is also checked in the form the log will store it — skein's event
// envelope is wider than most source lines and nests a tool input two levels
// down — so an import either fails here, naming the limit, or reads back whole.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/model/event.hpp"
#include "runtime/model/json_codec.hpp"
#include "runtime/model/manifest.hpp"
#include "runtime/model/status.hpp"

namespace skein {

inline constexpr size_t import_bytes_max = 64 << 20;    // one import body
inline constexpr size_t import_events_max = 100'000;    // per thread
inline constexpr size_t import_threads_max = 10'000;    // per body (lace, gitmem)

enum class import_format { auto_detect, skein, opennova, lace, gitmem };

// "auto", "skein", "opennova", "lace", "gitmem".
std::optional<import_format> parse_import_format(std::string_view name);
std::string_view to_string(import_format f);

struct imported_thread {
  skein::manifest manifest;  // id valid, agent_id set, last_seq == events.size()
  std::vector<event> events; // seq 1..n; ts_ms set; run_id "" unless the source had one
};

struct import_result {
  import_format format = import_format::auto_detect;  // the format actually used
  std::vector<imported_thread> threads;
  bool torn_last_line = false;  // a final line that was cut off was skipped
  std::string torn_detail;      // "line 12: unterminated JSON (skipped)"
};

// Parses a whole import body. `default_agent` is the agent where the source names
// none (opennova without agentId, lace, gitmem); it must be a valid id then.
// Any bad line fails the whole import and leaves *out untouched, except a torn last
// line: one with no trailing newline that is not valid JSON is skipped and reported.
// Events without a time in the source take the time of the event before them (the
// thread's created time for the first).
status parse_import(std::string_view body, import_format format, const std::string& default_agent,
                    import_result* out);

// skein JSONL: encode_manifest on the first line, then encode_event per event, each
// line ending in "\n". Refuses what parse_import would refuse (seqs not 1..n,
// m.last_seq != events.size(), a limit exceeded), so every export imports back equal.
// *out is untouched on error.
status export_thread(const manifest& m, const std::vector<event>& events, std::string* out);
// export_thread() of events as stored (event_log::read_events_raw): their JSON
// is the line, byte for byte what encoding them again would write.
status export_thread_raw(const manifest& m, const std::vector<raw_event>& events, std::string* out);

}  // namespace skein
