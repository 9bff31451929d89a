// The embedded runtime under its real scheduler: concurrency, passivation,
// subscriptions, fork and delete.
#include <atomic>
#include <catch2/catch.hpp>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "tests/support/runtime_fixture.hpp"
#include "tests/support/runtime_call.hpp"

using namespace skein;
using namespace skein::test;
using namespace std::chrono_literals;

TEST_CASE("1,000 threads x 10 runs from 4 OS threads: every log gapless, runs never interleaved") {
  runtime_options o;
  o.mode = durability::sync;
  runtime_fixture f{o};
  f.agent("a", R"({"default": {"reply": "ok"}})");
  std::vector<std::string> threads;
  for (int i = 0; i < 1000; ++i) threads.push_back(f.thread("a").id);

  std::atomic<int> failures{0};
  std::vector<std::thread> senders;
  for (int w = 0; w < 4; ++w) {
    senders.emplace_back([&, w] {
      std::vector<run_handle> handles;
      for (int run = 0; run < 10; ++run)
        for (size_t i = w; i < threads.size(); i += 4) {
          run_input in;
          in.text = "run " + std::to_string(run);
          handles.push_back(f.rt->send(threads[i], in));
        }
      for (auto& h : handles) {
        run_result r;
        if (!h.wait(&r, 120s).is_ok() || r.outcome != run_outcome::completed) ++failures;
      }
    });
  }
  for (auto& s : senders) s.join();
  CHECK(failures == 0);
  for (const auto& id : threads) {
    auto log = f.events(id);
    REQUIRE(check_runs(log) == 10);
  }
}

TEST_CASE("two concurrent sends to one thread: queue runs both in turn, reject refuses one") {
  auto policy = GENERATE(mid_run_policy::queue, mid_run_policy::reject);
  INFO("policy " << to_string(policy));
  runtime_fixture f;
  f.agent("a", R"({"default": {"reply": "ok", "latency_ms": 1000}})", policy);
  auto t = f.thread("a");
  std::vector<status> results(2);
  std::vector<std::thread> senders;
  for (int i = 0; i < 2; ++i)
    senders.emplace_back([&, i] {
      run_input in;
      in.text = "input " + std::to_string(i);
      run_result r;
      results[i] = f.rt->send(t.id, in).wait(&r, 60s);
    });
  for (auto& s : senders) s.join();
  int ok = 0, conflicts = 0;
  for (const auto& r : results) {
    if (r.is_ok()) ++ok;
    if (r.code() == errc::conflict) ++conflicts;
  }
  auto log = f.events(t.id);
  if (policy == mid_run_policy::queue) {
    CHECK(ok == 2);
    CHECK(check_runs(log) == 2);
  } else {
    CHECK(ok == 1);
    CHECK(conflicts == 1);
    CHECK(check_runs(log) == 1);
  }
}

TEST_CASE("idle threads passivate, a message reactivates one with its state, activation is single-flight") {
  runtime_options o;
  o.mode = durability::flush;
  o.idle_passivate_ms = 300;
  o.thread_queue_max = 128;
  runtime_fixture f{o};
  f.agent("a", R"({"default": {"reply": "ok"}})");
  std::vector<std::string> threads;
  for (int i = 0; i < 10000; ++i) threads.push_back(f.thread("a").id);
  auto before = f.stats().activations;
  for (const auto& id : threads) REQUIRE(f.rt->cancel(id).is_ok());  // touch: activates
  CHECK(f.stats().activations - before == 10000);
  CHECK(runtime_fixture::eventually([&] { return f.stats().active_threads == 0; }));
  CHECK(f.stats().passivations >= 10000);

  // State survives passivation: the log goes on where it stopped.
  auto first = f.run(threads[0], "one");
  CHECK(runtime_fixture::eventually([&] { return f.stats().active_threads == 0; }));
  auto second = f.run(threads[0], "two");
  CHECK(second.first_seq == first.last_seq + 1);
  CHECK(check_runs(f.events(threads[0])) == 2);

  // 100 concurrent first messages to one cold thread: one activation.
  CHECK(runtime_fixture::eventually([&] { return f.stats().active_threads == 0; }));
  auto cold = threads[1];
  auto activations = f.stats().activations;
  std::vector<run_handle> handles;
  std::mutex mu;
  std::vector<std::thread> senders;
  for (int w = 0; w < 4; ++w)
    senders.emplace_back([&] {
      for (int i = 0; i < 25; ++i) {
        run_input in;
        in.text = "hello";
        auto h = f.rt->send(cold, in);
        std::lock_guard<std::mutex> lock{mu};
        handles.push_back(h);
      }
    });
  for (auto& s : senders) s.join();
  for (auto& h : handles) {
    run_result r;
    REQUIRE(h.wait(&r, 60s).is_ok());
  }
  CHECK(f.stats().activations - activations == 1);
  CHECK(check_runs(f.events(cold)) == 100);
}

TEST_CASE("past active_threads_max the least recently used idle threads passivate") {
  runtime_options o;
  o.mode = durability::flush;
  o.active_threads_max = 50;
  runtime_fixture f{o};
  f.agent("a", "{}");
  for (int i = 0; i < 200; ++i) {
    auto t = f.thread("a");
    REQUIRE(f.rt->cancel(t.id).is_ok());
  }
  CHECK(runtime_fixture::eventually([&] { return f.stats().active_threads <= 50; }));
}

TEST_CASE("subscribe from seq k: k.. then live events, in order, no duplicates, all durable") {
  runtime_fixture f;
  f.agent("a", R"({"default": {"reply": "ok", "latency_ms": 50, "deltas": ["o", "k"]}})");
  auto t = f.thread("a");
  auto first = f.run(t.id, "one");
  REQUIRE(first.last_seq >= 5);
  const uint64_t k = 3;

  std::mutex mu;
  std::condition_variable cv;
  std::vector<event> seen;
  std::vector<std::string> deltas;
  event_sink sink;
  sink.on_event = [&](const event& e) {
    std::lock_guard<std::mutex> lock{mu};
    seen.push_back(e);
    cv.notify_all();
  };
  sink.on_delta = [&](const std::string&, const std::string& d) {
    std::lock_guard<std::mutex> lock{mu};
    deltas.push_back(d);
  };
  uint64_t sub = 0;
  REQUIRE(f.rt->subscribe(t.id, k, sink, &sub).is_ok());
  auto second = f.run(t.id, "two");
  {
    std::unique_lock<std::mutex> lock{mu};
    REQUIRE(cv.wait_for(lock, 30s, [&] { return !seen.empty() && seen.back().seq == second.last_seq; }));
  }
  REQUIRE(f.rt->unsubscribe(sub).is_ok());
  auto log = f.events(t.id);
  std::lock_guard<std::mutex> lock{mu};
  REQUIRE(seen.size() == log.size() - (k - 1));
  for (size_t i = 0; i < seen.size(); ++i) CHECK(seen[i] == log[k - 1 + i]);
  CHECK(deltas == std::vector<std::string>{"o", "k"});
  CHECK(f.rt->unsubscribe(sub).code() == errc::not_found);
}

TEST_CASE("fork copies 1..k into a new thread and both go on independently") {
  runtime_fixture f;
  f.agent("a", R"({"default": {"reply": "ok"}})");
  auto t = f.thread("a");
  auto first = f.run(t.id, "one");
  f.run(t.id, "two");
  manifest copy;
  REQUIRE(f.rt->fork(t.id, first.last_seq, &copy).is_ok());
  CHECK(copy.id != t.id);
  CHECK(copy.agent_id == "a");
  CHECK(copy.last_seq == first.last_seq);
  auto original = f.events(t.id);
  auto forked = f.events(copy.id);
  REQUIRE(forked.size() == first.last_seq);
  for (size_t i = 0; i < forked.size(); ++i) CHECK(forked[i] == original[i]);

  auto on_fork = f.run(copy.id, "three");
  CHECK(on_fork.first_seq == first.last_seq + 1);
  CHECK(f.events(t.id).size() == original.size());
  check_runs(f.events(copy.id));

  manifest bad;
  CHECK(f.rt->fork(t.id, first.last_seq - 1, &bad).code() == errc::invalid_input);
  CHECK(f.rt->fork(t.id, 0, &bad).code() == errc::invalid_input);
  CHECK(f.rt->fork("nope", 1, &bad).code() == errc::not_found);
}

TEST_CASE("threads are created through their agent, listed, read and deleted") {
  runtime_fixture f;
  f.agent("a", R"({"default": {"reply": "ok"}})");
  manifest m;
  thread_options o;
  o.agent_id = "ghost";
  CHECK(f.rt->create_thread(o, &m).code() == errc::not_found);
  o.agent_id = "a";
  o.tags = {"x"};
  o.title = "hello";
  REQUIRE(f.rt->create_thread(o, &m).is_ok());
  CHECK(m.title == "hello");
  f.run(m.id, "hi");

  thread_query q;
  q.index = thread_query::by::tag;
  q.value = "x";
  thread_page page;
  REQUIRE(f.rt->list_threads(q, &page).is_ok());
  REQUIRE(page.threads.size() == 1);

  std::vector<event> working;
  REQUIRE(f.rt->read(m.id, history_view::working, 1, 0, &working).is_ok());
  CHECK(working.size() == 3);  // prompt, user, assistant

  REQUIRE(f.rt->delete_thread(m.id).is_ok());
  CHECK(f.rt->get_thread(m.id, &m).code() == errc::not_found);
  CHECK(f.rt->delete_thread(m.id).is_ok());
  run_input in;
  in.text = "anyone?";
  run_result r;
  CHECK(f.rt->send(m.id, in).wait(&r, 10s).code() == errc::not_found);

  agent_config a;
  a.id = "a";
  a.engine_config = R"({"other": true})";
  CHECK(f.rt->create_agent(a).code() == errc::conflict);
  std::vector<agent_config> agents;
  REQUIRE(f.rt->list_agents(&agents).is_ok());
  CHECK(agents.size() == 1);
}

TEST_CASE("bad input is refused with an error naming the field") {
  runtime_fixture f;
  f.agent("a", "{}");
  auto t = f.thread("a");
  run_input in;
  in.text = "\xff";
  run_result r;
  auto s = f.rt->send(t.id, in).wait(&r, 10s);
  CHECK(s.code() == errc::invalid_input);
  CHECK_THAT(s.message(), Catch::Contains("text"));
  in.text = "ok";
  CHECK(f.rt->send("../etc", in).wait(&r, 10s).code() == errc::invalid_input);
  agent_config a;
  a.id = "b";
  a.engine = "nope";
  CHECK_THAT(f.rt->create_agent(a).message(), Catch::Contains("agent.engine"));
  CHECK(f.events(t.id).empty());
}

TEST_CASE("close ends a running run as cancelled and a reopened runtime finds nothing to repair") {
  temp_dir dir;
  std::string id;
  {
    runtime_options o;
    o.data_dir = dir.str();
    std::unique_ptr<runtime> rt;
    REQUIRE(runtime::open(o, &rt).is_ok());
    scripted_agent_on(*rt, "a", R"({"latency_ms": 60000})");
    manifest m;
    thread_options to;
    to.agent_id = "a";
    REQUIRE(rt->create_thread(to, &m).is_ok());
    id = m.id;
    run_input in;
    in.text = "long";
    auto h = rt->send(id, in);
    CHECK_FALSE(h.ready());
    // The run is in progress once its start is durable.
    REQUIRE(runtime_fixture::eventually([&] {
      manifest now;
      return rt->get_thread(id, &now).is_ok() && now.status == thread_status::running;
    }));
    REQUIRE(rt->close().is_ok());
    run_result r;
    REQUIRE(h.wait(&r, 10s).is_ok());
    CHECK(r.outcome == run_outcome::cancelled);
  }
  runtime_options o;
  o.data_dir = dir.str();
  std::unique_ptr<runtime> rt;
  REQUIRE(runtime::open(o, &rt).is_ok());
  CHECK(rt->repaired_at_open().empty());
  std::vector<event> log;
  REQUIRE(rt->read(id, history_view::complete, 1, 0, &log).is_ok());
  check_runs(log);
}

TEST_CASE("a running thread records heartbeats, a stale one is reconciled as orphaned") {
  std::atomic<int64_t> now{1'800'000'000'000};
  runtime_options o;
  o.clock = [&] { return now.load(); };
  o.heartbeat_interval_ms = 20;
  runtime_fixture f{o};
  f.agent("a", R"({"default": {"reply": "late", "latency_ms": 3600000}})");
  auto t = f.thread("a");
  run_input in;
  in.text = "long job";
  auto handle = f.rt->send(t.id, in);
  manifest m;
  REQUIRE(runtime_fixture::eventually([&] {
    return f.rt->get_thread(t.id, &m).is_ok() && m.status == thread_status::running;
  }));
  CHECK(m.heartbeat_at_ms == now.load());
  // The heartbeat follows the clock while the run goes on.
  now += 1000;
  REQUIRE(runtime_fixture::eventually([&] {
    return f.rt->get_thread(t.id, &m).is_ok() && m.heartbeat_at_ms == now.load();
  }));
  diagnosis d;
  REQUIRE(f.rt->diagnose(t.id, &d).is_ok());
  CHECK(d.stage == "running");

  bool closed = true;
  REQUIRE(f.rt->reconcile(t.id, &closed).is_ok());
  CHECK_FALSE(closed);  // fresh: left alone

  // A heartbeat that stops (here: the clock jumps past the threshold) is stale.
  // The 20 ms heartbeat timer may land between the jump and the reconcile and
  // record a fresh one (a loaded machine, sanitizers): then jump again, bounded.
  bool stalled = false;
  for (int attempt = 0; attempt < 50 && !closed; ++attempt) {
    now += 91'000;
    REQUIRE(f.rt->diagnose(t.id, &d).is_ok());
    stalled = stalled || d.stage == "stalled";
    REQUIRE(f.rt->reconcile(t.id, &closed).is_ok());
  }
  CHECK(stalled);
  CHECK(closed);
  run_result r;
  REQUIRE(handle.wait(&r, 10s).is_ok());
  CHECK(r.outcome == run_outcome::failed);
  CHECK_THAT(r.error, Catch::Contains("orphaned"));
  auto log = f.events(t.id);
  REQUIRE(log.size() >= 2);
  CHECK(log[log.size() - 2].name == "thread.orphaned");
  CHECK(log.back().name == "thread.stop");
  CHECK(check_runs(log) == 1);
  REQUIRE(f.rt->get_thread(t.id, &m).is_ok());
  CHECK(m.status == thread_status::open);
  REQUIRE(f.rt->diagnose(t.id, &d).is_ok());
  CHECK(d.stage == "failed");
  std::vector<std::string> pruned;
  REQUIRE(f.rt->prune(&pruned).is_ok());
  CHECK(pruned.empty());
}

TEST_CASE("import writes a whole thread under its agent, an existing id is a conflict") {
  runtime_fixture f;
  f.agent("a", R"({"default": {"reply": "ok"}})");
  manifest m;
  m.id = "imported-1";
  m.agent_id = "a";
  m.title = "from elsewhere";
  m.status = thread_status::running;
  std::vector<event> events;
  for (int i = 1; i <= 3; ++i) {
    event e = make_message(i % 2 ? message_role::user : message_role::assistant, "line " + std::to_string(i));
    e.seq = i;
    events.push_back(e);
  }
  manifest out;
  REQUIRE(f.rt->import_thread(m, events, &out).is_ok());
  CHECK(out.last_seq == 3);
  CHECK(out.status == thread_status::failed);  // nothing drives an imported run
  CHECK(f.events("imported-1").size() == 3);
  CHECK(f.rt->import_thread(m, events, &out).code() == errc::conflict);
  m.id = "imported-2";
  m.agent_id = "ghost";
  CHECK(f.rt->import_thread(m, events, &out).code() == errc::not_found);
  m.agent_id = "a";
  events[1].seq = 5;
  CHECK(f.rt->import_thread(m, events, &out).code() == errc::conflict);
  auto r = f.run("imported-1", "go on");
  CHECK(r.first_seq == 4);
}

TEST_CASE("submit returns once the input is taken, refusals come back at once") {
  runtime_fixture f;
  f.agent("a", R"({"default": {"reply": "ok", "latency_ms": 60000}})", mid_run_policy::reject);
  auto t = f.thread("a");
  run_input in;
  in.text = "first";
  in.idempotency_key = "k1";
  std::string run_id, again;
  REQUIRE(f.rt->submit(t.id, in, &run_id).is_ok());
  CHECK_FALSE(run_id.empty());
  REQUIRE(f.rt->submit(t.id, in, &again).is_ok());  // same key: the same run
  CHECK(again == run_id);
  in.idempotency_key.clear();
  in.text = "second";
  CHECK(f.rt->submit(t.id, in, &again).code() == errc::conflict);
  CHECK(f.rt->submit("missing", in, &again).code() == errc::not_found);
  bool cancelled = false;
  REQUIRE(f.rt->cancel(t.id, &cancelled).is_ok());
  CHECK(cancelled);
}

TEST_CASE("a subscription from a seq beyond the log starts exactly there") {
  runtime_fixture f;
  f.agent("a", R"({"default": {"reply": "ok"}})");
  auto t = f.thread("a");
  auto first = f.run(t.id, "one");
  const uint64_t from = first.last_seq + 3;  // inside the next run
  std::mutex mu;
  std::condition_variable cv;
  std::vector<uint64_t> seen;
  event_sink sink;
  sink.on_event = [&](const event& e) {
    std::lock_guard<std::mutex> lock{mu};
    seen.push_back(e.seq);
    cv.notify_all();
  };
  uint64_t sub = 0;
  REQUIRE(f.rt->subscribe(t.id, from, sink, &sub).is_ok());
  auto second = f.run(t.id, "two");
  std::unique_lock<std::mutex> lock{mu};
  REQUIRE(cv.wait_for(lock, 30s, [&] { return !seen.empty() && seen.back() == second.last_seq; }));
  REQUIRE(seen.front() == from);
  for (size_t i = 0; i < seen.size(); ++i) CHECK(seen[i] == from + i);
}

TEST_CASE("a runtime opened and used on one thread closes from another without waiting for the first") {
  // CAF 0.17 keeps a reference to the system's logger in each thread that made a
  // scoped_actor or the system; ~actor_system waits for all of them. The opening
  // thread here stays alive, blocked on the close, so a reference it kept would hang.
  runtime_fixture f;
  f.agent("a", R"({"default": {"reply": "ok"}})");
  auto t = f.thread("a");
  f.run(t.id, "hello");
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  status closed;
  std::thread closer{[&] {
    status s = f.rt->close();
    std::lock_guard<std::mutex> lock{mu};
    closed = s;
    done = true;
    cv.notify_all();
  }};
  std::unique_lock<std::mutex> lock{mu};
  if (!cv.wait_for(lock, std::chrono::seconds(60), [&] { return done; })) {
    std::fprintf(stderr, "close() on another thread did not return within 60 s\n");
    std::_Exit(1);  // the close is stuck in ~actor_system; nothing else can end
  }
  lock.unlock();
  closer.join();
  CHECK(closed.is_ok());
}

TEST_CASE("concurrent creations of one agent: the same config answers once created, another is a conflict") {
  runtime_fixture f;
  for (int round = 0; round < 20; ++round) {
    const std::string id = "a" + std::to_string(round);
    constexpr int n = 6;
    status results[n];
    agent_config created[n];
    std::vector<std::thread> callers;
    for (int i = 0; i < n; ++i)
      callers.emplace_back([&, i] {
        agent_config a;
        a.id = id;
        a.engine = "scripted";
        // The last caller asks for another configuration.
        a.engine_config = i == n - 1 ? R"({"default":{"reply":"other"}})" : R"({"default":{"reply":"ok"}})";
        results[i] = f.rt->create_agent(a, &created[i]);
      });
    for (auto& t : callers) t.join();
    agent_config stored;
    REQUIRE(f.rt->get_agent(id, &stored).is_ok());
    const bool other_won = stored.engine_config.find("other") != std::string::npos;
    for (int i = 0; i < n; ++i) {
      INFO("round " << round << " caller " << i << ": " << results[i].to_string());
      const bool same = (i == n - 1) == other_won;
      if (same) {
        CHECK(results[i].is_ok());
        CHECK(created[i] == stored);
      } else {
        CHECK(results[i].code() == errc::conflict);
      }
    }
  }
}
