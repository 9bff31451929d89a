// The process engine (process_engine.hpp): the program's supervision and its
// calls; the config and the wire format are in process_protocol.hpp.
#include "runtime/engines/process_engine.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <map>
#include <mutex>
#include <poll.h>
#include <random>
#include <spawn.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "runtime/model/json_codec.hpp"
#include "runtime/model/json_reader.hpp"
#include "runtime/model/json_writer.hpp"
#include "runtime/engines/process_protocol.hpp"

extern char** environ;

namespace skein {
namespace {

using clock_type = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Reads from the program's pipes go in chunks of this size, at most this many
// per pipe before the I/O thread polls again: a program that never stops
// writing must not starve its stdin, its other pipe or a stop.
constexpr size_t read_chunk_bytes = 64 << 10;
constexpr int read_chunks_per_poll_max = 16;
// Between checks that the program still lives when its stdout stays open (a
// grandchild may hold it after the program itself exited).
constexpr int liveness_check_ms = 1000;
// Slices of a bounded wait for the program's exit.
constexpr int exit_poll_ms = 10;
// Bytes of a dropped line quoted in the log.
constexpr size_t dropped_line_quote_bytes_max = 200;

using process_protocol::encode_call;
using process_protocol::encode_cancel;
using process_protocol::line_depth_max;
using process_protocol::parse_config;
using process_protocol::process_config;
using process_protocol::read_reply;

std::string describe_wait_status(int wstatus) {
  if (WIFEXITED(wstatus)) return "engine process exited with status " + std::to_string(WEXITSTATUS(wstatus));
  if (WIFSIGNALED(wstatus)) {
    int sig = WTERMSIG(wstatus);
    const char* abbrev = sigabbrev_np(sig);
    return "engine process killed by signal " + std::to_string(sig) +
           (abbrev != nullptr ? std::string{" (SIG"} + abbrev + ")" : std::string{});
  }
  return "engine process ended with wait status " + std::to_string(wstatus);
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// One running program: its pid and skein's ends of its pipes (all close-on-exec,
// non-blocking).
struct child {
  pid_t pid = 0;
  int in = -1;   // its stdin
  int out = -1;  // its stdout
  int err = -1;  // its stderr
  clock_type::time_point started;
  std::string out_buf;  // stdout bytes not yet ending a line
  std::string err_buf;  // stderr bytes not yet ending a line, at most the log's line bound
  bool err_cut = false;  // the current stderr line was too long: skip to its end
  size_t written = 0;    // bytes of the front queued line already written
  uint64_t dropped = 0;  // lines dropped since this start
  bool stdout_closed = false;
  bool reaped = false;
  int wait_status = 0;

  void close_all() {
    close_fd(in);
    close_fd(out);
    close_fd(err);
  }
};

class process_core : public std::enable_shared_from_this<process_core> {
 public:
  process_core(process_config config, process_engine_hooks hooks)
      : config_(std::move(config)), hooks_(std::move(hooks)) {
    size_t slash = config_.path.rfind('/');
    name_ = config_.path.substr(slash == std::string::npos ? 0 : slash + 1);
  }

  ~process_core() {
    stop();
    close_fd(wake_fd_);
  }

  process_core(const process_core&) = delete;
  process_core& operator=(const process_core&) = delete;

  status init() {
    wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (wake_fd_ < 0) return status::io_error(std::string{"process engine: eventfd: "} + std::strerror(errno));
    return status::ok();
  }

  // Registers the call and queues its line; false with *refusal set when it cannot.
  bool begin_call(const engine_request& req, const engine_callbacks& cb, std::string* id, status* refusal) {
    // Encoded before the lock: a long conversation must not hold up the I/O thread.
    *id = "c" + std::to_string(next_id_.fetch_add(1) + 1);
    std::string line;
    if (status s = encode_call(*id, req, &line); !s) {
      *refusal = status::invalid_input("process engine: the call cannot be encoded: " + s.message());
      return false;
    }
    std::lock_guard<std::mutex> lock{mu_};
    if (stopping_) {
      *refusal = status::io_error("the process engine is shutting down");
      return false;
    }
    if (calls_.size() >= config_.calls_in_flight_max) {
      *refusal = status::overloaded("engine_config.calls_in_flight_max: " + std::to_string(calls_.size()) +
                                    " calls in flight on the engine process")
                     .with_limit("calls_in_flight_max");
      return false;
    }
    calls_.emplace(*id, cb);
    queue_.push_back(std::move(line));
    // The thread holds the core: if a callback drops the engine's last reference
    // on the I/O thread itself (stop() detaches then), the core outlives the thread.
    if (!io_.joinable()) io_ = std::thread([self = shared_from_this()] { self->run(); });
    return true;
  }

  void cancel(const std::string& id) {
    {
      std::lock_guard<std::mutex> lock{mu_};
      if (stopping_ || calls_.erase(id) == 0) return;
      queue_.push_back(encode_cancel(id));
    }
    wake();
  }

  void wake() {
    uint64_t one = 1;
    ssize_t n = ::write(wake_fd_, &one, sizeof one);
    (void)n;  // EAGAIN: the counter is already non-zero, the thread will wake
  }

  // Ends the program and the I/O thread. Calls in flight get no callback.
  void stop() {
    {
      std::lock_guard<std::mutex> lock{mu_};
      stopping_ = true;
      calls_.clear();
    }
    if (!io_.joinable()) return;
    wake();
    // A callback that drops the last reference to the engine runs on the I/O
    // thread itself: it cannot join itself, and it stops on its own.
    if (io_.get_id() == std::this_thread::get_id()) io_.detach();
    else io_.join();
  }

  int pid() const { return pid_.load(); }

 private:
  void log(const std::string& line) {
    if (hooks_.log) {
      try {
        hooks_.log(line);
      } catch (...) {  // host code: a throwing log hook loses the line, nothing more
      }
      return;
    }
    std::fprintf(stderr, "%s\n", line.c_str());
  }

  std::string prefix(pid_t pid) const { return "skein: process engine " + name_ + "[" + std::to_string(pid) + "]: "; }

  bool stopping() {
    std::lock_guard<std::mutex> lock{mu_};
    return stopping_;
  }

  void drain_wake() {
    uint64_t n = 0;
    ssize_t r = ::read(wake_fd_, &n, sizeof n);
    (void)r;  // EAGAIN: nothing to drain
  }

  // The I/O thread: start the program, serve it until it dies, restart.
  void run() {
    // Writes to a program that died raise SIGPIPE on the writing thread: blocked
    // here, they fail with EPIPE instead of killing skein.
    sigset_t pipe_set;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, nullptr);
    std::minstd_rand jitter{std::random_device{}()};
    uint64_t backoff_ms = config_.restart_backoff_ms;
    while (!stopping()) {
      child c;
      std::string why;
      status s = spawn(&c);
      if (s) {
        pid_.store(c.pid);
        why = serve(c);
        if (stopping()) {
          shut_down(c);
          break;
        }
        why = end(c, why);
        pid_.store(0);
        if (clock_type::now() - c.started >= milliseconds(process_stable_ms))
          backoff_ms = config_.restart_backoff_ms;
      } else {
        why = "engine process could not start: " + s.message();
      }
      log(prefix(c.pid) + why + "; restarting");
      fail_all(why);
      uint64_t delay = backoff_ms / 2 + jitter() % (backoff_ms / 2 + 1);
      backoff_ms = std::min(backoff_ms * 2, config_.restart_backoff_max_ms);
      wait_backoff(milliseconds(delay));
    }
    pid_.store(0);
  }

  status spawn(child* c) {
    int in[2], out[2], err[2];
    if (::pipe2(in, O_CLOEXEC) != 0) return status::io_error(std::string{"pipe: "} + std::strerror(errno));
    if (::pipe2(out, O_CLOEXEC) != 0) {
      ::close(in[0]), ::close(in[1]);
      return status::io_error(std::string{"pipe: "} + std::strerror(errno));
    }
    if (::pipe2(err, O_CLOEXEC) != 0) {
      ::close(in[0]), ::close(in[1]), ::close(out[0]), ::close(out[1]);
      return status::io_error(std::string{"pipe: "} + std::strerror(errno));
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_adddup2(&fa, err[1], 2);
    if (!config_.cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, config_.cwd.c_str());
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    // Its own process group (a signal to skein's group does not reach it, and
    // killing its group takes its children too); default signal dispositions
    // and an empty mask, whatever skein's threads block or ignore.
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    posix_spawnattr_setpgroup(&attr, 0);
    sigset_t none, defaults;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attr, &none);
    sigemptyset(&defaults);
    for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD, SIGUSR1, SIGUSR2})
      sigaddset(&defaults, sig);
    posix_spawnattr_setsigdefault(&attr, &defaults);

    std::vector<std::string> env_strings;
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
      std::string_view kv{*e};
      std::string_view name = kv.substr(0, kv.find('='));
      bool overridden = std::any_of(config_.env.begin(), config_.env.end(),
                                    [&](const auto& p) { return p.first == name; });
      if (!overridden) env_strings.emplace_back(kv);
    }
    for (const auto& [k, v] : config_.env) env_strings.push_back(k + "=" + v);
    std::vector<char*> envp, argv;
    for (auto& e : env_strings) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::vector<std::string> args = config_.argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);

    pid_t pid = 0;
    int rc = ::posix_spawn(&pid, config_.path.c_str(), &fa, &attr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    ::close(in[0]), ::close(out[1]), ::close(err[1]);
    if (rc != 0) {
      ::close(in[1]), ::close(out[0]), ::close(err[0]);
      return status::io_error(config_.path + (config_.cwd.empty() ? "" : " in " + config_.cwd) + ": " +
                              std::strerror(rc));
    }
    for (int fd : {in[1], out[0], err[0]}) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    c->pid = pid;
    c->in = in[1];
    c->out = out[0];
    c->err = err[0];
    c->started = clock_type::now();
    return status::ok();
  }

  // Serves the program until it dies or the engine stops; returns why it ended
  // ("" when stopping).
  std::string serve(child& c) {
    for (;;) {
      bool writing;
      {
        std::lock_guard<std::mutex> lock{mu_};
        if (stopping_) return "";
        writing = !queue_.empty();
      }
      pollfd fds[4] = {{wake_fd_, POLLIN, 0}, {c.out, POLLIN, 0}, {c.err, POLLIN, 0}, {c.in, POLLOUT, 0}};
      nfds_t n = writing && c.in >= 0 ? 4 : 3;
      int ready = ::poll(fds, n, liveness_check_ms);
      if (ready < 0 && errno != EINTR) return std::string{"poll: "} + std::strerror(errno);
      if (ready <= 0) {
        if (try_reap(c)) return describe_wait_status(c.wait_status);
        continue;
      }
      if (fds[0].revents != 0) drain_wake();
      if (fds[2].revents != 0) read_stderr(c);
      if (n == 4 && fds[3].revents != 0) {
        std::string why = write_queue(c);
        if (!why.empty()) return why;
      }
      if (fds[1].revents != 0) {
        std::string why = read_stdout(c);
        if (!why.empty()) return why;
      }
    }
  }

  // Writes queued lines until the pipe is full; returns why the program is
  // broken, or "".
  std::string write_queue(child& c) {
    std::lock_guard<std::mutex> lock{mu_};
    while (!queue_.empty()) {
      const std::string& line = queue_.front();
      ssize_t n = ::write(c.in, line.data() + c.written, line.size() - c.written);
      if (n < 0) {
        if (errno == EAGAIN || errno == EINTR) return "";
        if (errno == EPIPE) {
          // Take the SIGPIPE this write left pending on this thread.
          sigset_t pipe_set;
          sigemptyset(&pipe_set);
          sigaddset(&pipe_set, SIGPIPE);
          timespec zero{0, 0};
          while (::sigtimedwait(&pipe_set, nullptr, &zero) == SIGPIPE) {
          }
          return "engine process closed its stdin";
        }
        return std::string{"write to the engine process: "} + std::strerror(errno);
      }
      c.written += static_cast<size_t>(n);
      if (c.written < line.size()) return "";
      queue_.pop_front();
      c.written = 0;
    }
    return "";
  }

  // Reads what the program wrote and handles each whole line; returns why the
  // program is broken or gone, or "".
  std::string read_stdout(child& c) {
    char buf[read_chunk_bytes];
    for (int chunk = 0; chunk < read_chunks_per_poll_max; ++chunk) {
      ssize_t n = ::read(c.out, buf, sizeof buf);
      if (n < 0) {
        if (errno == EAGAIN || errno == EINTR) return "";
        return std::string{"read from the engine process: "} + std::strerror(errno);
      }
      if (n == 0) {
        c.stdout_closed = true;
        return "engine process closed its stdout";
      }
      size_t scanned = c.out_buf.size();
      c.out_buf.append(buf, static_cast<size_t>(n));
      size_t from = 0;
      for (size_t nl; (nl = c.out_buf.find('\n', scanned)) != std::string::npos; scanned = from = nl + 1) {
        if (nl - from > config_.line_bytes_max) return too_long(nl - from);
        handle_line(c, std::string_view{c.out_buf}.substr(from, nl - from));
      }
      c.out_buf.erase(0, from);
      if (c.out_buf.size() > config_.line_bytes_max) return too_long(c.out_buf.size());
    }
    return "";
  }

  std::string too_long(size_t bytes) const {
    return "engine process killed: it sent a line of " + std::to_string(bytes) + "+ bytes, past line_bytes_max (" +
           std::to_string(config_.line_bytes_max) + ")";
  }

  void read_stderr(child& c) {
    char buf[read_chunk_bytes];
    for (int chunk = 0; chunk < read_chunks_per_poll_max; ++chunk) {
      ssize_t n = ::read(c.err, buf, sizeof buf);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
      if (n <= 0) {
        if (!c.err_buf.empty()) log(prefix(c.pid) + c.err_buf);
        c.err_buf.clear();
        close_fd(c.err);  // poll ignores a negative fd
        return;
      }
      for (ssize_t i = 0; i < n; ++i) {
        char ch = buf[i];
        if (ch == '\n') {
          if (!c.err_cut) log(prefix(c.pid) + c.err_buf);
          c.err_buf.clear();
          c.err_cut = false;
        } else if (!c.err_cut) {
          c.err_buf += ch;
          if (c.err_buf.size() >= process_stderr_line_bytes_max) {
            log(prefix(c.pid) + c.err_buf + "... (line cut at " + std::to_string(process_stderr_line_bytes_max) +
                " bytes)");
            c.err_buf.clear();
            c.err_cut = true;
          }
        }
      }
    }
  }

  void drop(child& c, std::string_view line, const std::string& why) {
    ++c.dropped;
    if (c.dropped > process_dropped_lines_logged_max) return;
    std::string msg = prefix(c.pid) + "dropped a line (" + why + "): " +
                      quote_input(line, dropped_line_quote_bytes_max);
    if (c.dropped == process_dropped_lines_logged_max) msg += " (further dropped lines are not logged)";
    log(msg);
  }

  void handle_line(child& c, std::string_view line) {
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) return;
    json::document doc;
    json_limits limits;
    limits.json_bytes_max = config_.line_bytes_max;
    limits.json_depth_max = line_depth_max;
    status s = json::parse(line, limits, "line", &doc);
    json::object_reader r;
    if (s) s = json::object_reader::open(doc.root(), "line", &r);
    std::string id, type;
    if (s) s = r.string("id", &id);
    if (s) s = r.string("type", &type);
    if (!s) return drop(c, line, s.message());
    if (type == "delta") {
      std::string text;
      if (!(s = r.string("text", &text))) return drop(c, line, s.message());
      std::function<void(std::string)> on_delta;
      {
        std::lock_guard<std::mutex> lock{mu_};
        auto it = calls_.find(id);
        if (it == calls_.end()) return drop(c, line, "no call in flight has this id");
        on_delta = it->second.on_delta;
      }
      if (on_delta) guarded("on_delta", [&] { on_delta(std::move(text)); });
      return;
    }
    if (type != "step" && type != "error") return drop(c, line, "unknown type");
    engine_reply reply = read_reply(r, type);
    std::function<void(engine_reply)> on_done;
    {
      std::lock_guard<std::mutex> lock{mu_};
      auto it = calls_.find(id);
      if (it == calls_.end()) return drop(c, line, "no call in flight has this id");
      on_done = std::move(it->second.on_done);
      calls_.erase(it);
    }
    if (on_done) guarded("on_done", [&] { on_done(std::move(reply)); });
  }

  template <class F>
  void guarded(const char* what, F fn) {
    try {  // host code: a throwing callback must not end the I/O thread
      fn();
    } catch (const std::exception& e) {
      log("skein: process engine " + name_ + ": " + what + " threw: " + quote_input(e.what()));
    } catch (...) {
      log("skein: process engine " + name_ + ": " + what + " threw a non-standard exception");
    }
  }

  // Fails every call in flight with `why`; lines not yet written go too.
  void fail_all(const std::string& why) {
    std::map<std::string, engine_callbacks> calls;
    {
      std::lock_guard<std::mutex> lock{mu_};
      calls.swap(calls_);
      queue_.clear();
    }
    for (auto& entry : calls) {
      engine_callbacks& cb = entry.second;  // not a structured binding: clang 14 cannot capture one
      engine_reply reply;
      reply.result = status::io_error(why);
      if (cb.on_done) guarded("on_done", [&] { cb.on_done(std::move(reply)); });
    }
  }

  // Reaps the program if it has exited. Whatever it left in its group (children
  // it started) is killed first, while its zombie still holds the group's id.
  bool try_reap(child& c) {
    if (c.reaped) return true;
    siginfo_t info{};
    if (::waitid(P_PID, static_cast<id_t>(c.pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid != c.pid)
      return false;
    ::kill(-c.pid, SIGKILL);
    reap(c);
    return true;
  }

  void reap(child& c) {
    int ws = 0;
    while (::waitpid(c.pid, &ws, 0) < 0 && errno == EINTR) {
    }
    c.reaped = true;
    c.wait_status = ws;
  }

  // Waits up to `limit` for the program to exit, logging its stderr meanwhile.
  bool await_exit(child& c, milliseconds limit) {
    auto deadline = clock_type::now() + limit;
    while (!try_reap(c)) {
      if (clock_type::now() >= deadline) return false;
      pollfd p{c.err, POLLIN, 0};
      if (::poll(&p, 1, exit_poll_ms) > 0) read_stderr(c);
    }
    return true;
  }

  // SIGKILLs the program's group and reaps the program.
  void kill_and_reap(child& c) {
    if (c.reaped) return;
    ::kill(-c.pid, SIGKILL);
    reap(c);
  }

  // The program is gone or broken (serve() said why): make sure it is dead and
  // reaped, and say why its calls fail.
  std::string end(child& c, std::string why) {
    close_fd(c.in);
    if (c.stdout_closed && !c.reaped) {
      // It closed its stdout: probably exiting; give it a moment to say how.
      if (await_exit(c, milliseconds(process_exit_grace_ms))) why = describe_wait_status(c.wait_status);
      else why = "engine process closed its stdout and did not exit; killed";
    } else if (c.stdout_closed) {
      why = describe_wait_status(c.wait_status);
    }
    kill_and_reap(c);
    if (c.err >= 0) read_stderr(c);
    c.close_all();
    return why;
  }

  // Destruction: stdin closed, a grace period, SIGTERM to the group, another, SIGKILL.
  void shut_down(child& c) {
    close_fd(c.in);
    if (!await_exit(c, milliseconds(process_exit_grace_ms))) {
      ::kill(-c.pid, SIGTERM);
      if (!await_exit(c, milliseconds(process_exit_grace_ms))) kill_and_reap(c);
    }
    c.close_all();
    pid_.store(0);
  }

  // Sleeps `delay` unless the engine stops first.
  void wait_backoff(milliseconds delay) {
    auto deadline = clock_type::now() + delay;
    while (!stopping()) {
      auto left = std::chrono::duration_cast<milliseconds>(deadline - clock_type::now()).count();
      if (left <= 0) return;
      pollfd p{wake_fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(std::min<long long>(left, INT_MAX))) > 0) drain_wake();
    }
  }

  const process_config config_;
  const process_engine_hooks hooks_;
  std::string name_;  // argv[0]'s base name, in log lines
  int wake_fd_ = -1;  // eventfd: new lines to write, or stop
  std::atomic<int> pid_{0};
  std::atomic<uint64_t> next_id_{0};

  std::mutex mu_;  // guards what follows, shared by start(), cancel() and the I/O thread
  bool stopping_ = false;
  std::map<std::string, engine_callbacks> calls_;  // in flight, by id
  std::deque<std::string> queue_;                  // lines to write, each ending in '\n'
  std::thread io_;                                 // started by the first call
};

class process_call_handle final : public call_handle {
 public:
  process_call_handle(std::weak_ptr<process_core> core, std::string id) : core_(std::move(core)), id_(std::move(id)) {}
  void cancel() override {
    if (auto core = core_.lock()) core->cancel(id_);
  }

 private:
  std::weak_ptr<process_core> core_;
  std::string id_;
};

// A call refused before it reached the program: nothing to cancel.
class no_call_handle final : public call_handle {
 public:
  void cancel() override {}
};

class process_engine final : public engine {
 public:
  explicit process_engine(std::shared_ptr<process_core> core) : core_(std::move(core)) {}
  ~process_engine() override { core_->stop(); }

  std::unique_ptr<call_handle> start(engine_request request, engine_callbacks callbacks) override {
    std::string id;
    status refusal;
    if (!core_->begin_call(request, callbacks, &id, &refusal)) {
      engine_reply reply;
      reply.result = std::move(refusal);
      if (callbacks.on_done) callbacks.on_done(std::move(reply));
      return std::make_unique<no_call_handle>();
    }
    core_->wake();
    return std::make_unique<process_call_handle>(core_, std::move(id));
  }

  int pid() const { return core_->pid(); }

 private:
  std::shared_ptr<process_core> core_;
};

}  // namespace

status make_process_engine_with_hooks(std::string_view config_json, const process_engine_hooks& hooks,
                           std::shared_ptr<engine>* out) {
  process_config config;
  SKEIN_TRY(parse_config(config_json, &config));
  auto core = std::make_shared<process_core>(std::move(config), hooks);
  SKEIN_TRY(core->init());
  *out = std::make_shared<process_engine>(std::move(core));
  return status::ok();
}

status make_process_engine(std::string_view config_json, timer_service&, std::shared_ptr<engine>* out) {
  return make_process_engine_with_hooks(config_json, process_engine_hooks{}, out);
}

int process_engine_pid(const engine& e) {
  auto* p = dynamic_cast<const process_engine*>(&e);
  return p != nullptr ? p->pid() : 0;
}

}  // namespace skein
