#include <catch2/catch.hpp>
#include <regex>

#include "runtime/model/ids.hpp"

using namespace skein;

TEST_CASE("validate_id accepts the documented charset") {
  for (const char* id : {"a", "th_20261122_abcdefghjkmn", "A-b.c:d_e", "parent.1.1", "a.b"}) {
    INFO(id);
    CHECK(validate_id(id, "thread id").is_ok());
  }
  CHECK(validate_id(std::string(128, 'a'), "thread id").is_ok());
}

TEST_CASE("validate_id rejects bad ids and names the field and the limit") {
  auto s = validate_id(std::string(129, 'a'), "thread id");
  CHECK(s.code() == errc::invalid_input);
  CHECK(s.message().find("thread id") != std::string::npos);
  CHECK(s.message().find("128") != std::string::npos);

  CHECK(validate_id("", "agent_id").code() == errc::invalid_input);
  CHECK(validate_id("a/b", "agent_id").code() == errc::invalid_input);
  CHECK(validate_id(std::string("a\0b", 3), "agent_id").code() == errc::invalid_input);
  CHECK(validate_id("a b", "agent_id").code() == errc::invalid_input);
  CHECK(validate_id("é", "agent_id").code() == errc::invalid_input);
  CHECK(validate_id(".hidden", "agent_id").code() == errc::invalid_input);
  CHECK(validate_id("a..b", "agent_id").code() == errc::invalid_input);
  CHECK(validate_id("..", "agent_id").message().find("agent_id") != std::string::npos);
}

TEST_CASE("new thread ids carry the UTC day and 12 base32 characters") {
  // 2026-11-22T23:59:59.999Z
  int64_t t = 1795391999999;
  auto id = new_thread_id(t, 0);
  CHECK(id == "th_20261122_000000000000");
  CHECK(new_thread_id(t, ~uint64_t{0}) == "th_20261122_zzzzzzzzzzzz");
  CHECK(new_thread_id(t + 1, 0).substr(0, 12) == "th_20261123_");
  std::regex shape{"th_[0-9]{8}_[0-9a-hjkmnp-tv-z]{12}"};
  auto a = new_thread_id(now_ms()), b = new_thread_id(now_ms());
  CHECK(std::regex_match(a, shape));
  CHECK(a != b);
  CHECK(validate_id(a, "thread id").is_ok());
}

TEST_CASE("child ids append the counter") {
  CHECK(child_thread_id("p", 1) == "p.1");
  CHECK(child_thread_id("p.1", 12) == "p.1.12");
  CHECK(validate_id(child_thread_id("th_20261122_000000000000", 3), "thread id").is_ok());
}
