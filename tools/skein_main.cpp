// skein: the command-line entry point.
#include <cstdio>
#include <cstring>
#include <string>

namespace skein::tools {
int run_demo(int argc, char** argv);
}

namespace {

void usage(std::FILE* out) {
  std::fprintf(out,
               "usage: skein <command> [options]\n"
               "\n"
               "commands:\n"
               "  demo [--data DIR] [--durability sync|flush|memory]\n"
               "      run a scripted conversation with a tool call and print its events as they stream\n"
               "\n"
               "exit codes: 0 success, 1 failure, 64 usage error\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    usage(stderr);
    return 64;
  }
  std::string cmd = argv[1];
  if (cmd == "demo") return skein::tools::run_demo(argc - 2, argv + 2);
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    usage(stdout);
    return 0;
  }
  std::fprintf(stderr, "skein: unknown command '%s'\n", cmd.c_str());
  usage(stderr);
  return 64;
}
