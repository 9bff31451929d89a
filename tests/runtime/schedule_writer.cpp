// skein-schedule-writer DIR: opens a runtime on DIR with the real clock and a
// fast scheduler wake, makes sure two fast interval schedules exist (one that
// creates a trigger thread per firing, one bound to a thread), prints "ready"
// and lets them fire until it is killed. The parent SIGKILLs it at random
// moments and checks that no firing was lost or repeated.
#include <chrono>
#include <cstdio>
#include <string>
#include <unistd.h>

#include "runtime/runtime.hpp"
#include "tests/support/writer_runtime.hpp"

using namespace skein;

namespace {

int fail(const char* what, const status& s) { return test::writer_fail("schedule-writer", what, s); }

constexpr uint64_t trigger_interval_ms = 30;
constexpr uint64_t bound_interval_ms = 40;
constexpr uint64_t wake_ms = 10;

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 64;
  runtime_options o;
  o.data_dir = argv[1];
  o.schedule_wake_ms = wake_ms;
  o.effects.titles = o.effects.embeddings = o.effects.compaction = false;
  std::unique_ptr<runtime> rt;
  if (int code = test::open_with_agent("schedule-writer", o, "sched", R"({"latency_ms": 5, "default": {"reply": "ok"}})", &rt))
    return code;
  schedule existing;
  if (rt->get_schedule("trigger", &existing).code() == errc::not_found) {
    schedule s;
    s.id = "trigger";
    s.agent_id = "sched";
    s.kind = schedule_kind::interval;
    s.interval_ms = trigger_interval_ms;
    s.input_text = "trigger input";
    if (auto c = rt->create_schedule(s); !c) return fail("create trigger", c);
  }
  if (rt->get_schedule("bound", &existing).code() == errc::not_found) {
    thread_options to;
    to.agent_id = "sched";
    manifest t;
    if (auto c = rt->create_thread(to, &t); !c) return fail("thread", c);
    schedule s;
    s.id = "bound";
    s.agent_id = "sched";
    s.kind = schedule_kind::interval;
    s.interval_ms = bound_interval_ms;
    s.thread_id = t.id;
    s.input_text = "bound input";
    if (auto c = rt->create_schedule(s); !c) return fail("create bound", c);
  }
  std::printf("ready\n");
  std::fflush(stdout);
  for (;;) pause();
}
