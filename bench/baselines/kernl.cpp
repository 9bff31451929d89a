// The kernl baseline of the runs and latency workloads: bench/baselines/kernl/kernl.mjs
// run by Node as a child process, whose last line on stdout is its figures as JSON
// (the grammar is at the top of kernl.mjs). The script verifies kernl's store itself
// and exits 1 when anything is missing; here its figures are checked against the runs
// asked for. kernl is optional: any failure skips the row with the reason.
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>

#include "bench/baselines/baselines.hpp"
#include "runtime/model/json_reader.hpp"

extern char** environ;

namespace skein::bench {
namespace {

constexpr const char* kernl_dir = SKEIN_SOURCE_DIR "/bench/baselines/kernl";
constexpr const char* enable_hint = "to enable: npm ci --prefix bench/baselines/kernl";
// Node starts in well under a second and kernl does ~10,000 runs/s: a script still
// running this long past the model's delay per 10,000 runs is hung, not slow.
constexpr double timeout_s_per_10k_runs = 120;
constexpr size_t output_bytes_max = 1 << 20;

// The first executable `name` on PATH, or "".
std::string find_on_path(const char* name) {
  const char* path = std::getenv("PATH");
  std::string_view rest = path != nullptr ? path : "";
  while (!rest.empty()) {
    size_t colon = rest.find(':');
    std::string dir{rest.substr(0, colon)};
    rest = colon == std::string_view::npos ? std::string_view{} : rest.substr(colon + 1);
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return {};
}

// Runs args[0] with stdout and stderr on one pipe until it ends or `timeout_s`
// passes (then kills it, our own child by its pid). "" or why it could not run or
// did not exit 0; *last gets its last non-empty line.
std::string run_child(const std::vector<std::string>& args, double timeout_s, std::string* last) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return std::string{"pipe: "} + std::strerror(errno);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  int rc = ::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    return "spawn " + args[0] + ": " + std::strerror(rc);
  }
  auto deadline = bench_clock::now() + std::chrono::duration<double>(timeout_s);
  std::string output;
  bool timed_out = false;
  char buf[4096];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - bench_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000))) <= 0) continue;
    ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (output.size() < output_bytes_max) output.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int wstatus = 0;
  while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  std::string_view text = output;
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
  size_t nl = text.rfind('\n');
  *last = std::string{nl == std::string_view::npos ? text : text.substr(nl + 1)};
  if (timed_out) return "kernl.mjs still running after " + std::to_string(static_cast<int>(timeout_s)) + " s: killed";
  if (!WIFEXITED(wstatus)) return "kernl.mjs ended by a signal: " + *last;
  if (WEXITSTATUS(wstatus) != 0) return "kernl.mjs exited " + std::to_string(WEXITSTATUS(wstatus)) + ": " + *last;
  return {};
}

// Reads the script's figures into `row`; they must be of the runs asked for.
status parse_figures(const std::string& line, kernl_row* row) {
  json::document doc;
  SKEIN_TRY(json::parse(line, json_limits{}, "kernl figures", &doc));
  json::object_reader r;
  SKEIN_TRY(json::object_reader::open(doc.root(), "kernl figures", &r));
  std::string system;
  uint64_t threads = 0, runs_per_thread = 0, delay_ms = 0, failures = 0;
  SKEIN_TRY(r.string("system", &system));
  SKEIN_TRY(r.string("version", &row->version));
  SKEIN_TRY(r.string("node", &row->node));
  SKEIN_TRY(r.string("storage", &row->storage));
  SKEIN_TRY(r.uint("threads", &threads));
  SKEIN_TRY(r.uint("runs_per_thread", &runs_per_thread));
  SKEIN_TRY(r.uint("delay_ms", &delay_ms));
  SKEIN_TRY(r.uint("runs", &row->runs));
  SKEIN_TRY(r.uint("events", &row->events));
  SKEIN_TRY(r.number("seconds", &row->seconds));
  SKEIN_TRY(r.number("runs_per_s", &row->runs_per_s));
  SKEIN_TRY(r.number("p50_us", &row->p50_us));
  SKEIN_TRY(r.number("p99_us", &row->p99_us));
  SKEIN_TRY(r.uint("rss_start_bytes", &row->rss_start_bytes));
  SKEIN_TRY(r.uint("rss_peak_bytes", &row->rss_peak_bytes));
  SKEIN_TRY(r.uint("failures", &failures));
  uint64_t expected = row->threads * row->runs_per_thread;
  if (system != "kernl" || threads != row->threads || runs_per_thread != row->runs_per_thread ||
      delay_ms != row->delay_ms || row->runs != expected || failures != 0 || row->seconds <= 0)
    return status::corruption("kernl figures are not of " + std::to_string(expected) + " completed runs: " + line);
  return status::ok();
}

}  // namespace

void run_kernl(size_t threads, size_t runs_per_thread, uint64_t delay_ms, kernl_row* row) {
  *row = {};
  row->threads = threads;
  row->runs_per_thread = runs_per_thread;
  row->delay_ms = delay_ms;
  std::string node = find_on_path("node");
  std::string dir = kernl_dir;
  if (node.empty()) {
    row->skipped = "node is not on PATH; to enable: install Node.js >= 20, then npm ci --prefix bench/baselines/kernl";
    return;
  }
  if (::access((dir + "/node_modules/kernl/package.json").c_str(), R_OK) != 0) {
    row->skipped = "bench/baselines/kernl/node_modules is missing; " + std::string{enable_hint};
    return;
  }
  double runs = static_cast<double>(threads * runs_per_thread);
  double timeout_s = static_cast<double>(delay_ms * runs_per_thread) / 1000 +
                     timeout_s_per_10k_runs * std::max(1.0, runs / 10'000);
  std::string last;
  row->skipped = run_child({node, dir + "/kernl.mjs", "--threads", std::to_string(threads), "--runs",
                            std::to_string(runs_per_thread), "--delay-ms", std::to_string(delay_ms)},
                           timeout_s, &last);
  if (row->skipped.empty()) row->skipped = parse_figures(last, row).message();
}

}  // namespace skein::bench
