// Reading the answers of skein serve in process-level tests: a manifest, and
// the last seq of a waited entry's run ({"run":{..., "last_seq":N}}).
#pragma once

#include <catch2/catch.hpp>
#include <cstdint>
#include <string>

#include "runtime/model/json_codec.hpp"
#include "runtime/model/json_reader.hpp"

namespace skein::test {

inline manifest manifest_of(const std::string& body) {
  manifest m;
  INFO(body);
  REQUIRE(decode_manifest(body, &m).is_ok());
  return m;
}

inline uint64_t last_seq_of(const std::string& body) {
  json::document doc;
  json::object_reader answer, run;
  json::dom::element el;
  uint64_t seq = 0;
  INFO(body);
  REQUIRE(json::parse(body, {}, "answer", &doc).is_ok());
  REQUIRE(json::object_reader::open(doc.root(), "answer", &answer).is_ok());
  REQUIRE(answer.element("run", &el).is_ok());
  REQUIRE(json::object_reader::open(el, "run", &run).is_ok());
  REQUIRE(run.uint("last_seq", &seq).is_ok());
  return seq;
}

}  // namespace skein::test
