// The schedule model: codec round trip, validation naming the field, limits and
// the timing rules (next fire, missed firings, preview).
#include "runtime/model/schedule.hpp"

#include <catch2/catch.hpp>

using namespace skein;

namespace {

schedule valid_cron() {
  schedule s;
  s.id = "sc_1";
  s.agent_id = "a";
  s.kind = schedule_kind::cron;
  s.cron = "0 9 * * MON";
  s.time_zone = "Europe/Berlin";
  s.input_text = "weekly report";
  s.created_at_ms = 1000;
  return s;
}

schedule valid_interval(uint64_t interval_ms, int64_t anchor_ms) {
  schedule s;
  s.id = "sc_2";
  s.agent_id = "a";
  s.kind = schedule_kind::interval;
  s.interval_ms = interval_ms;
  s.anchor_ms = anchor_ms;
  s.input_text = "tick";
  return s;
}

// The field a validation error names.
std::string field_of(const schedule& s) {
  status v = validate_schedule(s);
  INFO(v.to_string());
  REQUIRE(v.code() == errc::invalid_input);
  return v.field();
}

}  // namespace

TEST_CASE("schedule codec round trips every field", "[schedule]") {
  schedule s = valid_cron();
  s.thread_id = "";
  s.title_prefix = "Report";
  s.tags = {"weekly", "ops"};
  s.input_role = message_role::system;
  s.missed = missed_policy::run_once;
  s.paused = true;
  s.next_fire_at_ms = 123456;
  s.last_fire_at_ms = 12345;
  s.fire_count = 7;
  s.history_seq = 9;
  std::string json;
  REQUIRE(encode_schedule(s, &json).is_ok());
  schedule back;
  REQUIRE(decode_schedule(json, &back).is_ok());
  CHECK(back == s);

  schedule_firing f{"sc_1", 3, 100, 150, "th_x", "run_y", firing_outcome::failed, "not_found: gone", 0};
  REQUIRE(encode_firing(f, &json).is_ok());
  schedule_firing fb;
  REQUIRE(decode_firing(json, &fb).is_ok());
  CHECK(fb == f);
}

TEST_CASE("schedule validation names the field at fault", "[schedule]") {
  schedule s = valid_cron();
  REQUIRE(validate_schedule(s).is_ok());
  { schedule b = s; b.id = ""; CHECK(field_of(b) == "id"); }
  { schedule b = s; b.agent_id = "bad/agent"; CHECK(field_of(b) == "agent_id"); }
  { schedule b = s; b.cron = "61 * * * *"; CHECK(field_of(b) == "cron"); }
  { schedule b = s; b.cron = ""; CHECK(field_of(b) == "cron"); }
  { schedule b = s; b.time_zone = "Mars/Olympus"; CHECK(field_of(b) == "time_zone"); }
  { schedule b = s; b.input_text = ""; CHECK(field_of(b) == "input.text"); }
  { schedule b = s; b.input_text = "\xff\xfe"; CHECK(field_of(b) == "input.text"); }
  { schedule b = s; b.thread_id = "th 1"; CHECK(field_of(b) == "thread_id"); }
  { schedule b = s; b.title_prefix = "a\nb"; CHECK(field_of(b) == "title_prefix"); }
  { schedule b = s; b.tags = {"x", "x"}; CHECK(field_of(b) == "tags"); }
  { schedule b = s; b.thread_id = "th_1"; b.tags = {"x"}; CHECK(field_of(b) == "tags"); }
  { schedule b = s; b.interval_ms = 1000; CHECK(field_of(b) == "interval_ms"); }
  { schedule b = s; b.at_ms = 5; CHECK(field_of(b) == "at_ms"); }
  schedule once = valid_cron();
  once.kind = schedule_kind::once;
  once.cron.clear();
  CHECK(field_of(once) == "at_ms");
  once.at_ms = schedule_time_ms_max + 1;
  CHECK(field_of(once) == "at_ms");
  once.at_ms = 1000;
  CHECK(validate_schedule(once).is_ok());
}

TEST_CASE("schedule limits are named", "[schedule]") {
  schedule s = valid_interval(schedule_interval_ms_min - 1, 0);
  status v = validate_schedule(s);
  CHECK(v.field() == "interval_ms");
  CHECK(v.limit() == "schedule_interval_ms_min");
  s.interval_ms = schedule_interval_ms_max + 1;
  CHECK(validate_schedule(s).limit() == "schedule_interval_ms_max");
  s = valid_cron();
  s.input_text.assign(schedule_input_bytes_max + 1, 'x');
  v = validate_schedule(s);
  CHECK(v.field() == "input.text");
  CHECK(v.limit() == "schedule_input_bytes_max");
  s = valid_cron();
  s.title_prefix.assign(schedule_title_prefix_bytes_max + 1, 'x');
  CHECK(validate_schedule(s).limit() == "schedule_title_prefix_bytes_max");
  s = valid_cron();
  for (size_t i = 0; i <= schedule_tags_max; ++i) s.tags.push_back("t" + std::to_string(i));
  CHECK(validate_schedule(s).limit() == "schedule_tags_max");
  s = valid_cron();
  std::vector<int64_t> out;
  v = schedule_preview(s, 0, schedule_preview_max + 1, &out);
  CHECK(v.field() == "n");
  CHECK(v.limit() == "schedule_preview_max");
  // A stored row that does not validate is refused when read, naming the field.
  std::string json;
  REQUIRE(encode_schedule(valid_cron(), &json).is_ok());
  json.replace(json.find("0 9 * * MON"), 11, "0 99 * * MON");
  schedule back;
  CHECK(decode_schedule(json, &back).field() == "cron");
}

TEST_CASE("interval due times are anchor plus k intervals", "[schedule]") {
  schedule s = valid_interval(1000, 5000);
  int64_t next = 0;
  REQUIRE(schedule_next_after(s, 0, &next).is_ok());
  CHECK(next == 5000);
  REQUIRE(schedule_next_after(s, 5000, &next).is_ok());
  CHECK(next == 6000);
  REQUIRE(schedule_next_after(s, 6999, &next).is_ok());
  CHECK(next == 7000);
  REQUIRE(schedule_next_from(s, 7000, &next).is_ok());
  CHECK(next == 7000);
  s.next_fire_at_ms = 5000;
  missed_firings m;
  REQUIRE(schedule_missed(s, 9500, &m).is_ok());
  CHECK(m.count == 5);  // 5000, 6000, 7000, 8000, 9000
  CHECK(m.latest_ms == 9000);
  CHECK(m.next_ms == 10000);
}

TEST_CASE("missed cron firings are counted and the latest found", "[schedule]") {
  schedule s = valid_cron();
  s.time_zone = "UTC";
  s.cron = "0 * * * *";  // hourly
  s.next_fire_at_ms = 3600000;   // 01:00 UTC, 1970-01-01
  missed_firings m;
  REQUIRE(schedule_missed(s, 5 * 3600000 + 10, &m).is_ok());
  CHECK(m.count == 5);
  CHECK(m.latest_ms == 5 * 3600000);
  CHECK(m.next_ms == 6 * 3600000);
  s.kind = schedule_kind::once;
  s.cron.clear();
  s.at_ms = 3600000;
  REQUIRE(schedule_missed(s, 5 * 3600000, &m).is_ok());
  CHECK(m.count == 1);
  CHECK(m.next_ms == 0);
}
