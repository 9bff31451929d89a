// What a thread's engine_config patch may change, per engine (engine_policy.hpp).
#include <catch2/catch.hpp>

#include <string>

#include "runtime/model/engine_policy.hpp"

using namespace skein;

TEST_CASE("engine policy: openai threads set model, temperature and max_tokens only", "[engine_policy]") {
  CHECK(check_thread_engine_patch("openai", "").is_ok());
  CHECK(check_thread_engine_patch("openai", "{}").is_ok());
  CHECK(check_thread_engine_patch("openai", R"({"model":"m","temperature":0.2,"max_tokens":5})").is_ok());
  CHECK(check_thread_engine_patch("openai", R"({"model":null})").is_ok());
  for (const char* key : {"base_url", "api_key_env", "ca_file", "stream", "timeout_ms", "retries", "prices"}) {
    status s = check_thread_engine_patch("openai", std::string(R"({"model":"m",")") + key + R"(":1})");
    INFO(key);
    CHECK(s.code() == errc::invalid_input);
    CHECK(s.field() == std::string("engine_config.") + key);
  }
}

TEST_CASE("engine policy: process threads set nothing, other engines anything", "[engine_policy]") {
  CHECK(check_thread_engine_patch("process", "{}").is_ok());
  CHECK(check_thread_engine_patch("process", R"({"command":["/bin/sh"]})").field() == "engine_config.command");
  CHECK(check_thread_engine_patch("process", R"({"model":"m"})").field() == "engine_config.model");
  CHECK(check_thread_engine_patch("scripted", R"({"rules":[],"anything":1})").is_ok());
  CHECK(check_thread_engine_patch("host-engine", R"({"base_url":"x"})").is_ok());
  // A long key is named, cut; a patch that is not an object is refused.
  status s = check_thread_engine_patch("process", "{\"" + std::string(500, 'k') + "\":1}");
  CHECK(s.field().rfind("engine_config." + std::string(64, 'k'), 0) == 0);
  CHECK(s.field().size() < 100);
  // Cut on a UTF-8 boundary: 40 two-byte characters are 80 bytes.
  std::string wide;
  for (int i = 0; i < 40; ++i) wide += "\xc3\xa9";
  s = check_thread_engine_patch("process", "{\"" + wide + "\":1}");
  CHECK(s.field().rfind("engine_config." + wide.substr(0, 64), 0) == 0);
  CHECK(s.field().find("\xc3", std::string("engine_config.").size() + 64) == std::string::npos);
  CHECK(check_thread_engine_patch("openai", "[1]").code() == errc::invalid_input);
  CHECK(check_thread_engine_patch("openai", "{").code() == errc::invalid_input);
}
