// Fuzz target: the JSON codec (events, manifests, agents, normalize_json) on
// untrusted text. Whatever decodes must encode, and decode back equal: the log
// stores only what it can read back (DESIGN section 3).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/model/agent.hpp"
#include "runtime/model/json_codec.hpp"
#include "tests/fuzz/fuzz_check.hpp"

namespace {

// Small limits so that the depth and size checks are reached by short inputs.
const skein::json_limits small_limits{4096, 8};

void event_round_trip(std::string_view text, const skein::json_limits& limits) {
  skein::event e;
  if (!skein::decode_event(text, &e, limits).is_ok()) return;
  std::string encoded;
  SKEIN_FUZZ_CHECK(skein::encode_event(e, &encoded).is_ok(), "a decoded event encodes");
  skein::event back;
  SKEIN_FUZZ_CHECK(skein::decode_event(encoded, &back).is_ok(), "an encoded event decodes");
  SKEIN_FUZZ_CHECK(back == e, "an event round-trips equal");
}

void manifest_round_trip(std::string_view text, const skein::json_limits& limits) {
  skein::manifest m;
  if (!skein::decode_manifest(text, &m, limits).is_ok()) return;
  std::string encoded;
  SKEIN_FUZZ_CHECK(skein::encode_manifest(m, &encoded).is_ok(), "a decoded manifest encodes");
  skein::manifest back;
  SKEIN_FUZZ_CHECK(skein::decode_manifest(encoded, &back).is_ok(), "an encoded manifest decodes");
  SKEIN_FUZZ_CHECK(back == m, "a manifest round-trips equal");
}

void agent_round_trip(std::string_view text) {
  skein::agent_config a;
  if (!skein::decode_agent(text, &a).is_ok()) return;
  std::string encoded;
  SKEIN_FUZZ_CHECK(skein::encode_agent(a, &encoded).is_ok(), "a decoded agent encodes");
  skein::agent_config back;
  SKEIN_FUZZ_CHECK(skein::decode_agent(encoded, &back).is_ok(), "an encoded agent decodes");
  SKEIN_FUZZ_CHECK(back == a, "an agent round-trips equal");
}

void normalize(std::string_view text) {
  std::string once;
  if (!skein::normalize_json(text, "fuzz", &once).is_ok()) return;
  std::string twice;
  SKEIN_FUZZ_CHECK(skein::normalize_json(once, "fuzz", &twice).is_ok(), "minified JSON is valid");
  SKEIN_FUZZ_CHECK(once == twice, "minifying is idempotent");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text{reinterpret_cast<const char*>(data), size};
  event_round_trip(text, {});
  event_round_trip(text, small_limits);
  manifest_round_trip(text, {});
  manifest_round_trip(text, small_limits);
  agent_round_trip(text);
  normalize(text);
  return 0;
}
