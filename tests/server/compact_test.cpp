// POST /v1/threads/{id}/compact and the compaction metrics.
#include <catch2/catch.hpp>

#include "tests/support/server_fixture.hpp"

using namespace skein;
using namespace skein::test;

TEST_CASE("POST compact compacts and refuses bad fields by name and counts in /metrics") {
  server_fixture f;
  f.agent("a", R"({"default":{"reply":"a long answer that goes on and on and on and on and on and on"}})");
  std::string id = f.thread("a");
  for (int i = 0; i < 3; ++i) {
    auto r = f.call("POST", "/v1/threads/" + id + "/entries", R"({"text":"question )" + std::to_string(i) + R"(","wait":true})");
    REQUIRE(r.status < 300);
  }
  auto r = f.call("POST", "/v1/threads/" + id + "/compact", R"({"stages":["drop-thinking","summarize"],"keep_turns":1})");
  REQUIRE(r.status == 200);
  CHECK(r.body.find(R"("compacted":true)") != std::string::npos);
  CHECK(r.body.find(R"("failed":false)") != std::string::npos);

  r = f.call("POST", "/v1/threads/" + id + "/compact", R"({"stages":["shred"]})");
  CHECK(r.status == 400);
  CHECK(r.body.find("stages") != std::string::npos);
  r = f.call("POST", "/v1/threads/" + id + "/compact", R"({"keep_turns":-1})");
  CHECK(r.status == 400);
  CHECK(r.body.find("keep_turns") != std::string::npos);
  r = f.call("POST", "/v1/threads/" + id + "/compact", R"({"tool_result_bytes_max":1})");
  CHECK(r.status == 400);
  CHECK(r.body.find("tool_result_bytes_max") != std::string::npos);
  r = f.call("POST", "/v1/threads/nope/compact", "{}");
  CHECK(r.status == 404);
  r = f.call("GET", "/v1/threads/" + id + "/compact");
  CHECK(r.status == 405);

  r = f.call("GET", "/metrics");
  REQUIRE(r.status == 200);
  CHECK(r.body.find("skein_compactions_total 1\n") != std::string::npos);
  CHECK(r.body.find("skein_compactions_failed_total 0\n") != std::string::npos);
  CHECK(r.body.find("skein_compaction_tokens_saved_total ") != std::string::npos);
  CHECK(r.body.find("skein_compaction_tokens_saved_total 0\n") == std::string::npos);
}
