// Cron expressions: the grammar, canonical text, and firing times in UTC and in
// zones with daylight-saving changes and 30-minute offsets. Expected instants
// are worked out by hand (the comments say how) or by the brute-force
// reference below, which steps minute by minute in UTC and looks only at
// UTC-to-local conversions, so it shares no logic with next_fire's
// calendar walk and local-to-UTC mapping.
#include <catch2/catch.hpp>
#include <date/tz.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "runtime/model/cron.hpp"

using namespace skein;

namespace {

// ms since the epoch of a UTC wall-clock minute (std::chrono's civil calendar).
int64_t utc_ms(int y, unsigned mo, unsigned d, int h = 0, int mi = 0) {
  using namespace std::chrono;
  sys_days date{year{y} / month{mo} / day{d}};
  return (date.time_since_epoch().count() * 1440LL + h * 60 + mi) * 60'000;
}

cron_expr parse_ok(std::string_view text) {
  cron_expr e;
  status s = parse_cron(text, &e);
  INFO(text << " -> " << s.to_string());
  REQUIRE(s.is_ok());
  return e;
}

std::string parse_error(std::string_view text) {
  cron_expr e;
  status s = parse_cron(text, &e);
  INFO(text);
  REQUIRE(s.code() == errc::invalid_input);
  CHECK(s.field() == "cron");
  return s.message();
}

zone_handle zone(std::string_view name) {
  zone_handle z;
  status s = find_zone(name, &z);
  INFO(name << " -> " << s.to_string());
  REQUIRE(s.is_ok());
  return z;
}

int64_t next_ok(std::string_view expr, const zone_handle& z, int64_t after) {
  int64_t out = -1;
  status s = next_fire(parse_ok(expr), z, after, &out);
  INFO(expr << " after " << after << " -> " << s.to_string());
  REQUIRE(s.is_ok());
  return out;
}

std::vector<int64_t> fires(std::string_view expr, const zone_handle& z, int64_t after, size_t n) {
  std::vector<int64_t> out;
  status s = next_fires(parse_ok(expr), z, after, n, &out);
  INFO(expr << " -> " << s.to_string());
  REQUIRE(s.is_ok());
  return out;
}

uint64_t bits(std::initializer_list<int> values) {
  uint64_t b = 0;
  for (int v : values) b |= uint64_t{1} << v;
  return b;
}

constexpr int64_t minute_ms = 60'000;
constexpr int64_t hour_ms = 60 * minute_ms;

}  // namespace

// ---------------------------------------------------------------- grammar

TEST_CASE("cron: every field's bounds parse", "[cron]") {
  cron_expr lo = parse_ok("0 0 1 1 0");
  CHECK(lo.minutes == bits({0}));
  CHECK(lo.hours == bits({0}));
  CHECK(lo.days_of_month == bits({1}));
  CHECK(lo.months == bits({1}));
  CHECK(lo.days_of_week == bits({0}));
  CHECK_FALSE(lo.dom_star);
  CHECK_FALSE(lo.dow_star);

  cron_expr hi = parse_ok("59 23 31 12 7");
  CHECK(hi.minutes == bits({59}));
  CHECK(hi.hours == bits({23}));
  CHECK(hi.days_of_month == bits({31}));
  CHECK(hi.months == bits({12}));
  CHECK(hi.days_of_week == bits({0}));  // 7 is Sunday, stored as 0

  cron_expr all = parse_ok("* * * * *");
  CHECK(all.minutes == (uint64_t{1} << 60) - 1);
  CHECK(all.hours == (uint32_t{1} << 24) - 1);
  CHECK(all.days_of_month == 0xfffffffeu);  // 1-31
  CHECK(all.months == 0x1ffe);              // 1-12
  CHECK(all.days_of_week == 0x7f);          // 0-6
  CHECK(all.dom_star);
  CHECK(all.dow_star);
}

TEST_CASE("cron: a value out of range names the field, the bound and the column", "[cron]") {
  CHECK(parse_error("60 * * * *") == "cron minute: 60 is past 59 (column 1)");
  CHECK(parse_error("* 24 * * *") == "cron hour: 24 is past 23 (column 3)");
  CHECK(parse_error("* * 0 * *") == "cron day of month: 0 is below 1 (column 5)");
  CHECK(parse_error("* * 32 * *") == "cron day of month: 32 is past 31 (column 5)");
  CHECK(parse_error("* * * 0 *") == "cron month: 0 is below 1 (column 7)");
  CHECK(parse_error("* * * 13 *") == "cron month: 13 is past 12 (column 7)");
  CHECK(parse_error("* * * * 8") == "cron day of week: 8 is past 7 (column 9)");
  CHECK(parse_error("1,2,99 * * * *") == "cron minute: 99 is past 59 (column 5)");
  CHECK(parse_error("0-60 * * * *") == "cron minute: 60 is past 59 (column 3)");
  // A long number does not overflow into a valid value.
  CHECK(parse_error("4294967296 * * * *") == "cron minute: 4294967296 is past 59 (column 1)");
}

TEST_CASE("cron: each kind of syntax error is refused with its field named", "[cron]") {
  CHECK(parse_error("* * * *") == "cron: 4 fields, expected 5 (minute hour day-of-month month day-of-week)");
  CHECK(parse_error("* * * * * *") == "cron: 6 fields, expected 5 (minute hour day-of-month month day-of-week)");
  CHECK(parse_error("") == "cron: 0 fields, expected 5 (minute hour day-of-month month day-of-week)");
  CHECK(parse_error("1,,2 * * * *") == "cron minute: an empty list item (column 3)");
  CHECK(parse_error("* 1, * * *") == "cron hour: an empty list item (column 5)");
  CHECK(parse_error(",1 * * * *") == "cron minute: unexpected ',' (column 1)");
  CHECK(parse_error("* * 1# * *") == "cron day of month: unexpected '#' (column 6)");
  CHECK(parse_error("*-5 * * * *") == "cron minute: unexpected '-' (column 2)");
  CHECK(parse_error("* * * FOO *") == "cron month: unknown name \"FOO\" (column 7)");
  CHECK(parse_error("* * * * MONDAY") == "cron day of week: unknown name \"MONDAY\" (column 9)");
  CHECK(parse_error("MON * * * *") == "cron minute: \"MON\" is not a number (column 1)");
  CHECK(parse_error("* 5-2 * * *") == "cron hour: range 5-2 runs backwards (column 5)");
  CHECK(parse_error("* * * * FRI-SUN") == "cron day of week: range 5-0 runs backwards (column 13)");
  CHECK(parse_error("*/0 * * * *") == "cron minute: step 0 must be at least 1 (column 3)");
  CHECK(parse_error("*/61 * * * *") == "cron minute: step 61 is past 60 (column 3)");
  CHECK(parse_error("* */25 * * *") == "cron hour: step 25 is past 24 (column 5)");
  CHECK(parse_error("* * * */13 *") == "cron month: step 13 is past 12 (column 9)");
  CHECK(parse_error("* * * * */9") == "cron day of week: step 9 is past 8 (column 11)");
  CHECK(parse_error("*/ * * * *") == "cron minute: a step is missing (column 3)");
  CHECK(parse_error("*/x * * * *") == "cron minute: unexpected 'x' (column 3)");
  CHECK(parse_error("1- * * * *") == "cron minute: a value is missing (column 3)");
  CHECK(parse_error("1-2-3 * * * *") == "cron minute: unexpected '-' (column 4)");
  CHECK(parse_error("1/2/3 * * * *") == "cron minute: unexpected '/' (column 4)");
  CHECK(parse_error("\xc3\xa9 * * * *") == "cron minute: unexpected byte 0xc3 (column 1)");
  CHECK(parse_error("0 0 * * *\n") == "cron day of week: unexpected byte 0x0a (column 10)");
  CHECK(parse_error("@reboot") ==
        "cron: unknown macro \"@reboot\" (expected @yearly, @annually, @monthly, @weekly, @daily, "
        "@midnight or @hourly)");
  CHECK(parse_error("@daily 5") ==
        "cron: unknown macro \"@daily 5\" (expected @yearly, @annually, @monthly, @weekly, @daily, "
        "@midnight or @hourly)");

  // The length limit, by name; at the limit the expression still parses.
  std::string at_limit = "0 0 * * *" + std::string(cron_expr_bytes_max - 9, ' ');
  REQUIRE(at_limit.size() == cron_expr_bytes_max);
  parse_ok(at_limit);
  cron_expr e;
  status s = parse_cron(at_limit + " ", &e);
  CHECK(s.code() == errc::invalid_input);
  CHECK(s.limit() == "cron_expr_bytes_max");
  CHECK(s.field() == "cron");
  CHECK(s.message() == "cron: 257 bytes is past cron_expr_bytes_max (256)");

  // A failed parse leaves the output alone.
  cron_expr before = parse_ok("1 2 3 4 5");
  cron_expr out = before;
  parse_cron("1 2 3 4", &out).ignore();
  CHECK(out == before);
}

TEST_CASE("cron: month and day names are case-insensitive and mix with numbers", "[cron]") {
  const char* months[] = {"JAN", "feb", "Mar", "aPr", "MAY", "jun", "JUL", "aug", "SEP", "oct", "NOV", "dec"};
  for (int m = 0; m < 12; ++m) {
    INFO(months[m]);
    CHECK(parse_ok(std::string{"0 0 1 "} + months[m] + " *").months == bits({m + 1}));
  }
  const char* days[] = {"sun", "MON", "Tue", "wED", "thu", "FRI", "Sat"};
  for (int d = 0; d < 7; ++d) {
    INFO(days[d]);
    CHECK(parse_ok(std::string{"0 0 * * "} + days[d]).days_of_week == bits({d}));
  }
  CHECK(parse_ok("0 0 * jan-Mar *").months == bits({1, 2, 3}));
  CHECK(parse_ok("0 0 * 2-APR,dec *").months == bits({2, 3, 4, 12}));
  CHECK(parse_ok("0 0 * * Mon-FRI").days_of_week == bits({1, 2, 3, 4, 5}));
  CHECK(parse_ok("0 0 * * 5-7").days_of_week == bits({0, 5, 6}));
  CHECK(parse_ok("0 0 * * SUN,7").days_of_week == bits({0}));
}

TEST_CASE("cron: steps, ranges and lists", "[cron]") {
  CHECK(parse_ok("*/15 * * * *").minutes == bits({0, 15, 30, 45}));
  CHECK(parse_ok("10-30/10 * * * *").minutes == bits({10, 20, 30}));
  CHECK(parse_ok("50/3 * * * *").minutes == bits({50, 53, 56, 59}));  // a/n runs to the maximum
  CHECK(parse_ok("5-5/2 * * * *").minutes == bits({5}));             // an explicit range stays
  CHECK(parse_ok("1,5-7,*/20 * * * *").minutes == bits({0, 1, 5, 6, 7, 20, 40}));
  CHECK(parse_ok("*/60 * * * *").minutes == bits({0}));
  CHECK(parse_ok("* */7 * * *").hours == bits({0, 7, 14, 21}));
  CHECK(parse_ok("* 22/1 * * *").hours == bits({22, 23}));
  CHECK(parse_ok("* * */10 * *").days_of_month == bits({1, 11, 21, 31}));
  CHECK(parse_ok("* * 30/1 * *").days_of_month == bits({30, 31}));
  CHECK(parse_ok("* * * */5 *").months == bits({1, 6, 11}));
  CHECK(parse_ok("* * * FEB/4 *").months == bits({2, 6, 10}));
  CHECK(parse_ok("* * * * */2").days_of_week == bits({0, 2, 4, 6}));
  CHECK(parse_ok("* * * * */7").days_of_week == bits({0}));  // 0 and 7, both Sunday
  CHECK(parse_ok("* * * * 1/3").days_of_week == bits({1, 4, 0}));  // 1, 4, 7
  CHECK(parse_ok("007 * * * *").minutes == bits({7}));
}

TEST_CASE("cron: blanks separate fields, none inside, any around", "[cron]") {
  cron_expr a = parse_ok("5 4 * * 1");
  CHECK(parse_ok("5\t4  *\t \t* 1") == a);
  CHECK(parse_ok("  5 4 * * 1\t ") == a);
  CHECK(parse_error("5 4 * * 1, 2") == "cron: 6 fields, expected 5 (minute hour day-of-month month day-of-week)");
  CHECK(parse_error("5 4 * * 1 ,2") == "cron: 6 fields, expected 5 (minute hour day-of-month month day-of-week)");
}

TEST_CASE("cron: the day flags follow Vixie cron", "[cron]") {
  cron_expr both = parse_ok("0 0 1 * MON");
  CHECK_FALSE(both.dom_star);
  CHECK_FALSE(both.dow_star);
  cron_expr step = parse_ok("0 0 */2 * MON");
  CHECK(step.dom_star);  // begins with `*`
  CHECK_FALSE(step.dow_star);
  cron_expr list = parse_ok("0 0 1,*/2 * *");
  CHECK_FALSE(list.dom_star);  // Vixie looks at the first character only
  CHECK(list.dow_star);
  // `1-31` selects the same days as `*` but is a restriction.
  cron_expr full = parse_ok("0 0 1-31 * *");
  CHECK(full.days_of_month == parse_ok("0 0 * * *").days_of_month);
  CHECK_FALSE(full.dom_star);
  CHECK_FALSE(full == parse_ok("0 0 * * *"));
}

TEST_CASE("cron: macros expand to their five fields", "[cron]") {
  CHECK(parse_ok("@yearly") == parse_ok("0 0 1 1 *"));
  CHECK(parse_ok("@ANNUALLY") == parse_ok("0 0 1 1 *"));
  CHECK(parse_ok("@monthly") == parse_ok("0 0 1 * *"));
  CHECK(parse_ok(" @weekly ") == parse_ok("0 0 * * 0"));
  CHECK(parse_ok("@daily") == parse_ok("0 0 * * *"));
  CHECK(parse_ok("@Midnight") == parse_ok("0 0 * * *"));
  CHECK(parse_ok("@hourly") == parse_ok("0 * * * *"));
}

TEST_CASE("cron: to_string is canonical and parses back to the same value", "[cron]") {
  struct row {
    const char* in;
    const char* canonical;
  };
  const row rows[] = {
      {"* * * * *", "* * * * *"},
      {"0-59 0-23 * 1-12 *", "* * * * *"},
      {"*/15 9-17 * * mon-fri", "*/15 9-17 * * 1-5"},
      {"0,15,30,45 * * * *", "*/15 * * * *"},
      {"5,6,7,20 1,3 1-31 JAN,feb,Dec 0-6", "5-7,20 1,3 1-31 1-2,12 0-6"},
      {"0 0 */2 * MON", "0 0 */2 * 1"},
      {"0 0 1,*/2 * *", "0 0 1,3,5,7,9,11,13,15,17,19,21,23,25,27,29,31 * *"},
      {"0 0 */2,4 * *", "0 0 */31,3-5,7,9,11,13,15,17,19,21,23,25,27,29,31 * *"},
      {"0 0 * * */7", "0 0 * * */7"},
      {"0 0 * * */8", "0 0 * * */7"},
      {"0 0 * * 7", "0 0 * * 0"},
      {"0 0 * * *,7", "0 0 * * *"},
      {"0 0 * * */3,5", "0 0 * * */8,3,5-6"},
      {"59/1 23/1 31/1 12/1 6/1", "59 23 31 12 0,6"},  // 6/1 is 6-7: Saturday and Sunday
      {"@weekly", "0 0 * * 0"},
  };
  for (const row& r : rows) {
    INFO(r.in);
    cron_expr e = parse_ok(r.in);
    CHECK(to_string(e) == r.canonical);
    CHECK(parse_ok(to_string(e)) == e);
  }
}

// ---------------------------------------------------------------- next_fire in UTC

TEST_CASE("cron: */15 fires across an hour and a day boundary", "[cron]") {
  zone_handle utc;
  // 2026-03-31 23:50 UTC: the next quarter hours are 00:00, 00:15 ... of April 1st.
  auto got = fires("*/15 * * * *", utc, utc_ms(2026, 3, 31, 23, 50), 5);
  std::vector<int64_t> want = {utc_ms(2026, 4, 1, 0, 0), utc_ms(2026, 4, 1, 0, 15), utc_ms(2026, 4, 1, 0, 30),
                               utc_ms(2026, 4, 1, 0, 45), utc_ms(2026, 4, 1, 1, 0)};
  CHECK(got == want);
  // Strictly after: a firing instant itself is not returned, one ms before it is.
  CHECK(next_ok("*/15 * * * *", utc, utc_ms(2026, 4, 1, 0, 15)) == utc_ms(2026, 4, 1, 0, 30));
  CHECK(next_ok("*/15 * * * *", utc, utc_ms(2026, 4, 1, 0, 15) - 1) == utc_ms(2026, 4, 1, 0, 15));
  CHECK(next_ok("*/15 * * * *", utc, utc_ms(2026, 4, 1, 0, 15) + 59'999) == utc_ms(2026, 4, 1, 0, 30));
  // Year end: 2026-12-31 23:59 -> 2027-01-01 00:00.
  CHECK(next_ok("* * * * *", utc, utc_ms(2026, 12, 31, 23, 59)) == utc_ms(2027, 1, 1, 0, 0));
  CHECK(next_ok("0 0 1 1 *", utc, utc_ms(2026, 1, 1, 0, 0)) == utc_ms(2027, 1, 1, 0, 0));
}

TEST_CASE("cron: day of month and day of week: OR when both are restricted", "[cron]") {
  zone_handle utc;
  // 2026-11-23 is a Monday. `1 * MON`: Mondays 30 Nov and 7 Dec, and Tuesday 1 Dec.
  CHECK(fires("0 12 1 * MON", utc, utc_ms(2026, 11, 23, 13, 0), 3) ==
        std::vector<int64_t>{utc_ms(2026, 11, 30, 12), utc_ms(2026, 12, 1, 12), utc_ms(2026, 12, 7, 12)});
  // dom begins with `*`: both must match, odd days that are Mondays: 7 Dec, then 21 Dec.
  CHECK(fires("0 12 */2 * MON", utc, utc_ms(2026, 11, 23, 13, 0), 2) ==
        std::vector<int64_t>{utc_ms(2026, 12, 7, 12), utc_ms(2026, 12, 21, 12)});
  // dow `*`: only the day of month counts.
  CHECK(next_ok("0 12 15 * *", utc, utc_ms(2026, 11, 23)) == utc_ms(2026, 12, 15, 12));
  // dom `*`: only the weekday counts; 7 is Sunday: 29 Nov 2026.
  CHECK(next_ok("0 12 * * 7", utc, utc_ms(2026, 11, 23)) == utc_ms(2026, 11, 29, 12));
  // Weekdays in a month: Saturdays of February 2027 (6, 13, 20, 27) and then March 6.
  CHECK(fires("30 8 * feb sat", utc, utc_ms(2027, 1, 1), 5) ==
        std::vector<int64_t>{utc_ms(2027, 2, 6, 8, 30), utc_ms(2027, 2, 13, 8, 30), utc_ms(2027, 2, 20, 8, 30),
                             utc_ms(2027, 2, 27, 8, 30), utc_ms(2028, 2, 5, 8, 30)});
}

TEST_CASE("cron: the 31st skips short months, Feb 29 waits for a leap year", "[cron]") {
  zone_handle utc;
  CHECK(fires("0 0 31 * *", utc, utc_ms(2026, 1, 31), 6) ==
        std::vector<int64_t>{utc_ms(2026, 3, 31), utc_ms(2026, 5, 31), utc_ms(2026, 7, 31), utc_ms(2026, 8, 31),
                             utc_ms(2026, 10, 31), utc_ms(2026, 12, 31)});
  CHECK(next_ok("0 0 30 * *", utc, utc_ms(2027, 1, 30)) == utc_ms(2027, 3, 30));
  CHECK(next_ok("0 0 29 2 *", utc, utc_ms(2025, 3, 1)) == utc_ms(2028, 2, 29));
  // 2100 is not a leap year: 2096 -> 2104.
  CHECK(next_ok("0 0 29 2 *", utc, utc_ms(2096, 3, 1)) == utc_ms(2104, 2, 29));
  // Feb 29 on a Sunday (`*/7` is Sunday and makes both days count): 2088, then
  // 2128 (2092-2124 have none: the weekday cycle breaks at 2100).
  CHECK(next_ok("0 0 29 2 */7", utc, utc_ms(2026, 1, 1)) == utc_ms(2032, 2, 29));
  CHECK(next_ok("0 0 29 2 */7", utc, utc_ms(2088, 3, 1)) == utc_ms(2128, 2, 29));
}

TEST_CASE("cron: an expression that never fires ends quickly with not_found", "[cron]") {
  zone_handle utc;
  auto t0 = std::chrono::steady_clock::now();
  for (const char* expr : {"0 0 30 2 *", "0 0 31 4,6,9,11 *", "0 0 30,31 feb *", "0 0 31 2 */3"}) {
    INFO(expr);
    int64_t out = -1;
    status s = next_fire(parse_ok(expr), utc, utc_ms(2026, 1, 1), &out);
    CHECK(s.code() == errc::not_found);
    CHECK(s.message().find("never fires") != std::string::npos);
    CHECK(out == -1);
  }
  int64_t out = -1;
  status s = next_fire(parse_ok("0 0 30 2 *"), utc, utc_ms(2026, 1, 1), &out);
  CHECK(s.message() == "cron \"0 0 30 2 *\" never fires: no chosen day of month (30) occurs in a chosen month (2)");
  // Under the OR rule a weekday makes Feb 30 fire after all: Mondays in February.
  CHECK(next_ok("0 0 30 2 MON", utc, utc_ms(2026, 1, 1)) == utc_ms(2026, 2, 2));
  // A default (empty) expression never fires either.
  CHECK(next_fire(cron_expr{}, utc, 0, &out).code() == errc::not_found);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  CHECK(ms < 200);
}

TEST_CASE("cron: the calendar walk is quick over long horizons", "[cron]") {
  zone_handle utc;
  zone_handle berlin = zone("Europe/Berlin");
  auto t0 = std::chrono::steady_clock::now();
  constexpr int rounds = 200;
  for (int i = 0; i < rounds; ++i) {
    CHECK(next_ok("0 0 29 2 *", berlin, utc_ms(2025, 3, 1)) == utc_ms(2028, 2, 28, 23));  // CET: UTC+1
    CHECK(next_ok("0 0 29 2 */7", utc, utc_ms(2088, 3, 1)) == utc_ms(2128, 2, 29));
  }
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  INFO(rounds << " rounds of two long searches took " << ms << " ms");
  CHECK(ms < 1000);
}

TEST_CASE("cron: arguments out of range are refused with their limits", "[cron]") {
  zone_handle utc;
  cron_expr e = parse_ok("* * * * *");
  int64_t out = 0;
  status s = next_fire(e, utc, -1, &out);
  CHECK(s.code() == errc::invalid_input);
  CHECK(s.field() == "after_ms_utc");
  s = next_fire(e, utc, cron_after_ms_max + 1, &out);
  CHECK(s.code() == errc::invalid_input);
  CHECK(s.limit() == "cron_after_ms_max");
  // At the epoch, a zone west of UTC is still in 1969 locally: New York's
  // first midnight is 1970-01-01 00:00 EST, 05:00 UTC.
  REQUIRE(next_fire(parse_ok("0 0 * * *"), zone("America/New_York"), 0, &out).is_ok());
  CHECK(out == utc_ms(1970, 1, 1, 5, 0));
  REQUIRE(next_fire(parse_ok("0 0 * * *"), zone("Asia/Tokyo"), 0, &out).is_ok());
  CHECK(out == utc_ms(1970, 1, 1, 15, 0));  // JST is UTC+9: 1970-01-02 00:00 local
  REQUIRE(next_fire(e, utc, cron_after_ms_max, &out).is_ok());
  CHECK(out == cron_after_ms_max + 1);  // 10000-01-01 00:00 UTC

  std::vector<int64_t> v;
  s = next_fires(e, utc, 0, cron_preview_fires_max + 1, &v);
  CHECK(s.code() == errc::invalid_input);
  CHECK(s.limit() == "cron_preview_fires_max");
  REQUIRE(next_fires(e, utc, 0, cron_preview_fires_max, &v).is_ok());
  REQUIRE(v.size() == cron_preview_fires_max);
  for (size_t i = 0; i < v.size(); ++i) CHECK(v[i] == static_cast<int64_t>(i + 1) * minute_ms);
  // No first firing: the status of next_fire.
  CHECK(next_fires(parse_ok("0 0 30 2 *"), utc, 0, 3, &v).code() == errc::not_found);
  // Past cron_after_ms_max the preview stops short, and is still ok.
  REQUIRE(next_fires(parse_ok("0 0 * * *"), utc, cron_after_ms_max - 2 * 86'400'000LL, 5, &v).is_ok());
  CHECK(v.size() == 3);
}

// ---------------------------------------------------------------- time zones

TEST_CASE("cron: zones resolve by IANA name, unknown ones are refused by name", "[cron]") {
  CHECK(zone_handle{}.name() == "UTC");
  CHECK(zone("UTC").name() == "UTC");
  CHECK(zone("Europe/Berlin").name() == "Europe/Berlin");
  CHECK(zone("America/Argentina/Buenos_Aires").name() == "America/Argentina/Buenos_Aires");
  CHECK(zone("Etc/GMT+5").name() == "Etc/GMT+5");

  zone_handle z = zone("Asia/Tokyo");
  status s = find_zone("Mars/Olympus_Mons", &z);
  CHECK(s.code() == errc::invalid_input);
  CHECK(s.field() == "time_zone");
  CHECK(s.message() == "time zone \"Mars/Olympus_Mons\": not an IANA time zone known to the system zoneinfo");
  CHECK(z.name() == "Asia/Tokyo");  // untouched on failure
  CHECK(find_zone("europe/berlin", &z).code() == errc::invalid_input);  // names are case-sensitive
  CHECK(find_zone("", &z).message() == "time zone \"\": must not be empty");
  CHECK(find_zone("../../etc/passwd", &z).message() ==
        "time zone \"../../etc/passwd\": characters must be in [A-Za-z0-9/_+-]");
  s = find_zone(std::string(zone_name_bytes_max + 1, 'A'), &z);
  CHECK(s.code() == errc::invalid_input);
  CHECK(s.limit() == "zone_name_bytes_max");
}

TEST_CASE("cron: UTC by name and by default agree", "[cron]") {
  zone_handle by_name = zone("UTC");
  for (const char* expr : {"30 2 * * *", "*/7 */5 * * *", "0 0 29 2 *"}) {
    INFO(expr);
    CHECK(fires(expr, by_name, utc_ms(2026, 3, 1), 10) == fires(expr, zone_handle{}, utc_ms(2026, 3, 1), 10));
  }
  CHECK(next_ok("30 2 * * *", by_name, utc_ms(2026, 3, 29)) == utc_ms(2026, 3, 29, 2, 30));
}

TEST_CASE("cron: Europe/Berlin spring forward: a missing time fires once, after the gap", "[cron]") {
  zone_handle berlin = zone("Europe/Berlin");
  // 2026-03-29: 02:00 CET (01:00 UTC) jumps to 03:00 CEST. 02:30 does not exist:
  // it fires at 03:00 CEST = 01:00 UTC. The day before 02:30 CET is 01:30 UTC,
  // the day after 02:30 CEST is 00:30 UTC.
  CHECK(fires("30 2 * * *", berlin, utc_ms(2026, 3, 27, 12), 3) ==
        std::vector<int64_t>{utc_ms(2026, 3, 28, 1, 30), utc_ms(2026, 3, 29, 1, 0), utc_ms(2026, 3, 30, 0, 30)});
  // Every quarter of the missing hour collapses into one firing at 03:00 CEST.
  CHECK(fires("*/15 2 * * *", berlin, utc_ms(2026, 3, 29, 0, 0), 3) ==
        std::vector<int64_t>{utc_ms(2026, 3, 29, 1, 0), utc_ms(2026, 3, 30, 0, 0), utc_ms(2026, 3, 30, 0, 15)});
  // So does a firing at 03:00 itself; 03:30 CEST follows at 01:30 UTC, then
  // 02:00 CEST the next day at 00:00 UTC.
  CHECK(fires("0,30 2,3 * * *", berlin, utc_ms(2026, 3, 29, 0, 0), 3) ==
        std::vector<int64_t>{utc_ms(2026, 3, 29, 1, 0), utc_ms(2026, 3, 29, 1, 30), utc_ms(2026, 3, 30, 0, 0)});
  // Every minute: 01:59 CET (00:59 UTC), then 03:00 CEST (01:00 UTC), 03:01 ...
  CHECK(fires("* * * * *", berlin, utc_ms(2026, 3, 29, 0, 58), 3) ==
        std::vector<int64_t>{utc_ms(2026, 3, 29, 0, 59), utc_ms(2026, 3, 29, 1, 0), utc_ms(2026, 3, 29, 1, 1)});
  // An expression that fires only in the gap still fires, once that day.
  CHECK(fires("30 2 29 3 *", berlin, utc_ms(2026, 1, 1), 2) ==
        std::vector<int64_t>{utc_ms(2026, 3, 29, 1, 0), utc_ms(2027, 3, 29, 0, 30)});
}

TEST_CASE("cron: Europe/Berlin fall back: a repeated time fires once, at its first occurrence", "[cron]") {
  zone_handle berlin = zone("Europe/Berlin");
  // 2026-10-25: 03:00 CEST (01:00 UTC) falls back to 02:00 CET. 02:30 occurs at
  // 00:30 UTC (CEST) and 01:30 UTC (CET): only the first fires. The next day
  // 02:30 CET is 01:30 UTC.
  CHECK(fires("30 2 * * *", berlin, utc_ms(2026, 10, 24, 12), 3) ==
        std::vector<int64_t>{utc_ms(2026, 10, 25, 0, 30), utc_ms(2026, 10, 26, 1, 30), utc_ms(2026, 10, 27, 1, 30)});
  // Half hours: 01:30, 02:00, 02:30 CEST, then the repeated 02:00 and 02:30 CET
  // are skipped, and 03:00 CET is 02:00 UTC.
  CHECK(fires("*/30 * * * *", berlin, utc_ms(2026, 10, 24, 23, 0), 5) ==
        std::vector<int64_t>{utc_ms(2026, 10, 24, 23, 30), utc_ms(2026, 10, 25, 0, 0), utc_ms(2026, 10, 25, 0, 30),
                             utc_ms(2026, 10, 25, 2, 0), utc_ms(2026, 10, 25, 2, 30)});
  // Asked from inside the repeated hour (02:10 CET, 01:10 UTC): every minute of
  // it already fired in summer time; the next firing is 03:00 CET.
  CHECK(next_ok("* * * * *", berlin, utc_ms(2026, 10, 25, 1, 10)) == utc_ms(2026, 10, 25, 2, 0));
  // From the first occurrence the rest of it still fires: 02:11 CEST.
  CHECK(next_ok("* * * * *", berlin, utc_ms(2026, 10, 25, 0, 10)) == utc_ms(2026, 10, 25, 0, 11));
}

TEST_CASE("cron: America/New_York on 2026-03-08 and 2026-11-01", "[cron]") {
  zone_handle ny = zone("America/New_York");
  // Spring: 02:00 EST (07:00 UTC) jumps to 03:00 EDT. 02:30 fires at 03:00 EDT
  // = 07:00 UTC; the day after 02:30 EDT = 06:30 UTC; the day before 02:30 EST = 07:30 UTC.
  CHECK(fires("30 2 * * *", ny, utc_ms(2026, 3, 6, 12), 3) ==
        std::vector<int64_t>{utc_ms(2026, 3, 7, 7, 30), utc_ms(2026, 3, 8, 7, 0), utc_ms(2026, 3, 9, 6, 30)});
  // Fall: 02:00 EDT (06:00 UTC) falls back to 01:00 EST. 01:30 occurs at 05:30
  // UTC (EDT) and 06:30 UTC (EST); it fires once, at 05:30. The next day 01:30 EST = 06:30 UTC.
  CHECK(fires("30 1 * * *", ny, utc_ms(2026, 10, 31, 12), 3) ==
        std::vector<int64_t>{utc_ms(2026, 11, 1, 5, 30), utc_ms(2026, 11, 2, 6, 30), utc_ms(2026, 11, 3, 6, 30)});
  // A time after the change is plain EST: 09:00 = 14:00 UTC.
  CHECK(next_ok("0 9 * * *", ny, utc_ms(2026, 11, 1, 6, 0)) == utc_ms(2026, 11, 1, 14, 0));
}

TEST_CASE("cron: zones with 30-minute offsets", "[cron]") {
  // Kolkata is UTC+05:30 all year: 09:00 IST = 03:30 UTC.
  zone_handle kolkata = zone("Asia/Kolkata");
  CHECK(fires("0 9 * * *", kolkata, utc_ms(2026, 6, 1), 2) ==
        std::vector<int64_t>{utc_ms(2026, 6, 1, 3, 30), utc_ms(2026, 6, 2, 3, 30)});
  // Local midnight is 18:30 UTC the day before.
  CHECK(next_ok("0 0 1 * *", kolkata, utc_ms(2026, 6, 1)) == utc_ms(2026, 6, 30, 18, 30));

  // Adelaide: ACST UTC+09:30, ACDT UTC+10:30 from 2026-10-04 02:00 (16:30 UTC on the 3rd).
  zone_handle adelaide = zone("Australia/Adelaide");
  CHECK(next_ok("0 9 * * *", adelaide, utc_ms(2026, 6, 30, 12)) == utc_ms(2026, 6, 30, 23, 30));
  CHECK(fires("30 2 * * *", adelaide, utc_ms(2026, 10, 2, 12), 3) ==
        std::vector<int64_t>{utc_ms(2026, 10, 2, 17, 0), utc_ms(2026, 10, 3, 16, 30), utc_ms(2026, 10, 4, 16, 0)});

  // Lord Howe moves by 30 minutes: 02:00 (+10:30, 15:30 UTC on the 3rd) jumps
  // to 02:30 (+11) on 2026-10-04. 02:15 does not exist and fires at 15:30 UTC.
  zone_handle lord_howe = zone("Australia/Lord_Howe");
  CHECK(fires("15 2 * * *", lord_howe, utc_ms(2026, 10, 2, 12), 3) ==
        std::vector<int64_t>{utc_ms(2026, 10, 2, 15, 45), utc_ms(2026, 10, 3, 15, 30), utc_ms(2026, 10, 4, 15, 15)});
}

// ---------------------------------------------------------------- randomized

namespace {

// The brute-force reference. Independent of cron.cpp: std::chrono's calendar
// for weekdays, and only UTC-to-local conversions (sys_info) of the tz library.
bool ref_matches(const cron_expr& e, int64_t local_min) {
  using namespace std::chrono;
  int64_t day = local_min >= 0 ? local_min / 1440 : -((-local_min + 1439) / 1440);
  int64_t minute_of_day = local_min - day * 1440;
  sys_days sd{days{day}};
  year_month_day ymd{sd};
  unsigned dom = unsigned{ymd.day()}, month = unsigned{ymd.month()};
  unsigned dow = weekday{sd}.c_encoding();
  if (!(e.minutes >> (minute_of_day % 60) & 1)) return false;
  if (!(e.hours >> (minute_of_day / 60) & 1)) return false;
  if (!(e.months >> month & 1)) return false;
  bool dom_ok = e.days_of_month >> dom & 1, dow_ok = e.days_of_week >> dow & 1;
  if (e.dom_star || e.dow_star) return dom_ok && dow_ok;
  return dom_ok || dow_ok;
}

// Firing instants (ms) in (after, after + window_min minutes], stepping UTC minutes.
std::vector<int64_t> reference_fires(const cron_expr& e, const date::time_zone* z, int64_t after_ms,
                                     int64_t window_min) {
  std::vector<int64_t> out;
  int64_t first = after_ms / minute_ms + 1;
  date::sys_info now, prev;
  bool have_info = false;
  for (int64_t t = first; t <= first + window_min - 1; ++t) {
    if (z == nullptr) {
      if (ref_matches(e, t)) out.push_back(t * minute_ms);
      continue;
    }
    date::sys_seconds at{std::chrono::seconds{t * 60}};
    if (!have_info || at >= now.end) {
      now = z->get_info(at);
      // The first period of a zone starts at the library's minimum: it has no predecessor.
      bool has_prev = now.begin > date::sys_seconds{std::chrono::seconds{-(int64_t{1} << 40)}};
      prev = has_prev ? z->get_info(now.begin - std::chrono::seconds{1}) : now;
      have_info = true;
    }
    int64_t off = now.offset.count() / 60, prev_off = prev.offset.count() / 60;
    int64_t since_begin = t - now.begin.time_since_epoch().count() / 60;
    // After a fall back the first (prev_off - off) minutes repeat local times
    // the previous period already had.
    bool repeat = prev_off > off && since_begin < prev_off - off;
    bool fire = !repeat && ref_matches(e, t + off);
    // The first minute after a spring forward also fires for the skipped local minutes.
    if (since_begin == 0 && off > prev_off)
      for (int64_t g = t + prev_off; g < t + off && !fire; ++g) fire = ref_matches(e, g);
    if (fire) out.push_back(t * minute_ms);
  }
  return out;
}

std::string random_element(std::mt19937_64& rng, int lo, int hi, bool names, bool day_of_week) {
  auto pick = [&](int a, int b) { return std::uniform_int_distribution<int>(a, b)(rng); };
  static const char* month_names[] = {"jan", "FEB", "Mar", "apr", "MAY", "jun",
                                      "Jul", "AUG", "sep", "oct", "Nov", "dec"};
  static const char* day_names[] = {"SUN", "mon", "Tue", "wed", "THU", "fri", "Sat"};
  auto value = [&](int v) -> std::string {
    if (names && pick(0, 2) == 0) {
      if (day_of_week && v <= 6) return day_names[v];
      if (!day_of_week) return month_names[v - 1];
    }
    return std::to_string(v);
  };
  int span = hi - lo + 1;
  switch (pick(0, 5)) {
    case 0: return "*";
    case 1: return "*/" + std::to_string(pick(1, std::min(span, 20)));
    case 2: return value(pick(lo, hi));
    case 3: {
      int a = pick(lo, hi), b = pick(a, hi);
      return value(a) + "-" + value(b);
    }
    case 4: {
      int a = pick(lo, hi), b = pick(a, hi);
      return value(a) + "-" + value(b) + "/" + std::to_string(pick(1, span));
    }
    default: return value(pick(lo, hi)) + "/" + std::to_string(pick(1, span));
  }
}

// Dense enough that a few days' window usually holds several firings.
std::string random_field(std::mt19937_64& rng, int lo, int hi, bool names, bool day_of_week, int star_percent) {
  if (std::uniform_int_distribution<int>(0, 99)(rng) < star_percent) return "*";
  std::string out = random_element(rng, lo, hi, names, day_of_week);
  int more = std::uniform_int_distribution<int>(0, 2)(rng);
  for (int i = 0; i < more; ++i) out += "," + random_element(rng, lo, hi, names, day_of_week);
  return out;
}

}  // namespace

TEST_CASE("cron: next_fires agrees with a minute-stepping reference on random expressions", "[cron]") {
  uint64_t seed = std::random_device{}();
  if (const char* s = std::getenv("SKEIN_SEED")) seed = std::strtoull(s, nullptr, 10);
  std::printf("cron randomized test: SKEIN_SEED=%llu\n", static_cast<unsigned long long>(seed));
  INFO("SKEIN_SEED=" << seed);
  std::mt19937_64 rng{seed};
  auto pick = [&](int64_t a, int64_t b) { return std::uniform_int_distribution<int64_t>(a, b)(rng); };

  const char* zone_names[] = {"UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata", "Australia/Adelaide",
                              "Australia/Lord_Howe", "Asia/Kathmandu", "Pacific/Chatham", "America/Sao_Paulo"};
  constexpr int trials = 2000;
  constexpr size_t compared_max = 12;
  int with_firings = 0, near_transition = 0;
  size_t compared = 0;
  for (int trial = 0; trial < trials; ++trial) {
    std::string text = random_field(rng, 0, 59, false, false, 10) + " " + random_field(rng, 0, 23, false, false, 30) +
                       " " + random_field(rng, 1, 31, false, false, 60) + " " +
                       random_field(rng, 1, 12, true, false, 75) + " " + random_field(rng, 0, 7, true, true, 60);
    INFO("trial " << trial << ": " << text);
    cron_expr e = parse_ok(text);
    CHECK(parse_ok(to_string(e)) == e);

    bool default_utc = pick(0, 9) == 0;
    const char* name = zone_names[pick(0, std::size(zone_names) - 1)];
    zone_handle z = default_utc ? zone_handle{} : zone(name);
    const date::time_zone* tz = default_utc ? nullptr : date::locate_zone(name);
    INFO("zone " << z.name());

    // Start anywhere in 2024-2036 (the zoneinfo lists DST to 2037), to the ms;
    // half the time within two days before one of the zone's transitions.
    int64_t after = pick(utc_ms(2024, 1, 1), utc_ms(2036, 6, 1));
    if (tz != nullptr && pick(0, 1) == 0) {
      date::sys_info info = tz->get_info(date::sys_seconds{std::chrono::seconds{after / 1000}});
      int64_t transition_ms = info.end.time_since_epoch().count() * 1000;
      if (transition_ms < utc_ms(2037, 1, 1)) {
        after = transition_ms - pick(0, 2 * 24 * hour_ms);
        ++near_transition;
      }
    }
    INFO("after " << after);
    int64_t window_min = pick(1, 4) * 24 * 60;
    std::vector<int64_t> want = reference_fires(e, tz, after, window_min);
    if (!want.empty()) ++with_firings;

    size_t n = std::min(want.size(), compared_max);
    std::vector<int64_t> got;
    status s = next_fires(e, z, after, n + 1, &got);
    if (!s) {
      // Only an expression that never fires may fail, and then the reference saw nothing.
      CHECK(s.code() == errc::not_found);
      CHECK(want.empty());
      continue;
    }
    REQUIRE(got.size() >= n);
    compared += n;
    std::vector<int64_t> want_prefix(want.begin(), want.begin() + static_cast<ptrdiff_t>(n));
    std::vector<int64_t> got_prefix(got.begin(), got.begin() + static_cast<ptrdiff_t>(n));
    CHECK(got_prefix == want_prefix);
    // The firing after the compared ones: the reference's next, or past its window.
    if (got.size() > n) {
      if (want.size() > n) CHECK(got[n] == want[n]);
      else CHECK(got[n] > (after / minute_ms + window_min) * minute_ms);
    }
  }
  // The generator must produce expressions that fire, or the comparison is empty.
  std::printf("cron randomized test: %d trials, %d with firings, %d near a transition, %zu firings compared\n",
              trials, with_firings, near_transition, compared);
  CHECK(with_firings > trials / 4);
}
