// text: making what engines and tools hand back storable.
//
// Engine and tool output is untrusted text: it may be invalid UTF-8, larger than
// an event may be, or (tool-call arguments) JSON nested past what a reader
// accepts. The thread actor passes every such value through these functions
// before it commits, so that a commit is never refused for what a tool said.
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "runtime/model/json_codec.hpp"
#include "runtime/model/status.hpp"

namespace skein {

// `s` with every invalid UTF-8 sequence replaced by U+FFFD (each maximal bad
// subpart one replacement, as the Unicode standard recommends).
std::string to_valid_utf8(std::string_view s);

// Bytes `s` takes inside a JSON string literal, quotes excluded.
size_t json_escaped_size(std::string_view s);

// Makes *text valid UTF-8 and, when it is longer than `bytes_max` (raw or once
// escaped for JSON), cuts it at a character boundary and appends a marker that
// says how much was kept and names `limit_name`. True if it was cut.
bool make_storable_text(std::string* text, size_t bytes_max, std::string_view limit_name);

// Tool-call arguments as they may be stored: a JSON object, minified, within
// `limits` once inside its event. invalid_input names what is wrong.
status storable_arguments(std::string_view raw, const json_limits& limits, std::string* out);

}  // namespace skein
