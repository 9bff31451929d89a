// A full disk: writes answer no_space at once, nothing acknowledged is lost,
// reads keep working, and writes go on once space is freed and the log is
// reopened. Not without a reopen: after an append to the WAL failed, RocksDB
// 7.8 goes on with that WAL's writer even after DB::Resume() (the packaged
// build aborts on an assertion; a release build refuses every write), and its
// own recovery waits until a whole write buffer (64 MiB) is free.
//
// Two levels: the event log on a file system whose appends fail with NoSpace
// on command (deterministic), and `skein serve` with its data directory on a
// 16 MiB tmpfs filled up by a file (HTTP 507, code no_space). The tmpfs is
// mounted in a private mount namespace of the test thread, so it vanishes with
// the process whatever happens; where that is not allowed (not root, no
// CAP_SYS_ADMIN) the test says so and skips.
#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <rocksdb/env.h>
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include "persistence/event_log.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/fault_fs.hpp"
#include "tests/support/log_fixtures.hpp"
#include "tests/support/runtime_fixture.hpp"
#include "tests/support/server_fixture.hpp"
#include "tests/support/temp_dir.hpp"

using namespace skein;
using namespace skein::test;
using namespace std::chrono_literals;

namespace {

constexpr auto no_space_answer_max = 2s;  // "promptly": a refused write answers within this


// A tmpfs of `bytes` on a fresh directory, in a mount namespace of this thread.
class tmpfs_mount {
 public:
  explicit tmpfs_mount(size_t bytes) {
    if (::unshare(CLONE_NEWNS) != 0) {
      why_ = std::string{"unshare(CLONE_NEWNS): "} + std::strerror(errno);
      return;
    }
    // Mounts made here must not propagate back to the machine's namespace.
    if (::mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
      why_ = std::string{"make / private: "} + std::strerror(errno);
      return;
    }
    std::string options = "size=" + std::to_string(bytes);
    if (::mount("tmpfs", dir_.path().c_str(), "tmpfs", 0, options.c_str()) != 0) {
      why_ = std::string{"mount tmpfs: "} + std::strerror(errno);
      return;
    }
    mounted_ = true;
  }
  ~tmpfs_mount() {
    if (mounted_) ::umount2(dir_.path().c_str(), MNT_DETACH);
  }
  tmpfs_mount(const tmpfs_mount&) = delete;
  tmpfs_mount& operator=(const tmpfs_mount&) = delete;

  bool mounted() const { return mounted_; }
  const std::string& why_not() const { return why_; }
  std::string path(const std::string& sub) const { return dir_.str(sub); }

 private:
  temp_dir dir_;
  bool mounted_ = false;
  std::string why_;
};

// Writes a file until the file system is full; returns the bytes it took.
size_t fill(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  REQUIRE(fd >= 0);
  std::string chunk(64 << 10, 'f');
  size_t total = 0;
  for (size_t size = chunk.size(); size > 0;) {
    ssize_t n = ::write(fd, chunk.data(), size);
    if (n > 0) {
      total += static_cast<size_t>(n);
      continue;
    }
    REQUIRE(errno == ENOSPC);
    size /= 2;  // fill the last pages too
  }
  ::close(fd);
  return total;
}

struct acked_entry {
  std::string thread, run_id;
  uint64_t last_seq = 0;
};

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

TEST_CASE("disk full: the event log answers no_space until reopened, keeps serving reads and loses nothing") {
  temp_dir dir;
  fault_env fault;
  {
    auto log = open_log(dir.str(), fault.env.get());
    auto t1 = make_tick("t", 1, 2);
    REQUIRE(log->commit(t1).is_ok());

    fault.fs->set_full(true);
    auto t2 = make_tick("t", 3, 1);
    auto s = log->commit(t2);
    INFO(s.to_string());
    CHECK(s.code() == errc::no_space);
    std::vector<event> events;
    REQUIRE(log->read_events("t", 1, 0, &events).is_ok());
    CHECK(seqs_of(events) == std::vector<uint64_t>{1, 2});

    // Space back: still a full disk's answer, not a storage fault, until the
    // log is reopened (RocksDB cannot go on with the WAL whose append failed).
    fault.fs->set_full(false);
    for (int i = 0; i < 2; ++i) {
      auto again = make_tick("t", 3, 1);
      s = log->commit(again);
      INFO(s.to_string());
      CHECK(s.code() == errc::no_space);
      CHECK_THAT(s.message(), Catch::Contains("reopen"));
    }
    agent_config a;
    a.id = "a";
    CHECK(log->put_agent(a).code() == errc::no_space);
    CHECK_FALSE(log->writable());
    REQUIRE(log->read_events("t", 1, 0, &events).is_ok());
    CHECK(seqs_of(events) == std::vector<uint64_t>{1, 2});
  }
  auto log = open_log(dir.str(), fault.env.get());
  auto t3 = make_tick("t", 3, 2);
  REQUIRE(log->commit(t3).is_ok());
  std::vector<event> events;
  REQUIRE(log->read_events("t", 1, 0, &events).is_ok());
  CHECK(seqs_of(events) == std::vector<uint64_t>{1, 2, 3, 4});
}

TEST_CASE("disk full: a failed sync still latches the log until it is reopened") {
  temp_dir dir;
  fault_env fault;
  auto log = open_log(dir.str(), fault.env.get());
  auto t1 = make_tick("t", 1, 1);
  REQUIRE(log->commit(t1).is_ok());
  fault.fs->set(fault_fs::fail::wal_sync);
  auto t2 = make_tick("t", 2, 1);
  CHECK(log->commit(t2).code() == errc::io_error);
  fault.fs->set(fault_fs::fail::none);
  auto t3 = make_tick("t", 2, 1);
  CHECK(log->commit(t3).code() == errc::io_error);
  CHECK_FALSE(log->writable());
}

TEST_CASE("disk full: skein serve on a full 16 MiB tmpfs answers 507 no_space promptly and loses nothing") {
  tmpfs_mount mnt{16 << 20};
  if (!mnt.mounted()) {
    WARN("skipped: cannot mount a tmpfs here (" << mnt.why_not() << ")");
    return;
  }
  std::string data = mnt.path("data"), filler = mnt.path("filler");
  std::vector<std::string> threads;
  std::vector<acked_entry> acked;
  auto post = [&](http::client& c, const std::string& t, http::response* r) {
    REQUIRE(c.call("POST", "/v1/threads/" + t + "/entries", R"({"text":"n","wait":true})", r).is_ok());
    if (r->status == 200) acked.push_back({t, entry_run_id(r->body), entry_last_seq(r->body)});
  };
  {
    serve_process srv{SKEIN_BINARY, data};
    http::client c{{"127.0.0.1", srv.port()}, "", 10s};
    http::response r;
    REQUIRE(c.call("POST", "/v1/agents", R"({"id":"a","engine_config":{"default":{"reply":"ok"}}})", &r).is_ok());
    REQUIRE(r.status == 201);
    for (int i = 0; i < 2; ++i) {
      REQUIRE(c.call("POST", "/v1/threads", R"({"agent_id":"a"})", &r).is_ok());
      REQUIRE(r.status == 201);
      threads.push_back(field(r.body, "id"));
    }
    for (int i = 0; i < 6; ++i) {
      post(c, threads[i % 2], &r);
      REQUIRE(r.status == 200);
    }

    size_t filled = fill(filler);
    std::printf("disk full: the filler took %zu KiB of the 16 MiB tmpfs\n", filled >> 10);
    // What is left of the WAL's last page still takes a few entries; then 507.
    int first_507 = -1;
    for (int i = 0; i < 2000 && first_507 < 0; ++i) {
      post(c, threads[i % 2], &r);
      if (r.status == 507) first_507 = i;
      else REQUIRE(r.status == 200);
    }
    INFO("last answer: " << r.status << " " << r.body);
    REQUIRE(first_507 >= 0);
    CHECK(error_code(r.body) == "no_space");
    double slowest_ms = 0;
    for (int i = 0; i < 10; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      REQUIRE(c.call("POST", "/v1/threads/" + threads[i % 2] + "/entries", R"({"text":"n","wait":true})", &r).is_ok());
      slowest_ms = std::max(slowest_ms, ms_since(t0));
      INFO(r.body);
      CHECK(r.status == 507);
      CHECK(error_code(r.body) == "no_space");
    }
    std::printf("disk full: 507 after %d more entries; refused writes answered within %.1f ms\n", first_507,
                slowest_ms);
    CHECK(slowest_ms < std::chrono::duration<double, std::milli>(no_space_answer_max).count());

    // Reads keep working, and hold everything acknowledged.
    for (const auto& t : threads) {
      std::vector<event> log;
      REQUIRE(export_log(c, t, &log).is_ok());
      for (const auto& a : acked) {
        if (a.thread != t) continue;
        INFO("acked run " << a.run_id << " at seq " << a.last_seq);
        REQUIRE(log.size() >= a.last_seq);
        CHECK(log[a.last_seq - 1].run_id == a.run_id);
      }
      REQUIRE(c.call("GET", "/v1/threads/" + t, "", &r).is_ok());
      CHECK(r.status == 200);
    }

    // Space back. RocksDB 7.8 cannot go on with the WAL whose append failed, so
    // writes stay refused as a full disk until skein serve restarts.
    REQUIRE(::unlink(filler.c_str()) == 0);
    for (int i = 0; i < 3; ++i) {
      REQUIRE(c.call("POST", "/v1/threads/" + threads[i % 2] + "/entries", R"({"text":"n","wait":true})", &r).is_ok());
      INFO(r.body);
      CHECK(r.status == 507);
      CHECK(error_code(r.body) == "no_space");
    }
    srv.kill();  // no orderly close: the restart replays the WAL whose tail the full disk tore
  }

  serve_process again{SKEIN_BINARY, data};
  std::printf("disk full: skein serve ready again %.0f ms after its start\n", again.ready_after().count() / 1000.0);
  http::client c{{"127.0.0.1", again.port()}, "", 10s};
  for (const auto& t : threads) {
    std::vector<event> log;
    REQUIRE(export_log(c, t, &log).is_ok());
    check_runs(log);
    for (const auto& a : acked) {
      if (a.thread != t) continue;
      INFO("acked run " << a.run_id << " on " << t << " at seq " << a.last_seq);
      REQUIRE(log.size() >= a.last_seq);
      CHECK(log[a.last_seq - 1].name == "thread.stop");
      CHECK(log[a.last_seq - 1].run_id == a.run_id);
    }
  }
  for (int i = 0; i < 10; ++i) {  // writes go on after the restart
    http::response r;
    REQUIRE(c.call("POST", "/v1/threads/" + threads[i % 2] + "/entries", R"({"text":"n","wait":true})", &r).is_ok());
    INFO(r.body);
    CHECK(r.status == 200);
  }
  CHECK(WIFEXITED(again.stop(SIGTERM)));
}
