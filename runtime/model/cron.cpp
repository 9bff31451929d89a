// Cron expression grammar, version 1 (ABNF-like; cron.hpp gives the meaning).
// Cron text is kept as written wherever it is stored or sent; this grammar is
// its format, and to_string writes a subset of it (numbers, no macros).
//
//   cron      = *blank ( fields / macro ) *blank          ; at most cron_expr_bytes_max bytes
//   fields    = minute 1*blank hour 1*blank dom 1*blank month 1*blank dow
//   macro     = "@yearly" / "@annually" / "@monthly" / "@weekly" / "@daily" / "@midnight"
//             / "@hourly"                                 ; case-insensitive
//   blank     = SP / HTAB
//   minute    = list                                      ; values 0-59
//   hour      = list                                      ; values 0-23
//   dom       = list                                      ; values 1-31
//   month     = list                                      ; values 1-12 or month-name
//   dow       = list                                      ; values 0-7 (0, 7 = Sunday) or day-name
//   list      = element *( "," element )
//   element   = "*" [ "/" step ]                          ; the field's whole range, every step-th
//             / value "-" value [ "/" step ]              ; a range, lower value first
//             / value [ "/" step ]                        ; one value; with a step, value to max
//   value     = 1*DIGIT / name
//   step      = 1*DIGIT                                   ; 1 to the field's span (60, 24, 31, 12, 8)
//   month-name = "JAN" / "FEB" / ... / "DEC"              ; case-insensitive, 1-12
//   day-name  = "SUN" / "MON" / ... / "SAT"               ; case-insensitive, 0-6
//
//   @yearly = "0 0 1 1 *", @monthly = "0 0 1 * *", @weekly = "0 0 * * 0",
//   @daily = "0 0 * * *", @hourly = "0 * * * *".
#include "runtime/model/cron.hpp"

#include <date/tz.h>

#include <array>
#include <bit>
#include <cassert>
#include <chrono>
#include <exception>
#include <optional>

namespace skein {
namespace {

constexpr std::array<std::string_view, 12> month_names = {"jan", "feb", "mar", "apr", "may", "jun",
                                                          "jul", "aug", "sep", "oct", "nov", "dec"};
constexpr std::array<std::string_view, 7> day_names = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};

struct field_spec {
  std::string_view name;  // as error messages say it
  int min;
  int max;  // largest value accepted (7 for day of week)
  const std::string_view* names = nullptr;
  int name_count = 0;
  int first_name_value = 0;  // the value of names[0]
  bool seven_is_sunday = false;  // day of week: value 7 is stored as bit 0
};

enum field_index { minute_field, hour_field, dom_field, month_field, dow_field, field_count };

constexpr std::array<field_spec, field_count> specs = {{
    {"minute", 0, 59},
    {"hour", 0, 23},
    {"day of month", 1, 31},
    {"month", 1, 12, month_names.data(), 12, 1},
    {"day of week", 0, 7, day_names.data(), 7, 0, true},
}};

constexpr int minutes_per_day = 24 * 60;
constexpr int64_t ms_per_minute = 60'000;
// Digits kept when reading a number: any more and the value is past every maximum anyway.
constexpr int number_value_cap = 100'000;

struct macro {
  std::string_view name;
  std::string_view expansion;
};
constexpr std::array<macro, 7> macros = {{
    {"@yearly", "0 0 1 1 *"},
    {"@annually", "0 0 1 1 *"},
    {"@monthly", "0 0 1 * *"},
    {"@weekly", "0 0 * * 0"},
    {"@daily", "0 0 * * *"},
    {"@midnight", "0 0 * * *"},
    {"@hourly", "0 * * * *"},
}};

bool is_blank(char c) { return c == ' ' || c == '\t'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool equal_fold(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower(b[i])) return false;
  return true;
}

// Values lo..hi every step-th, as bits; day of week folds 7 (Sunday) onto 0.
uint64_t expand(const field_spec& f, int lo, int hi, int step) {
  assert(step >= 1);  // the parser refuses step 0: this loop would not end
  uint64_t bits = 0;
  for (int v = lo; v <= hi; v += step) bits |= uint64_t{1} << v;
  if (f.seven_is_sunday && (bits >> 7 & 1)) bits = (bits & ~(uint64_t{1} << 7)) | 1;
  return bits;
}


// Reads one field's text; `column0` is the 0-based column of its first byte.
class field_parser {
 public:
  field_parser(const field_spec& f, std::string_view text, size_t column0)
      : f_(f), text_(text), column0_(column0) {}

  status parse(uint64_t* bits) {
    *bits = 0;
    for (;;) {
      SKEIN_TRY(element(bits));
      if (at_end()) return status::ok();
      if (peek() != ',') return unexpected();
      ++pos_;
      if (at_end() || peek() == ',') return fail("an empty list item", pos_);
    }
  }

 private:
  status element(uint64_t* bits) {
    int lo = 0, hi = 0;
    bool single = false;  // one value, which a step stretches to the maximum
    if (!at_end() && peek() == '*') {
      ++pos_;
      lo = f_.min;
      hi = f_.max;
    } else {
      SKEIN_TRY(value(&lo));
      hi = lo;
      single = true;
      if (!at_end() && peek() == '-') {
        ++pos_;
        size_t hi_at = pos_;
        SKEIN_TRY(value(&hi));
        single = false;
        if (hi < lo)
          return fail("range " + std::to_string(lo) + "-" + std::to_string(hi) + " runs backwards", hi_at);
      }
    }
    int step = 1;
    if (!at_end() && peek() == '/') {
      ++pos_;
      SKEIN_TRY(step_value(&step));
      if (single) hi = f_.max;  // `a/n`: from a to the field's maximum
    }
    if (!at_end() && peek() != ',') return unexpected();
    *bits |= expand(f_, lo, hi, step);
    return status::ok();
  }

  // Digits into *out (capped: the caller compares against small maxima); the token into *token.
  void digits(int* out, std::string_view* token) {
    size_t start = pos_;
    int v = 0;
    while (!at_end() && is_digit(peek())) {
      if (v < number_value_cap) v = v * 10 + (peek() - '0');
      ++pos_;
    }
    *out = v;
    *token = text_.substr(start, pos_ - start);
  }

  status value(int* out) {
    size_t at = pos_;
    if (!at_end() && is_digit(peek())) {
      std::string_view token;
      digits(out, &token);
      if (*out > f_.max) return fail(std::string{token} + " is past " + std::to_string(f_.max), at);
      if (*out < f_.min) return fail(std::string{token} + " is below " + std::to_string(f_.min), at);
      return status::ok();
    }
    if (!at_end() && is_alpha(peek())) {
      while (!at_end() && is_alpha(peek())) ++pos_;
      std::string_view token = text_.substr(at, pos_ - at);
      for (int i = 0; i < f_.name_count; ++i) {
        if (equal_fold(token, f_.names[i])) {
          *out = f_.first_name_value + i;
          return status::ok();
        }
      }
      if (f_.name_count == 0) return fail("\"" + std::string{token} + "\" is not a number", at);
      return fail("unknown name \"" + std::string{token} + "\"", at);
    }
    if (at_end()) return fail("a value is missing", at);
    return unexpected();
  }

  status step_value(int* out) {
    size_t at = pos_;
    if (at_end() || !is_digit(peek())) return at_end() ? fail("a step is missing", at) : unexpected();
    std::string_view token;
    digits(out, &token);
    int span = f_.max - f_.min + 1;
    if (*out == 0) return fail("step 0 must be at least 1", at);
    if (*out > span) return fail("step " + std::string{token} + " is past " + std::to_string(span), at);
    return status::ok();
  }

  status unexpected() {
    char c = peek();
    std::string what;
    if (c > ' ' && c < 0x7f) {
      what = std::string{"unexpected '"} + c + "'";
    } else {
      static constexpr char hex[] = "0123456789abcdef";
      auto b = static_cast<unsigned char>(c);
      what = std::string{"unexpected byte 0x"} + hex[b >> 4] + hex[b & 15];
    }
    return fail(what, pos_);
  }

  status fail(const std::string& what, size_t at) const {
    return status::invalid_input("cron " + std::string{f_.name} + ": " + what + " (column " +
                                 std::to_string(column0_ + at + 1) + ")")
        .with_field("cron");
  }

  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return text_[pos_]; }

  const field_spec& f_;
  std::string_view text_;
  size_t column0_;
  size_t pos_ = 0;
};

status parse_fields(std::string_view expr, cron_expr* out) {
  std::array<std::string_view, field_count> fields;
  std::array<size_t, field_count> columns{};
  size_t count = 0, i = 0;
  while (i < expr.size()) {
    if (is_blank(expr[i])) {
      ++i;
      continue;
    }
    size_t start = i;
    while (i < expr.size() && !is_blank(expr[i])) ++i;
    if (count < field_count) {
      fields[count] = expr.substr(start, i - start);
      columns[count] = start;
    }
    ++count;
  }
  if (count != field_count)
    return status::invalid_input("cron: " + std::to_string(count) +
                                 " fields, expected 5 (minute hour day-of-month month day-of-week)")
        .with_field("cron");

  std::array<uint64_t, field_count> bits{};
  for (size_t f = 0; f < field_count; ++f)
    SKEIN_TRY(field_parser(specs[f], fields[f], columns[f]).parse(&bits[f]));
  cron_expr e;
  e.minutes = bits[minute_field];
  e.hours = static_cast<uint32_t>(bits[hour_field]);
  e.days_of_month = static_cast<uint32_t>(bits[dom_field]);
  e.months = static_cast<uint16_t>(bits[month_field]);
  e.days_of_week = static_cast<uint8_t>(bits[dow_field]);
  // Vixie's rule looks at the field's first character, so `*/2` counts as `*` too.
  e.dom_star = fields[dom_field].front() == '*';
  e.dow_star = fields[dow_field].front() == '*';
  *out = e;
  return status::ok();
}

// "a", "a-b" runs joined by commas.
std::string render_list(uint64_t bits) {
  std::string out;
  for (int v = 0; v < 64;) {
    if (!(bits >> v & 1)) {
      ++v;
      continue;
    }
    int end = v;
    while (end + 1 < 64 && (bits >> (end + 1) & 1)) ++end;
    if (!out.empty()) out += ',';
    out += std::to_string(v);
    if (end > v) {
      out += '-';
      out += std::to_string(end);
    }
    v = end + 1;
  }
  return out;
}

// How a field's text may begin: minute, hour and month may use `*` when it
// fits; the day fields must begin with `*` exactly when their flag is set.
enum class star_form { when_exact, required, forbidden };

std::string render_field(const field_spec& f, uint64_t bits, star_form form) {
  assert(bits != 0);  // every parsed field has a value (to_string's contract)
  // A single value reads better as itself than as `*/60`.
  if (form == star_form::forbidden || (form == star_form::when_exact && std::popcount(bits) == 1))
    return render_list(bits);
  int span = f.max - f.min + 1;
  for (int step = 1; step <= span; ++step) {
    if (expand(f, f.min, f.max, step) != bits) continue;
    return step == 1 ? "*" : "*/" + std::to_string(step);
  }
  if (form == star_form::when_exact) return render_list(bits);
  // `*/span` is the minimum alone; the rest follows as a list.
  assert(bits >> f.min & 1);  // a field that began with `*` holds its minimum
  return "*/" + std::to_string(span) + "," + render_list(bits & ~(uint64_t{1} << f.min));
}

// Smallest set bit >= from, or -1.
int next_bit(uint64_t bits, int from) {
  if (from >= 64) return -1;
  uint64_t rest = bits >> from << from;
  return rest == 0 ? -1 : std::countr_zero(rest);
}

bool is_leap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

int days_in_month(int y, int m) {
  static constexpr std::array<int, 12> days = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && is_leap(y) ? 29 : days[m - 1];
}

int64_t days_since_epoch(int y, int m, int d) {
  return date::sys_days{date::year{y} / m / d}.time_since_epoch().count();
}

bool and_rule(const cron_expr& e) { return e.dom_star || e.dow_star; }

bool day_matches(const cron_expr& e, int dom, int dow) {
  bool dom_ok = e.days_of_month >> dom & 1;
  bool dow_ok = e.days_of_week >> dow & 1;
  return and_rule(e) ? dom_ok && dow_ok : dom_ok || dow_ok;
}

// Whether some day of some chosen month can match. Under the OR rule any
// weekday comes round in every month; under the AND rule every valid
// (month, day) falls on every weekday within the 400-year cycle.
bool fires_ever(const cron_expr& e, std::string* why) {
  if (!e.minutes || !e.hours || !e.days_of_month || !e.months || !e.days_of_week) {
    *why = "a field has no values";
    return false;
  }
  if (!and_rule(e)) return true;
  for (int m = 1; m <= 12; ++m) {
    if (!(e.months >> m & 1)) continue;
    uint32_t valid_days = static_cast<uint32_t>((uint64_t{1} << (days_in_month(2000, m) + 1)) - 2);
    if (e.days_of_month & valid_days) return true;
  }
  *why = "no chosen day of month (" + render_list(e.days_of_month) + ") occurs in a chosen month (" +
         render_list(e.months) + ")";
  return false;
}

// The smallest local minute (minutes since the local epoch) >= start_min whose
// calendar fields match, or nullopt when it would lie past year `end_year`.
std::optional<int64_t> next_local_match(const cron_expr& e, int64_t start_min, int end_year) {
  int64_t day_number = start_min >= 0 ? start_min / minutes_per_day
                                      : -((-start_min + minutes_per_day - 1) / minutes_per_day);
  int minute_of_day = static_cast<int>(start_min - day_number * minutes_per_day);
  date::year_month_day ymd{date::sys_days{date::days{day_number}}};
  int y = static_cast<int>(ymd.year()), m = static_cast<int>(unsigned{ymd.month()}),
      d = static_cast<int>(unsigned{ymd.day()});
  int h = minute_of_day / 60, mi = minute_of_day % 60;
  auto next_day = [&] { ++d, h = 0, mi = 0; };
  while (y <= end_year) {
    int nm = next_bit(e.months, m);
    if (nm < 0) {
      ++y, m = 1, d = 1, h = 0, mi = 0;
      continue;
    }
    if (nm != m) m = nm, d = 1, h = 0, mi = 0;
    if (and_rule(e)) {  // the day-of-month bit is necessary: jump to the next one
      int nd = next_bit(e.days_of_month, d);
      if (nd < 0) nd = 32;
      if (nd != d) d = nd, h = 0, mi = 0;
    }
    if (d > days_in_month(y, m)) {
      ++m, d = 1, h = 0, mi = 0;
      continue;
    }
    int64_t day = days_since_epoch(y, m, d);
    int dow = static_cast<int>(((day % 7) + 11) % 7);  // 1970-01-01 was a Thursday (4)
    if (!day_matches(e, d, dow)) {
      next_day();
      continue;
    }
    int nh = next_bit(e.hours, h);
    if (nh < 0) {
      next_day();
      continue;
    }
    if (nh != h) h = nh, mi = 0;
    int nmi = next_bit(e.minutes, mi);
    if (nmi < 0) {
      ++h, mi = 0;
      continue;
    }
    return day * minutes_per_day + h * 60 + nmi;
  }
  return std::nullopt;
}

// The instant (ms UTC) at which local minute `local_min` fires in `zone`
// (nullptr: UTC), under the DST rules of cron.hpp.
int64_t fire_instant_ms(const date::time_zone* zone, int64_t local_min) {
  if (zone == nullptr) return local_min * ms_per_minute;
  date::local_time<std::chrono::minutes> local{std::chrono::minutes{local_min}};
  date::local_info info = zone->get_info(local);
  if (info.result == date::local_info::nonexistent) {
    // The gap ends where the period before it ends: the first instant after it.
    return std::chrono::duration_cast<std::chrono::milliseconds>(info.first.end.time_since_epoch()).count();
  }
  // unique, or ambiguous: `first` is the earlier period, hence the first occurrence.
  return (local_min * 60 - info.first.offset.count()) * 1000;
}

int64_t offset_ms_at(const date::time_zone* zone, int64_t utc_ms) {
  if (zone == nullptr) return 0;
  date::sys_seconds t{std::chrono::seconds{utc_ms >= 0 ? utc_ms / 1000 : -((-utc_ms + 999) / 1000)}};
  return zone->get_info(t).offset.count() * 1000;
}

int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// `cron "0 0 30 2 *"` for messages; to_string needs every field set.
std::string describe(const cron_expr& e) {
  if (!e.minutes || !e.hours || !e.days_of_month || !e.months || !e.days_of_week) return "cron (empty)";
  return "cron \"" + to_string(e) + "\"";
}

}  // namespace

status parse_cron(std::string_view expr, cron_expr* out) {
  if (expr.size() > cron_expr_bytes_max)
    return status::invalid_input("cron: " + std::to_string(expr.size()) + " bytes is past cron_expr_bytes_max (" +
                                 std::to_string(cron_expr_bytes_max) + ")")
        .with_limit("cron_expr_bytes_max")
        .with_field("cron");
  size_t b = 0, e = expr.size();
  while (b < e && is_blank(expr[b])) ++b;
  while (e > b && is_blank(expr[e - 1])) --e;
  std::string_view body = expr.substr(b, e - b);
  if (!body.empty() && body.front() == '@') {
    for (const macro& m : macros)
      if (equal_fold(body, m.name)) return parse_fields(m.expansion, out);
    return status::invalid_input("cron: unknown macro \"" + quote_input(body, 32) +
                                 "\" (expected @yearly, @annually, @monthly, @weekly, @daily, @midnight "
                                 "or @hourly)")
        .with_field("cron");
  }
  return parse_fields(expr, out);
}

std::string to_string(const cron_expr& e) {
  auto day_form = [](bool star) { return star ? star_form::required : star_form::forbidden; };
  std::string out = render_field(specs[minute_field], e.minutes, star_form::when_exact);
  out += ' ' + render_field(specs[hour_field], e.hours, star_form::when_exact);
  out += ' ' + render_field(specs[dom_field], e.days_of_month, day_form(e.dom_star));
  out += ' ' + render_field(specs[month_field], e.months, star_form::when_exact);
  out += ' ' + render_field(specs[dow_field], e.days_of_week, day_form(e.dow_star));
  return out;
}

std::string_view zone_handle::name() const {
  if (zone_ == nullptr) return "UTC";
  return static_cast<const date::time_zone*>(zone_)->name();
}

status find_zone(std::string_view iana_name, zone_handle* out) {
  auto bad = [&](const std::string& what) {
    return status::invalid_input("time zone \"" + quote_input(iana_name, zone_name_bytes_max) + "\": " + what)
        .with_field("time_zone");
  };
  if (iana_name.empty()) return bad("must not be empty");
  if (iana_name.size() > zone_name_bytes_max)
    return bad("longer than zone_name_bytes_max (" + std::to_string(zone_name_bytes_max) + " bytes)")
        .with_limit("zone_name_bytes_max");
  for (char c : iana_name) {
    // IANA names use these alone; refusing the rest keeps "../" away from the zoneinfo directory.
    if (!is_alpha(c) && !is_digit(c) && c != '/' && c != '_' && c != '-' && c != '+')
      return bad("characters must be in [A-Za-z0-9/_+-]");
  }
  try {
    date::get_tzdb();
  } catch (const std::exception& ex) {
    return status::io_error(std::string{"time zones: the system zoneinfo could not be read: "} + ex.what());
  }
  const date::time_zone* zone = nullptr;
  try {
    zone = date::locate_zone(iana_name);
  } catch (const std::exception&) {
    return bad("not an IANA time zone known to the system zoneinfo");
  }
  try {
    // The library reads a zone's file on its first conversion and throws if it
    // cannot: do that here, so next_fire never meets an exception.
    zone->get_info(date::sys_seconds{});
  } catch (const std::exception& ex) {
    return status::io_error("time zone \"" + std::string{iana_name} +
                            "\": its zoneinfo could not be read: " + ex.what());
  }
  out->zone_ = zone;
  return status::ok();
}

status next_fire(const cron_expr& e, const zone_handle& zone, int64_t after_ms_utc, int64_t* out_ms_utc) {
  if (after_ms_utc < cron_after_ms_min || after_ms_utc > cron_after_ms_max)
    return status::invalid_input("cron: after_ms_utc " + std::to_string(after_ms_utc) +
                                 " is outside 1970-01-01..9999-12-31 (cron_after_ms_min, cron_after_ms_max)")
        .with_limit("cron_after_ms_max")
        .with_field("after_ms_utc");
  std::string why;
  if (!fires_ever(e, &why)) return status::not_found(describe(e) + " never fires: " + why);
  const auto* z = static_cast<const date::time_zone*>(zone.zone_);
  int64_t start = floor_div(after_ms_utc + offset_ms_at(z, after_ms_utc), ms_per_minute) + 1;
  int start_year = static_cast<int>(date::year_month_day{date::sys_days{date::days{floor_div(start, minutes_per_day)}}}
                                        .year());
  int end_year = start_year + cron_search_years_max;
  for (;;) {
    std::optional<int64_t> local = next_local_match(e, start, end_year);
    if (!local)
      return status::not_found(describe(e) + " does not fire within cron_search_years_max (" +
                               std::to_string(cron_search_years_max) + " years)")
          .with_limit("cron_search_years_max");
    int64_t fire = fire_instant_ms(z, *local);
    // Only the repeated hour of a fall-back change maps a later local time to
    // an instant not after `after`; each pass moves one minute on.
    if (fire > after_ms_utc) {
      *out_ms_utc = fire;
      return status::ok();
    }
    start = *local + 1;
  }
}

status next_fires(const cron_expr& e, const zone_handle& zone, int64_t after_ms_utc, size_t n,
                  std::vector<int64_t>* out) {
  if (n > cron_preview_fires_max)
    return status::invalid_input("cron: " + std::to_string(n) + " firings is past cron_preview_fires_max (" +
                                 std::to_string(cron_preview_fires_max) + ")")
        .with_limit("cron_preview_fires_max")
        .with_field("count");
  out->clear();
  int64_t after = after_ms_utc;
  while (out->size() < n) {
    if (!out->empty() && after > cron_after_ms_max) break;
    int64_t fire = 0;
    status s = next_fire(e, zone, after, &fire);
    if (!s) {
      if (out->empty()) return s;
      break;  // the horizon ended after some firings: a preview shows what there is
    }
    assert(fire > after);  // strictly increasing, or this loop would not end
    out->push_back(fire);
    after = fire;
  }
  return status::ok();
}

}  // namespace skein
