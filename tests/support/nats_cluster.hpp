// nats_cluster: real nats-server processes with JetStream on loopback, for the
// tests of skein's replicated cluster. One server, or a cluster of several
// routed to each other, each on reserved ports (free_port.hpp) with its store
// and log in a temp dir; a server can be killed (SIGKILL), paused (SIGSTOP),
// resumed and restarted on the same ports and store. Everything stops with
// the object, and a server dies with its test process even when that crashes.
//
// nats_cluster::binary() is "" on a machine without nats-server (packages.txt
// installs it); a test then skips itself with a hint.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "runtime/replication/jetstream.hpp"
#include "tests/support/eventually.hpp"
#include "tests/support/free_port.hpp"
#include "tests/support/temp_dir.hpp"

namespace skein::test {

// Calls `fn` until it answers other than `unavailable` or `limit` passes: a
// cluster that lost a server elects new stream leaders and the client
// reconnects, each in bounded time. Every try is itself bounded.
template <class F>
status until_available(std::chrono::seconds limit, F fn) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    status s = fn();
    if (s.code() != errc::unavailable || std::chrono::steady_clock::now() > deadline) return s;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // between tries ("no responders" answers at once)
  }
}

class nats_cluster {
 public:
  static std::string binary() {
    for (const char* p : {"/usr/sbin/nats-server", "/usr/bin/nats-server", "/usr/local/bin/nats-server"})
      if (::access(p, X_OK) == 0) return p;
    return "";
  }

  // What the servers ask of a client: TLS (their certificate and key, PEM
  // files) and a user and password. Empty: plain, anyone.
  struct security {
    std::string cert_file, key_file, ca_file;  // ca_file: what a client trusts
    std::string user, password;
  };

  // Starts `count` servers and waits (bounded) until JetStream can place a
  // stream with a replica on each.
  explicit nats_cluster(int count, security sec = {}) : sec_(std::move(sec)) {
    REQUIRE(!binary().empty());
    for (int i = 0; i < count; ++i) servers_.push_back({free_port(), count > 1 ? free_port() : uint16_t{0}, -1});
    for (int i = 0; i < count; ++i) {
      std::filesystem::create_directories(store(i));
      write_config(i);
      start(i);
    }
    wait_ready(std::chrono::seconds(60));
  }

  ~nats_cluster() {
    for (size_t i = 0; i < servers_.size(); ++i) kill(static_cast<int>(i));
  }
  nats_cluster(const nats_cluster&) = delete;
  nats_cluster& operator=(const nats_cluster&) = delete;

  int size() const { return static_cast<int>(servers_.size()); }
  std::string url(int i) const { return "nats://127.0.0.1:" + std::to_string(servers_[static_cast<size_t>(i)].client); }
  std::vector<std::string> urls() const {
    std::vector<std::string> all;
    for (int i = 0; i < size(); ++i) all.push_back(url(i));
    return all;
  }
  bool running(int i) const { return servers_[static_cast<size_t>(i)].pid > 0; }
  // Where server i keeps its JetStream files.
  std::filesystem::path store_dir(int i) const { return store(i); }

  void kill(int i) {
    auto& s = servers_[static_cast<size_t>(i)];
    if (s.pid <= 0) return;
    ::kill(s.pid, SIGCONT);  // a paused one too
    ::kill(s.pid, SIGKILL);
    int st = 0;
    ::waitpid(s.pid, &st, 0);
    s.pid = -1;
  }
  // Stops server i (SIGSTOP) and returns once it is stopped: the signal is
  // only queued by kill(), and a server still running would answer the next
  // request.
  void pause(int i) {
    const pid_t pid = servers_[static_cast<size_t>(i)].pid;
    ::kill(pid, SIGSTOP);
    REQUIRE(eventually([&] { return process_state(pid) == 'T'; }, std::chrono::seconds(10)));
  }
  void resume(int i) { ::kill(servers_[static_cast<size_t>(i)].pid, SIGCONT); }

  // Starts a killed server again on its ports and store.
  void restart(int i) {
    REQUIRE(!running(i));
    start(i);
  }

  // Connects a client to every server (any may answer).
  std::unique_ptr<replication::jetstream> connect(std::chrono::milliseconds request_timeout = std::chrono::seconds(2)) const {
    replication::nats_options o = client_options();
    o.request_timeout = request_timeout;
    std::unique_ptr<replication::jetstream> js;
    auto s = replication::jetstream::connect(o, &js);
    INFO(s.to_string());
    REQUIRE(s.is_ok());
    return js;
  }

  // Options that reach every server with what they ask (TLS, the password).
  replication::nats_options client_options() const {
    replication::nats_options o;
    o.urls = urls();
    o.ca_file = sec_.ca_file;
    o.user = sec_.user;
    o.password = sec_.password;
    return o;
  }

  // The last `bytes` of every server's log, for a failure's message.
  std::string logs_tail(size_t bytes = 3000) const {
    std::string out;
    for (int i = 0; i < size(); ++i) {
      std::string l = log(i);
      out += "--- s" + std::to_string(i) + (running(i) ? "" : " (down)") + "\n" +
             (l.size() > bytes ? l.substr(l.size() - bytes) : l);
    }
    return out;
  }

  std::string log(int i) const {
    std::ifstream in{dir_.path() / ("s" + std::to_string(i) + ".log")};
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

 private:
  struct server {
    uint16_t client, route;
    pid_t pid;
  };

  // A process's state letter in /proc (R, S, T, ...); '?' if unreadable.
  static char process_state(pid_t pid) {
    std::ifstream in{"/proc/" + std::to_string(pid) + "/stat"};
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto close = stat.rfind(')');  // the name, in parentheses, may hold spaces
    return close == std::string::npos || close + 2 >= stat.size() ? '?' : stat[close + 2];
  }

  std::filesystem::path store(int i) const { return dir_.path() / ("s" + std::to_string(i)); }
  std::filesystem::path config(int i) const { return dir_.path() / ("s" + std::to_string(i) + ".conf"); }

  void write_config(int i) {
    const auto& s = servers_[static_cast<size_t>(i)];
    std::ofstream out{config(i)};
    out << "server_name: s" << i << "\n"
        << "listen: 127.0.0.1:" << s.client << "\n"
        << "log_file: \"" << (dir_.path() / ("s" + std::to_string(i) + ".log")).string() << "\"\n"
        << "jetstream { store_dir: \"" << store(i).string() << "\", max_mem: 64MB, max_file: 1GB }\n";
    if (!sec_.cert_file.empty())
      out << "tls { cert_file: \"" << sec_.cert_file << "\", key_file: \"" << sec_.key_file << "\" }\n";
    if (!sec_.user.empty())
      out << "authorization { user: \"" << sec_.user << "\", password: \"" << sec_.password << "\" }\n";
    if (servers_.size() > 1) {
      out << "cluster { name: skein, listen: 127.0.0.1:" << s.route << ", routes: [";
      for (size_t j = 0; j < servers_.size(); ++j)
        out << (j ? ", " : "") << "nats-route://127.0.0.1:" << servers_[j].route;
      out << "] }\n";
    }
  }

  void start(int i) {
    std::string bin = binary(), conf = config(i).string();
    const pid_t parent = ::getpid();
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      // It dies with the test, even one that crashes before its destructor runs.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) std::_Exit(127);
      // Its own output goes to its log file; nothing on the test's terminal.
      int null = ::open("/dev/null", O_RDWR);
      ::dup2(null, 0);
      ::dup2(null, 1);
      ::dup2(null, 2);
      ::execl(bin.c_str(), bin.c_str(), "-c", conf.c_str(), static_cast<char*>(nullptr));
      std::_Exit(127);
    }
    servers_[static_cast<size_t>(i)].pid = pid;
  }

  // Bounded: a stream with one replica per server can be made and removed.
  void wait_ready(std::chrono::seconds limit) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    status last = status::unavailable("not tried");
    while (std::chrono::steady_clock::now() < deadline) {
      replication::nats_options o = client_options();
      o.connect_timeout = std::chrono::milliseconds(500);
      std::unique_ptr<replication::jetstream> js;
      last = replication::jetstream::connect(o, &js);
      if (last) {
        replication::stream_config probe{"skein_probe", {"skein.probe"}, size(), true};
        last = js->ensure_stream(probe);
        if (last) last = js->delete_stream("skein_probe");
        if (last) return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));  // polls a real event: the cluster's readiness
    }
    INFO("nats cluster not ready: " << last.to_string() << "\nlog of s0:\n" << log(0));
    REQUIRE(false);
  }

  security sec_;
  temp_dir dir_;
  std::vector<server> servers_;
};

}  // namespace skein::test
