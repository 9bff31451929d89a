// The durable inbox: an input acknowledged by submit survives a SIGKILL and
// becomes exactly one run after the restart.
#include <catch2/catch.hpp>
#include <condition_variable>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sstream>

#include "tests/support/child_process.hpp"
#include "tests/support/runtime_fixture.hpp"

using namespace skein;
using namespace skein::test;
using namespace std::chrono_literals;

namespace {

uint64_t test_seed() {
  if (const char* s = std::getenv("SKEIN_SEED")) return std::strtoull(s, nullptr, 10);
  return std::random_device{}();
}

}  // namespace

TEST_CASE("every input submit acknowledged before a SIGKILL runs exactly once after the restart") {
  uint64_t seed = test_seed();
  std::printf("inbox kill test: SKEIN_SEED=%llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng{seed};
  constexpr int inputs = 40;
  for (int round = 0; round < 4; ++round) {
    INFO("seed " << seed << " round " << round);
    temp_dir dir;
    size_t kill_after = std::uniform_int_distribution<size_t>{1, inputs}(rng);
    child_process writer{{SKEIN_INBOX_WRITER, dir.str(), std::to_string(inputs)}};
    auto count_acks = [](const std::string& out) {
      size_t n = 0;
      for (size_t p = out.find("acked "); p != std::string::npos; p = out.find("acked ", p + 1)) ++n;
      return n;
    };
    writer.read_until(60s, [&](const std::string& out) {
      return count_acks(out) >= kill_after || out.find("done") != std::string::npos;
    });
    writer.kill();

    std::istringstream lines{writer.output()};
    std::string word, value, thread;
    std::set<std::string> acked;
    while (lines >> word >> value) {
      if (word == "thread") thread = value;
      if (word == "acked") acked.insert(value);
    }
    REQUIRE_FALSE(thread.empty());
    REQUIRE(acked.size() >= std::min<size_t>(kill_after, inputs));

    runtime_options o;
    o.data_dir = dir.str();
    runtime_fixture f{o, false};
    // Wait, on the thread's own events, until every acknowledged run has stopped.
    std::mutex mu;
    std::condition_variable cv;
    std::set<std::string> stopped;
    event_sink sink;
    sink.on_event = [&](const event& e) {
      std::lock_guard<std::mutex> lock{mu};
      if (e.type == event_type::signal && e.name == "thread.stop") stopped.insert(e.run_id);
      cv.notify_all();
    };
    uint64_t sub = 0;
    REQUIRE(f.rt->subscribe(thread, 1, sink, &sub).is_ok());
    {
      std::unique_lock<std::mutex> lock{mu};
      bool all = cv.wait_for(lock, 60s, [&] {
        return std::includes(stopped.begin(), stopped.end(), acked.begin(), acked.end());
      });
      REQUIRE(all);
    }
    // Inputs accepted durably whose ack the kill cut off run too, after the
    // acknowledged ones: read the log once its last run has stopped.
    std::vector<event> log;
    for (;;) {
      log = f.events(thread);
      std::string open_run;
      for (const auto& e : log) {
        if (e.type == event_type::signal && e.name == "thread.start") open_run = e.run_id;
        if (e.type == event_type::signal && e.name == "thread.stop") open_run.clear();
      }
      if (open_run.empty()) break;
      std::unique_lock<std::mutex> lock{mu};
      REQUIRE(cv.wait_for(lock, 60s, [&] { return stopped.count(open_run) == 1; }));
    }
    REQUIRE(f.rt->unsubscribe(sub).is_ok());
    check_runs(log);  // gapless, one start and one stop per run, none on top of another
    std::map<std::string, int> starts;
    for (const auto& e : log)
      if (e.type == event_type::signal && e.name == "thread.start") ++starts[e.run_id];
    for (const auto& id : acked) CHECK(starts[id] == 1);
    for (const auto& [id, n] : starts) CHECK(n == 1);
  }
}
