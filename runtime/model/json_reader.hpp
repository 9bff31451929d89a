// JSON reading helpers on simdjson's DOM, error-code API only: parse a document
// within limits, then read typed fields that name "<context>.<field>" in every
// error. Used by the codecs and by anything that parses untrusted JSON.
//
// Ownership: a `document` owns the parser that holds its tape, so every element,
// object and object_reader taken from it stays valid exactly as long as the
// document lives (and is not parsed into again). Documents are movable, not
// copyable; any number may be alive at once on one thread. Parsers come from a
// small per-thread pool and go back to the pool of the thread that destroys the
// document; a parser grown past pooled_parser_capacity_bytes_max by a large
// document is freed instead of pooled, so one big import does not pin its memory.
#pragma once

#include <initializer_list>
#include <memory>
#include <simdjson.h>
#include <string>
#include <string_view>

#include "runtime/model/json_codec.hpp"
#include "runtime/model/status.hpp"

namespace skein::json {

namespace dom = simdjson::dom;

// A parsed JSON text and the parser that owns its memory. Not thread-safe; may be
// moved to and destroyed on another thread.
class document {
 public:
  document() = default;
  ~document();
  document(document&& other) noexcept;
  document& operator=(document&& other) noexcept;
  document(const document&) = delete;
  document& operator=(const document&) = delete;

  // The root of the last successful parse. Not to be read before one, or after a
  // failed one (parse() releases what the document held first).
  dom::element root() const { return root_; }

 private:
  friend status parse(std::string_view text, const json_limits& limits, std::string_view what,
                      document* out);
  void release();

  std::unique_ptr<dom::parser> parser_;
  dom::element root_;
};

// Parses `text` into *out within `limits`: at most json_bytes_max bytes, nesting at
// most json_depth_max deep (counted as json_limits says), valid UTF-8. `what` names the document in errors ("event", "request body").
// Whatever *out held before is released first.
status parse(std::string_view text, const json_limits& limits, std::string_view what,
             document* out);

class object_reader;

// parse() and then object_reader::open() of the root, both named `what`: the
// start of reading a document whose top level must be an object (a stored row,
// a config). *r borrows *doc.
status parse_object(std::string_view text, const json_limits& limits, std::string_view what,
                    document* doc, object_reader* r);

// parse_object() of a stored value whose "v" (absent: `known`) names its
// format version: one newer than `known` is refused, naming both, since this
// skein would misread it.
status parse_versioned(std::string_view text, const json_limits& limits, std::string_view what, int64_t known,
                       document* doc, object_reader* r);

// A parser grown past this capacity (bytes of JSON text; its memory is about 16
// times that) is freed when its document dies instead of going back to the pool.
inline constexpr size_t pooled_parser_capacity_bytes_max = 256 << 10;
// Idle parsers kept per thread.
inline constexpr size_t pooled_parsers_max = 2;
// Sum of the capacities of this thread's idle pooled parsers (bytes of JSON text).
size_t pooled_parser_capacity_bytes();

// Reads the fields of one object. Borrows the document the object came from: the
// document must outlive the reader.
class object_reader {
 public:
  object_reader() = default;
  object_reader(dom::object obj, std::string context) : obj_(obj), context_(std::move(context)) {}

  static status open(dom::element el, std::string context, object_reader* out);

  std::string name(std::string_view field) const { return context_ + "." + std::string{field}; }
  // What a status names as its field (status::field): the name without a
  // leading "body." — a request body's fields are named as the body has them.
  std::string field_path(std::string_view field) const;
  // invalid_input "<name>: <message>" naming field_path(field): every error
  // about one field of this object, so that each names its field.
  status invalid(std::string_view field, const std::string& message) const;
  // `s`, an error about this object's `field` from a check of its value (an
  // id, a text, a name given twice), naming field_path(field); ok stays ok.
  status about(std::string_view field, status s) const;
  // invalid() naming the first member that is not one of `known`: "body.quota.x:
  // not a field of body.quota" (the name cut to 64 bytes).
  status only(std::initializer_list<std::string_view> known) const;
  bool has(std::string_view field) const;

  // With required == false an absent field leaves *out unchanged.
  status string(std::string_view field, std::string* out, bool required = true) const;
  status uint(std::string_view field, uint64_t* out, bool required = true) const;
  status int64(std::string_view field, int64_t* out, bool required = true) const;
  status number(std::string_view field, double* out, bool required = true) const;
  status boolean(std::string_view field, bool* out, bool required = true) const;
  // A JSON value of the given kind, stored minified.
  status raw(std::string_view field, dom::element_type kind, std::string* out,
             bool required = true) const;
  // Any JSON value, stored minified.
  status any_raw(std::string_view field, std::string* out) const;
  status element(std::string_view field, dom::element* out) const;
  // An array of strings.
  status strings(std::string_view field, std::vector<std::string>* out, bool required = true) const;

 private:
  bool find(std::string_view field, dom::element* el) const;
  status missing(std::string_view field, bool required) const;
  status wrong(std::string_view field, std::string_view expected) const;

  dom::object obj_;
  std::string context_;
};

}  // namespace skein::json
