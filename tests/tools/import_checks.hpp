// What the import and export tests share: the fixture files (SKEIN_IO_FIXTURES
// names their directory), an import that must succeed, one that must fail and
// leave its output untouched, and the envelope rules every imported thread keeps.
#pragma once

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <string>

#include "runtime/model/ids.hpp"
#include "tools/io/import_export.hpp"

#ifndef SKEIN_IO_FIXTURES
#error "SKEIN_IO_FIXTURES must name the fixture directory"
#endif

namespace skein::test {

// 2025-03-01T10:00:00Z and 2025-03-01T09:00:00Z.
inline constexpr int64_t t10 = 1740823200000;
inline constexpr int64_t t09 = 1740819600000;

inline std::string fixture(const std::string& name) {
  std::ifstream in(std::string{SKEIN_IO_FIXTURES} + "/" + name, std::ios::binary);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline import_result must_import(std::string_view body, import_format f,
                          const std::string& agent = "importer") {
  import_result r;
  status s = parse_import(body, f, agent, &r);
  INFO(s.to_string());
  REQUIRE(s.is_ok());
  return r;
}

// A result that a failed import must leave exactly as it was.
inline import_result sentinel() {
  import_result r;
  r.format = import_format::gitmem;
  r.threads.resize(1);
  r.threads[0].manifest.id = "sentinel";
  r.threads[0].events.push_back(make_thinking("keep me"));
  r.torn_last_line = true;
  r.torn_detail = "untouched";
  return r;
}

inline bool same(const import_result& a, const import_result& b) {
  if (a.format != b.format || a.torn_last_line != b.torn_last_line ||
      a.torn_detail != b.torn_detail || a.threads.size() != b.threads.size())
    return false;
  for (size_t i = 0; i < a.threads.size(); ++i)
    if (!(a.threads[i].manifest == b.threads[i].manifest) ||
        a.threads[i].events != b.threads[i].events)
      return false;
  return true;
}

// Runs an import that must fail: returns its status, checks *out is untouched.
inline status must_fail(std::string_view body, import_format f, const std::string& agent = "importer") {
  import_result r = sentinel();
  status s = parse_import(body, f, agent, &r);
  CHECK_FALSE(s.is_ok());
  CHECK(s.code() == errc::invalid_input);
  CHECK(same(r, sentinel()));
  return s;
}

inline void check_envelopes(const imported_thread& t) {
  REQUIRE(t.manifest.last_seq == t.events.size());
  for (size_t i = 0; i < t.events.size(); ++i) {
    CHECK(t.events[i].seq == i + 1);
    CHECK(t.events[i].ts_ms >= t.manifest.created_at_ms);
  }
  CHECK(validate_id(t.manifest.id, "id").is_ok());
  CHECK(validate_id(t.manifest.agent_id, "agent").is_ok());
}

inline std::string lace_line(const std::string& thread, const std::string& text) {
  return R"({"type":"USER_MESSAGE","data":")" + text + R"(","threadId":")" + thread + "\"}\n";
}

}  // namespace skein::test
