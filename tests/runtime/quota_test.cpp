// Quotas of a runtime's database (runtime_options::quota, runtime::set_quota):
// every creation path against threads_max, inputs against events_per_day_max and
// storage_bytes_max at admission, refusals that touch nothing, restarts, and
// host threads racing to create.
#include <atomic>
#include <catch2/catch.hpp>
#include <thread>

#include "tests/support/runtime_fixture.hpp"

using namespace skein;
using namespace skein::test;
using namespace std::chrono_literals;

namespace {

constexpr int64_t day0_ms = 1795392000000;  // 2026-11-23T00:00:00Z
constexpr int64_t day_ms = 86400000;

const char* ok_rules = R"({"default": {"reply": "ok"}})";

runtime_options quota_options(std::atomic<int64_t>* now, log_quota q = {}) {
  runtime_options o = without_effects();
  o.clock = [now] { return now->load(); };
  o.quota = q;
  return o;
}

log_usage usage_of(runtime& rt) {
  log_usage u;
  auto s = rt.quota_usage(&u);
  INFO(s.to_string());
  REQUIRE(s.is_ok());
  return u;
}

status try_create(runtime& rt, const std::string& agent, manifest* out = nullptr) {
  thread_options o;
  o.agent_id = agent;
  manifest ignored;
  return rt.create_thread(o, out != nullptr ? out : &ignored);
}

status try_send(runtime& rt, const std::string& thread, const std::string& key = "") {
  run_input in;
  in.text = "hello";
  in.idempotency_key = key;
  run_result r;
  return rt.send(thread, in).wait(&r, 60s);
}

size_t thread_count(runtime& rt) {
  thread_query q;
  q.index = thread_query::by::agent;
  q.value = "a";
  q.archived_filter = thread_query::archived::include;
  thread_page page;
  REQUIRE(rt.list_threads(q, &page).is_ok());
  return page.threads.size();
}

}  // namespace

TEST_CASE("quota threads_max: create_thread, fork and import refused past it, nothing written", "[quota]") {
  std::atomic<int64_t> now{day0_ms};
  log_quota q;
  q.threads_max = 2;
  runtime_fixture f{quota_options(&now, q)};
  f.agent("a", ok_rules);
  manifest one = f.thread("a");
  f.run(one.id, "hi");
  manifest two = f.thread("a");
  status s = try_create(*f.rt, "a");
  REQUIRE(s.code() == errc::quota_exceeded);
  CHECK(s.limit() == "threads_max");
  CHECK(s.message().find("2 threads stored, limit 2") != std::string::npos);
  manifest forked;
  s = f.rt->fork(one.id, 1, &forked);
  CHECK(s.code() == errc::quota_exceeded);
  CHECK(s.limit() == "threads_max");
  CHECK(thread_count(*f.rt) == 2);
  CHECK(usage_of(*f.rt).threads == 2);

  // Room for one more: an import of two is refused whole.
  q.threads_max = 3;
  REQUIRE(f.rt->set_quota(q).is_ok());
  std::vector<thread_import> imports(2);
  for (size_t i = 0; i < imports.size(); ++i) {
    imports[i].manifest.id = "imported-" + std::to_string(i);
    imports[i].manifest.agent_id = "a";
    event e = make_message(message_role::user, "old");
    e.seq = 1;
    e.ts_ms = day0_ms;
    imports[i].events.push_back(e);
  }
  std::vector<manifest> stored;
  s = f.rt->import_threads(imports, &stored);
  REQUIRE(s.code() == errc::quota_exceeded);
  CHECK(s.limit() == "threads_max");
  manifest m;
  CHECK(f.rt->get_thread("imported-0", &m).code() == errc::not_found);
  CHECK(f.rt->get_thread("imported-1", &m).code() == errc::not_found);
  CHECK(thread_count(*f.rt) == 2);
  // The one that fits goes in; deleting frees a place.
  CHECK(f.rt->fork(one.id, 1, &forked).is_ok());
  CHECK(try_create(*f.rt, "a").code() == errc::quota_exceeded);
  REQUIRE(f.rt->delete_thread(two.id).is_ok());
  CHECK(try_create(*f.rt, "a").is_ok());
  runtime_stats st = f.stats();
  CHECK(st.quota.threads_max == 3);
  CHECK(st.quota_usage.threads == 3);
}

TEST_CASE("quota threads_max: a delegated child past it is refused, the asking run goes on", "[quota]") {
  std::atomic<int64_t> now{day0_ms};
  log_quota q;
  q.threads_max = 1;
  runtime_fixture f{quota_options(&now, q)};
  agent_config helper;
  helper.id = "helper";
  helper.engine_config = ok_rules;
  REQUIRE(f.rt->create_agent(helper).is_ok());
  agent_config asker;
  asker.id = "a";
  asker.engine_config =
      R"({"rules": [{"turn": 1, "tool_calls": [{"name": "ask_agent", "id": "ask1", "arguments": {"agent": "helper", "question": "q"}}]}], "default": {"reply": "told {tool_result}"}})";
  asker.delegation.agents = {"helper"};
  REQUIRE(f.rt->create_agent(asker).is_ok());
  manifest parent = f.thread("a");
  run_result r = f.run(parent.id, "ask");
  CHECK(r.text.find("quota threads_max reached") != std::string::npos);
  CHECK(usage_of(*f.rt).threads == 1);
}

TEST_CASE("quota events_per_day_max: inputs refused once the day's events reach it, runs admitted complete",
          "[quota]") {
  std::atomic<int64_t> now{day0_ms + 1000};
  temp_dir dir;
  log_quota q;
  q.events_per_day_max = 3;
  runtime_options o = quota_options(&now, q);
  o.data_dir = dir.str();
  std::string thread;
  std::vector<event> before;
  {
    runtime_fixture f{o, false};
    f.agent("a", ok_rules);
    thread = f.thread("a").id;
    REQUIRE(try_send(*f.rt, thread, "first").is_ok());  // admitted at 0 events: completes past the quota
    before = f.events(thread);
    CHECK(before.size() > 3);
    CHECK(usage_of(*f.rt).events_today == before.size());
    status s = try_send(*f.rt, thread);
    REQUIRE(s.code() == errc::quota_exceeded);
    CHECK(s.limit() == "events_per_day_max");
    CHECK(s.message().find("events committed on 2026-11-23 (UTC), limit 3") != std::string::npos);
    std::string run_id;
    run_input in;
    in.text = "later";
    CHECK(f.rt->submit(thread, in, &run_id).code() == errc::quota_exceeded);
    // A retry of the accepted input is answered, not refused.
    CHECK(try_send(*f.rt, thread, "first").is_ok());
    CHECK(f.events(thread).size() == before.size());  // the refusals wrote nothing
    REQUIRE(f.rt->close().is_ok());
  }
  {
    // A restart does not reset the day.
    runtime_fixture f{o, false};
    CHECK(try_send(*f.rt, thread).code() == errc::quota_exceeded);
    CHECK(f.events(thread).size() == before.size());
    // The next UTC day starts from 0.
    now += day_ms;
    CHECK(try_send(*f.rt, thread).is_ok());
    CHECK(usage_of(*f.rt).events_today == f.events(thread).size() - before.size());
  }
}

TEST_CASE("quota storage_bytes_max: creations and inputs refused past the approximate figure", "[quota]") {
  std::atomic<int64_t> now{day0_ms};
  runtime_fixture f{quota_options(&now)};
  f.agent("a", ok_rules);
  manifest t = f.thread("a");
  CHECK(usage_of(*f.rt).storage_bytes > 0);
  log_quota q;
  q.storage_bytes_max = 1;
  REQUIRE(f.rt->set_quota(q).is_ok());
  status s = try_create(*f.rt, "a");
  CHECK(s.code() == errc::quota_exceeded);
  CHECK(s.limit() == "storage_bytes_max");
  s = try_send(*f.rt, t.id);
  CHECK(s.code() == errc::quota_exceeded);
  CHECK(s.limit() == "storage_bytes_max");
  CHECK(f.events(t.id).empty());
  CHECK(usage_of(*f.rt).threads == 1);
  q.storage_bytes_max = 0;
  REQUIRE(f.rt->set_quota(q).is_ok());
  CHECK(try_send(*f.rt, t.id).is_ok());
}

TEST_CASE("quota threads_max: host threads creating at once, exactly threads_max succeed", "[quota]") {
  std::atomic<int64_t> now{day0_ms};
  constexpr size_t threads_max = 5, hosts = 8, per_host = 3;
  log_quota q;
  q.threads_max = threads_max;
  runtime_fixture f{quota_options(&now, q)};
  f.agent("a", ok_rules);
  std::vector<std::vector<errc>> results(hosts);  // each host writes its own
  std::atomic<bool> go{false};
  std::vector<std::thread> workers;
  for (size_t h = 0; h < hosts; ++h)
    workers.emplace_back([&, h] {
      while (!go.load()) std::this_thread::yield();
      for (size_t i = 0; i < per_host; ++i) results[h].push_back(try_create(*f.rt, "a").code());
    });
  go = true;
  for (auto& w : workers) w.join();
  size_t created = 0, refused = 0;
  for (const auto& r : results)
    for (errc c : r) {
      if (c == errc::ok) ++created;
      else if (c == errc::quota_exceeded) ++refused;
    }
  CHECK(created == threads_max);
  CHECK(refused == hosts * per_host - threads_max);
  CHECK(thread_count(*f.rt) == threads_max);
  CHECK(usage_of(*f.rt).threads == threads_max);
}
