// Firings survive SIGKILL: a child runtime fires two fast interval schedules
// and is killed at random moments; after the restarts every schedule's history
// has no repeated due time and no gap in its sequence, fire_count equals its
// `fired` rows, and every fired row's thread exists and ran its input exactly
// once (one thread.start and one thread.stop with the row's run id).
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <set>
#include <thread>

#include "tests/support/child_process.hpp"
#include "tests/support/runtime_fixture.hpp"

using namespace skein;
using namespace skein::test;

namespace {

size_t count_signal(const std::vector<event>& log, const std::string& name, const std::string& run_id) {
  size_t n = 0;
  for (const auto& e : log)
    if (e.type == event_type::signal && e.name == name && e.run_id == run_id) ++n;
  return n;
}

void check_schedule(runtime& rt, const std::string& id) {
  INFO("schedule " << id);
  schedule s;
  REQUIRE(rt.get_schedule(id, &s).is_ok());
  std::vector<schedule_firing> rows, page;
  uint64_t before = 0, next = 0;
  do {
    REQUIRE(rt.schedule_history(id, before, 500, &page, &next).is_ok());
    rows.insert(rows.end(), page.begin(), page.end());
    before = next;
  } while (next != 0);
  REQUIRE(!rows.empty());
  REQUIRE(rows.size() == std::min<uint64_t>(s.history_seq, schedule_history_max));
  uint64_t fired = 0;
  std::set<int64_t> due_times;
  for (size_t i = 0; i < rows.size(); ++i) {
    const schedule_firing& f = rows[i];
    INFO("history seq " << f.seq << " scheduled " << f.scheduled_at_ms << " " << to_string(f.outcome) << " "
                        << f.reason);
    CHECK(f.seq == s.history_seq - i);  // no gap, no repeat
    CHECK(due_times.insert(f.scheduled_at_ms).second);  // no due time fired twice
    CHECK(f.outcome != firing_outcome::failed);
    CHECK((f.scheduled_at_ms - s.anchor_ms) % static_cast<int64_t>(s.interval_ms) == 0);
    if (i > 0) CHECK(f.scheduled_at_ms < rows[i - 1].scheduled_at_ms);
    if (f.outcome != firing_outcome::fired) continue;
    ++fired;
    manifest m;
    REQUIRE(rt.get_thread(f.thread_id, &m).is_ok());
    if (s.thread_id.empty()) {
      CHECK(m.parent == parent_kind::schedule);
      CHECK(m.parent_id == id);
    }
    std::vector<event> log;
    bool stopped = runtime_fixture::eventually([&] {
      log.clear();
      return rt.read(f.thread_id, history_view::complete, 1, 0, &log).is_ok() &&
             count_signal(log, "thread.stop", f.run_id) >= 1;
    });
    CHECK(stopped);
    CHECK(count_signal(log, "thread.start", f.run_id) == 1);
    CHECK(count_signal(log, "thread.stop", f.run_id) == 1);
  }
  CHECK(fired == s.fire_count);
  if (s.thread_id.empty()) {
    // No trigger thread without its history row.
    thread_query q;
    q.index = thread_query::by::parent;
    q.value = id;
    q.limit = thread_query::limit_max;
    thread_page tp;
    REQUIRE(rt.list_threads(q, &tp).is_ok());
    CHECK(tp.threads.size() == fired);
  }
}

}  // namespace

TEST_CASE("schedule firings survive SIGKILL: no loss, no repeat", "[scheduler][crash]") {
  uint64_t seed = std::random_device{}();
  if (const char* env = std::getenv("SKEIN_SEED")) seed = std::strtoull(env, nullptr, 10);
  std::printf("schedule kill seed: %llu (SKEIN_SEED replays)\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng{seed};
  temp_dir dir;
  const std::string data = dir.str();
  const int rounds = 10;
  for (int round = 0; round < rounds; ++round) {
    child_process child({SKEIN_SCHEDULE_WRITER, data});
    const std::string& out =
        child.read_until(std::chrono::seconds(60), [](const std::string& o) { return o.find("ready") != std::string::npos; });
    INFO("round " << round << " output: " << out);
    REQUIRE(out.find("ready") != std::string::npos);
    // The kill moment, not a wait for a result: firings are happening meanwhile.
    std::this_thread::sleep_for(std::chrono::milliseconds(20 + rng() % 300));
    int st = child.kill();
    REQUIRE(WIFSIGNALED(st));
  }
  runtime_options o = without_effects();
  o.data_dir = data;
  o.schedule_wake_ms = 0;  // nothing fires while the history is checked
  runtime_fixture f{o, false};
  check_schedule(*f.rt, "trigger");
  check_schedule(*f.rt, "bound");
}
