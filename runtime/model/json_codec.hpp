// JSON codec for events and manifests: the value format of the event log and of
// the wire. Parsing goes through simdjson's error-code API with limits on size and
// depth; every failure is `invalid_input` (or `corruption` when the caller says
// the text came from storage) and names the field or the limit.
//
// What may be stored — one rule, for the writer and for whoever prepares a value
// for it: a value is written only if reading it back under the same limits
// succeeds. Its encoding is at most json_bytes_max bytes; its nesting, raw JSON
// fields included with the levels the envelope puts above them, at most
// json_depth_max deep; every string valid UTF-8; every number finite. The
// encode_* functions enforce it; check_storable() answers without keeping the
// encoding.
//
// Thread-safe: pure functions; parsers are per document (json_reader.hpp).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "runtime/model/event.hpp"
#include "runtime/model/manifest.hpp"
#include "runtime/model/status.hpp"

namespace skein {

struct json_limits {
  size_t json_bytes_max = 4 << 20;  // one document, encoded
  // Deepest nesting of arrays and objects, counted as simdjson counts it: only
  // non-empty ones add a level. [1] is 1 deep, {"a":[2]} 2, [[]] 1, 7 and [] 0.
  size_t json_depth_max = 64;
};

// Levels the event envelope puts above a payload's raw JSON field (tool_call
// arguments, signal data, compaction events): the event object and its payload.
inline constexpr size_t event_envelope_depth = 2;
// Levels a manifest puts above its config object.
inline constexpr size_t manifest_envelope_depth = 1;

// The deepest raw JSON field (arguments, data, events) an event may hold.
inline size_t event_json_depth_max(const json_limits& limits) {
  return limits.json_depth_max > event_envelope_depth ? limits.json_depth_max - event_envelope_depth : 0;
}

// Nesting depth of one valid JSON text as json::parse counts it (json_limits):
// 0 for 7 or [], 1 for [1] or [[]], 2 for {"a":[1]}. One pass, no allocation.
size_t json_depth(std::string_view valid_json);

// Encoding validates what it writes against the storable rule (above) under
// `limits`: a refusal is invalid_input naming the field and the limit.
status encode_event(const event& e, std::string* out, const json_limits& limits = {});
status encode_manifest(const manifest& m, std::string* out, const json_limits& limits = {});

// The storable rule without keeping the encoding: ok when encode_* would succeed.
status check_storable(const event& e, const json_limits& limits = {});
status check_storable(const manifest& m, const json_limits& limits = {});

status decode_event(std::string_view json, event* out, const json_limits& limits = {});
// One stored event as the bytes encode_event wrote (the form stored and served), with the
// envelope fields read from its prefix (peek_event_envelope), undecoded.
struct raw_event {
  uint64_t seq = 0;
  event_type type = event_type::message;
  std::string json;
};

// The envelope of an event as encode_event wrote it, read without a decode: the
// seq and type from the JSON's prefix `{"seq":N,"ts":T,"run":"...","type":"name",`.
// Every quote inside a JSON string is escaped, so the first `"type":"` is the
// envelope's. false when `json` does not start that way (not encode_event's output).
bool peek_event_envelope(std::string_view json, uint64_t* seq, event_type* type);
// The event's ts from the same prefix, `{"seq":N,"ts":T,`; false when `json` does
// not start that way.
bool peek_event_ts(std::string_view json, int64_t* ts_ms);
status decode_manifest(std::string_view json, manifest* out, const json_limits& limits = {});

// Checks that `json` is one valid JSON value within limits and writes its minified
// form to `out`. `field` names it in errors.
status normalize_json(std::string_view json, std::string_view field, std::string* out,
                      const json_limits& limits = {});

class json_writer;
// Writes the `usage` object of the grammar (json_codec.cpp) as the next value.
void write_usage(json_writer& w, const token_usage& u);
// Writes the fields `usage` (write_usage) and `cost_usd` into the open object:
// what a run spent, as every record that carries it (a manifest, a result
// event, a usage row, the API's runs and usage groups) has the pair.
void write_spend(json_writer& w, const token_usage& usage, double cost_usd);
// Writes the fields of a result event's payload (usage, cost_usd, duration_ms,
// turns, outcome) into the open object: the payload in the grammar, and the
// figures of a usage row (persistence/event_log_tick.cpp). Unchecked: the
// caller checks cost_usd and outcome first.
void write_result_fields(json_writer& w, const event& e);
// The `work` object of the grammar (a manifest's work-item fields), also stored in
// the work column family's rows (persistence/work_rows.cpp).
void write_work_item(json_writer& w, const work_item& x);
namespace json {
class object_reader;
}
status read_work_item(const json::object_reader& r, work_item* out);

// True when `s` is valid UTF-8.
bool valid_utf8(std::string_view s);

}  // namespace skein
