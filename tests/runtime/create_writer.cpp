// skein-create-writer DIR CALLS: CALLS runtime::create_threads calls of 100
// threads each, one after the other, printing "call <k> <id>... end" as soon as
// call k returned (its threads are durable), then "done", and waits to be
// killed. The parent kills it at a moment of its choosing.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

#include "runtime/runtime.hpp"

using namespace skein;

namespace {

constexpr size_t threads_per_call = 100;

int fail(const char* what, const status& s) {
  std::fprintf(stderr, "create-writer: %s: %s\n", what, s.to_string().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) return 64;
  int calls = std::atoi(argv[2]);
  runtime_options o;
  o.data_dir = argv[1];
  std::unique_ptr<runtime> rt;
  if (auto s = runtime::open(o, &rt); !s) return fail("open", s);
  agent_config a;
  a.id = "creator";
  if (auto s = rt->create_agent(a); !s) return fail("agent", s);
  thread_options to;
  to.agent_id = "creator";
  std::vector<thread_options> options(threads_per_call, to);
  for (int k = 0; k < calls; ++k) {
    std::vector<manifest> created;
    if (auto s = rt->create_threads(options, &created); !s) return fail("create_threads", s);
    std::string line = "call " + std::to_string(k);
    for (const auto& m : created) line += " " + m.id;
    line += " end\n";
    std::fputs(line.c_str(), stdout);
    std::fflush(stdout);
  }
  std::printf("done\n");
  std::fflush(stdout);
  for (;;) pause();
}
