// A process is SIGKILLed mid-run; reopening repairs that run and nothing else.
#include <catch2/catch.hpp>
#include <csignal>
#include <poll.h>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/support/child_process.hpp"
#include "tests/support/runtime_fixture.hpp"

using namespace skein;
using namespace skein::test;
using namespace std::chrono_literals;

TEST_CASE("a run killed mid-tool is repaired at open; other threads are untouched") {
  temp_dir dir;
  child_process writer{{SKEIN_RUN_WRITER, dir.str()}};
  auto line = writer.read_until(60s, [](const std::string& out) { return out.find('\n') != std::string::npos; });
  writer.kill();
  std::istringstream in{line};
  std::string word, bystander, running;
  in >> word >> bystander >> running;
  REQUIRE(word == "ready");

  runtime_options o;
  o.data_dir = dir.str();
  o.tools.push_back(make_function_tool({"hang", "answers now", "{}"}, [](const tool_invocation&) {
    return tool_output{"ok", false};
  }));
  runtime_fixture f{o, false};
  CHECK(f.rt->repaired_at_open() == std::vector<std::string>{running});

  auto log = f.events(running);
  REQUIRE(log.size() >= 6);
  // ... tool_call h1, tool_call h2 | tool_result h1, tool_result h2, interrupted, stop
  auto n = log.size();
  CHECK(log[n - 6].type == event_type::tool_call);
  CHECK(log[n - 5].type == event_type::tool_call);
  CHECK(log[n - 4].type == event_type::tool_result);
  CHECK(log[n - 4].call_id == "h1");
  CHECK(log[n - 4].is_error);
  CHECK(log[n - 3].call_id == "h2");
  CHECK(log[n - 3].is_error);
  CHECK(log[n - 2].name == "thread.interrupted");
  CHECK(log[n - 1].name == "thread.stop");
  CHECK_THAT(log[n - 1].json, Catch::Contains(R"("outcome":"failed")"));
  CHECK(check_runs(log) == 1);
  manifest m;
  REQUIRE(f.rt->get_thread(running, &m).is_ok());
  CHECK(m.status == thread_status::failed);
  CHECK(m.last_seq == n);

  auto other = f.events(bystander);
  CHECK(check_runs(other) == 1);
  CHECK(other.back().name == "thread.stop");
  CHECK_THAT(other.back().json, Catch::Contains("completed"));
  REQUIRE(f.rt->get_thread(bystander, &m).is_ok());
  CHECK(m.status == thread_status::open);

  // The repaired thread takes the next input.
  auto r = f.run(running, "hello again");
  CHECK(r.outcome == run_outcome::completed);
  CHECK(r.first_seq == n + 1);
  CHECK(check_runs(f.events(running)) == 2);

  // Opening again repairs nothing more.
  f.rt.reset();
  runtime_fixture again{o, false};
  CHECK(again.rt->repaired_at_open().empty());
}
