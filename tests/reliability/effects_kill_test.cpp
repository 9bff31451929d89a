// Effects exactly once across SIGKILL: `skein serve` (durability sync) with
// titles and embeddings on, concurrent runs over many threads, SIGKILLed at
// random moments and started again on the same data. 8 kills in `make test`;
// SKEIN_EFFECTS_KILLS=N for N; SKEIN_SEED replays the printed seed's moments.
//
// After the last restart, once the effects have drained (/metrics backlog 0):
//   - every thread with 2+ user messages has a generated title; one with fewer
//     has none;
//   - the embeddings rows of every thread are exactly its user and assistant
//     messages with text (one row per seq, none for another seq), and both
//     effects' cursors stand at the thread's last seq;
//   - no title was generated twice and no embedding written twice. Both would
//     be invisible in the data (a second title is not stored, a second row
//     rewrites its key), so the check reads the refusals that would follow:
//     the thread actor refuses a title for a thread that has one (counted as
//     skein_effect_discarded_total) and the log refuses an effect write at or
//     below its cursor (a failure, skein_effect_failed_total). Both must be 0
//     in every process, scraped just before each kill and at the end. This is
//     sound because the engine is called only after reading, in the log, a
//     manifest without a title past the effect's cursor, and a title lands in
//     one tick with that cursor: a generation after the title was committed
//     would have to store its title over it (refused, counted) or be dropped
//     (counted too). The scrape misses only a refusal in the instants before
//     a kill; the final process, which has to redo what every kill cut short,
//     is scraped after it has drained.
#include <catch2/catch.hpp>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "persistence/event_log.hpp"
#include "tests/reliability/kill_harness.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/server_fixture.hpp"
#include "tests/support/temp_dir.hpp"

using namespace skein;
using namespace skein::test;
using namespace std::chrono_literals;

namespace {

constexpr size_t default_kills = 8;
constexpr size_t thread_count = 24;
constexpr size_t clients = 4;
constexpr auto kill_after_min = 50ms, kill_after_max = 500ms;
constexpr auto drain_limit = 60s;
constexpr auto progress_limit = 120s;  // for a round's first thread_count runs

// Runs on the threads until the round ends (`killed`); a call that fails
// before then (a timeout of a server slowed by a sanitizer or a loaded machine)
// is retried on a new connection rather than ending the client. Texts differ
// per run so that every message has something to embed; `runs` counts the
// answered ones.
void load(uint16_t port, size_t client, size_t round, const std::vector<std::string>& threads, uint64_t seed,
          const std::atomic<bool>& killed, std::atomic<size_t>& runs) {
  std::mt19937_64 rng{seed + client * 7919 + round};
  for (size_t i = 0; !killed.load();) {
    http::client c{{"127.0.0.1", port}, "", 5s};
    for (; !killed.load(); ++i) {
      const std::string& t = threads[rng() % threads.size()];
      std::string body = R"({"text":"note )" + std::to_string(round) + "-" + std::to_string(client) + "-" +
                         std::to_string(i) + R"( about the garden","wait":true})";
      http::response r;
      if (!c.call("POST", "/v1/threads/" + t + "/entries", body, &r).is_ok()) break;  // killed, or slow
      if (r.status == 200) runs.fetch_add(1);
    }
  }
}

// Sum over effects of one metric family's values; -1 if the scrape failed.
int64_t metric_sum(const std::string& text, const std::string& family) {
  int64_t sum = 0;
  size_t at = 0;
  while ((at = text.find("\n" + family + "{", at)) != std::string::npos) {
    size_t space = text.find(' ', at + 1);
    size_t end = text.find('\n', space);
    sum += std::atoll(text.substr(space + 1, end - space - 1).c_str());
    at = end;
  }
  return sum;
}

bool scrape(uint16_t port, std::string* out) {
  http::client c{{"127.0.0.1", port}, "", 2s};
  http::response r;
  if (!c.call("GET", "/metrics", "", &r).is_ok() || r.status != 200) return false;
  *out = r.body;
  return true;
}

}  // namespace

TEST_CASE("effects kill loop: titles, embeddings and compactions exactly once across SIGKILLs of skein serve") {
  kill_loop loop{"effects kill loop", "SKEIN_EFFECTS_KILLS", default_kills};
  const std::vector<std::string> threads = make_agent_threads(
      SKEIN_BINARY, loop.data,
      R"({"id":"a","engine_config":{"default":{"reply":"noted, the garden it is","latency_ms":2},)"
      R"("title":{"reply":"Garden notes number {n}","latency_ms":3}},)"
      // A few runs pass the threshold: automatic compactions happen all along.
      R"("compaction":{"auto_tokens":150,"keep_turns":1}})",
      thread_count);
  int64_t discarded = 0, failed = 0;
  size_t scrapes = 0;
  for (size_t round = 0; round < loop.plan.kills; ++round) {
    INFO("round " << round << ", seed " << loop.plan.seed);
    serve_process srv{SKEIN_BINARY, loop.data};
    std::vector<std::thread> load_threads;
    std::atomic<bool> killed{false};
    std::atomic<size_t> runs{0};
    for (size_t c = 0; c < clients; ++c)
      load_threads.emplace_back(load, srv.port(), c, round, std::cref(threads), loop.plan.seed, std::cref(killed),
                                std::ref(runs));
    // Every other round gets work done before its kill, however slow the
    // machine: as many answered runs as threads (so compactions, which take a
    // few runs on one thread, happen over the rounds), then a random moment.
    // The other rounds are killed at a random moment from the start, the
    // catch-up of what the previous kill cut short included.
    const bool wait_progress = round % 2 == 0;
    auto progress_deadline = std::chrono::steady_clock::now() + progress_limit;
    while (wait_progress && runs.load() < thread_count && std::chrono::steady_clock::now() < progress_deadline)
      std::this_thread::sleep_for(5ms);
    const size_t runs_before_window = runs.load();
    // Under a sanitizer the window stretches so that the effects of those runs
    // still get under way between kills.
    sleep_until_kill(loop.rng, kill_after_min, kill_after_max, 8);
    std::string m;
    if (scrape(srv.port(), &m)) {
      ++scrapes;
      discarded += metric_sum(m, "skein_effect_discarded_total");
      failed += metric_sum(m, "skein_effect_failed_total");
    }
    killed.store(true);
    srv.kill();
    for (auto& t : load_threads) t.join();
    // After the joins: a failed REQUIRE leaves no thread running.
    if (wait_progress) REQUIRE(runs_before_window >= thread_count);
  }

  std::map<std::string, manifest> manifests;
  std::map<std::string, std::vector<event>> logs;
  {
    serve_process last{SKEIN_BINARY, loop.data};
    std::string m;
    // Drained: no backlog, twice in a row a moment apart (the catch-up scan
    // runs right after the start; a backlog of 0 before it would be a false end).
    auto deadline = std::chrono::steady_clock::now() + drain_limit;
    int quiet = 0;
    while (quiet < 2 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(100ms);  // the effects work in the server: no event to wait on here
      REQUIRE(scrape(last.port(), &m));
      bool done = metric_sum(m, "skein_effect_backlog") == 0 && metric_sum(m, "skein_effect_done_total") > 0;
      quiet = done ? quiet + 1 : 0;
    }
    REQUIRE(quiet == 2);
    discarded += metric_sum(m, "skein_effect_discarded_total");
    failed += metric_sum(m, "skein_effect_failed_total");
    ++scrapes;
    http::client c{{"127.0.0.1", last.port()}};
    for (const auto& t : threads) {
      REQUIRE(export_log(c, t, &logs[t]).is_ok());
      http::response r;
      REQUIRE(c.call("GET", "/v1/threads/" + t, "", &r).is_ok());
      REQUIRE(decode_manifest(r.body, &manifests[t]).is_ok());
    }
    CHECK(WIFEXITED(last.stop(SIGTERM)));
  }

  log_options lo;
  lo.path = loop.data + "/namespaces/default";  // skein serve keeps one database per namespace
  std::unique_ptr<event_log> log;
  REQUIRE(event_log::open(lo, &log).is_ok());
  size_t titled = 0, rows_total = 0, compactions = 0;
  for (const auto& t : threads) {
    INFO("thread " << t);
    const auto& events = logs[t];
    std::set<uint64_t> messages;
    size_t users = 0;
    for (const auto& e : events) {
      if (e.type != event_type::message) continue;
      users += e.role == message_role::user;
      if (!e.text.empty() && (e.role == message_role::user || e.role == message_role::assistant))
        messages.insert(e.seq);
    }
    const manifest& m = manifests[t];
    if (users >= 2) {
      CHECK(m.title_generated);
      CHECK(m.title.rfind("Garden notes number ", 0) == 0);
      ++titled;
    } else {
      CHECK(m.title.empty());
    }
    std::vector<std::pair<uint64_t, embedding_record>> rows;
    REQUIRE(log->read_embeddings(t, &rows).is_ok());
    std::set<uint64_t> seqs;
    for (const auto& [seq, rec] : rows) seqs.insert(seq);
    CHECK(seqs.size() == rows.size());
    CHECK(seqs == messages);
    rows_total += rows.size();
    // No compaction applied twice: a compaction is asked for when new events
    // pushed the view past the threshold, so between two compactions of a
    // thread there is always a run's input; two in a row would be one applied twice.
    bool input_since_compaction = true;
    for (const auto& e : events) {
      if (e.type == event_type::message && e.role == message_role::user) input_since_compaction = true;
      if (e.type != event_type::compaction) continue;
      CHECK(input_since_compaction);
      CHECK(e.tokens_after < e.tokens_before);
      input_since_compaction = false;
      ++compactions;
    }
    for (const char* effect : {"titles", "embeddings", "compaction"}) {
      uint64_t cursor = 0;
      REQUIRE(log->read_effect_cursor(effect, t, &cursor).is_ok());
      CHECK(cursor == m.last_seq);
    }
  }
  std::printf("effects kill loop: %zu threads titled, %zu embeddings rows, %zu compactions; %zu scrapes saw %lld "
              "discarded titles and %lld failed effect jobs\n",
              titled, rows_total, compactions, scrapes, static_cast<long long>(discarded),
              static_cast<long long>(failed));
  CHECK(titled > 0);
  CHECK(compactions > 0);
  CHECK(discarded == 0);
  CHECK(failed == 0);
}
