#include "runtime/model/json_reader.hpp"

#include <algorithm>

namespace skein::json {

status parse(std::string_view text, const json_limits& limits, std::string_view what,
             dom::element* root) {
  if (text.size() > limits.json_bytes_max)
    return status::invalid_input(std::string{what} + ": " + std::to_string(text.size()) +
                                 " bytes exceeds json_bytes_max (" +
                                 std::to_string(limits.json_bytes_max) + ")")
        .with_limit("json_bytes_max");
  thread_local dom::parser parser;
  thread_local size_t parser_depth = 0;
  if (parser_depth != limits.json_depth_max) {
    if (parser.allocate(std::max<size_t>(text.size(), 4096), limits.json_depth_max) !=
        simdjson::SUCCESS)
      return status::overloaded(std::string{what} + ": cannot allocate a JSON parser");
    parser_depth = limits.json_depth_max;
  }
  auto err = parser.parse(text.data(), text.size(), true).get(*root);
  if (err == simdjson::SUCCESS) return status::ok();
  if (err == simdjson::DEPTH_ERROR)
    return status::invalid_input(std::string{what} + ": nesting exceeds json_depth_max (" +
                                 std::to_string(limits.json_depth_max) + ")")
        .with_limit("json_depth_max");
  if (err == simdjson::UTF8_ERROR) return status::invalid_input(std::string{what} + ": invalid UTF-8");
  return status::invalid_input(std::string{what} + ": malformed JSON (" +
                               simdjson::error_message(err) + ")");
}

status object_reader::open(dom::element el, std::string context, object_reader* out) {
  dom::object obj;
  if (el.get(obj) != simdjson::SUCCESS) return status::invalid_input(context + ": expected an object");
  *out = object_reader(obj, std::move(context));
  return status::ok();
}

bool object_reader::find(std::string_view field, dom::element* el) const {
  return obj_.at_key(field).get(*el) == simdjson::SUCCESS;
}

bool object_reader::has(std::string_view field) const {
  dom::element el;
  return find(field, &el);
}

status object_reader::missing(std::string_view field, bool required) const {
  if (!required) return status::ok();
  return status::invalid_input(name(field) + ": missing");
}

status object_reader::wrong(std::string_view field, std::string_view expected) const {
  return status::invalid_input(name(field) + ": expected " + std::string{expected});
}

status object_reader::string(std::string_view field, std::string* out, bool required) const {
  dom::element el;
  if (!find(field, &el)) return missing(field, required);
  std::string_view s;
  if (el.get(s) != simdjson::SUCCESS) return wrong(field, "a string");
  out->assign(s);
  return status::ok();
}

status object_reader::uint(std::string_view field, uint64_t* out, bool required) const {
  dom::element el;
  if (!find(field, &el)) return missing(field, required);
  if (el.get(*out) != simdjson::SUCCESS) return wrong(field, "an unsigned integer");
  return status::ok();
}

status object_reader::int64(std::string_view field, int64_t* out, bool required) const {
  dom::element el;
  if (!find(field, &el)) return missing(field, required);
  if (el.get(*out) != simdjson::SUCCESS) return wrong(field, "an integer");
  return status::ok();
}

status object_reader::number(std::string_view field, double* out, bool required) const {
  dom::element el;
  if (!find(field, &el)) return missing(field, required);
  if (el.get(*out) != simdjson::SUCCESS) return wrong(field, "a number");
  return status::ok();
}

status object_reader::boolean(std::string_view field, bool* out, bool required) const {
  dom::element el;
  if (!find(field, &el)) return missing(field, required);
  if (el.get(*out) != simdjson::SUCCESS) return wrong(field, "a boolean");
  return status::ok();
}

status object_reader::raw(std::string_view field, dom::element_type kind, std::string* out,
                          bool required) const {
  dom::element el;
  if (!find(field, &el)) return missing(field, required);
  if (el.type() != kind) return wrong(field, kind == dom::element_type::OBJECT ? "an object" : "an array");
  *out = simdjson::minify(el);
  return status::ok();
}

status object_reader::any_raw(std::string_view field, std::string* out) const {
  dom::element el;
  if (!find(field, &el)) return missing(field, true);
  *out = simdjson::minify(el);
  return status::ok();
}

status object_reader::element(std::string_view field, dom::element* out) const {
  if (!find(field, out)) return missing(field, true);
  return status::ok();
}

status object_reader::strings(std::string_view field, std::vector<std::string>* out,
                              bool required) const {
  dom::element el;
  if (!find(field, &el)) return missing(field, required);
  dom::array arr;
  if (el.get(arr) != simdjson::SUCCESS) return wrong(field, "an array");
  out->clear();
  for (dom::element item : arr) {
    std::string_view s;
    if (item.get(s) != simdjson::SUCCESS) return wrong(field, "an array of strings");
    out->emplace_back(s);
  }
  return status::ok();
}

}  // namespace skein::json
