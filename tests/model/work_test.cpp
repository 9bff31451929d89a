// Work items (runtime/model/work.hpp): classification, normalization, text
// validation, and vitality and lifecycle as tables under fixed times.
#include "runtime/model/work.hpp"

#include "runtime/model/json_codec.hpp"

#include <catch2/catch.hpp>
#include <cmath>

using namespace skein;

namespace {

constexpr int64_t minute_ms = 60 * 1000;
constexpr int64_t hour_ms = 60 * minute_ms;
constexpr int64_t day_ms = 24 * hour_ms;
constexpr int64_t t0 = 1700000000000;  // creation time of every item below

work_item item(work_class cls, uint64_t touches = 0, int64_t last_touch = t0) {
  work_item w;
  w.text = "x";
  w.cls = cls;
  w.touch_count = touches;
  w.created_at_ms = t0;
  w.last_touched_at_ms = last_touch;
  return w;
}

double half_life(work_class c) { return c == work_class::operational ? 3.0 : 21.0; }

// With no touches vitality is 0.55 * recency: the moment (ms after the last
// touch) it falls to `level`, from the issue's formula solved for time.
int64_t untouched_crossing_ms(work_class c, double level) {
  return static_cast<int64_t>(half_life(c) * std::log2(0.55 / level) * static_cast<double>(day_ms));
}

}  // namespace

TEST_CASE("classify_work finds each operational keyword as a word, any case", "[work]") {
  for (const char* w : {"deploy", "fix", "debug", "hotfix", "urgent", "broken", "incident", "blocker"}) {
    INFO(w);
    CHECK(classify_work(std::string{"please "} + w + " the thing") == work_class::operational);
    std::string upper = w;
    for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    CHECK(classify_work(upper + ": now") == work_class::operational);
    CHECK(classify_work(std::string{"("} + w + ")") == work_class::operational);
  }
  CHECK(classify_work("write the fixture loader") == work_class::backlog);
  CHECK(classify_work("prefix handling") == work_class::backlog);
  CHECK(classify_work("debugger notes") == work_class::backlog);
  CHECK(classify_work("redeploy later") == work_class::backlog);
  CHECK(classify_work("plan the roadmap") == work_class::backlog);
}

TEST_CASE("normalize_work_text lowercases, strips punctuation, collapses whitespace", "[work]") {
  CHECK(normalize_work_text("  Fix   the LOGIN bug!! ") == "fix the login bug");
  CHECK(normalize_work_text("a,\tb\n\nc.") == "a b c");
  CHECK(normalize_work_text("...") == "");
  CHECK(normalize_work_text("Ünïcode stays") == "Ünïcode stays");
}

TEST_CASE("is_project_state matches the prefix in any case", "[work]") {
  CHECK(is_project_state("PROJECT STATE: release 2 frozen"));
  CHECK(is_project_state("  project state: x"));
  CHECK_FALSE(is_project_state("the project state is fine"));
}

TEST_CASE("validate_work_text names the field and the limit", "[work]") {
  CHECK(validate_work_text("ok", "text"));
  auto empty = validate_work_text("", "text");
  CHECK(empty.code() == errc::invalid_input);
  CHECK(empty.field() == "text");
  auto big = validate_work_text(std::string(work_text_bytes_max + 1, 'a'), "text");
  CHECK(big.limit() == "work_text_bytes_max");
  CHECK(validate_work_text(std::string(work_text_bytes_max, 'a'), "text"));
  CHECK(validate_work_text("\xff\xfe", "open_items[2]").field() == "open_items[2]");
  CHECK(validate_work_text(" \t\n", "text").code() == errc::invalid_input);
}

TEST_CASE("vitality follows the formula", "[work]") {
  auto w = item(work_class::backlog, 3, t0 + 2 * day_ms);
  auto v = assess_work(w, t0 + 9 * day_ms);
  double recency = std::exp(-std::log(2.0) * 7 / 21);
  double frequency = std::log(4.0) / std::log(10.0);
  CHECK(v.recency == Approx(recency));
  CHECK(v.frequency == Approx(frequency));
  CHECK(v.vitality == Approx(0.55 * recency + 0.45 * frequency));
  // days_alive floored at 1: a young item with touches has frequency 1 at most.
  auto young = assess_work(item(work_class::backlog, 5), t0 + hour_ms);
  CHECK(young.frequency == Approx(1.0));
  CHECK(young.stage == work_stage::emerging);
}

TEST_CASE("lifecycle thresholds, both sides, both classes", "[work]") {
  struct row {
    work_class cls;
    int64_t at_ms;  // after t0
    work_stage stage;
  };
  const int64_t b_cool = untouched_crossing_ms(work_class::backlog, 0.5);
  const int64_t b_dorm = untouched_crossing_ms(work_class::backlog, 0.2);
  const int64_t o_dorm = untouched_crossing_ms(work_class::operational, 0.2);
  const row table[] = {
      {work_class::backlog, day_ms - minute_ms, work_stage::emerging},
      {work_class::backlog, day_ms, work_stage::active},  // 24 h old: no longer emerging
      {work_class::backlog, b_cool - minute_ms, work_stage::active},
      {work_class::backlog, b_cool + minute_ms, work_stage::cooling},
      {work_class::backlog, b_dorm - minute_ms, work_stage::cooling},
      {work_class::backlog, b_dorm + minute_ms, work_stage::dormant},
      {work_class::operational, day_ms - minute_ms, work_stage::emerging},
      {work_class::operational, day_ms + minute_ms, work_stage::cooling},  // 0.55 * 0.79: already past 0.5
      {work_class::operational, o_dorm - minute_ms, work_stage::cooling},
      {work_class::operational, o_dorm + minute_ms, work_stage::dormant},
      {work_class::operational, o_dorm + work_archive_after_dormant_ms - minute_ms, work_stage::dormant},
      {work_class::operational, o_dorm + work_archive_after_dormant_ms + minute_ms, work_stage::archived},
  };
  for (const auto& r : table) {
    auto v = assess_work(item(r.cls), t0 + r.at_ms);
    INFO(to_string(r.cls) << " at +" << r.at_ms << " ms: vitality " << v.vitality);
    CHECK(v.stage == r.stage);
  }
}

TEST_CASE("dormant_since: computed when not recorded, recorded wins", "[work]") {
  const int64_t o_dorm = untouched_crossing_ms(work_class::operational, 0.2);
  auto w = item(work_class::operational);
  auto v = assess_work(w, t0 + 10 * day_ms);
  REQUIRE(v.stage == work_stage::dormant);
  CHECK(std::llabs(v.dormant_since_ms - (t0 + o_dorm)) <= 1);  // the crossing, to the ms
  w.dormant_since_ms = t0 + 9 * day_ms;  // the sweep recorded it (later than the crossing)
  v = assess_work(w, t0 + 10 * day_ms);
  CHECK(v.dormant_since_ms == t0 + 9 * day_ms);
  // Archived at exactly 30 days of dormancy, not at 29d23h59m.
  CHECK(assess_work(w, t0 + 9 * day_ms + work_archive_after_dormant_ms).stage == work_stage::archived);
  CHECK(assess_work(w, t0 + 9 * day_ms + work_archive_after_dormant_ms - minute_ms).stage == work_stage::dormant);
}

TEST_CASE("a touch revives a dormant item", "[work]") {
  auto w = item(work_class::operational);
  REQUIRE(assess_work(w, t0 + 10 * day_ms).stage == work_stage::dormant);
  w.touch_count = 1;
  w.last_touched_at_ms = t0 + 10 * day_ms;
  w.dormant_since_ms = 0;  // revival clears it
  auto v = assess_work(w, t0 + 10 * day_ms + minute_ms);
  CHECK(v.stage != work_stage::dormant);
  CHECK(v.dormant_since_ms == 0);
}

TEST_CASE("resolved and archived are terminal whatever the clock says", "[work]") {
  auto w = item(work_class::backlog);
  w.status = work_status::resolved;
  CHECK(assess_work(w, t0 + minute_ms).stage == work_stage::resolved);
  CHECK(assess_work(w, t0 + 400 * day_ms).stage == work_stage::resolved);
  w.status = work_status::archived;
  CHECK(assess_work(w, t0 + minute_ms).stage == work_stage::archived);
}

TEST_CASE("stage and status names round-trip", "[work]") {
  for (auto s : {work_stage::emerging, work_stage::active, work_stage::cooling, work_stage::dormant,
                 work_stage::archived, work_stage::resolved})
    CHECK(parse_work_stage(to_string(s)) == s);
  CHECK(parse_work_status("resolved") == work_status::resolved);
  CHECK_FALSE(parse_work_status("closed"));
  CHECK(parse_work_class("operational") == work_class::operational);
}

TEST_CASE("manifest codec: the work object round-trips, a manifest without it has none", "[work]") {
  manifest m;
  m.id = "th_1";
  m.agent_id = "a";
  m.created_at_ms = m.updated_at_ms = t0;
  std::string json;
  REQUIRE(encode_manifest(m, &json));
  CHECK(json.find("\"work\"") == std::string::npos);
  manifest back;
  REQUIRE(decode_manifest(json, &back));
  CHECK_FALSE(back.work.has_value());
  work_item w = item(work_class::operational, 4, t0 + day_ms);
  w.text = "fix \"login\"";
  w.project_state = true;
  w.dormant_since_ms = t0 + 5;
  w.status = work_status::resolved;
  w.resolved_at_ms = t0 + 6;
  w.resolution = "done";
  w.resolved_session = "s1";
  w.archived_at_ms = t0 + 7;
  m.work = w;
  REQUIRE(encode_manifest(m, &json));
  REQUIRE(decode_manifest(json, &back));
  CHECK(back == m);
  auto bad = json;
  bad.replace(bad.find("\"resolved\""), 10, "\"gone\"");
  CHECK(decode_manifest(bad, &back).message().find("manifest.work.status") != std::string::npos);
}

TEST_CASE("manifest codec: project and linear_issue round-trip, and an older item reads as project default", "[work]") {
  manifest m;
  m.id = "th_1";
  m.agent_id = "a";
  m.created_at_ms = m.updated_at_ms = t0;
  m.work = item(work_class::backlog);
  std::string json;
  REQUIRE(encode_manifest(m, &json));
  // The default project is not written: an item stored before projects reads the same.
  CHECK(json.find("\"project\"") == std::string::npos);
  CHECK(json.find("\"linear_issue\"") == std::string::npos);
  manifest back;
  REQUIRE(decode_manifest(json, &back));
  CHECK(back.work->project == "default");
  CHECK(back.work->linear_issue.empty());
  m.work->project = "billing";
  m.work->linear_issue = "PROJ-123";
  REQUIRE(encode_manifest(m, &json));
  REQUIRE(decode_manifest(json, &back));
  CHECK(back.work->project == "billing");
  CHECK(back.work->linear_issue == "PROJ-123");
  CHECK(back == m);
  auto empty = json;
  empty.replace(empty.find("\"billing\""), 9, "\"\"");
  CHECK(decode_manifest(empty, &back).message().find("manifest.work.project") != std::string::npos);
}

TEST_CASE("validate_work_project names the field and the limit", "[work]") {
  CHECK(validate_work_project("my-project", "project").is_ok());
  CHECK(validate_work_project("Mon projet été", "project").is_ok());
  CHECK(validate_work_project("", "project").field() == "project");
  auto s = validate_work_project(std::string(work_project_bytes_max + 1, 'p'), "project");
  CHECK(s.code() == errc::invalid_input);
  CHECK(s.limit() == "work_project_bytes_max");
  CHECK_FALSE(validate_work_project("a\nb", "project").is_ok());
  CHECK_FALSE(validate_work_project("\xff", "project").is_ok());
}
