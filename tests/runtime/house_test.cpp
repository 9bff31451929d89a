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

// `n` concurrent calls of open(&m, &fresh), a find-or-create of one thread, each
// followed by then(i, m) (false: a failure). Checks that nothing failed and that
// exactly one call created the thread; returns the one thread all calls found.
template <class Open, class Then>
std::string race_to_one_thread(int n, Open open, Then then) {
  std::mutex mu;
  std::set<std::string> ids;
  std::atomic<int> created{0}, failed{0};
  race(n, [&](int i) {
    manifest m;
    bool fresh = false;
    if (!open(&m, &fresh).is_ok()) {
      ++failed;
      return;
    }
    if (fresh) ++created;
    if (!then(i, m)) ++failed;
    std::lock_guard lock{mu};
    ids.insert(m.id);
  });
  CHECK(failed == 0);
  CHECK(created == 1);
  REQUIRE(ids.size() == 1);
  return *ids.begin();
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
  thread_options o;
  o.agent_id = "a";
  o.task_id = "task-7";
  const std::string id = race_to_one_thread(
      32, [&](manifest* m, bool* fresh) { return f.rt->create_thread(o, m, fresh); },
      [](int, const manifest&) { return true; });
  manifest found;
  REQUIRE(f.rt->find_task_thread("task-7", &found).is_ok());
  CHECK(found.id == id);
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

TEST_CASE("task binding: erasing the thread frees the task, the claim survives a reopen") {
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
  f.engine_agent("a", "capture");
  manifest m = f.task_thread("a", "ticket-42");
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
  const std::string id = race_to_one_thread(
      50, [&](manifest* m, bool* fresh) { return f.rt->dm_thread("a", m, fresh); },
      [&](int i, const manifest& m) {
        run_input in;
        in.text = "hello " + std::to_string(i);
        run_result r;
        return f.rt->send(m.id, in).wait(&r, 60s).is_ok();
      });
  manifest dm;
  REQUIRE(f.rt->get_thread(id, &dm).is_ok());
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

namespace {

std::vector<std::string> assistant_texts(const std::vector<event>& log) {
  std::vector<std::string> out;
  for (const auto& e : log)
    if (e.type == event_type::message && e.role == message_role::assistant) out.push_back(e.text);
  return out;
}

// Waits until the thread has `runs` finished runs (a house's later members run
// after the send that triggered them has its answer).
std::vector<event> wait_runs(runtime_fixture& f, const std::string& thread, size_t runs) {
  std::vector<event> log;
  runtime_fixture::eventually([&] {
    log = f.events(thread);
    return count_signals(log, "thread.stop") >= runs;
  });
  return log;
}

// A house thread of agent alice with `members`, where agents alice and bob
// answer "alice here" and "bob here".
manifest make_house(runtime_fixture& f, std::vector<house_member> members) {
  f.agent("alice", R"({"default": {"reply": "alice here"}})");
  f.agent("bob", R"({"default": {"reply": "bob here"}})");
  thread_options o;
  o.agent_id = "alice";
  o.members = std::move(members);
  manifest house;
  REQUIRE(f.rt->create_thread(o, &house).is_ok());
  return house;
}

}  // namespace

TEST_CASE("house: an always member runs on every input, an on_mention member only when mentioned") {
  runtime_fixture f{without_effects()};
  manifest house = make_house(f, {{"alice", member_trigger::always}, {"bob", member_trigger::on_mention}});
  REQUIRE(house.members.size() == 2);

  SECTION("without the mention: alice alone") {
    CHECK(f.run(house.id, "hello everyone").text == "alice here");
    auto log = wait_runs(f, house.id, 1);
    CHECK(check_runs(log) == 1);
    CHECK(assistant_texts(log) == std::vector<std::string>{"alice here"});
  }
  SECTION("with the mention: alice, then bob, one run each, never interleaved") {
    CHECK(f.run(house.id, "what do you think, @bob?").text == "alice here");
    auto log = wait_runs(f, house.id, 2);
    CHECK(check_runs(log) == 2);
    CHECK(assistant_texts(log) == std::vector<std::string>{"alice here", "bob here"});
    size_t inputs = 0;
    for (const auto& e : log)
      if (e.type == event_type::message && e.role == message_role::user) ++inputs;
    CHECK(inputs == 1);  // the input is in the log once; bob's run answers it too
    size_t bob_starts = 0;
    for (const auto& e : log)
      if (e.type == event_type::signal && e.name == "thread.start" && e.json.find("\"member\":\"bob\"") != std::string::npos)
        ++bob_starts;
    CHECK(bob_starts == 1);
  }
  SECTION("members added and removed, with house signals") {
    manifest m;
    REQUIRE(f.rt->remove_member(house.id, "bob", &m).is_ok());
    CHECK(m.members.size() == 1);
    CHECK(f.rt->remove_member(house.id, "bob").code() == errc::not_found);
    CHECK(f.rt->add_member(house.id, {"nobody", member_trigger::always}).code() == errc::not_found);
    REQUIRE(f.rt->add_member(house.id, {"bob", member_trigger::always}, &m).is_ok());
    CHECK(m.members.size() == 2);
    f.run(house.id, "no mention needed now");
    auto log = wait_runs(f, house.id, 2);
    CHECK(count_signals(log, "house.member_removed") == 1);
    CHECK(count_signals(log, "house.member_added") == 1);
    CHECK(assistant_texts(log) == std::vector<std::string>{"alice here", "bob here"});
  }
}

TEST_CASE("house: a member that cannot run records dispatch.failed, the others still run") {
  runtime_fixture f{without_effects()};
  manifest house = make_house(f, {{"ghost", member_trigger::always}, {"alice", member_trigger::always}, {"bob", member_trigger::always}});
  f.run(house.id, "roll call");
  auto log = wait_runs(f, house.id, 2);
  CHECK(check_runs(log) == 2);
  CHECK(assistant_texts(log) == std::vector<std::string>{"alice here", "bob here"});
  REQUIRE(count_signals(log, "dispatch.failed") == 1);
  for (const auto& e : log)
    if (e.name == "dispatch.failed") CHECK(e.json.find("ghost") != std::string::npos);
}

TEST_CASE("house: an interrupting input drops the interrupted input's later members") {
  runtime_fixture f{without_effects()};
  f.agent("alice", R"({"default": {"reply": "alice here"}, "rules": [{"match": "slow", "stall": true}]})");
  f.agent("bob", R"({"default": {"reply": "bob here"}})");
  thread_options o;
  o.agent_id = "alice";
  o.policy = mid_run_policy::interrupt;
  o.members = {{"alice", member_trigger::always}, {"bob", member_trigger::always}};
  manifest house;
  REQUIRE(f.rt->create_thread(o, &house).is_ok());
  run_input slow;
  slow.text = "slow";
  std::string slow_run;
  REQUIRE(f.rt->submit(house.id, slow, &slow_run).is_ok());
  REQUIRE(runtime_fixture::eventually([&] { return count_signals(f.events(house.id), "thread.start") == 1; }));
  f.run(house.id, "fast");  // cancels alice's stalled run; bob's turn on "slow" goes too
  wait_runs(f, house.id, 3);  // bob on "fast": an input now would interrupt it
  f.run(house.id, "done");  // anything still queued would have run before this
  auto log = wait_runs(f, house.id, 5);
  CHECK(check_runs(log) == 5);  // alice: slow (cancelled), fast, done; bob: fast, done
  CHECK(assistant_texts(log) ==
        std::vector<std::string>{"(stopped by user)", "alice here", "bob here", "alice here", "bob here"});
}

TEST_CASE("house: the later members' turns are durable: a close mid-run loses none of them") {
  temp_dir dir;
  runtime_options o = without_effects();
  o.data_dir = dir.str();
  manifest house;
  {
    runtime_fixture f{o, false};
    f.agent("alice", R"({"default": {"reply": "alice here"}, "rules": [{"match": "slow", "stall": true}]})");
    f.agent("bob", R"({"default": {"reply": "bob here"}})");
    f.agent("carol", R"({"default": {"reply": "carol here"}})");
    thread_options t;
    t.agent_id = "alice";
    t.members = {{"alice", member_trigger::always}, {"bob", member_trigger::always}, {"carol", member_trigger::always}};
    REQUIRE(f.rt->create_thread(t, &house).is_ok());
    run_input slow;
    slow.text = "slow";
    std::string run_id;
    REQUIRE(f.rt->submit(house.id, slow, &run_id).is_ok());
    // Alice's run has started (its first tick is durable), and stalls: bob's and
    // carol's turns exist only as what that tick wrote.
    REQUIRE(runtime_fixture::eventually([&] { return count_signals(f.events(house.id), "thread.start") == 1; }));
    REQUIRE(f.rt->close().is_ok());
  }
  runtime_fixture g{o, false};
  auto log = wait_runs(g, house.id, 3);
  auto texts = assistant_texts(log);
  // Alice's stalled run ended with the close (or was repaired at open); bob and
  // carol each answered once, in member order, and the input is in the log once.
  REQUIRE(texts.size() >= 2);
  CHECK(std::vector<std::string>(texts.end() - 2, texts.end()) == std::vector<std::string>{"bob here", "carol here"});
  size_t inputs = 0;
  for (const auto& e : log)
    if (e.type == event_type::message && e.role == message_role::user) ++inputs;
  CHECK(inputs == 1);
  CHECK(check_runs(log) == 3);
  // Nothing is left behind: another input runs alice (and the others) afresh.
  CHECK(g.run(house.id, "again").text == "alice here");
  log = wait_runs(g, house.id, 6);
  CHECK(check_runs(log) == 6);
}

TEST_CASE("engine override: a thread's engine_config patch changes that thread's answers only") {
  runtime_fixture f{without_effects()};
  f.agent("a", R"({"default": {"reply": "base"}, "rules": [{"match": "ping", "reply": "pong"}]})");
  thread_options o;
  o.agent_id = "a";
  o.engine_config = R"({"default": {"reply": "patched"}})";
  manifest patched;
  REQUIRE(f.rt->create_thread(o, &patched).is_ok());
  manifest plain = f.thread("a");
  CHECK(f.run(patched.id, "hello").text == "patched");
  CHECK(f.run(patched.id, "ping").text == "pong");  // the agent's rules stay: a merge, not a replacement
  CHECK(f.run(plain.id, "hello").text == "base");
  // A null in the patch removes the agent's setting for this thread (RFC 7386).
  o.engine_config = R"({"rules": null})";
  manifest unruled;
  REQUIRE(f.rt->create_thread(o, &unruled).is_ok());
  CHECK(f.run(unruled.id, "ping").text == "base");
  CHECK(f.run(plain.id, "ping").text == "pong");
  o.engine_config = "[1]";
  manifest bad;
  CHECK(f.rt->create_thread(o, &bad).field() == "engine_config");
  // A patch the engine's factory refuses fails that thread's runs, saying why.
  o.engine_config = R"({"rules": 7})";
  manifest broken;
  REQUIRE(f.rt->create_thread(o, &broken).is_ok());
  run_input in;
  in.text = "hello";
  run_result r;
  REQUIRE(f.rt->send(broken.id, in).wait(&r, 60s).is_ok());
  CHECK(r.outcome == run_outcome::failed);
  CHECK(r.error.find("engine_config") != std::string::npos);
}

TEST_CASE("payload groups: read and subscribe keep the groups asked for") {
  runtime_fixture f{without_effects()};
  f.agent("a", R"({"default": {"reply": "done", "thinking": "hmm"}})");
  manifest t = f.thread("a");
  f.run(t.id, "go");
  group_filter chat, signals;
  REQUIRE(parse_group_filter("chat", &chat).is_ok());
  REQUIRE(parse_group_filter("signal", &signals).is_ok());
  std::vector<event> out;
  uint64_t next = 0;
  REQUIRE(f.rt->read(t.id, history_view::complete, 1, 0, chat, &out, &next).is_ok());
  REQUIRE(out.size() == 2);
  for (const auto& e : out) CHECK(event_group(e.type) == payload_group::chat);
  CHECK(next == f.events(t.id).size() + 1);
  // A page reads `limit` events before the filter; next_seq goes past them all.
  REQUIRE(f.rt->read(t.id, history_view::complete, 1, 3, signals, &out, &next).is_ok());
  CHECK(next == 4);
  for (const auto& e : out) CHECK(e.type == event_type::signal);

  std::mutex mu;
  std::vector<event> seen;
  event_sink sink;
  sink.on_event = [&](const event& e) {
    std::lock_guard lock{mu};
    seen.push_back(e);
  };
  uint64_t sub = 0;
  REQUIRE(f.rt->subscribe(t.id, 1, signals, sink, &sub).is_ok());
  f.run(t.id, "again");
  CHECK(runtime_fixture::eventually([&] {
    std::lock_guard lock{mu};
    return count_signals(seen, "thread.stop") == 2;
  }));
  REQUIRE(f.rt->unsubscribe(sub).is_ok());
  std::lock_guard lock{mu};
  for (const auto& e : seen) CHECK(e.type == event_type::signal);
}
