#include <catch2/catch.hpp>
#include <cmath>

#include "runtime/model/agent.hpp"
#include "runtime/model/json_codec.hpp"
#include "tests/support/sample_records.hpp"

using namespace skein;

namespace {

event envelope(event e, uint64_t seq) {
  e.seq = seq;
  e.ts_ms = 1795391999000 + static_cast<int64_t>(seq);
  e.run_id = "run_1";
  return e;
}

std::vector<event> one_of_each() {
  std::vector<event> v = test::one_event_of_each_type();
  for (size_t i = 0; i < v.size(); ++i) v[i] = envelope(v[i], i + 1);
  return v;
}

status decode(std::string_view json, const json_limits& limits = {}) {
  event e;
  return decode_event(json, &e, limits);
}

}  // namespace

TEST_CASE("every event type round-trips through the codec") {
  for (const auto& e : one_of_each()) {
    INFO(to_string(e.type));
    std::string json;
    REQUIRE(encode_event(e, &json).is_ok());
    event back;
    REQUIRE(decode_event(json, &back).is_ok());
    CHECK(back == e);
  }
}

TEST_CASE("control characters are escaped and unicode passes through") {
  std::string json;
  REQUIRE(encode_event(envelope(make_message(message_role::user, "a\"b\\c\nd\x1f 🙂"), 1), &json).is_ok());
  CHECK(json.find(R"(a\"b\\c\nd\u001f 🙂)") != std::string::npos);
  // Escaped unicode from other writers decodes to UTF-8.
  event e;
  REQUIRE(decode_event(R"({"seq":1,"ts":0,"run":"","type":"message","payload":{"role":"user","text":"\u00fc\ud83d\ude42"}})", &e).is_ok());
  CHECK(e.text == "ü🙂");
}

TEST_CASE("raw JSON fields are validated and minified") {
  std::string json;
  auto call = envelope(make_tool_call("c", "t", "{ \"a\" : [ 1 , 2 ] }"), 1);
  REQUIRE(encode_event(call, &json).is_ok());
  CHECK(json.find(R"("arguments":{"a":[1,2]})") != std::string::npos);

  auto bad = envelope(make_tool_call("c", "t", "{\"a\":"), 1);
  auto s = encode_event(bad, &json);
  CHECK(s.code() == errc::invalid_input);
  CHECK(s.message().find("event.payload.arguments") != std::string::npos);

  auto sig = envelope(make_signal("x", "[1]"), 1);
  s = encode_event(sig, &json);
  CHECK(s.code() == errc::invalid_input);
  CHECK(s.message().find("event.payload.data") != std::string::npos);
}

TEST_CASE("encoding refuses invalid UTF-8 and non-finite numbers, naming the field") {
  std::string json;
  auto s = encode_event(envelope(make_message(message_role::user, "bad \xff\xfe"), 1), &json);
  CHECK(s.code() == errc::invalid_input);
  CHECK(s.message() == "event.payload.text: invalid UTF-8");

  auto r = envelope(make_result({}, std::nan(""), 0, 0, "completed"), 1);
  s = encode_event(r, &json);
  CHECK(s.code() == errc::invalid_input);
  CHECK(s.message().find("cost_usd") != std::string::npos);
}

TEST_CASE("malformed event JSON is an error naming the field, never a crash") {
  struct bad_case {
    const char* json;
    const char* mentions;
  };
  const bad_case cases[] = {
      {"", "malformed"},
      {"{", "malformed"},
      {"[]", "event: expected an object"},
      {"null", "event: expected an object"},
      {R"({"ts":0,"run":"","type":"message","payload":{}})", "event.seq: missing"},
      {R"({"seq":-1,"ts":0,"run":"","type":"message","payload":{}})", "event.seq: expected an unsigned integer"},
      {R"({"seq":"1","ts":0,"run":"","type":"message","payload":{}})", "event.seq"},
      {R"({"seq":1,"ts":0,"run":"","type":"bogus","payload":{}})", "event.type: unknown type 'bogus'"},
      {R"({"seq":1,"ts":0,"run":"","type":"message"})", "event.payload: missing"},
      {R"({"seq":1,"ts":0,"run":"","type":"message","payload":[]})", "event.payload: expected an object"},
      {R"({"seq":1,"ts":0,"run":"","type":"message","payload":{"role":"user"}})", "event.payload.text: missing"},
      {R"({"seq":1,"ts":0,"run":"","type":"message","payload":{"role":"robot","text":""}})", "event.payload.role"},
      {R"({"seq":1,"ts":0,"run":"","type":"message","payload":{"role":"user","text":7}})", "event.payload.text: expected a string"},
      {R"({"seq":1,"ts":0,"run":"","type":"tool_result","payload":{"call_id":"c","name":"t","output":"o","is_error":"no"}})", "event.payload.is_error: expected a boolean"},
      {R"({"seq":1,"ts":0,"run":"","type":"result","payload":{"usage":{"input_tokens":1},"cost_usd":0,"duration_ms":0,"turns":0,"outcome":""}})", "event.payload.usage.output_tokens: missing"},
      {R"({"seq":1,"ts":0,"run":"","type":"compaction","payload":{"strategy":"s","from_seq":1,"to_seq":2,"events":{}}})", "event.payload.events: expected an array"},
      {"{\"seq\":1,\"ts\":0,\"run\":\"\xc3\x28\",\"type\":\"message\",\"payload\":{}}", "invalid UTF-8"},
  };
  for (const auto& c : cases) {
    INFO(c.json);
    auto s = decode(c.json);
    CHECK(s.code() == errc::invalid_input);
    CHECK_THAT(s.message(), Catch::Contains(c.mentions));
  }
}

TEST_CASE("documents past the depth or size limit are refused, naming the limit") {
  json_limits limits;
  limits.json_depth_max = 8;
  std::string deep = R"({"seq":1,"ts":0,"run":"","type":"tool_call","payload":{"call_id":"c","name":"t","arguments":)";
  deep += std::string(20, '[') + std::string(20, ']') + "}}";
  auto s = decode(deep, limits);
  CHECK(s.code() == errc::invalid_input);
  CHECK_THAT(s.message(), Catch::Contains("json_depth_max (8)"));

  limits = {};
  limits.json_bytes_max = 64;
  std::string big = R"({"seq":1,"ts":0,"run":"","type":"thinking","payload":{"text":")" + std::string(100, 'x') + "\"}}";
  s = decode(big, limits);
  CHECK(s.code() == errc::invalid_input);
  CHECK_THAT(s.message(), Catch::Contains("json_bytes_max (64)"));

  // The same documents pass with default limits.
  CHECK(decode(deep).is_ok());
  CHECK(decode(big).is_ok());
}

TEST_CASE("manifests round-trip and default optional fields") {
  auto m = test::sample_manifest();
  std::string json;
  REQUIRE(encode_manifest(m, &json).is_ok());
  manifest back;
  REQUIRE(decode_manifest(json, &back).is_ok());
  CHECK(back == m);

  REQUIRE(decode_manifest(R"({"id":"t","agent_id":"a","status":"open","created_at":1,"updated_at":2,"last_seq":0})", &back).is_ok());
  CHECK(back.parent == parent_kind::none);
  CHECK(back.tags.empty());
  CHECK(back.config == "{}");
  CHECK(back.updated_at_ms == 2);
}

TEST_CASE("large integral numbers round-trip (never written as a 21-digit integer)") {
  for (double cost : {4.4444444444444446e20, 1e18, -9.5e22, 1.8446744073709552e19, 999999999999999.0, 1e300}) {
    auto m = test::sample_manifest();
    m.cost_usd = cost;
    std::string json;
    REQUIRE(encode_manifest(m, &json).is_ok());
    manifest back;
    INFO(json);
    REQUIRE(decode_manifest(json, &back).is_ok());
    CHECK(back.cost_usd == cost);
  }
}

TEST_CASE("bad manifests are refused, naming the field") {
  manifest back;
  auto check = [&](const char* json, const char* mentions) {
    INFO(json);
    auto s = decode_manifest(json, &back);
    CHECK(s.code() == errc::invalid_input);
    CHECK_THAT(s.message(), Catch::Contains(mentions));
  };
  check(R"({"agent_id":"a","status":"open","created_at":1,"updated_at":2,"last_seq":0})", "manifest.id: missing");
  check(R"({"id":"../x","agent_id":"a","status":"open","created_at":1,"updated_at":2,"last_seq":0})", "manifest.id");
  check(R"({"id":"t","agent_id":"a","status":"zombie","created_at":1,"updated_at":2,"last_seq":0})", "manifest.status: unknown status 'zombie'");
  check(R"({"id":"t","agent_id":"a","status":"open","created_at":1,"updated_at":2,"last_seq":0,"tags":"x"})", "manifest.tags: expected an array");
  check(R"({"id":"t","agent_id":"a","status":"open","created_at":1,"updated_at":2,"last_seq":0,"config":[]})", "manifest.config: expected an object");
  check(R"({"v":2,"id":"t","agent_id":"a","status":"open","created_at":1,"updated_at":2,"last_seq":0})", "newer");
  check(R"({"id":"t","agent_id":"a","status":"open","created_at":1,"updated_at":2,"last_seq":0,"parent_kind":"thread"})", "manifest.parent_id");

  auto m = test::sample_manifest();
  m.tags = {"ok", "not ok"};
  std::string json;
  auto s = encode_manifest(m, &json);
  CHECK(s.code() == errc::invalid_input);
  CHECK_THAT(s.message(), Catch::Contains("manifest.tags"));
  m = test::sample_manifest();
  m.config = "{";
  CHECK(encode_manifest(m, &json).code() == errc::invalid_input);
}

TEST_CASE("agent effect, compaction, retention and daily budget settings round-trip") {
  agent_config a;
  a.id = "bot";
  a.budgets.tokens_per_day_max = 50000;
  a.budgets.cost_usd_per_day_max = 2.5;
  a.effects.titles = false;
  a.effects.embedder = "openai";
  a.effects.embedder_config = R"({"model":"m","dims":{"n":8}})";
  a.compaction.auto_tokens = 12000;
  a.compaction.stages = {"drop-thinking", "summarize"};
  a.compaction.keep_turns = 2;
  a.compaction.tool_result_bytes_max = 512;
  a.retention.archive_after_days = 30;
  a.retention.delete_after_days = 365;
  std::string json;
  REQUIRE(encode_agent(a, &json).is_ok());
  agent_config back;
  REQUIRE(decode_agent(json, &back).is_ok());
  CHECK(back == a);
  agent_config defaults;
  REQUIRE(decode_agent(R"({"id":"x"})", &defaults).is_ok());
  CHECK(defaults.effects.titles);
  CHECK(defaults.effects.embedder == "hashing");
  CHECK(defaults.compaction.stages.size() == 3);
  CHECK(defaults.compaction.auto_tokens == 0);

  agent_config bad = a;
  bad.effects.embedder_config = "[1]";
  CHECK(validate_agent(bad).message().find("agent.effects.embedder_config") != std::string::npos);
  bad = a;
  bad.compaction.stages = {"no such/stage"};
  CHECK(validate_agent(bad).message().find("agent.compaction.stages") != std::string::npos);
  bad = a;
  bad.budgets.cost_usd_per_day_max = -1;
  CHECK(validate_agent(bad).message().find("cost_usd_per_day_max") != std::string::npos);
}

TEST_CASE("manifest effect fields round-trip and stay out of manifests that lack them") {
  auto m = test::sample_manifest();
  m.title_generated = true;
  m.compaction_seq = 42;
  m.archived_at_ms = 1700000000000;
  std::string json;
  REQUIRE(encode_manifest(m, &json).is_ok());
  manifest back;
  REQUIRE(decode_manifest(json, &back).is_ok());
  CHECK(back == m);
  auto plain = test::sample_manifest();
  REQUIRE(encode_manifest(plain, &json).is_ok());
  CHECK(json.find("compaction_seq") == std::string::npos);
}

TEST_CASE("manifest depth: stored when not 0, and a manifest without it is a root") {
  manifest m;
  m.id = "t1.2";
  m.agent_id = "a";
  m.parent = parent_kind::thread;
  m.parent_id = "t1";
  m.created_at_ms = m.updated_at_ms = 1;
  m.depth = 2;
  std::string json;
  REQUIRE(encode_manifest(m, &json).is_ok());
  CHECK(json.find(R"("depth":2)") != std::string::npos);
  manifest back;
  REQUIRE(decode_manifest(json, &back).is_ok());
  CHECK(back == m);
  m.depth = 0;
  REQUIRE(encode_manifest(m, &json).is_ok());
  CHECK(json.find("depth") == std::string::npos);  // old readers see the format they know
  const std::string old = R"({"v":1,"id":"t1","agent_id":"a","status":"open","created_at":1,"updated_at":1,"last_seq":0})";
  REQUIRE(decode_manifest(old, &back).is_ok());
  CHECK(back.depth == 0);
}

TEST_CASE("agent delegation: round-trips, defaults when absent, refuses bad fields by name") {
  agent_config a;
  a.id = "boss";
  a.delegation.agents = {"x", "y"};
  a.delegation.depth_max = 5;
  a.delegation.self_allowed = true;
  std::string json;
  REQUIRE(encode_agent(a, &json).is_ok());
  agent_config back;
  REQUIRE(decode_agent(json, &back).is_ok());
  CHECK(back == a);
  REQUIRE(decode_agent(R"({"v":1,"id":"old"})", &back).is_ok());
  CHECK(back.delegation.agents.empty());
  CHECK(back.delegation.depth_max == 3);
  CHECK_FALSE(back.delegation.self_allowed);
  auto s = decode_agent(R"({"id":"b","delegation":{"agents":["bad id"]}})", &back);
  CHECK(s.code() == errc::invalid_input);
  CHECK_THAT(s.message(), Catch::Contains("agent.delegation.agents"));
  s = decode_agent(R"({"id":"b","delegation":{"depth_max":17}})", &back);
  CHECK_THAT(s.message(), Catch::Contains("agent.delegation.depth_max"));
  s = decode_agent(R"({"id":"b","delegation":{"self_allowed":"yes"}})", &back);
  CHECK_THAT(s.message(), Catch::Contains("self_allowed"));
  s = decode_agent(R"({"id":"b","tools":["ask_agent"]})", &back);
  CHECK_THAT(s.message(), Catch::Contains("agent.tools") && Catch::Contains("built in"));
}
