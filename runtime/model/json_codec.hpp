// JSON codec for events and manifests: the value format of the event log and of
// the wire. Parsing goes through simdjson's error-code API with limits on size and
// depth; every failure is `invalid_input` (or `corruption` when the caller says
// the text came from storage) and names the field or the limit.
//
// Thread-safe: each thread parses with its own parser.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "runtime/model/event.hpp"
#include "runtime/model/manifest.hpp"
#include "runtime/model/status.hpp"

namespace skein {

struct json_limits {
  size_t json_bytes_max = 4 << 20;  // one document
  size_t json_depth_max = 64;       // nesting of arrays and objects
};

// Encoding validates what it writes: strings must be UTF-8, `json` fields must be
// valid JSON (stored minified), numbers finite.
status encode_event(const event& e, std::string* out);
status encode_manifest(const manifest& m, std::string* out);

status decode_event(std::string_view json, event* out, const json_limits& limits = {});
status decode_manifest(std::string_view json, manifest* out, const json_limits& limits = {});

// Checks that `json` is one valid JSON value within limits and writes its minified
// form to `out`. `field` names it in errors.
status normalize_json(std::string_view json, std::string_view field, std::string* out,
                      const json_limits& limits = {});

class json_writer;
// Writes the `usage` object of the grammar (json_codec.cpp) as the next value.
void write_usage(json_writer& w, const token_usage& u);

// True when `s` is valid UTF-8.
bool valid_utf8(std::string_view s);

}  // namespace skein
