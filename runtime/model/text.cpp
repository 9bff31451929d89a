#include "runtime/model/text.hpp"

#include <algorithm>

namespace skein {
namespace {

constexpr std::string_view replacement = "\xEF\xBF\xBD";  // U+FFFD

// What a lead byte promises: the sequence length and the range of its second
// byte (the later ones are always 0x80..0xBF). False for a byte that cannot lead.
bool lead_byte(unsigned char c, size_t* n, unsigned char* lo, unsigned char* hi) {
  *lo = 0x80;
  *hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) *n = 2;
  else if (c >= 0xE0 && c <= 0xEF) *n = 3;
  else if (c >= 0xF0 && c <= 0xF4) *n = 4;
  else return false;
  if (c == 0xE0) *lo = 0xA0;  // no overlong forms
  if (c == 0xED) *hi = 0x9F;  // no surrogates
  if (c == 0xF0) *lo = 0x90;
  if (c == 0xF4) *hi = 0x8F;  // nothing past U+10FFFF
  return true;
}

// The valid prefix length of the sequence at s[i]: n when it is whole.
size_t sequence_prefix(std::string_view s, size_t i, size_t* n) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char lo, hi;
  if (byte(i) < 0x80) {
    *n = 1;
    return 1;
  }
  if (!lead_byte(byte(i), n, &lo, &hi)) {
    *n = 1;
    return 0;
  }
  size_t k = i + 1;
  if (k >= s.size() || byte(k) < lo || byte(k) > hi) return 1;
  ++k;
  while (k < i + *n && k < s.size() && byte(k) >= 0x80 && byte(k) <= 0xBF) ++k;
  return k - i;
}

// Length of the valid UTF-8 sequence at s[i], or 0 if none starts there.
size_t valid_sequence(std::string_view s, size_t i) {
  size_t n = 0;
  size_t prefix = sequence_prefix(s, i, &n);
  return prefix == n ? n : 0;
}

// How many bytes of an invalid sequence at s[i] one U+FFFD replaces: its
// maximal subpart (the lead byte and the continuation bytes that still fit it).
size_t bad_subpart(std::string_view s, size_t i) {
  size_t n = 0;
  return std::max<size_t>(sequence_prefix(s, i, &n), 1);
}

size_t escaped_char_size(unsigned char c) {
  switch (c) {
    case '"':
    case '\\':
    case '\b':
    case '\f':
    case '\n':
    case '\r':
    case '\t':
      return 2;
    default:
      return c < 0x20 ? 6 : 1;
  }
}

}  // namespace

std::string to_valid_utf8(std::string_view s) {
  if (valid_utf8(s)) return std::string{s};
  std::string out;
  out.reserve(s.size() + 16);
  size_t i = 0;
  while (i < s.size()) {
    size_t n = valid_sequence(s, i);
    if (n > 0) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      out.append(replacement);
      i += bad_subpart(s, i);
    }
  }
  return out;
}

size_t json_escaped_size(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += escaped_char_size(c);
  return n;
}

bool make_storable_text(std::string* text, size_t bytes_max, std::string_view limit_name) {
  size_t total = text->size();  // as handed over, before any replacement
  if (!valid_utf8(*text)) *text = to_valid_utf8(*text);
  if (text->size() <= bytes_max && json_escaped_size(*text) <= bytes_max) return false;
  std::string marker_probe = "\n[skein: output cut at 0000000000 of 0000000000 bytes: " +
                             std::string{limit_name} + "]";
  size_t budget = bytes_max > marker_probe.size() ? bytes_max - marker_probe.size() : 0;
  // Keep whole characters while both the raw and the escaped size fit the budget.
  size_t keep = 0, escaped = 0;
  while (keep < text->size()) {
    size_t n = valid_sequence(*text, keep);
    size_t e = n == 1 ? escaped_char_size(static_cast<unsigned char>((*text)[keep])) : n;
    if (keep + n > budget || escaped + e > budget) break;
    keep += n;
    escaped += e;
  }
  text->resize(keep);
  *text += "\n[skein: output cut at " + std::to_string(keep) + " of " + std::to_string(total) +
           " bytes: " + std::string{limit_name} + "]";
  return true;
}

status storable_arguments(std::string_view raw, const json_limits& limits, std::string* out) {
  json_limits inner = limits;
  inner.json_depth_max = std::max<size_t>(event_json_depth_max(limits), 1);
  // The event around the arguments needs room too: keep a margin for the envelope.
  constexpr size_t envelope_bytes = 64 << 10;
  inner.json_bytes_max = limits.json_bytes_max > envelope_bytes ? limits.json_bytes_max - envelope_bytes : 0;
  std::string_view text = raw.empty() ? std::string_view{"{}"} : raw;
  status s = normalize_json(text, "tool_call.arguments", out, inner);
  if (!s) return s;
  if (out->empty() || (*out)[0] != '{')
    return status::invalid_input("tool_call.arguments: expected a JSON object");
  return status::ok();
}

}  // namespace skein
