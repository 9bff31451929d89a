// The storable rule (json_codec.hpp): what encode_* and check_storable accept
// reads back under the same limits, and what they refuse could not be read.
#include <catch2/catch.hpp>
#include <random>

#include "runtime/model/agent.hpp"
#include "runtime/model/json_codec.hpp"
#include "runtime/model/json_reader.hpp"

using namespace skein;

namespace {

// `depth` levels of arrays around a number: json_depth() == depth.
std::string nested_arrays(size_t depth) { return std::string(depth, '[') + "1" + std::string(depth, ']'); }

event stamped(event e, uint64_t seq = 7) {
  e.seq = seq;
  e.ts_ms = 1795391999000;
  e.run_id = "run_1";
  return e;
}

manifest small_manifest() {
  manifest m;
  m.id = "t1";
  m.agent_id = "a";
  m.created_at_ms = 1;
  m.updated_at_ms = 2;
  return m;
}

// Encodes without the rule's limits (a writer that checks nothing), then reads
// back under `limits`: what the old writer would have stored and what then happens.
status reads_back(const event& e, const json_limits& limits) {
  json_limits unlimited;
  unlimited.json_bytes_max = size_t{1} << 30;
  unlimited.json_depth_max = 4096;
  std::string text;
  SKEIN_TRY(encode_event(e, &text, unlimited));
  event back;
  return decode_event(text, &back, limits);
}

}  // namespace

TEST_CASE("json_depth counts nesting as the reader does") {
  CHECK(json_depth("1") == 0);
  CHECK(json_depth("\"[{\"") == 0);
  CHECK(json_depth("[]") == 0);  // empty containers add no level, as in simdjson
  CHECK(json_depth("[ [ ] ]") == 1);
  CHECK(json_depth("{\"a\":{}}") == 1);
  CHECK(json_depth("[1]") == 1);
  CHECK(json_depth(R"({"a":[1,{"b":"]]]\"[["}]})") == 3);
  CHECK(json_depth(R"(["\\",[2]])") == 2);
  CHECK(json_depth(nested_arrays(63)) == 63);
  // Agreement with the parser at the limit.
  json_limits limits;
  limits.json_depth_max = 63;
  json::document doc;
  CHECK(json::parse(nested_arrays(63), limits, "x", &doc).is_ok());
  CHECK_FALSE(json::parse(nested_arrays(64), limits, "x", &doc).is_ok());
  std::string empty_inside = std::string(64, '[') + std::string(64, ']');
  CHECK(json_depth(empty_inside) == 63);
  CHECK(json::parse(empty_inside, limits, "x", &doc).is_ok());
}

TEST_CASE("a 5 MiB tool result is refused before encoding ends, naming the field and the limit") {
  event e = stamped(make_tool_result("c1", "shell", std::string(5 << 20, 'x'), false));
  CHECK(reads_back(e, {}).code() == errc::invalid_input);  // the defect: stored, then unreadable
  status s = check_storable(e);
  REQUIRE(s.code() == errc::invalid_input);
  CHECK_THAT(s.message(), Catch::Contains("json_bytes_max (4194304)"));
  CHECK_THAT(s.message(), Catch::Contains("event.payload.output"));
  std::string out;
  CHECK(encode_event(e, &out).code() == errc::invalid_input);
}

TEST_CASE("the size limit holds on the encoded form, to the byte") {
  json_limits limits;
  limits.json_bytes_max = 4096;
  event e = stamped(make_assistant_text(""));
  std::string base;
  REQUIRE(encode_event(e, &base, limits).is_ok());
  // Quotes double when escaped: the text is measured as it will be stored.
  e.text = std::string((limits.json_bytes_max - base.size()) / 2, '"');
  REQUIRE(check_storable(e, limits).is_ok());
  std::string text;
  REQUIRE(encode_event(e, &text, limits).is_ok());
  CHECK(text.size() == limits.json_bytes_max - (limits.json_bytes_max - base.size()) % 2);
  event back;
  CHECK(decode_event(text, &back, limits).is_ok());
  e.text += "\"";
  status s = check_storable(e, limits);
  CHECK(s.code() == errc::invalid_input);
  CHECK(reads_back(e, limits).code() == errc::invalid_input);
}

TEST_CASE("tool-call arguments count with the levels of the event envelope") {
  json_limits limits;  // json_depth_max 64
  event ok = stamped(make_tool_call("c1", "t", nested_arrays(64 - event_envelope_depth)));
  REQUIRE(check_storable(ok, limits).is_ok());
  CHECK(reads_back(ok, limits).is_ok());

  event deep = stamped(make_tool_call("c1", "t", nested_arrays(63)));
  CHECK_FALSE(reads_back(deep, limits).is_ok());  // the defect: nested 63 deep, unreadable
  status s = check_storable(deep, limits);
  REQUIRE(s.code() == errc::invalid_input);
  CHECK(s.message() ==
        "event.payload.arguments: nesting 63 plus the 2 levels above it exceeds json_depth_max (64)");
  CHECK(event_json_depth_max(limits) == 62);

  event data = stamped(make_signal("x", "{\"a\":" + nested_arrays(62) + "}"));
  s = check_storable(data, limits);
  CHECK_THAT(s.message(), Catch::StartsWith("event.payload.data: nesting 63"));
  event compaction = stamped(make_compaction("s", 1, 2, "[" + nested_arrays(62) + "]"));
  s = check_storable(compaction, limits);
  CHECK_THAT(s.message(), Catch::StartsWith("event.payload.events: nesting 63"));
}

TEST_CASE("manifests and agents follow the same rule") {
  manifest m = small_manifest();
  m.config = "{\"a\":" + nested_arrays(62) + "}";  // 63 + the manifest's level = 64
  CHECK(check_storable(m).is_ok());
  m.config = "{\"a\":" + nested_arrays(63) + "}";
  status s = check_storable(m);
  CHECK_THAT(s.message(), Catch::StartsWith("manifest.config: nesting 64 plus the 1 level"));

  // An imported title just under the limit grows past it when its quotes are escaped.
  m = small_manifest();
  m.title = std::string((4 << 20) - 1000, '"');
  s = check_storable(m);
  CHECK(s.code() == errc::invalid_input);
  CHECK_THAT(s.message(), Catch::Contains("manifest.title") && Catch::Contains("json_bytes_max"));
  std::string text;
  json_limits unlimited;
  unlimited.json_bytes_max = 64 << 20;
  REQUIRE(encode_manifest(m, &text, unlimited).is_ok());
  manifest back;
  CHECK_FALSE(decode_manifest(text, &back).is_ok());

  agent_config a;
  a.id = "a";
  a.engine_config = "{\"rules\":" + nested_arrays(63) + "}";
  s = check_storable(a);
  CHECK_THAT(s.message(), Catch::StartsWith("agent.engine_config: nesting 64"));
  a.engine_config = "{\"rules\":" + nested_arrays(62) + "}";
  CHECK(check_storable(a).is_ok());
}

TEST_CASE("invalid UTF-8 anywhere is refused with the field") {
  CHECK_THAT(check_storable(stamped(make_thinking("bad \xC3\x28"))).message(),
             Catch::Contains("event.payload.text: invalid UTF-8"));
  event e = stamped(make_message(message_role::user, "ok"));
  e.run_id = "r\xFF";
  CHECK_THAT(check_storable(e).message(), Catch::Contains("event.run: invalid UTF-8"));
  manifest m = small_manifest();
  m.title = "\xE2\x82";
  CHECK_THAT(check_storable(m).message(), Catch::Contains("manifest.title: invalid UTF-8"));
}

TEST_CASE("randomized: check_storable accepts exactly what reads back") {
  uint64_t seed = std::random_device{}();
  if (const char* s = std::getenv("SKEIN_SEED")) seed = std::stoull(s);
  INFO("SKEIN_SEED=" << seed);
  std::printf("storable randomized test: SKEIN_SEED=%llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng{seed};
  json_limits limits;
  limits.json_bytes_max = 600;
  limits.json_depth_max = 10;
  const char alphabet[] = "ab\"\\\n\x01{[";
  for (int i = 0; i < 2000; ++i) {
    size_t depth = rng() % 13;
    std::string text;
    for (size_t n = rng() % 400; n > 0; --n) text.push_back(alphabet[rng() % (sizeof alphabet - 1)]);
    event e;
    switch (rng() % 3) {
      case 0: e = make_tool_call("c", "t", "{\"x\":" + nested_arrays(depth) + "}"); break;
      case 1: e = make_tool_result("c", "t", text, false); break;
      default: e = make_signal("s", "{\"t\":\"" + std::string(text.size(), 'q') + "\",\"d\":" + nested_arrays(depth) + "}");
    }
    e = stamped(e, 1 + rng() % 1000);
    INFO("case " << i);
    CHECK(check_storable(e, limits).is_ok() == reads_back(e, limits).is_ok());
  }
}
