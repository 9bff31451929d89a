#include "runtime/model/json_reader.hpp"

#include <algorithm>

namespace skein::json {

namespace {

// The per-thread parser pool. pool_state is trivially destructible, so a document
// destroyed during thread exit, after the pool, can still see that it is gone.
enum class pool_state : uint8_t { unused, alive, destroyed };
thread_local pool_state pool_state_ = pool_state::unused;

struct parser_pool {
  std::vector<std::unique_ptr<dom::parser>> idle;
  parser_pool() { pool_state_ = pool_state::alive; }
  ~parser_pool() { pool_state_ = pool_state::destroyed; }
};

parser_pool* pool() {
  if (pool_state_ == pool_state::destroyed) return nullptr;
  thread_local parser_pool p;
  return &p;
}

std::unique_ptr<dom::parser> acquire_parser() {
  parser_pool* p = pool();
  if (p == nullptr || p->idle.empty()) return std::make_unique<dom::parser>();
  auto out = std::move(p->idle.back());
  p->idle.pop_back();
  return out;
}

void return_parser(std::unique_ptr<dom::parser> parser) {
  if (!parser || parser->capacity() > pooled_parser_capacity_bytes_max) return;
  parser_pool* p = pool();
  if (p == nullptr || p->idle.size() >= pooled_parsers_max) return;
  p->idle.push_back(std::move(parser));
}

// simdjson refuses a document whose nesting reaches max_depth; json_depth_max is
// the deepest nesting we accept.
constexpr size_t simdjson_max_depth(size_t json_depth_max) { return json_depth_max + 1; }
constexpr size_t parser_capacity_min = 4096;

}  // namespace

document::~document() { release(); }

document::document(document&& other) noexcept
    : parser_(std::move(other.parser_)), root_(other.root_) {
  other.root_ = dom::element{};
}

document& document::operator=(document&& other) noexcept {
  if (this != &other) {
    release();
    parser_ = std::move(other.parser_);
    root_ = other.root_;
    other.root_ = dom::element{};
  }
  return *this;
}

void document::release() {
  root_ = dom::element{};
  return_parser(std::move(parser_));
}

size_t pooled_parser_capacity_bytes() {
  parser_pool* p = pool();
  size_t total = 0;
  if (p != nullptr)
    for (const auto& parser : p->idle) total += parser->capacity();
  return total;
}

status parse(std::string_view text, const json_limits& limits, std::string_view what,
             document* out) {
  out->release();
  if (text.size() > limits.json_bytes_max)
    return status::invalid_input(std::string{what} + ": " + std::to_string(text.size()) +
                                 " bytes exceeds json_bytes_max (" +
                                 std::to_string(limits.json_bytes_max) + ")")
        .with_limit("json_bytes_max");
  std::unique_ptr<dom::parser> parser = acquire_parser();
  const size_t depth = simdjson_max_depth(limits.json_depth_max);
  if (parser->max_depth() != depth || parser->capacity() == 0) {
    size_t capacity = std::max({text.size(), parser->capacity(), parser_capacity_min});
    if (parser->allocate(capacity, depth) != simdjson::SUCCESS)
      return status::overloaded(std::string{what} + ": cannot allocate a JSON parser");
  }
  dom::element root;
  auto err = parser->parse(text.data(), text.size(), true).get(root);
  if (err == simdjson::SUCCESS) {
    out->parser_ = std::move(parser);
    out->root_ = root;
    return status::ok();
  }
  return_parser(std::move(parser));
  if (err == simdjson::DEPTH_ERROR)
    return status::invalid_input(std::string{what} + ": nesting exceeds json_depth_max (" +
                                 std::to_string(limits.json_depth_max) + ")")
        .with_limit("json_depth_max");
  if (err == simdjson::UTF8_ERROR) return status::invalid_input(std::string{what} + ": invalid UTF-8");
  return status::invalid_input(std::string{what} + ": malformed JSON (" +
                               simdjson::error_message(err) + ")");
}

status parse_object(std::string_view text, const json_limits& limits, std::string_view what,
                    document* doc, object_reader* r) {
  SKEIN_TRY(parse(text, limits, what, doc));
  return object_reader::open(doc->root(), std::string{what}, r);
}

status parse_versioned(std::string_view text, const json_limits& limits, std::string_view what, int64_t known,
                       document* doc, object_reader* r) {
  SKEIN_TRY(parse_object(text, limits, what, doc, r));
  int64_t version = known;
  SKEIN_TRY(r->int64("v", &version, false));
  if (version > known)
    return status::invalid_input(std::string{what} + ".v: format version " + std::to_string(version) +
                                 " is newer than this skein understands (" + std::to_string(known) + ")");
  return status::ok();
}

status object_reader::open(dom::element el, std::string context, object_reader* out) {
  dom::object obj;
  if (el.get(obj) != simdjson::SUCCESS) {
    status s = status::invalid_input(context + ": expected an object");
    constexpr std::string_view body = "body.";
    if (context.compare(0, body.size(), body) == 0) return std::move(s).with_field(context.substr(body.size()));
    return s;
  }
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

std::string object_reader::field_path(std::string_view field) const {
  std::string path = name(field);
  constexpr std::string_view body = "body.";
  return path.compare(0, body.size(), body) == 0 ? path.substr(body.size()) : path;
}

status object_reader::invalid(std::string_view field, const std::string& message) const {
  return status::invalid_input(name(field) + ": " + message).with_field(field_path(field));
}

status object_reader::about(std::string_view field, status s) const {
  if (s) return s;
  return std::move(s).with_field(field_path(field));
}

status object_reader::only(std::initializer_list<std::string_view> known) const {
  for (auto member : obj_) {
    bool listed = false;
    for (auto k : known) listed = listed || member.key == k;
    if (!listed) return invalid(member.key.substr(0, 64), "not a field of " + context_);
  }
  return status::ok();
}

status object_reader::missing(std::string_view field, bool required) const {
  if (!required) return status::ok();
  return invalid(field, "missing");
}

status object_reader::wrong(std::string_view field, std::string_view expected) const {
  return invalid(field, "expected " + std::string{expected});
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
