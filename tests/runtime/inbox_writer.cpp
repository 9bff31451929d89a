// skein-inbox-writer DIR COUNT: submits COUNT inputs to one thread whose runs
// are slow, printing "thread <id>" first and then "acked <run id>" as soon as
// each submit returned (the input is durable), then "done", and waits to be
// killed. The parent kills it at a moment of its choosing.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

#include "runtime/runtime.hpp"
#include "tests/support/writer_runtime.hpp"

using namespace skein;

namespace {

int fail(const char* what, const status& s) { return test::writer_fail("inbox-writer", what, s); }

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) return 64;
  int count = std::atoi(argv[2]);
  runtime_options o;
  o.data_dir = argv[1];
  o.thread_queue_max = 1024;
  std::unique_ptr<runtime> rt;
  if (int code = test::open_with_agent("inbox-writer", o, "inbox", R"({"latency_ms": 20, "default": {"reply": "ok"}})", &rt))
    return code;
  thread_options to;
  to.agent_id = "inbox";
  manifest t;
  if (auto s = rt->create_thread(to, &t); !s) return fail("thread", s);
  std::printf("thread %s\n", t.id.c_str());
  std::fflush(stdout);
  for (int i = 0; i < count; ++i) {
    run_input in;
    in.text = "input " + std::to_string(i);
    std::string run_id;
    if (auto s = rt->submit(t.id, in, &run_id); !s) return fail("submit", s);
    std::printf("acked %s\n", run_id.c_str());
    std::fflush(stdout);
  }
  std::printf("done\n");
  std::fflush(stdout);
  for (;;) pause();
}
