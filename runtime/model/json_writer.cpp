#include "runtime/model/json_writer.hpp"

#include <cassert>
#include <charconv>
#include <cmath>

namespace skein {

void append_json_string(std::string* out, std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  out->push_back('"');
  size_t run_start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out->append(s.data() + run_start, i - run_start);
    run_start = i + 1;
    switch (c) {
      case '"': out->append("\\\""); break;
      case '\\': out->append("\\\\"); break;
      case '\n': out->append("\\n"); break;
      case '\r': out->append("\\r"); break;
      case '\t': out->append("\\t"); break;
      case '\b': out->append("\\b"); break;
      case '\f': out->append("\\f"); break;
      default:
        out->append("\\u00");
        out->push_back(hex[c >> 4]);
        out->push_back(hex[c & 15]);
    }
  }
  out->append(s.data() + run_start, s.size() - run_start);
  out->push_back('"');
}

void json_writer::separate() {
  if (need_comma_) out_->push_back(',');
  need_comma_ = true;
}

void json_writer::begin_object() {
  separate();
  out_->push_back('{');
  need_comma_ = false;
}

void json_writer::end_object() {
  out_->push_back('}');
  need_comma_ = true;
}

void json_writer::begin_array() {
  separate();
  out_->push_back('[');
  need_comma_ = false;
}

void json_writer::end_array() {
  out_->push_back(']');
  need_comma_ = true;
}

void json_writer::key(std::string_view k) {
  separate();
  append_json_string(out_, k);
  out_->push_back(':');
  need_comma_ = false;  // the value follows without a comma
}

void json_writer::string(std::string_view s) {
  separate();
  append_json_string(out_, s);
}

void json_writer::int64(int64_t v) {
  separate();
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out_->append(buf, r.ptr);
}

void json_writer::uint64(uint64_t v) {
  separate();
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out_->append(buf, r.ptr);
}

void json_writer::number(double v) {
  assert(std::isfinite(v));  // JSON has no NaN or infinity; callers validate
  separate();
  char buf[32];
  // Shortest form, but never a long integral one ("444444444444444440000"):
  // past 64-bit integers a JSON reader calls that a big integer, not a number.
  auto r = std::fabs(v) < 1e18 ? std::to_chars(buf, buf + sizeof buf, v)
                                : std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  out_->append(buf, r.ptr);
}

void json_writer::boolean(bool v) {
  separate();
  out_->append(v ? "true" : "false");
}

void json_writer::null() {
  separate();
  out_->append("null");
}

void json_writer::raw(std::string_view json) {
  assert(!json.empty());  // an empty text is not a JSON value
  separate();
  out_->append(json);
}

}  // namespace skein
