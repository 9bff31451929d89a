// The kill loop: `skein serve` (durability sync) SIGKILLed again and again under
// concurrent HTTP load, started again on the same data each time. 20 kills in
// `make test`; SKEIN_KILL_LOOP=N for N (150 for the long mode); SKEIN_SEED
// replays the printed seed's kill moments.
//
// Load: two clients post entries with wait:true (200: the run is acknowledged
// whole, its thread.stop at last_seq), two post with wait:false and an
// idempotency key (202: the input is accepted). After the last restart:
//   - every log is gapless and every run sits between one thread.start and one
//     thread.stop (a tick is there whole or not at all);
//   - every acknowledged run is there, its thread.stop at the acknowledged seq;
//   - every 202 becomes exactly one run: one thread.start and one thread.stop
//     with its run id. That needs the durable inbox (inputs written before the
//     202, replayed at open); without it the inputs queued at a kill are lost.
// Start-up time (process start to listening, recovery included) is reported
// per restart: min, p50, max.
#include <cstdlib>
#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "tests/reliability/kill_harness.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/runtime_fixture.hpp"
#include "tests/support/server_fixture.hpp"
#include "tests/support/temp_dir.hpp"

using namespace skein;
using namespace skein::test;
using namespace std::chrono_literals;

namespace {

constexpr size_t default_kills = 20;
constexpr size_t thread_count = 8;
constexpr size_t waiting_clients = 2, submitting_clients = 2;
constexpr auto kill_after_min = 50ms, kill_after_max = 400ms;  // of load before each kill
constexpr auto accepted_runs_limit = 60s;  // after the last restart, for the 202 inputs to run
constexpr auto idle_limit = 5s;            // ... unless the logs stop growing for this long

struct ledger {
  std::mutex mu;  // guards everything below
  struct acked {
    std::string thread, run_id;
    uint64_t last_seq;
  };
  struct accepted {
    std::string thread, run_id;
  };
  std::vector<acked> acks;
  std::vector<accepted> accepts;
};

// Posts entries until the server goes away; records what it acknowledged.
void load(uint16_t port, size_t client, bool wait, size_t round, const std::vector<std::string>& threads,
          ledger* book) {
  http::client c{{"127.0.0.1", port}, "", 5s};
  for (size_t i = 0;; ++i) {
    const std::string& t = threads[(client * 3 + i) % threads.size()];
    std::string body = R"({"text":"n","wait":true})";
    if (!wait) {  // appended piece by piece: GCC 12 warns falsely (-Wrestrict) on "k" + std::to_string(...)
      body = R"({"text":"n","idempotency_key":"k)";
      body += std::to_string(round);
      body += '-';
      body += std::to_string(client);
      body += '-';
      body += std::to_string(i);
      body += R"("})";
    }
    http::response r;
    if (!c.call("POST", "/v1/threads/" + t + "/entries", body, &r).is_ok()) return;  // killed
    std::lock_guard<std::mutex> lock{book->mu};
    if (wait && r.status == 200) book->acks.push_back({t, entry_run_id(r.body), entry_last_seq(r.body)});
    if (!wait && r.status == 202) book->accepts.push_back({t, field(r.body, "run_id")});
  }
}

struct run_marks {
  size_t starts = 0, stops = 0;
};

// Per thread: run id -> its thread.start and thread.stop count.
std::map<std::string, std::map<std::string, run_marks>> marks_of(http::client& c,
                                                                 const std::vector<std::string>& threads,
                                                                 std::map<std::string, std::vector<event>>* logs) {
  std::map<std::string, std::map<std::string, run_marks>> out;
  for (const auto& t : threads) {
    auto& log = (*logs)[t];
    REQUIRE(export_log(c, t, &log).is_ok());
    for (const auto& e : log) {
      if (e.type != event_type::signal) continue;
      if (e.name == "thread.start") ++out[t][e.run_id].starts;
      if (e.name == "thread.stop") ++out[t][e.run_id].stops;
    }
  }
  return out;
}

double ms(std::chrono::microseconds us) { return us.count() / 1000.0; }

}  // namespace

TEST_CASE("kill loop: SIGKILLs of skein serve under load lose no acknowledged entry and split no run") {
  kill_loop loop{"kill loop", "SKEIN_KILL_LOOP", default_kills};
  std::vector<std::chrono::microseconds> startups;
  ledger book;
  const std::vector<std::string> threads = make_agent_threads(
      SKEIN_BINARY, loop.data, R"({"id":"a","engine_config":{"default":{"reply":"ok","latency_ms":2}}})", thread_count);
  for (size_t round = 0; round < loop.plan.kills; ++round) {
    INFO("round " << round << ", seed " << loop.plan.seed);
    serve_process srv{SKEIN_BINARY, loop.data};
    startups.push_back(srv.ready_after());
    std::vector<std::thread> clients;
    for (size_t c = 0; c < waiting_clients + submitting_clients; ++c)
      clients.emplace_back(load, srv.port(), c, c < waiting_clients, round, std::cref(threads), &book);
    // Under a sanitizer every request is several times slower: the window
    // stretches so that runs still complete.
    sleep_until_kill(loop.rng, kill_after_min, kill_after_max, 5);
    srv.kill();
    for (auto& c : clients) c.join();
  }

  serve_process last{SKEIN_BINARY, loop.data};
  startups.push_back(last.ready_after());
  std::sort(startups.begin(), startups.end());
  std::printf("kill loop: %zu restarts ready (process start to listening, recovery included) in min %.0f ms, "
              "p50 %.0f ms, max %.0f ms; %zu acknowledged runs, %zu accepted inputs\n",
              startups.size(), ms(startups.front()), ms(startups[startups.size() / 2]), ms(startups.back()),
              book.acks.size(), book.accepts.size());
  REQUIRE_FALSE(book.acks.empty());

  http::client c{{"127.0.0.1", last.port()}};
  std::map<std::string, std::vector<event>> logs;
  // The restarted server replays the inboxes at once: runs may be going on, so
  // whole runs and gapless logs are checked once every accepted input has run.
  auto marks = marks_of(c, threads, &logs);
  for (const auto& a : book.acks) {
    INFO("acknowledged run " << a.run_id << " on " << a.thread << " at seq " << a.last_seq);
    const auto& log = logs[a.thread];
    REQUIRE(log.size() >= a.last_seq);
    CHECK(log[a.last_seq - 1].name == "thread.stop");
    CHECK(log[a.last_seq - 1].run_id == a.run_id);
  }

  // Every 202 becomes exactly one run: wait (bounded) for the last ones to finish,
  // and for every run going on in the logs read to have stopped — inputs whose
  // answer a kill cut off (a wait:true entry, a 202 never received) are durable
  // too and replayed, so runs the ledger does not know of may still be going on.
  auto all_ran = [&] {
    for (const auto& a : book.accepts) {
      const auto& m = marks[a.thread][a.run_id];
      if (m.starts != 1 || m.stops != 1) return false;
    }
    for (const auto& [t, runs] : marks)
      for (const auto& [id, m] : runs)
        if (m.starts != m.stops) return false;
    return true;
  };
  auto events_now = [&] {
    size_t n = 0;
    for (const auto& [t, log] : logs) n += log.size();
    return n;
  };
  auto deadline = std::chrono::steady_clock::now() + accepted_runs_limit;
  auto last_progress = std::chrono::steady_clock::now();
  size_t seen = events_now();
  while (!all_ran() && std::chrono::steady_clock::now() < deadline &&
         std::chrono::steady_clock::now() - last_progress < idle_limit) {
    std::this_thread::sleep_for(200ms);  // runs finishing in the server: no event to wait on here
    marks = marks_of(c, threads, &logs);
    if (events_now() != seen) {
      seen = events_now();
      last_progress = std::chrono::steady_clock::now();
    }
  }
  size_t never = 0, twice = 0;
  for (const auto& a : book.accepts) {
    const auto& m = marks[a.thread][a.run_id];
    if (m.starts == 0) ++never;
    if (m.starts > 1 || m.stops > 1) ++twice;
  }
  std::printf("kill loop: of %zu accepted (202) inputs, %zu never ran, %zu ran more than once\n",
              book.accepts.size(), never, twice);
  CHECK(never == 0);
  CHECK(twice == 0);
  for (const auto& t : threads) {
    INFO("thread " << t);
    check_runs(logs[t]);  // gapless; every run between one start and one stop
  }
  CHECK(WIFEXITED(last.stop(SIGTERM)));
}
