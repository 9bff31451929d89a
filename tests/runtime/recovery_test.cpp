// A process is SIGKILLed mid-run; reopening repairs that run and nothing else.
#include <catch2/catch.hpp>
#include <csignal>
#include <poll.h>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

#include "persistence/keys.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/log_fixtures.hpp"
#include "tests/support/raw_db.hpp"
#include "tests/support/runtime_fixture.hpp"

using namespace skein;
using namespace skein::test;
using namespace std::chrono_literals;

TEST_CASE("a run killed mid-tool is repaired at open, other threads are untouched") {
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

namespace {

// A thread of agent "a" in the middle of a run: input, thread.start, an
// unanswered tool call.
tick running_thread(const std::string& id) {
  tick t;
  t.thread_id = id;
  t.create = true;
  t.manifest = make_manifest(id, "a");
  t.manifest.status = thread_status::running;
  t.events.push_back(make_message(message_role::user, "go"));
  t.events.push_back(make_signal("thread.start", "{}"));
  t.events.push_back(make_tool_call("c1", "shell", "{}"));
  uint64_t seq = 0;
  for (auto& e : t.events) {
    e.seq = ++seq;
    e.ts_ms = 5000;
    e.run_id = seq == 1 ? "" : "r1";
  }
  return t;
}

std::string nested(size_t levels) { return std::string(levels, '[') + "1" + std::string(levels, ']'); }

}  // namespace

TEST_CASE("a poison record in a running thread is quarantined at open, the rest of the database opens") {
  temp_dir dir;
  {
    log_options lo;
    lo.path = dir.str();
    std::unique_ptr<event_log> log;
    REQUIRE(event_log::open(lo, &log).is_ok());
    agent_config a;
    a.id = "a";
    a.engine_config = R"({"default":{"reply":"ok"}})";
    REQUIRE(log->put_agent(a).is_ok());
    for (const char* id : {"bad-event", "bad-manifest", "healthy"}) {
      auto t = running_thread(id);
      REQUIRE(log->commit(t).is_ok());
    }
    auto idle = make_tick("idle", 1, 1, "a");
    REQUIRE(log->commit(idle).is_ok());
  }
  {
    // What an unchecked writer once stored: valid JSON past json_depth_max.
    raw_db raw{dir.str()};
    raw.put("events", keys::event_key("bad-event", 3),
            R"({"seq":3,"ts":1,"run":"r1","type":"tool_call","payload":{"call_id":"c1","name":"shell","arguments":)" +
                nested(63) + "}}");
    raw.put("threads", "bad-manifest",
            R"({"v":1,"id":"bad-manifest","agent_id":"a","status":"running","created_at":1,"updated_at":2,"last_seq":3,"config":{"x":)" +
                nested(70) + "}}");
  }
  runtime_options o;
  o.data_dir = dir.str();
  runtime_fixture f{o, false};  // the open itself must succeed
  CHECK(f.rt->repaired_at_open() == std::vector<std::string>{"healthy"});
  const auto& q = f.rt->quarantined_at_open();
  REQUIRE(q.size() == 2);
  CHECK(q[0].thread_id == "bad-event");
  CHECK(q[0].written);
  CHECK(q[1].thread_id == "bad-manifest");
  CHECK(q[1].written);

  diagnosis d;
  REQUIRE(f.rt->diagnose("bad-event", &d).is_ok());
  CHECK(d.status == thread_status::failed);
  CHECK(d.stage == "failed");
  CHECK(d.quarantined);
  CHECK(d.quarantine_key == "events key bad-event#3");
  CHECK_THAT(d.quarantine_reason, Catch::Contains("json_depth_max (64)"));
  CHECK_THAT(d.last_error, Catch::StartsWith("quarantined: "));
  CHECK(d.last_run_id == "r1");
  REQUIRE(f.rt->diagnose("bad-manifest", &d).is_ok());
  CHECK(d.quarantined);
  CHECK(d.quarantine_key == "threads key bad-manifest");
  REQUIRE(f.rt->diagnose("healthy", &d).is_ok());
  CHECK_FALSE(d.quarantined);

  // The agent's listing works and shows every thread; the healthy ones run.
  thread_query lq;
  lq.value = "a";
  thread_page page;
  REQUIRE(f.rt->list_threads(lq, &page).is_ok());
  CHECK(page.threads.size() == 4);
  CHECK(page.unreadable.empty());
  CHECK(f.run("idle", "hi").outcome == run_outcome::completed);
  CHECK(f.run("healthy", "again").outcome == run_outcome::completed);

  // A quarantined thread can be deleted.
  REQUIRE(f.rt->delete_thread("bad-event").is_ok());
  manifest m;
  CHECK(f.rt->get_thread("bad-event", &m).code() == errc::not_found);

  // Opening again quarantines nothing more.
  f.rt.reset();
  runtime_fixture again{o, false};
  CHECK(again.rt->quarantined_at_open().empty());
  CHECK(again.rt->repaired_at_open().empty());
}
