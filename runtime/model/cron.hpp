// cron: 5-field cron expressions and their firing times in an IANA time zone.
//
// The pure part of the scheduler (issue 10): parse an expression into bitsets,
// print it back in a canonical form, and compute the next firing instants in a
// zone's local time. No clocks and no I/O apart from the system zoneinfo that
// find_zone reads once. The grammar is at the top of cron.cpp.
//
// Fields: minute (0-59), hour (0-23), day of month (1-31), month (1-12 or
// JAN-DEC), day of week (0-7 or SUN-SAT; 0 and 7 are Sunday). Each field is a
// list of `*`, `v`, `a-b`, `*/n`, `a-b/n` or `a/n` (a to the field's maximum).
// Names are case-insensitive. Macros: @yearly (@annually), @monthly, @weekly,
// @daily (@midnight), @hourly.
//
// Days, as Vixie cron and cronie do: a day-of-month or day-of-week field that
// begins with `*` (`*`, `*/2`) counts as unrestricted. When both are
// restricted a day fires if EITHER matches (`0 0 1 * MON`: the 1st and every
// Monday); otherwise both bitsets must match, which reduces to the restricted
// one (`0 0 */2 * MON`: odd days that are Mondays).
//
// Time zones: firing times are local wall-clock minutes of the zone. Around a
// daylight-saving change:
//   - a local time that does not exist (the spring-forward gap, Berlin
//     2026-03-29 02:30) fires once, at the first instant after the gap (03:00
//     local, the transition itself); several gap times collapse into that one
//     firing, and so does a firing at the gap's end;
//   - a local time that occurs twice (fall back, Berlin 2026-10-25 02:30) fires
//     once, at its first occurrence (02:30 summer time).
// The zoneinfo of the system lists transitions up to 2037; after that a zone
// keeps the offset of its last listed period (no DST), the tz library's limit.
//
// Thread-safe: every function is pure; a zone_handle points into the
// process-wide time-zone database, which is immutable once loaded and lives
// until exit, so handles may be copied and shared freely.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/model/status.hpp"

namespace skein {

// Longest expression parse_cron accepts, in bytes.
inline constexpr size_t cron_expr_bytes_max = 256;
// Longest IANA zone name find_zone accepts ("America/Argentina/ComodRivadavia" is 32).
inline constexpr size_t zone_name_bytes_max = 64;
// How far next_fire looks ahead. The Gregorian calendar repeats every 400
// years (146097 days, a whole number of weeks), so an expression that does not
// fire within this span never fires; rare ones (Feb 29 on a Sunday, 40 years
// apart around 2100) still get their true answer.
inline constexpr int cron_search_years_max = 401;
// Most firing times next_fires returns (schedule previews).
inline constexpr size_t cron_preview_fires_max = 100;
// Instants next_fire accepts for `after_ms_utc`: 1970-01-01 to 9999-12-31 UTC.
inline constexpr int64_t cron_after_ms_min = 0;
inline constexpr int64_t cron_after_ms_max = 253402300799999;

// A parsed expression: bit v of a field is set when the field includes value v.
// Every field of a parsed expression has at least one bit set.
struct cron_expr {
  uint64_t minutes = 0;        // bits 0-59
  uint32_t hours = 0;          // bits 0-23
  uint32_t days_of_month = 0;  // bits 1-31
  uint16_t months = 0;         // bits 1-12
  uint8_t days_of_week = 0;    // bits 0-6, Sunday = 0 (7 is folded onto 0)
  bool dom_star = false;       // the day-of-month field began with `*`
  bool dow_star = false;       // the day-of-week field began with `*`

  bool operator==(const cron_expr&) const = default;
};

// Parses `expr`. Errors are invalid_input with field "cron"; the message names
// the cron field, what was wrong and the 1-based column
// ("cron hour: 24 is past 23 (column 3)"). Past cron_expr_bytes_max the status
// names that limit. `*out` is written only on success.
status parse_cron(std::string_view expr, cron_expr* out);

// Canonical text of `e`, which parse_cron made (every field has a value):
// numbers only, `*`, `*/n`, ranges and lists, in value order.
// parse_cron(to_string(e)) gives back `e`, including the day flags.
std::string to_string(const cron_expr& e);

// A resolved IANA time zone. Cheap to copy. Default-constructed, it is UTC
// without touching the time-zone database.
class zone_handle {
 public:
  zone_handle() = default;
  // "UTC" for the default handle, else the IANA name find_zone resolved.
  std::string_view name() const;

 private:
  // A `const date::time_zone*`, kept opaque so the tz library's header stays
  // out of this one. nullptr is UTC.
  const void* zone_ = nullptr;
  friend status find_zone(std::string_view, zone_handle*);
  friend status next_fire(const cron_expr&, const zone_handle&, int64_t, int64_t*);
};

// Resolves `iana_name` ("Europe/Berlin", "UTC") in the system zoneinfo.
// Unknown or malformed names are invalid_input with field "time_zone", naming
// the zone; a zoneinfo that cannot be read is io_error.
status find_zone(std::string_view iana_name, zone_handle* out);

// The first firing of `e` in `zone` strictly after `after_ms_utc` (ms since the
// Unix epoch), as ms since the epoch (a whole local minute). Walks the calendar
// by month, day, hour and minute, never minute by minute over years. An
// expression whose days never occur (`0 0 30 2 *`) is not_found at once, its
// message saying why; one with no firing within cron_search_years_max is
// not_found naming that limit. `after_ms_utc` outside [cron_after_ms_min,
// cron_after_ms_max] is invalid_input. Never throws: find_zone has read the zone.
status next_fire(const cron_expr& e, const zone_handle& zone, int64_t after_ms_utc, int64_t* out_ms_utc);

// The first `n` firings strictly after `after_ms_utc`, increasing, for previews.
// n > cron_preview_fires_max is invalid_input naming that limit. The statuses of
// next_fire when there is no first firing; fewer than `n` (and ok) when a later
// one lies past the search horizon or cron_after_ms_max. `*out` is replaced.
status next_fires(const cron_expr& e, const zone_handle& zone, int64_t after_ms_utc, size_t n,
                  std::vector<int64_t>* out);

}  // namespace skein
