// Runs a fuzz target over files, without libFuzzer: the regression inputs and the
// seed corpus become an ordinary test in every build (g++, ASan, TSan). Arguments
// are files or folders (every file in a folder, in name order). A crash or a
// failed invariant aborts, which fails the test.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
// A target that keeps state across inputs (a runtime) may define this to close
// it before main returns: no thread of its may still run while exit() destroys
// the process's static objects.
extern "C" void skein_fuzz_teardown() __attribute__((weak));

namespace {

bool run_file(const std::filesystem::path& p) {
  std::ifstream f{p, std::ios::binary};
  if (!f) {
    std::fprintf(stderr, "replay: cannot read %s\n", p.c_str());
    return false;
  }
  std::string bytes{std::istreambuf_iterator<char>{f}, std::istreambuf_iterator<char>{}};
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  size_t ran = 0;
  for (int i = 1; i < argc; ++i) {
    fs::path arg{argv[i]};
    std::vector<fs::path> files;
    if (fs::is_directory(arg)) {
      for (const auto& entry : fs::directory_iterator{arg})
        if (entry.is_regular_file()) files.push_back(entry.path());
      std::sort(files.begin(), files.end());
    } else {
      files.push_back(arg);
    }
    for (const auto& f : files) {
      if (!run_file(f)) return 1;
      ++ran;
    }
  }
  if (skein_fuzz_teardown) skein_fuzz_teardown();
  std::printf("replay: %zu inputs ran\n", ran);
  return 0;
}
