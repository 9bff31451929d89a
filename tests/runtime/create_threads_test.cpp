// runtime::create_threads: many creations in flight at once, each succeeding or
// failing by itself, every success durable (found after a reopen and after a
// SIGKILL of the process that created it).
#include <catch2/catch.hpp>
#include <random>
#include <set>
#include <sstream>

#include "tests/support/child_process.hpp"
#include "tests/support/runtime_fixture.hpp"

using namespace skein;
using namespace skein::test;
using namespace std::chrono_literals;

namespace {

thread_options of_agent(const std::string& agent) {
  thread_options o;
  o.agent_id = agent;
  return o;
}

// Every thread of `agent`, through its index, page by page.
std::set<std::string> threads_of(runtime& rt, const std::string& agent) {
  std::set<std::string> out;
  thread_query q;
  q.value = agent;
  q.limit = thread_query::limit_max;
  do {
    thread_page page;
    REQUIRE(rt.list_threads(q, &page).is_ok());
    REQUIRE(page.unreadable.empty());
    for (const auto& m : page.threads) out.insert(m.id);
    q.cursor = page.next_cursor;
  } while (!q.cursor.empty());
  return out;
}

std::unique_ptr<runtime> open_at(const temp_dir& dir) {
  runtime_options o;
  o.data_dir = dir.str();
  std::unique_ptr<runtime> rt;
  status s = runtime::open(o, &rt);
  INFO(s.to_string());
  REQUIRE(s.is_ok());
  return rt;
}

uint64_t test_seed() {
  if (const char* s = std::getenv("SKEIN_SEED")) return std::strtoull(s, nullptr, 10);
  return std::random_device{}();
}

}  // namespace

TEST_CASE("create_threads: bad options fail alone naming their field, the others exist after a reopen") {
  temp_dir dir;
  constexpr size_t n = 60;
  std::vector<thread_options> options(n, of_agent("a"));
  options[3].agent_id = "bad id!";
  options[7].agent_id = "ghost";
  options[10].task_id = "T1";
  options[20].task_id = "T1";  // the same task twice in one call: the later one fails
  options[25].dm = true;
  options[30].title = std::string(title_bytes_max + 1, 'x');
  options[40].task_id = "T0";  // claimed before the call by another thread
  options[50].parent_thread_id = "th_nobody";
  const std::map<size_t, std::pair<errc, std::string>> bad = {
      {3, {errc::invalid_input, "agent_id"}}, {7, {errc::not_found, "agent_id"}},
      {20, {errc::conflict, "task_id"}},      {25, {errc::invalid_input, "dm"}},
      {30, {errc::invalid_input, "title"}},   {40, {errc::conflict, "task_id"}},
      {50, {errc::not_found, ""}}};

  std::vector<manifest> out;
  std::vector<status> each;
  manifest holder;
  {
    auto rt = open_at(dir);
    agent_config a;
    a.id = "a";
    REQUIRE(rt->create_agent(a).is_ok());
    thread_options t0 = of_agent("a");
    t0.task_id = "T0";
    REQUIRE(rt->create_thread(t0, &holder).is_ok());

    status s = rt->create_threads(options, &out, &each);
    INFO(s.to_string());
    CHECK(s.code() == errc::invalid_input);
    CHECK_THAT(s.message(), Catch::StartsWith("options[3]: agent_id"));
    REQUIRE(out.size() == n);
    REQUIRE(each.size() == n);
    for (size_t i = 0; i < n; ++i) {
      INFO("options[" << i << "]: " << each[i].to_string());
      auto it = bad.find(i);
      if (it == bad.end()) {
        CHECK(each[i].is_ok());
        CHECK(out[i].agent_id == "a");
        CHECK(out[i].last_seq == 0);
        continue;
      }
      CHECK(each[i].code() == it->second.first);
      if (!it->second.second.empty()) CHECK(each[i].field() == it->second.second);
      CHECK(out[i].id.empty());
    }
    CHECK_THAT(each[20].message(), Catch::Contains("options[10]"));
    REQUIRE(rt->close().is_ok());
  }

  auto rt = open_at(dir);
  std::set<std::string> want{holder.id};
  for (size_t i = 0; i < n; ++i)
    if (each[i]) want.insert(out[i].id);
  CHECK(want.size() == 1 + n - bad.size());  // every id distinct
  CHECK(threads_of(*rt, "a") == want);      // those and nothing else, nothing half-created
  for (const auto& id : want) {
    manifest m;
    INFO(id);
    REQUIRE(rt->get_thread(id, &m).is_ok());
    CHECK(m.agent_id == "a");
  }
  manifest task;
  REQUIRE(rt->find_task_thread("T1", &task).is_ok());
  CHECK(task.id == out[10].id);
  REQUIRE(rt->find_task_thread("T0", &task).is_ok());
  CHECK(task.id == holder.id);
}

TEST_CASE("create_threads: past create_threads_max the call creates nothing, naming the limit") {
  runtime_fixture f;
  f.agent("a", "{}");
  std::vector<thread_options> options(create_threads_max + 1, of_agent("a"));
  std::vector<manifest> out;
  std::vector<status> each;
  status s = f.rt->create_threads(options, &out, &each);
  CHECK(s.code() == errc::invalid_input);
  CHECK(s.limit() == "create_threads_max");
  CHECK(threads_of(*f.rt, "a").empty());

  options.resize(create_threads_max);  // at the limit: all of them
  REQUIRE(f.rt->create_threads(options, &out, &each).is_ok());
  std::set<std::string> ids;
  for (const auto& m : out) ids.insert(m.id);
  CHECK(ids.size() == create_threads_max);
  CHECK(threads_of(*f.rt, "a") == ids);
}

TEST_CASE("create_threads: past the quota threads_max each creation over it fails alone") {
  runtime_options o;
  o.quota.threads_max = 5;
  runtime_fixture f{o};
  f.agent("a", "{}");
  std::vector<thread_options> options(8, of_agent("a"));
  std::vector<manifest> out;
  std::vector<status> each;
  status s = f.rt->create_threads(options, &out, &each);
  CHECK(s.code() == errc::quota_exceeded);
  size_t created = 0;
  for (size_t i = 0; i < options.size(); ++i) {
    INFO("options[" << i << "]: " << each[i].to_string());
    if (each[i]) {
      ++created;
      continue;
    }
    CHECK(each[i].code() == errc::quota_exceeded);
    CHECK(each[i].limit() == "threads_max");
  }
  CHECK(created == 5);
  CHECK(threads_of(*f.rt, "a").size() == 5);
}

TEST_CASE("create_threads: every creation a call returned survives a SIGKILL") {
  uint64_t seed = test_seed();
  std::printf("create_threads kill test: SKEIN_SEED=%llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng{seed};
  constexpr int calls = 20;
  for (int round = 0; round < 2; ++round) {
    INFO("seed " << seed << " round " << round);
    temp_dir dir;
    int kill_after = std::uniform_int_distribution<int>{1, calls}(rng);
    child_process writer{{SKEIN_CREATE_WRITER, dir.str(), std::to_string(calls)}};
    auto count_calls = [](const std::string& out) {
      int n = 0;
      for (size_t p = out.find("call "); p != std::string::npos; p = out.find("call ", p + 1)) ++n;
      return n;
    };
    writer.read_until(60s, [&](const std::string& out) {
      return count_calls(out) >= kill_after || out.find("done") != std::string::npos;
    });
    writer.kill();

    // "call k id id ... end": only whole lines count, a line cut by the kill is ignored.
    std::istringstream lines{writer.output()};
    std::string line;
    std::set<std::string> acked;
    int whole = 0;
    while (std::getline(lines, line)) {
      std::istringstream words{line};
      std::string word;
      std::vector<std::string> ids;
      words >> word;
      if (word != "call") continue;
      words >> word;  // its number
      while (words >> word && word != "end") ids.push_back(word);
      if (word != "end") continue;
      ++whole;
      acked.insert(ids.begin(), ids.end());
    }
    REQUIRE(whole >= std::min(kill_after, calls));
    auto rt = open_at(dir);
    std::set<std::string> stored = threads_of(*rt, "creator");
    CHECK(std::includes(stored.begin(), stored.end(), acked.begin(), acked.end()));
    for (const auto& id : stored) {
      manifest m;
      INFO(id);
      REQUIRE(rt->get_thread(id, &m).is_ok());  // whole: a manifest for every indexed thread
    }
  }
}
