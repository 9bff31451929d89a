// The SIGKILL loops' harness (kill_loop_test.cpp, effects_kill_test.cpp): how
// many kills and which seed (from the environment; the seed is printed so that
// SKEIN_SEED replays the kill moments), the data they start from (one agent and
// its threads, written by a `skein serve` stopped cleanly), and the random
// moment of each kill.
#pragma once

#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/child_process.hpp"
#include "tests/support/server_fixture.hpp"
#include "tests/support/temp_dir.hpp"

namespace skein::test {

struct kill_plan {
  size_t kills = 0;
  uint64_t seed = 0;
};

// `kills_env` names the variable that sets the number of kills (`kills_default`
// when unset or not a positive number); SKEIN_SEED sets the seed, else a random
// one. `loop` names the loop in the printed line.
inline kill_plan plan_kills(const char* loop, const char* kills_env, size_t kills_default) {
  kill_plan p;
  const char* k = std::getenv(kills_env);
  p.kills = k != nullptr && std::atoi(k) > 0 ? static_cast<size_t>(std::atoi(k)) : kills_default;
  const char* s = std::getenv("SKEIN_SEED");
  p.seed = s != nullptr ? std::strtoull(s, nullptr, 10) : std::random_device{}();
  std::printf("%s: %zu SIGKILLs, seed %llu (SKEIN_SEED replays the kill moments)\n", loop, p.kills,
              static_cast<unsigned long long>(p.seed));
  return p;
}

// What a kill loop starts from: its plan, the generator of its kill moments
// (seeded with the plan's seed) and an empty data directory for `skein serve`.
struct kill_loop {
  kill_plan plan;
  std::mt19937_64 rng;
  temp_dir dir;
  std::string data;

  kill_loop(const char* loop, const char* kills_env, size_t kills_default)
      : plan{plan_kills(loop, kills_env, kills_default)}, rng{plan.seed}, data{dir.str("data")} {}
};

// A `skein serve` on `data` makes the agent (`agent_json`, its POST /v1/agents
// body) and `count` threads of it, then stops cleanly; the threads' ids.
inline std::vector<std::string> make_agent_threads(const char* binary, const std::string& data,
                                                   const std::string& agent_json, size_t count) {
  std::vector<std::string> threads;
  serve_process srv{binary, data};
  http::client c{{"127.0.0.1", srv.port()}};
  http::response r;
  REQUIRE(c.call("POST", "/v1/agents", agent_json, &r).is_ok());
  INFO(r.body);
  REQUIRE(r.status == 201);
  for (size_t i = 0; i < count; ++i) {
    REQUIRE(c.call("POST", "/v1/threads", R"({"agent_id":"a"})", &r).is_ok());
    REQUIRE(r.status == 201);
    threads.push_back(field(r.body, "id"));
  }
  srv.stop(SIGTERM);
  return threads;
}

// Sleeps until a random moment in [min, max) drawn from `rng`. Under a
// sanitizer (make test-asan sets SKEIN_UNDER_SANITIZER) the server serves
// several times slower: the window stretches by `sanitizer_slowdown`.
inline void sleep_until_kill(std::mt19937_64& rng, std::chrono::milliseconds min, std::chrono::milliseconds max,
                             int64_t sanitizer_slowdown) {
  const int64_t slowdown = std::getenv("SKEIN_UNDER_SANITIZER") != nullptr ? sanitizer_slowdown : 1;
  auto span = (max - min).count();
  std::this_thread::sleep_for((min + std::chrono::milliseconds(rng() % span)) * slowdown);
}

}  // namespace skein::test
