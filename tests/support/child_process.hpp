// A child process for crash tests: started with its stdout on a pipe, read with
// a deadline, killed with SIGKILL (or stopped with another signal). The parent
// collects everything it printed, also what was still in the pipe when it died.
// serve_process runs `skein serve` on it. The child prints little: nothing reads
// the pipe between read_until() calls.
#pragma once

#include <catch2/catch.hpp>
#include <chrono>
#include <thread>
#include <csignal>
#include <functional>
#include <poll.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace skein::test {

class child_process {
 public:
  explicit child_process(const std::vector<std::string>& argv) {
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    pid_ = ::fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      ::dup2(fds[1], 1);
      ::close(fds[0]);
      ::close(fds[1]);
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      std::_Exit(127);
    }
    ::close(fds[1]);
    out_ = fds[0];
  }

  ~child_process() {
    if (pid_ > 0) kill();
  }
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;

  // Reads its output until `done(output)` holds, it closes stdout, or `limit` passes.
  const std::string& read_until(std::chrono::milliseconds limit,
                                const std::function<bool(const std::string&)>& done = {}) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    char buf[4096];
    while (!(done && done(output_))) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      pollfd p{out_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      ssize_t n = ::read(out_, buf, sizeof buf);
      if (n <= 0) break;
      output_.append(buf, static_cast<size_t>(n));
    }
    return output_;
  }

  // SIGKILLs it, takes what is left in the pipe and returns its wait status.
  int kill() { return stop(SIGKILL); }

  // Sends `signal`, waits for it to end, takes what is left in the pipe and
  // returns its wait status.
  int stop(int signal) {
    if (pid_ <= 0) return -1;  // already reaped: never kill(-1, ...)
    ::kill(pid_, signal);
    char buf[4096];
    for (ssize_t n; (n = ::read(out_, buf, sizeof buf)) > 0;) output_.append(buf, static_cast<size_t>(n));
    ::close(out_);
    int status = 0;
    REQUIRE(::waitpid(pid_, &status, 0) == pid_);
    pid_ = -1;
    return status;
  }

  // stop() that waits at most `limit` for the child to end: one that does
  // not is a failure of the test (it is SIGKILLed then, its output printed).
  int stop_within(int signal, std::chrono::milliseconds limit) {
    if (pid_ <= 0) return -1;
    ::kill(pid_, signal);
    const auto deadline = std::chrono::steady_clock::now() + limit;
    int status = 0;
    pid_t done = 0;
    while ((done = ::waitpid(pid_, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (done == 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
    }
    char buf[4096];
    for (ssize_t n; (n = ::read(out_, buf, sizeof buf)) > 0;) output_.append(buf, static_cast<size_t>(n));
    ::close(out_);
    pid_ = -1;
    if (done == 0) {
      FAIL_CHECK("the child did not end within " << limit.count() << " ms of signal " << signal << "; its output:\n"
                                                 << output_);
      return -1;
    }
    return status;
  }

  const std::string& output() const { return output_; }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int out_ = -1;
  std::string output_;
};

// `skein serve` as a child on a data directory and an ephemeral loopback port,
// with `extra` flags after those. It is ready once it prints that it listens;
// the time from the start until then is its start-up time, recovery included.
class serve_process {
 public:
  serve_process(const std::string& binary, const std::string& data, const std::string& durability = "sync",
                std::chrono::milliseconds limit = std::chrono::seconds(60), const std::vector<std::string>& extra = {})
      : started_(std::chrono::steady_clock::now()), child_(serve_argv(binary, data, durability, extra)) {
    static const std::string marker = "listening on http://127.0.0.1:";
    const std::string& out = child_.read_until(limit, [](const std::string& o) {
      auto p = o.find(marker);
      return p != std::string::npos && o.find(' ', p + marker.size()) != std::string::npos;
    });
    ready_after_ = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started_);
    auto p = out.find(marker);
    INFO("skein serve printed: " << out);
    REQUIRE(p != std::string::npos);
    port_ = static_cast<uint16_t>(std::stoul(out.substr(p + marker.size())));
  }

  uint16_t port() const { return port_; }
  std::chrono::microseconds ready_after() const { return ready_after_; }
  int kill() { return child_.kill(); }
  int stop(int signal) { return child_.stop(signal); }
  int stop_within(int signal, std::chrono::milliseconds limit) { return child_.stop_within(signal, limit); }
  child_process& child() { return child_; }

 private:
  static std::vector<std::string> serve_argv(const std::string& binary, const std::string& data,
                                             const std::string& durability, const std::vector<std::string>& extra) {
    std::vector<std::string> argv{binary, "serve", "--listen", "127.0.0.1:0", "--data", data, "--durability", durability};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return argv;
  }

  std::chrono::steady_clock::time_point started_;
  child_process child_;
  uint16_t port_ = 0;
  std::chrono::microseconds ready_after_{0};
};

}  // namespace skein::test
