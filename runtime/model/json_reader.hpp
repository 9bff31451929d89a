// JSON reading helpers on simdjson's DOM, error-code API only: parse a document
// within limits, then read typed fields that name "<context>.<field>" in every
// error. Used by the codecs and by anything that parses untrusted JSON.
//
// parse() uses a thread-local parser: the element it yields stays valid until the
// same thread parses again — so never decode (which parses) while iterating a
// parsed document; copy the items out (simdjson::minify) first.
#pragma once

#include <simdjson.h>
#include <string>
#include <string_view>

#include "runtime/model/json_codec.hpp"
#include "runtime/model/status.hpp"

namespace skein::json {

namespace dom = simdjson::dom;

// `what` names the document in errors ("event", "request body", ...).
status parse(std::string_view text, const json_limits& limits, std::string_view what,
             dom::element* root);

class object_reader {
 public:
  object_reader() = default;
  object_reader(dom::object obj, std::string context) : obj_(obj), context_(std::move(context)) {}

  static status open(dom::element el, std::string context, object_reader* out);

  std::string name(std::string_view field) const { return context_ + "." + std::string{field}; }
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
