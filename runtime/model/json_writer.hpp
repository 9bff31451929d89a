// json_writer: appends compact JSON text to a string.
//
// The caller is responsible for structure (begin/end pairs, a key before each
// value inside objects); commas are inserted automatically. Strings must be valid
// UTF-8 (the codec checks before writing). Not thread-safe; one per output.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace skein {

class json_writer {
 public:
  // `out` must outlive the writer; text is appended to it.
  explicit json_writer(std::string* out) : out_(out) {}

  void begin_object();
  void end_object();
  void begin_array();
  void end_array();
  void key(std::string_view k);
  void string(std::string_view s);
  void int64(int64_t v);
  void uint64(uint64_t v);
  void number(double v);  // finite values only; the caller checks
  void boolean(bool v);
  void null();
  void raw(std::string_view json);  // an already valid, minified JSON value

  // Convenience: key + value.
  void field(std::string_view k, std::string_view s) { key(k); string(s); }
  void field_int(std::string_view k, int64_t v) { key(k); int64(v); }
  void field_uint(std::string_view k, uint64_t v) { key(k); uint64(v); }
  void field_bool(std::string_view k, bool v) { key(k); boolean(v); }
  void field_number(std::string_view k, double v) { key(k); number(v); }
  // key + an array of every string in `strings` (a range of string-likes).
  template <class Strings>
  void field_strings(std::string_view k, const Strings& strings) {
    key(k);
    begin_array();
    for (const auto& s : strings) string(s);
    end_array();
  }

 private:
  void separate();

  std::string* out_;
  bool need_comma_ = false;
};

// Appends `s` as a quoted, escaped JSON string.
void append_json_string(std::string* out, std::string_view s);

}  // namespace skein
