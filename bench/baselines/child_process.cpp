// Runs a child process and collects its output (child_process.hpp).
#include "bench/baselines/child_process.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace skein::bench {
namespace {

using child_clock = std::chrono::steady_clock;

// Reads the child's output until it closes its end or `timeout_s` passes (then kills it).
void collect(pid_t pid, int fd, double timeout_s, child_outcome* out) {
  auto deadline = child_clock::now() + std::chrono::duration<double>(timeout_s);
  char buf[4096];
  for (;;) {
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - child_clock::now());
    if (left.count() <= 0) {
      out->timed_out = true;
      ::kill(pid, SIGKILL);  // our own child, by its pid
      break;
    }
    pollfd p{fd, POLLIN, 0};
    int ready = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (out->output.size() < child_output_bytes_max) out->output.append(buf, static_cast<size_t>(n));
  }
  int wstatus = 0;
  while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(wstatus)) out->exit_code = WEXITSTATUS(wstatus);
}

}  // namespace

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

std::string run_child(const std::vector<std::string>& args, double timeout_s,
                      child_outcome* out) {
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
  collect(pid, fds[0], timeout_s, out);
  ::close(fds[0]);
  return {};
}

std::string last_line(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
  size_t nl = text.rfind('\n');
  return std::string{nl == std::string_view::npos ? text : text.substr(nl + 1)};
}

}  // namespace skein::bench
