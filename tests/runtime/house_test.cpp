// Thread shapes beyond the plain root thread: a task's dedicated thread, an
// agent's DM thread, houses with members, per-thread engine overrides, payload
// groups, and dispatch.failed signals. Real runtime, real RocksDB.
#include <atomic>
#include <catch2/catch.hpp>
#include <mutex>
#include <set>
#include <thread>

#include "tests/support/runtime_fixture.hpp"

using namespace skein;
using namespace skein::test;
using namespace std::chrono_literals;

namespace {

// Starts `n` OS threads that wait at a gate, then all call fn(i) at once.
template <class F>
void race(int n, F fn) {
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i)
    threads.emplace_back([&, i] {
      while (!go.load()) std::this_thread::yield();
      fn(i);
    });
  go = true;
  for (auto& t : threads) t.join();
}

size_t count_signals(const std::vector<event>& log, const std::string& name) {
  size_t n = 0;
  for (const auto& e : log)
    if (e.type == event_type::signal && e.name == name) ++n;
  return n;
}

}  // namespace

TEST_CASE("task binding: 32 concurrent creates for one task give one thread, found by task id") {
  runtime_fixture f{without_effects()};
  f.agent("a", R"({"default": {"reply": "ok"}})");
  std::mutex mu;
  std::set<std::string> ids;
  std::atomic<int> created{0}, failed{0};
  race(32, [&](int) {
    thread_options o;
    o.agent_id = "a";
    o.task_id = "task-7";
    manifest m;
    bool fresh = false;
    if (!f.rt->create_thread(o, &m, &fresh).is_ok()) {
      ++failed;
      return;
    }
    if (fresh) ++created;
    std::lock_guard lock{mu};
    ids.insert(m.id);
  });
  CHECK(failed == 0);
  CHECK(created == 1);
  REQUIRE(ids.size() == 1);
  manifest found;
  REQUIRE(f.rt->find_task_thread("task-7", &found).is_ok());
  CHECK(found.id == *ids.begin());
  CHECK(found.task_id == "task-7");
  CHECK(found.parent == parent_kind::task);

  thread_page page;
  thread_query q;
  q.index = thread_query::by::agent;
  q.value = "a";
  REQUIRE(f.rt->list_threads(q, &page).is_ok());
  CHECK(page.threads.size() == 1);

  manifest none;
  CHECK(f.rt->find_task_thread("task-8", &none).code() == errc::not_found);
}

TEST_CASE("task binding: erasing the thread frees the task; the claim survives a reopen") {
  temp_dir dir;
  runtime_options o = without_effects();
  o.data_dir = dir.str();
  std::string first;
  {
    runtime_fixture f{o, false};
    f.agent("a", R"({"default": {"reply": "ok"}})");
    thread_options t;
    t.agent_id = "a";
    t.task_id = "t1";
    manifest m;
    REQUIRE(f.rt->create_thread(t, &m).is_ok());
    first = m.id;
  }
  runtime_fixture f{o, false};
  thread_options t;
  t.agent_id = "a";
  t.task_id = "t1";
  manifest again;
  bool created = true;
  REQUIRE(f.rt->create_thread(t, &again, &created).is_ok());
  CHECK_FALSE(created);
  CHECK(again.id == first);
  REQUIRE(f.rt->delete_thread(first).is_ok());
  manifest gone;
  CHECK(f.rt->find_task_thread("t1", &gone).code() == errc::not_found);
  manifest fresh;
  REQUIRE(f.rt->create_thread(t, &fresh, &created).is_ok());
  CHECK(created);
  CHECK(fresh.id != first);
}

TEST_CASE("task binding: the engine request carries the task id") {
  std::mutex mu;
  std::vector<std::string> seen;
  struct capture_engine final : engine {
    std::mutex* mu;
    std::vector<std::string>* seen;
    std::unique_ptr<call_handle> start(engine_request req, engine_callbacks cb) override {
      {
        std::lock_guard lock{*mu};
        seen->push_back(req.task_id);
      }
      engine_step step;
      step.text = "done";
      cb.on_done(engine_reply{status::ok(), false, step});
      return nullptr;
    }
  };
  runtime_options o = without_effects();
  o.engines["capture"] = [&](std::string_view, timer_service&, std::shared_ptr<engine>* out) {
    auto e = std::make_shared<capture_engine>();
    e->mu = &mu;
    e->seen = &seen;
    *out = e;
    return status::ok();
  };
  runtime_fixture f{o};
  agent_config a;
  a.id = "a";
  a.engine = "capture";
  REQUIRE(f.rt->create_agent(a).is_ok());
  thread_options t;
  t.agent_id = "a";
  t.task_id = "ticket-42";
  manifest m;
  REQUIRE(f.rt->create_thread(t, &m).is_ok());
  f.run(m.id, "go");
  manifest plain = f.thread("a");
  f.run(plain.id, "go");
  std::lock_guard lock{mu};
  REQUIRE(seen.size() == 2);
  CHECK(seen[0] == "ticket-42");
  CHECK(seen[1] == "");
}

TEST_CASE("DM: 50 concurrent first messages make one DM thread holding 50 inputs") {
  runtime_fixture f{without_effects()};
  f.agent("a", R"({"default": {"reply": "ok"}})");
  std::mutex mu;
  std::set<std::string> ids;
  std::atomic<int> failed{0}, created{0};
  race(50, [&](int i) {
    manifest m;
    bool fresh = false;
    if (!f.rt->dm_thread("a", &m, &fresh).is_ok()) {
      ++failed;
      return;
    }
    if (fresh) ++created;
    run_input in;
    in.text = "hello " + std::to_string(i);
    run_result r;
    if (!f.rt->send(m.id, in).wait(&r, 60s).is_ok()) ++failed;
    std::lock_guard lock{mu};
    ids.insert(m.id);
  });
  CHECK(failed == 0);
  CHECK(created == 1);
  REQUIRE(ids.size() == 1);
  manifest dm;
  REQUIRE(f.rt->get_thread(*ids.begin(), &dm).is_ok());
  CHECK(dm.parent == parent_kind::agent);
  CHECK(dm.parent_id == "a");
  REQUIRE(dm.members.size() == 1);
  CHECK(dm.members[0].agent_id == "a");
  CHECK(dm.members[0].trigger == member_trigger::always);
  auto log = f.events(dm.id);
  CHECK(check_runs(log) == 50);
  size_t inputs = 0;
  for (const auto& e : log)
    if (e.type == event_type::message && e.role == message_role::user) ++inputs;
  CHECK(inputs == 50);
  // Reused afterwards, and another agent gets its own.
  manifest again;
  bool fresh = true;
  REQUIRE(f.rt->dm_thread("a", &again, &fresh).is_ok());
  CHECK_FALSE(fresh);
  CHECK(again.id == dm.id);
  f.agent("b", R"({"default": {"reply": "ok"}})");
  manifest other;
  REQUIRE(f.rt->dm_thread("b", &other).is_ok());
  CHECK(other.id != dm.id);
  manifest none;
  CHECK(f.rt->dm_thread("nobody", &none).code() == errc::not_found);
}
