#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

#include "runtime/model/ids.hpp"
#include "runtime/model/json_codec.hpp"
#include "tools/io/import_formats.hpp"

namespace skein::io {
namespace {

bool blank(std::string_view s) {
  return s.find_first_not_of(" \t\r") == std::string_view::npos;
}

// A line that failed its format: torn when it is not even JSON. A line past
// json_bytes_max is an over-limit line, not a cut-off one.
bool torn(std::string_view text) {
  if (text.size() > json_limits{}.json_bytes_max) return false;
  json::document doc;
  return !json::parse(text, json_limits{}, "line", &doc).is_ok();
}

// Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar (H. Hinnant).
int64_t days_from_civil(int64_t y, int m, int d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

int days_in_month(int y, int m) {
  static constexpr int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return m == 2 && leap ? 29 : days[m - 1];
}

// A cursor over an ISO-8601 text.
struct cursor {
  std::string_view s;
  size_t i = 0;

  bool digits(int n, int* v) {
    if (i + n > s.size()) return false;
    int x = 0;
    for (int k = 0; k < n; ++k) {
      char c = s[i + k];
      if (c < '0' || c > '9') return false;
      x = x * 10 + (c - '0');
    }
    i += n;
    *v = x;
    return true;
  }
  bool lit(char c) {
    if (i >= s.size() || s[i] != c) return false;
    ++i;
    return true;
  }
  bool done() const { return i == s.size(); }
};

// Fraction digits after the seconds, as milliseconds (extra digits are truncated).
bool read_fraction(cursor& c, int* ms) {
  int n = 0;
  *ms = 0;
  while (!c.done() && c.s[c.i] >= '0' && c.s[c.i] <= '9') {
    if (n < 3) *ms = *ms * 10 + (c.s[c.i] - '0');
    ++n;
    ++c.i;
  }
  for (int k = n; k < 3; ++k) *ms *= 10;
  return n > 0;
}

// "Z", "+hh:mm", "+hhmm", "+hh", or nothing (UTC). Minutes east of UTC.
bool read_zone(cursor& c, int* offset_min) {
  *offset_min = 0;
  if (c.done() || c.lit('Z') || c.lit('z')) return true;
  int sign = c.lit('+') ? 1 : (c.lit('-') ? -1 : 0);
  if (sign == 0) return false;
  int hh = 0, mm = 0;
  if (!c.digits(2, &hh)) return false;
  if (c.lit(':')) {
    if (!c.digits(2, &mm)) return false;
  } else if (!c.done() && !c.digits(2, &mm)) {
    return false;
  }
  if (hh > 23 || mm > 59) return false;
  *offset_min = sign * (hh * 60 + mm);
  return true;
}

}  // namespace

status for_each_line(std::string_view body, const line_fn& fn, import_result* r) {
  size_t pos = 0;
  size_t number = 0;
  while (pos < body.size()) {
    size_t end = body.find('\n', pos);
    const bool terminated = end != std::string_view::npos;
    if (!terminated) end = body.size();
    std::string_view text = body.substr(pos, end - pos);
    pos = terminated ? end + 1 : end;
    ++number;
    if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
    if (blank(text)) continue;
    status s = fn(jsonl_line{number, text, !terminated});
    if (s.is_ok()) continue;
    if (!terminated && torn(text)) {
      r->torn_last_line = true;
      r->torn_detail = "line " + std::to_string(number) + ": unterminated JSON (skipped)";
      continue;
    }
    return status(s.code(), "line " + std::to_string(number) + ": " + s.message());
  }
  return status::ok();
}

status parse_line(std::string_view text, std::string_view what, json::document* doc) {
  return json::parse(text, json_limits{}, what, doc);
}

std::optional<int64_t> parse_iso8601_ms(std::string_view s) {
  cursor c{s};
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0, ms = 0, offset_min = 0;
  if (!c.digits(4, &y) || !c.lit('-') || !c.digits(2, &mo) || !c.lit('-') || !c.digits(2, &d))
    return std::nullopt;
  if (!c.done()) {
    if (!c.lit('T') && !c.lit('t') && !c.lit(' ')) return std::nullopt;
    if (!c.digits(2, &h) || !c.lit(':') || !c.digits(2, &mi)) return std::nullopt;
    if (c.lit(':')) {
      if (!c.digits(2, &sec)) return std::nullopt;
      if ((c.lit('.') || c.lit(',')) && !read_fraction(c, &ms)) return std::nullopt;
    }
    if (!read_zone(c, &offset_min) || !c.done()) return std::nullopt;
  }
  if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo)) return std::nullopt;
  if (h > 23 || mi > 59 || sec > 60) return std::nullopt;  // 60: a leap second
  int64_t minutes = (days_from_civil(y, mo, d) * 24 + h) * 60 + mi - offset_min;
  int64_t result = (minutes * 60 + sec) * 1000 + ms;
  if (result < 0) return std::nullopt;  // before 1970: no agent wrote that
  return result;
}

status read_time(const json::object_reader& r, std::string_view field,
                 std::optional<int64_t>* out) {
  if (!r.has(field)) return status::ok();
  dom::element el;
  SKEIN_TRY(r.element(field, &el));
  const auto bad = [&] {
    return status::invalid_input(r.name(field) +
                                 ": expected an ISO-8601 time or epoch milliseconds >= 0");
  };
  switch (el.type()) {
    case dom::element_type::NULL_VALUE:
      return status::ok();
    case dom::element_type::STRING: {
      std::string_view s;
      if (el.get(s) != simdjson::SUCCESS) return bad();
      auto ms = parse_iso8601_ms(s);
      if (!ms) return bad();
      *out = *ms;
      return status::ok();
    }
    case dom::element_type::INT64: {
      int64_t v = 0;
      if (el.get(v) != simdjson::SUCCESS || v < 0) return bad();
      *out = v;
      return status::ok();
    }
    case dom::element_type::DOUBLE: {
      double v = 0;
      if (el.get(v) != simdjson::SUCCESS || !std::isfinite(v) || v < 0 || v > 9.2e18) return bad();
      *out = static_cast<int64_t>(std::llround(v));
      return status::ok();
    }
    default:
      return bad();  // UINT64 above INT64_MAX, booleans, arrays, objects
  }
}

status read_text(dom::element el, const std::string& what, std::string* out) {
  std::string_view s;
  if (el.get(s) == simdjson::SUCCESS) {
    out->assign(s);
    return status::ok();
  }
  dom::array blocks;
  if (el.get(blocks) != simdjson::SUCCESS)
    return status::invalid_input(what + ": expected a string or an array of text blocks");
  std::string text;
  size_t index = 0;
  for (dom::element block : blocks) {
    std::string name = what + "[" + std::to_string(index++) + "]";
    if (index > 1) text += '\n';
    if (block.get(s) == simdjson::SUCCESS) {
      text += s;
      continue;
    }
    json::object_reader b;
    SKEIN_TRY(json::object_reader::open(block, name, &b));
    std::string type;
    SKEIN_TRY(b.string("type", &type));
    if (type != "text")
      return status::invalid_input(b.name("type") + ": only text blocks can be imported, not '" +
                                   type + "'");
    std::string part;
    SKEIN_TRY(b.string("text", &part));
    text += part;
  }
  *out = std::move(text);
  return status::ok();
}

status check_default_agent(const std::string& agent) {
  return validate_id(agent, "default_agent");
}

// One rule for what may be stored (json_codec.hpp), applied to the widest
// envelope the event can get once imported: the largest seq and timestamp.
status check_stored(const event& e, std::optional<int64_t> ts_ms) {
  event widest = e;
  widest.seq = import_events_max;
  widest.ts_ms = ts_ms ? *ts_ms : std::numeric_limits<int64_t>::max();
  return check_storable(widest);
}

status check_stored(const manifest& m) { return check_storable(m); }

status thread_builder::add(event e, std::optional<int64_t> ts_ms) {
  if (events_.size() >= import_events_max)
    return status::invalid_input("thread has more than import_events_max (" +
                                 std::to_string(import_events_max) + ") events");
  SKEIN_TRY(check_stored(e, ts_ms));
  if (e.type == event_type::tool_call) tool_names_[e.call_id] = e.name;
  events_.push_back(std::move(e));
  times_.push_back(ts_ms);
  return status::ok();
}

std::string thread_builder::tool_name(const std::string& call_id) const {
  auto it = tool_names_.find(call_id);
  return it == tool_names_.end() ? std::string{} : it->second;
}

imported_thread thread_builder::finish(int64_t now) {
  assert(events_.size() == times_.size());  // add() pushes both
  int64_t created = now;
  if (created_ms) {
    created = *created_ms;
  } else {
    for (const auto& t : times_) {
      if (!t) continue;
      created = *t;
      break;
    }
  }
  imported_thread out;
  out.manifest = std::move(m);
  int64_t previous = created;
  int64_t latest = created;
  for (size_t i = 0; i < events_.size(); ++i) {
    event& e = events_[i];
    e.seq = i + 1;
    e.ts_ms = times_[i] ? *times_[i] : previous;
    previous = e.ts_ms;
    latest = std::max(latest, e.ts_ms);
    if (e.type != event_type::result) continue;
    out.manifest.usage += e.usage;
    out.manifest.cost_usd += e.cost_usd;
  }
  out.manifest.created_at_ms = created;
  out.manifest.updated_at_ms = updated_ms ? *updated_ms : latest;
  out.manifest.last_seq = events_.size();
  if (out.manifest.id.empty()) out.manifest.id = new_thread_id(created);
  out.events = std::move(events_);
  events_.clear();
  times_.clear();
  tool_names_.clear();
  return out;
}

}  // namespace skein::io
