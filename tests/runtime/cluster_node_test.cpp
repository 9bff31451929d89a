// Three runtimes as the nodes of one cluster, in one process (each its own CAF
// actor system and node id, linked over loopback by the middleman): every call
// made on any node reaches the thread's owner; a node that is gone answers
// `unavailable` naming itself, within the timeout; back, it has everything.
#include <catch2/catch.hpp>

#include <algorithm>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/message.hpp>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <set>
#include <unistd.h>

#include "runtime/cluster/cluster_link.hpp"
#include "runtime/runtime.hpp"
#include "tests/runtime/cluster_fixture.hpp"
#include "tests/support/free_port.hpp"
#include "tests/support/temp_dir.hpp"

using namespace skein;
using namespace std::chrono_literals;
using skein::test::cluster_fixture;
using skein::test::free_port;

namespace {


std::vector<uint64_t> seqs(const std::vector<event>& events) {
  std::vector<uint64_t> out;
  for (const auto& e : events) out.push_back(e.seq);
  return out;
}

}  // namespace

TEST_CASE("cluster: any node serves any thread through its owner") {
  cluster_fixture f;
  f.agent(1);  // not the coordinator: written through n1 to every node
  for (size_t i = 0; i < f.n; ++i) {
    agent_config a;
    status s = f.nodes[i]->get_agent("helper", &a);
    INFO("node " << i << ": " << s.to_string());
    CHECK(s.is_ok());
  }

  // Threads created through every node spread over every node.
  std::vector<manifest> threads;
  std::set<size_t> owners;
  for (size_t k = 0; k < 24; ++k) {
    manifest m = f.thread(k % f.n);
    owners.insert(f.owner(m.id));
    threads.push_back(m);
  }
  CHECK(owners.size() == f.n);

  // A run sent through one node, read through each: the same gapless log.
  for (size_t k = 0; k < threads.size(); ++k) {
    const std::string& id = threads[k].id;
    run_result r = f.run((k + 1) % f.n, id, "question " + std::to_string(k));
    CHECK(r.text == "done");
    std::string run_id;
    run_input in;
    in.text = "again";
    REQUIRE(f.nodes[(k + 2) % f.n]->submit(id, in, &run_id).is_ok());
    CHECK(!run_id.empty());
  }
  for (const auto& t : threads) {
    std::vector<event> first;
    // The submitted run finishes on the owner; wait on it through a node.
    for (auto deadline = std::chrono::steady_clock::now() + 30s; std::chrono::steady_clock::now() < deadline;) {
      manifest m;
      REQUIRE(f.nodes[0]->get_thread(t.id, &m).is_ok());
      if (m.status != thread_status::running) {
        std::vector<event> ev;
        REQUIRE(f.nodes[0]->read(t.id, history_view::complete, 1, 0, &ev).is_ok());
        if (!ev.empty() && ev.back().type == event_type::signal && ev.back().name == "thread.stop" &&
            std::count_if(ev.begin(), ev.end(), [](const event& e) { return e.name == "thread.stop"; }) == 2)
          break;
      }
      std::this_thread::sleep_for(10ms);
    }
    for (size_t i = 0; i < f.n; ++i) {
      std::vector<event> ev;
      REQUIRE(f.nodes[i]->read(t.id, history_view::complete, 1, 0, &ev).is_ok());
      if (i == 0) first = ev;
      CHECK(seqs(ev) == seqs(first));
      for (size_t j = 0; j < ev.size(); ++j) CHECK(ev[j].seq == j + 1);  // gapless from 1
      std::vector<raw_event> raw;
      uint64_t next = 0;
      REQUIRE(f.nodes[i]->read_raw(t.id, 1, 0, skein::group_filter{}, &raw, &next).is_ok());
      CHECK(raw.size() == ev.size());
      CHECK(next == ev.size() + 1);
      manifest m;
      REQUIRE(f.nodes[i]->get_thread(t.id, &m).is_ok());
      CHECK(m.last_seq == ev.size());
    }
    CHECK(std::count_if(first.begin(), first.end(), [](const event& e) { return e.name == "thread.stop"; }) == 2);
  }

  // Listing gathers from every node and pages over all of them, in id order.
  for (size_t via = 0; via < f.n; ++via) {
    std::vector<std::string> seen;
    thread_query q;
    q.index = thread_query::by::agent;
    q.value = "helper";
    q.limit = 5;
    for (int pages = 0; pages < 20; ++pages) {
      thread_page page;
      REQUIRE(f.nodes[via]->list_threads(q, &page).is_ok());
      for (const auto& m : page.threads) seen.push_back(m.id);
      if (page.next_cursor.empty()) break;
      q.cursor = page.next_cursor;
    }
    std::vector<std::string> want;
    for (const auto& t : threads) want.push_back(t.id);
    std::sort(want.begin(), want.end());
    CHECK(seen == want);
    // Newest first, paged the same way.
    q = {};
    q.index = thread_query::by::updated;
    q.limit = 7;
    std::vector<std::string> by_time;
    for (int pages = 0; pages < 20; ++pages) {
      thread_page page;
      REQUIRE(f.nodes[via]->list_threads(q, &page).is_ok());
      for (const auto& m : page.threads) by_time.push_back(m.id);
      if (page.next_cursor.empty()) break;
      q.cursor = page.next_cursor;
    }
    std::sort(by_time.begin(), by_time.end());
    CHECK(by_time == want);
  }

  // A task's thread is one thread, whichever node is asked.
  thread_options task;
  task.agent_id = "helper";
  task.task_id = "task-7";
  manifest t1, t2, found;
  bool created1 = false, created2 = true;
  REQUIRE(f.nodes[0]->create_thread(task, &t1, &created1).is_ok());
  REQUIRE(f.nodes[2]->create_thread(task, &t2, &created2).is_ok());
  CHECK(created1);
  CHECK(!created2);
  CHECK(t1.id == t2.id);
  REQUIRE(f.nodes[1]->find_task_thread("task-7", &found).is_ok());
  CHECK(found.id == t1.id);

  // Fork, title, diagnose and delete of another node's thread.
  const std::string victim = threads[0].id;
  size_t other = (f.owner(victim) + 1) % f.n;
  manifest forked, titled;
  REQUIRE(f.nodes[other]->fork(victim, 2, &forked).is_ok());
  CHECK(forked.last_seq == 2);
  REQUIRE(f.nodes[other]->set_title(victim, "renamed", &titled).is_ok());
  CHECK(titled.title == "renamed");
  diagnosis d;
  REQUIRE(f.nodes[other]->diagnose(victim, &d).is_ok());
  CHECK(d.stage == "idle");
  CHECK(d.last_seq > 0);
  REQUIRE(f.nodes[other]->delete_thread(victim).is_ok());
  manifest gone;
  CHECK(f.nodes[(other + 1) % f.n]->get_thread(victim, &gone).code() == errc::not_found);

  // Compaction and house members of a thread through a node that does not own
  // it: done on the owner, the same answer as there.
  {
    const std::string& id = threads[1].id;
    size_t via = (f.owner(id) + 1) % f.n;
    f.run(via, id, std::string(4000, 'x'));  // something worth summarizing before the kept last turn
    f.run(via, id, "last");
    compact_options co;
    co.keep_turns = 1;
    compact_result cr;
    status s = f.nodes[via]->compact(id, co, &cr);
    INFO(s.to_string() << " " << cr.reason);
    REQUIRE(s.is_ok());
    CHECK(cr.compacted);
    CHECK(cr.seq > 0);
    CHECK(cr.events_after < cr.events_before);
    manifest m;
    REQUIRE(f.nodes[f.owner(id)]->get_thread(id, &m).is_ok());
    CHECK(m.compaction_seq == cr.seq);
    std::vector<event> ev;
    REQUIRE(f.nodes[f.owner(id)]->read(id, history_view::complete, cr.seq, 1, &ev).is_ok());
    REQUIRE(ev.size() == 1);
    CHECK(ev[0].type == event_type::compaction);
    // Bad options are refused before anything crosses, naming the field.
    compact_options bad;
    bad.keep_turns = compact_keep_turns_max + 1;
    CHECK(f.nodes[via]->compact(id, bad, &cr).field() == "keep_turns");

    house_member hm{"helper", member_trigger::on_mention};
    manifest added, removed;
    REQUIRE(f.nodes[via]->add_member(id, hm, &added).is_ok());
    REQUIRE(f.nodes[f.owner(id)]->get_thread(id, &m).is_ok());
    CHECK(std::find(m.members.begin(), m.members.end(), hm) != m.members.end());
    CHECK(added.last_seq == m.last_seq);
    house_member stranger{"nobody", member_trigger::always};
    CHECK(f.nodes[via]->add_member(id, stranger, &added).code() == errc::not_found);
    REQUIRE(f.nodes[(via + 1) % f.n]->remove_member(id, "helper", &removed).is_ok());
    REQUIRE(f.nodes[f.owner(id)]->get_thread(id, &m).is_ok());
    CHECK(std::find(m.members.begin(), m.members.end(), hm) == m.members.end());
    CHECK(f.nodes[via]->remove_member(id, "helper", &removed).code() == errc::not_found);
  }

  std::vector<cluster_member_state> ms;
  REQUIRE(f.nodes[2]->cluster_members(&ms).is_ok());
  REQUIRE(ms.size() == 3);
  uint64_t stored = 0;
  for (const auto& m : ms) {
    CHECK((m.self ? m.state == "self" : m.state == "up"));
    stored += m.threads;
  }
  CHECK(stored == threads.size() - 1 + 1 + 1);  // - deleted + task thread + fork
}

TEST_CASE("cluster: a subscription through a node that does not own the thread") {
  cluster_fixture f;
  f.agent(0);
  // A thread owned by n3, watched through n1, written through n2.
  manifest m = f.thread(2);
  REQUIRE(f.owner(m.id) == 2);  // a plain creation is the creating node's
  std::mutex mu;
  std::condition_variable cv;
  std::vector<uint64_t> got;
  std::string ended;
  event_sink sink;
  sink.on_event = [&](const event& e) {
    std::lock_guard lock{mu};
    got.push_back(e.seq);
    cv.notify_all();
  };
  sink.on_end = [&](const std::string& why) {
    std::lock_guard lock{mu};
    ended = why;
    cv.notify_all();
  };
  uint64_t sub = 0;
  REQUIRE(f.nodes[0]->subscribe(m.id, 1, sink, &sub).is_ok());
  run_input in;
  in.text = "hello";
  run_result r;
  REQUIRE(f.nodes[1]->send(m.id, in).wait(&r, 30s).is_ok());
  {
    std::unique_lock lock{mu};
    CHECK(cv.wait_for(lock, 30s, [&] { return got.size() >= r.last_seq; }));
    std::vector<uint64_t> want;
    for (uint64_t s = 1; s <= r.last_seq; ++s) want.push_back(s);
    CHECK(got == want);
  }
  // Resume from a later seq (what Last-Event-ID does): only what follows.
  std::vector<uint64_t> resumed;
  event_sink later;
  later.on_event = [&](const event& e) {
    std::lock_guard lock{mu};
    resumed.push_back(e.seq);
    cv.notify_all();
  };
  uint64_t sub2 = 0;
  REQUIRE(f.nodes[1]->subscribe(m.id, r.last_seq, later, &sub2).is_ok());
  {
    std::unique_lock lock{mu};
    CHECK(cv.wait_for(lock, 30s, [&] { return !resumed.empty(); }));
    CHECK(resumed.front() == r.last_seq);
  }
  // The owner goes: the subscription through n1 ends, naming why.
  f.nodes[2]->close().ignore();
  f.nodes[2].reset();
  {
    std::unique_lock lock{mu};
    CHECK(cv.wait_for(lock, 30s, [&] { return !ended.empty(); }));
    CHECK((ended == "unavailable" || ended == "closed"));
  }
  REQUIRE(f.nodes[0]->unsubscribe(sub).is_ok());
  REQUIRE(f.nodes[1]->unsubscribe(sub2).is_ok());  // before mu and resumed go
}

// The host frees what its callbacks use once unsubscribe() returns (a test's
// locals at the end of a block): a callback must not be under way then, nor
// come later. Once it was: the exit sent to the sink actor was all, and a
// callback still running wrote into freed memory (heap corruption in the TLS
// test under load). Through the owner (a local sink) and through another node
// (the owner's events relayed to a sink here).
TEST_CASE("cluster: once unsubscribe returns no callback of its sink runs (through the owner and through another node)") {
  cluster_fixture f{2};
  f.agent(0);
  manifest m = f.thread(1);
  run_result first = f.run(0, m.id, "hello");
  REQUIRE(first.last_seq >= 2);  // a backlog: the sink is called more than once
  const size_t owner = f.owner(m.id);
  for (size_t via : {owner, 1 - owner}) {
    INFO("through " << f.members[via].id << (via == owner ? " (the owner)" : " (not the owner)"));
    // Shared, not borrowed: without the gate the sink outlives this iteration.
    struct watch {
      std::promise<void> entered;
      std::promise<void> release;
      std::atomic<bool> unsubscribed{false};
      std::atomic<int> calls{0};
      std::atomic<int> calls_after{0};  // begun once unsubscribe() had returned
      std::atomic<bool> returned_during{false};
    };
    auto w = std::make_shared<watch>();
    std::shared_future<void> released = w->release.get_future().share();
    event_sink sink;
    sink.on_event_json = [w, released](uint64_t, event_type, const std::string&) {
      if (w->unsubscribed) ++w->calls_after;
      if (++w->calls == 1) {  // the first holds the sink until released
        w->entered.set_value();
        released.wait();
        if (w->unsubscribed) w->returned_during = true;
      }
    };
    uint64_t sub = 0;
    REQUIRE(f.nodes[via]->subscribe(m.id, 1, sink, &sub).is_ok());
    REQUIRE(w->entered.get_future().wait_for(10s) == std::future_status::ready);
    auto done = std::async(std::launch::async, [&] {
      status s = f.nodes[via]->unsubscribe(sub);
      w->unsubscribed = true;
      return s;
    });
    // Time for an unsubscribe that does not wait to return (it did, at once);
    // one that waits does so until the callback is released, however long.
    CHECK(done.wait_for(200ms) == std::future_status::timeout);
    w->release.set_value();
    REQUIRE(done.get().is_ok());
    CHECK_FALSE(w->returned_during);
    f.run(0, m.id, "more");  // events a sink still called would get
    CHECK(w->calls_after == 0);
  }

  // From inside a callback (the sink actor's own thread): it returns at once,
  // and that callback is the last.
  auto id = std::make_shared<std::promise<uint64_t>>();
  auto in_callback = std::make_shared<std::promise<bool>>();
  auto calls = std::make_shared<std::atomic<int>>(0);
  std::shared_future<uint64_t> sub_id = id->get_future().share();
  runtime* node = f.nodes[1 - owner].get();
  event_sink sink;
  sink.on_event_json = [=](uint64_t, event_type, const std::string&) {
    if (++*calls == 1) in_callback->set_value(node->unsubscribe(sub_id.get()).is_ok());
  };
  uint64_t sub = 0;
  REQUIRE(node->subscribe(m.id, 1, sink, &sub).is_ok());
  id->set_value(sub);
  auto unsubscribed = in_callback->get_future();
  REQUIRE(unsubscribed.wait_for(10s) == std::future_status::ready);
  CHECK(unsubscribed.get());
  f.run(0, m.id, "after");
  CHECK(*calls == 1);
}

TEST_CASE("cluster: a node that is gone answers unavailable at once and comes back whole") {
  cluster_fixture f;
  f.agent(0);
  std::vector<manifest> threads;
  for (size_t k = 0; k < 18; ++k) {
    manifest m = f.thread(k % f.n);
    run_input in;
    in.text = "before";
    run_result r;
    REQUIRE(f.nodes[0]->send(m.id, in).wait(&r, 30s).is_ok());
    threads.push_back(m);
  }
  // n2 goes away.
  f.nodes[1]->close().ignore();
  f.nodes[1].reset();
  size_t served = 0, refused = 0;
  for (const auto& t : threads) {
    size_t owner = f.owner(t.id);
    manifest m;
    auto start = std::chrono::steady_clock::now();
    status s = f.nodes[owner == 0 ? 2 : 0]->get_thread(t.id, &m);
    auto took = std::chrono::steady_clock::now() - start;
    if (owner == 1) {
      INFO(s.to_string());
      CHECK(s.code() == errc::unavailable);
      CHECK(s.message().find("n2") != std::string::npos);
      CHECK(took < 2500ms);  // the request timeout (2 s), never a hang
      run_input in;
      in.text = "while down";
      run_result r;
      CHECK(f.nodes[0]->send(t.id, in).wait(&r, 10s).code() == errc::unavailable);
      ++refused;
    } else {
      INFO(s.to_string());
      CHECK(s.is_ok());
      ++served;
    }
  }
  CHECK(refused > 0);
  CHECK(served > 0);
  // A listing cannot be complete without n2: refused, not partial.
  thread_query q;
  q.index = thread_query::by::agent;
  q.value = "helper";
  thread_page page;
  CHECK(f.nodes[0]->list_threads(q, &page).code() == errc::unavailable);

  // n2 is back on the same port and data: every acknowledged event is there.
  f.open(1);
  for (const auto& t : threads) {
    std::vector<event> ev;
    status s;
    // The others reconnect after their backoff (at most 200 ms here).
    for (int tries = 0; tries < 100; ++tries) {
      s = f.nodes[0]->read(t.id, history_view::complete, 1, 0, &ev);
      if (s.code() != errc::unavailable) break;
      std::this_thread::sleep_for(20ms);
    }
    INFO(t.id << ": " << s.to_string());
    REQUIRE(s.is_ok());
    REQUIRE(!ev.empty());
    CHECK(ev.back().name == "thread.stop");
    for (size_t j = 0; j < ev.size(); ++j) CHECK(ev[j].seq == j + 1);
  }
  REQUIRE(f.nodes[2]->list_threads(q, &page).is_ok());
}

TEST_CASE("cluster: options are checked before anything opens") {
  test::temp_dir dir;
  runtime_options o;
  o.data_dir = dir.str();
  o.cluster.node_id = "n9";
  o.cluster.members = {{"n1", "127.0.0.1", 1}};
  std::unique_ptr<runtime> rt;
  status s = runtime::open(o, &rt);
  CHECK(s.code() == errc::invalid_input);
  CHECK(s.field() == "node_id");
  o.cluster.members = {{"n9", "10.0.0.1", 7000}};
  s = runtime::open(o, &rt);
  CHECK(s.code() == errc::invalid_input);
  CHECK(s.message().find("loopback") != std::string::npos);
  // A port another member holds: the open fails naming it, and nothing is left running.
  uint16_t port = free_port();
  o.cluster.members = {{"n9", "127.0.0.1", port}};
  std::unique_ptr<runtime> first;
  REQUIRE(runtime::open(o, &first).is_ok());
  test::temp_dir dir2;
  o.data_dir = dir2.str();
  s = runtime::open(o, &rt);
  CHECK(s.code() == errc::io_error);
  CHECK(s.message().find(std::to_string(port)) != std::string::npos);
}

// Every message form of the edge protocol (runtime/cluster/cluster_link.hpp) crosses
// as bytes and back unchanged, with the types registered as a node registers them.

namespace {

struct edge_wire {
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  edge_wire() {
    register_wire_types(cfg);
    sys = std::make_unique<caf::actor_system>(cfg);
  }
  caf::message round_trip(const caf::message& m) {
    std::vector<char> buf;
    caf::binary_serializer sink{*sys, buf};
    REQUIRE(!sink(const_cast<caf::message&>(m)));
    caf::message back;
    caf::binary_deserializer source{*sys, buf};
    auto e = source(back);
    INFO(sys->render(e));
    REQUIRE(!e);
    return back;
  }
  // A value cut anywhere is refused, never half read. (A whole message is not
  // checked so: CAF 0.17 reads a truncated message as a shorter one; BASP
  // frames carry their length, so a node never sees a cut message.)
  template <class T>
  void refuses_cuts(T x) {
    std::vector<char> buf;
    caf::binary_serializer sink{*sys, buf};
    REQUIRE(!sink(x));
    for (size_t n = 0; n < buf.size(); n += 1 + buf.size() / 32) {
      T partial{};
      caf::binary_deserializer cut{*sys, buf.data(), n};
      CHECK(cut(partial));
    }
  }
};

manifest some_manifest() {
  manifest m;
  m.id = "th_20261124_abcdefghijkl";
  m.agent_id = "helper";
  m.title = "a title";
  m.tags = {"x", "y"};
  m.last_seq = 12;
  m.status = thread_status::running;
  m.work = work_item{};
  m.work->text = "an item";
  return m;
}

}  // namespace

TEST_CASE("cluster: each edge message round-trips through the wire encoding") {
  edge_wire w;
  auto same = [&](const caf::message& m) {
    caf::message back = w.round_trip(m);
    CHECK(caf::to_string(back) == caf::to_string(m));
    return back;
  };
  const std::string id = "th_20261124_abcdefghijkl";
  thread_options o;
  o.agent_id = "helper";
  o.task_id = "task-1";
  o.policy = mid_run_policy::interrupt;
  o.tags = {"a"};
  run_input in;
  in.text = "hello";
  in.idempotency_key = "k1";
  in.run_id = "run_1";
  run_result r;
  r.thread_id = id;
  r.run_id = "run_1";
  r.outcome = run_outcome::failed;
  r.error = "boom";
  r.last_seq = 9;
  event e;
  e.seq = 3;
  e.type = event_type::tool_call;
  e.name = "weather";
  e.json = R"({"city":"Lisbon"})";
  raw_event raw{4, event_type::message, R"({"seq":4})"};
  thread_query q{thread_query::by::updated, "", "00ff", 250, thread_query::archived::include};
  thread_page page;
  page.threads = {some_manifest(), some_manifest()};
  page.threads[1].id = "th_2";
  page.next_cursor = "abcd";
  page.unreadable = {{id, "threads key t", "bad json", 0}};
  diagnosis d;
  d.thread_id = id;
  d.status = thread_status::failed;
  d.stage = "failed";
  d.heartbeat_age_ms = -1;
  d.quarantined = true;
  d.quarantine_reason = "why";
  agent_config a;
  a.id = "helper";
  a.system_prompt = "Be brief.";
  a.tools = {"weather"};

  // Requests.
  caf::message created = same(caf::make_message(create_atom::value, o));
  CHECK(created.get_as<thread_options>(1).policy == o.policy);
  CHECK(created.get_as<thread_options>(1).task_id == o.task_id);
  same(caf::make_message(caf::get_atom::value, id));
  caf::message submitted = same(caf::make_message(submit_atom::value, id, in));
  CHECK(submitted.get_as<run_input>(2).idempotency_key == in.idempotency_key);
  same(caf::make_message(send_atom::value, id, in));
  same(caf::make_message(cancel_atom::value, id));
  same(caf::make_message(read_atom::value, id, uint8_t{1}, uint64_t{5}, uint64_t{100}));
  same(caf::make_message(raw_atom::value, id, uint64_t{5}, uint64_t{100}, uint8_t{0x3f}));
  same(caf::make_message(delete_atom::value, id));
  same(caf::make_message(fork_atom::value, id, uint64_t{2}));
  same(caf::make_message(title_atom::value, id, std::string{"new"}));
  same(caf::make_message(reconcile_atom::value, id));
  same(caf::make_message(diagnose_atom::value, id));
  caf::message imported = same(caf::make_message(import_atom::value, some_manifest(), std::vector<event>{e, e}));
  CHECK(imported.get_as<manifest>(1) == some_manifest());
  same(caf::make_message(task_atom::value, std::string{"task-1"}));
  caf::message listed = same(caf::make_message(list_atom::value, q));
  CHECK(listed.get_as<thread_query>(1).limit == 250);
  CHECK(listed.get_as<thread_query>(1).archived_filter == thread_query::archived::include);
  caf::message put = same(caf::make_message(caf::put_atom::value, a));
  CHECK(put.get_as<agent_config>(1) == a);
  same(caf::make_message(agent_atom::value));
  same(caf::make_message(count_atom::value));
  // Replies and the relay to a remote sink.
  same(caf::make_message(some_manifest(), true));
  caf::message result = same(caf::make_message(r));
  CHECK(result.get_as<run_result>(0).outcome == run_outcome::failed);
  CHECK(result.get_as<run_result>(0).error == r.error);
  caf::message events = same(caf::make_message(std::vector<event>{e}));
  CHECK(events.get_as<std::vector<event>>(0) == std::vector<event>{e});
  caf::message raws = same(caf::make_message(std::vector<raw_event>{raw}, uint64_t{5}));
  CHECK(raws.get_as<std::vector<raw_event>>(0).front().json == raw.json);
  caf::message pages = same(caf::make_message(page));
  CHECK(pages.get_as<thread_page>(0).threads == page.threads);
  CHECK(pages.get_as<thread_page>(0).unreadable.front().reason == "bad json");
  caf::message diag = same(caf::make_message(d));
  CHECK(diag.get_as<diagnosis>(0).quarantine_reason == "why");
  same(caf::make_message(std::vector<agent_config>{a, a}));
  same(caf::make_message(event_atom::value, id, uint64_t{4}, uint8_t{2}, std::string{R"({"seq":4})"}));
  same(caf::make_message(delta_atom::value, id, std::string{"run_1"}, std::string{"tok"}));
  same(caf::make_message(caf::close_atom::value, id, std::string{"deleted"}));
  // Membership change.
  log_row row{10, std::string{"th_1\0\0\0\0\0\0\0\x01", 13}, std::string{"\x00\xff{}", 4}};
  cluster_rebalance_state st{"failed", 3, 40, 2, 5, 7, "node n4 stopped answering"};
  const std::string members = "n1 127.0.0.1:7501\nn2 [::1]:7502\n";
  same(caf::make_message(members_atom::value));
  same(caf::make_message(members, std::string{}));
  same(caf::make_message(rebalance_atom::value, members));
  same(caf::make_message(progress_atom::value));
  caf::message state = same(caf::make_message(st));
  CHECK(state.get_as<cluster_rebalance_state>(0).error == st.error);
  CHECK(state.get_as<cluster_rebalance_state>(0).remaining == 7);
  CHECK(state.get_as<cluster_rebalance_state>(0).schedules == 5);
  caf::message adopted =
      same(caf::make_message(adopt_atom::value, id, uint32_t{1}, uint32_t{3}, std::vector<log_row>{row, row}));
  CHECK(adopted.get_as<std::vector<log_row>>(4).front().key == row.key);
  CHECK(adopted.get_as<std::vector<log_row>>(4).front().value == row.value);
  CHECK(adopted.get_as<std::vector<log_row>>(4).front().family == 10);
  same(caf::make_message(claim_atom::value, std::vector<log_row>{row}));
  log_row definition{7, "d/th_1.sc_1", R"({"id":"th_1.sc_1"})"};
  caf::message schedule_rows =
      same(caf::make_message(schedule_atom::value, adopt_atom::value, id, std::vector<log_row>{definition, row}));
  CHECK(schedule_rows.get_as<std::vector<log_row>>(3).front().key == definition.key);
  same(caf::make_message(membership_commit_atom::value, members));
  // Compaction and house members.
  compact_options co;
  co.stages = {"drop_thinking", "summarize"};
  co.keep_turns = 4;
  caf::message compacted = same(caf::make_message(compact_atom::value, id, compact_wire::from(co)));
  compact_options back = compacted.get_as<compact_wire>(2).options();
  CHECK(back.stages == co.stages);
  CHECK(back.keep_turns == std::optional<uint32_t>{4});
  CHECK(!back.tool_result_bytes_max.has_value());
  compact_result cr{true, false, "", 12, 900, 300, 20, 5};
  caf::message cresult = same(caf::make_message(cr));
  CHECK(cresult.get_as<compact_result>(0).seq == 12);
  CHECK(cresult.get_as<compact_result>(0).tokens_after == 300);
  same(caf::make_message(member_atom::value, id, std::string{"critic"}, std::string{"on_mention"}, true));
  // Usage and memory search.
  usage_query uq;
  uq.agent_id = "helper";
  uq.since_ms = 5;
  uq.group_by = usage_query::group::day;
  caf::message uqm = same(caf::make_message(usage_atom::value, uq));
  CHECK(uqm.get_as<usage_query>(1).group_by == usage_query::group::day);
  usage_report ur;
  ur.groups = {{"2026-11-25", {1, 2, 3, 4}, 0.5, 7, 900}};
  ur.rows = 7;
  caf::message urm = same(caf::make_message(ur));
  CHECK(urm.get_as<usage_report>(0).groups.front().usage == ur.groups.front().usage);
  CHECK(urm.get_as<usage_report>(0).groups.front().cost_usd == 0.5);
  same(caf::make_message(search_atom::value, std::string{"helper"}, std::string{"zebra"}, uint64_t{3}));
  memory_hit mh{id, 4, "user", 0.75f, "a note about the zebra"};
  caf::message mhm = same(caf::make_message(std::vector<memory_hit>{mh, mh}));
  CHECK(mhm.get_as<std::vector<memory_hit>>(0).front().score == 0.75f);
  // Schedules.
  schedule sc;
  sc.id = id + ".sc_1";
  sc.agent_id = "helper";
  sc.kind = schedule_kind::cron;
  sc.cron = "0 9 * * 1-5";
  sc.time_zone = "Europe/Lisbon";
  sc.input_text = "standup";
  sc.input_role = message_role::system;
  sc.thread_id = id;
  sc.tags = {"daily", "team"};
  sc.missed = missed_policy::run_once;
  sc.paused = true;
  sc.next_fire_at_ms = 1795600000000;
  sc.fire_count = 12;
  sc.history_seq = 14;
  caf::message scm = same(caf::make_message(schedule_atom::value, create_atom::value, sc));
  CHECK(scm.get_as<schedule>(2) == sc);
  same(caf::make_message(schedule_atom::value, caf::get_atom::value, sc.id));
  same(caf::make_message(schedule_atom::value, schedule_history_atom::value, sc.id, uint64_t{9}, uint64_t{50}));
  same(caf::make_message(schedule_atom::value, schedule_preview_atom::value, sc.id, uint64_t{5}));
  same(caf::make_message(schedule_atom::value, list_atom::value, std::string{"sc_0"}, uint64_t{100}));
  schedule_firing fi{sc.id, 3, 100, 101, id, "run_9", firing_outcome::skipped, "2 missed", 2};
  caf::message fim = same(caf::make_message(std::vector<schedule_firing>{fi}, uint64_t{2}));
  CHECK(fim.get_as<std::vector<schedule_firing>>(0).front() == fi);
  same(caf::make_message(std::vector<schedule>{sc, sc}, std::string{"next"}));
  same(caf::make_message(std::vector<int64_t>{1, -2, 3}));
  w.refuses_cuts(sc);
  w.refuses_cuts(fi);
  w.refuses_cuts(uq);
  w.refuses_cuts(ur);
  w.refuses_cuts(mh);
  w.refuses_cuts(compact_wire::from(co));
  w.refuses_cuts(cr);
  w.refuses_cuts(row);
  w.refuses_cuts(st);
  w.refuses_cuts(raw);
  w.refuses_cuts(q);
  w.refuses_cuts(page);
  w.refuses_cuts(d);
}

TEST_CASE("cluster: hostile edge bytes are refused") {
  edge_wire w;
  // A thread_query whose index is out of range.
  std::vector<char> buf;
  caf::binary_serializer sink{*w.sys, buf};
  thread_query q;
  REQUIRE(!sink(q));
  REQUIRE(!buf.empty());
  buf[0] = char(0x7f);
  thread_query back;
  caf::binary_deserializer source{*w.sys, buf};
  CHECK(source(back));
  // A raw_event whose type is out of range.
  std::vector<char> rb;
  caf::binary_serializer rs{*w.sys, rb};
  raw_event re{1, event_type::message, "{}"};
  REQUIRE(!rs(re));
  REQUIRE(rb.size() > 8);
  rb[8] = char(0x7f);
  raw_event rback;
  caf::binary_deserializer rd{*w.sys, rb};
  CHECK(rd(rback));
}

TEST_CASE("cluster: a node refuses a thread its member list gives to another node") {
  // n1 believes in two members, n2 in three: some ids n1 sends to n2 are, by
  // n2's list, n3's (rendezvous moves only a member's own keys, so the lists
  // must differ by a member the receiver knows). n2 refuses them instead of
  // serving or creating them.
  test::temp_dir d1, d2;
  std::vector<cluster_member> three = {{"n1", "127.0.0.1", free_port()}, {"n2", "127.0.0.1", free_port()},
                                       {"n3", "127.0.0.1", free_port()}};
  std::vector<cluster_member> two = {three[0], three[1]};
  auto open = [](const test::temp_dir& d, const std::string& id, std::vector<cluster_member> members,
                 std::unique_ptr<runtime>* out) {
    runtime_options o;
    o.data_dir = d.str();
    o.effects.titles = o.effects.embeddings = o.effects.compaction = false;
    o.cluster.node_id = id;
    o.cluster.members = std::move(members);
    o.cluster.request_timeout_ms = 2000;
    status s = runtime::open(o, out);
    INFO(s.to_string());
    REQUIRE(s.is_ok());
  };
  // Each opens first alone, so neither learns the other's members (a new
  // node takes a running member's): each stores its own list.
  std::unique_ptr<runtime> n1, n2;
  open(d1, "n1", two, &n1);
  REQUIRE(n1->close().is_ok());
  n1.reset();
  open(d2, "n2", three, &n2);
  open(d1, "n1", two, &n1);
  rendezvous by3{{"n1", "n2", "n3"}}, by2{{"n1", "n2"}};
  std::string id, task;
  for (int i = 0; i < 10000 && (id.empty() || task.empty()); ++i) {
    std::string t = "th_20261124_" + std::to_string(100000 + i);
    if (id.empty() && by2.owner_id(t) == "n2" && by3.owner_id(t) == "n3") id = t;
    std::string k = "task-" + std::to_string(i);
    if (task.empty() && by2.owner_id("task/" + k) == "n2" && by3.owner_id("task/" + k) == "n3") task = k;
  }
  REQUIRE(!id.empty());
  REQUIRE(!task.empty());
  manifest m;
  status s = n1->get_thread(id, &m);
  INFO(s.to_string());
  CHECK(s.code() == errc::unavailable);
  CHECK(s.message().find("cluster files differ") != std::string::npos);
  run_input in;
  in.text = "x";
  std::string run;
  CHECK(n1->submit(id, in, &run).code() == errc::unavailable);

  agent_config a;
  a.id = "helper";
  a.engine_config = R"({"default":{"reply":"done"}})";
  REQUIRE(n1->create_agent(a).is_ok());
  thread_options o;
  o.agent_id = "helper";
  o.task_id = task;
  s = n1->create_thread(o, &m);
  CHECK(s.code() == errc::unavailable);
  // Nothing was written on n2 (its own count: its listing would need n3).
  std::vector<cluster_member_state> ms;
  REQUIRE(n2->cluster_members(&ms).is_ok());
  for (const auto& member : ms)
    if (member.self) CHECK(member.threads == 0);
}

TEST_CASE("cluster: an agent written while a node was down reaches it") {
  cluster_fixture f;
  // n3 is down when the agent is written: it fetches it at its next open.
  f.nodes[2]->close().ignore();
  f.nodes[2].reset();
  f.agent(0);
  f.open(2);
  agent_config a;
  CHECK(f.nodes[2]->get_agent("helper", &a).is_ok());

  // n3 down again for agent "later", and the coordinator (n1) down when n3
  // opens: n3 fetches the agent when a creation needs it.
  f.nodes[2]->close().ignore();
  f.nodes[2].reset();
  a = {};
  a.id = "later";
  a.engine_config = R"({"default":{"reply":"done"}})";
  REQUIRE(f.nodes[1]->create_agent(a).is_ok());
  f.nodes[0]->close().ignore();
  f.nodes[0].reset();
  f.open(2);
  CHECK(f.nodes[2]->get_agent("later", &a).code() == errc::not_found);
  f.open(0);
  thread_options o;
  o.agent_id = "later";
  manifest m;
  status s;
  // n3 left n1 alone for a backoff after its failed fetch at open (at most 200 ms here).
  for (int tries = 0; tries < 100; ++tries) {
    s = f.nodes[2]->create_thread(o, &m);
    if (s.code() != errc::unavailable) break;
    std::this_thread::sleep_for(20ms);
  }
  INFO(s.to_string());
  REQUIRE(s.is_ok());
  CHECK(m.agent_id == "later");
  CHECK(f.nodes[2]->get_agent("later", &a).is_ok());
}

// A peer that speaks outside the edge protocol (an unknown message, a known atom
// with the wrong arguments) gets an error at once, not silence, and the node
// serves on.
TEST_CASE("cluster: a message outside the edge protocol is answered with an error") {
  cluster_fixture f;
  f.agent(0);
  manifest m = f.thread(1);
  caf::actor_system_config cfg;
  prepare_cluster_config(cfg);
  caf::actor_system sys{cfg};
  // Connected as a node of this version would (the edge's interface), then
  // used untyped, as a hostile peer's raw messages would arrive.
  auto typed = sys.middleman().remote_actor<edge_actor>("127.0.0.1", f.members[1].port);
  REQUIRE(typed);
  auto edge = caf::actor_cast<caf::actor>(*typed);
  caf::scoped_actor self{sys};
  auto refused = [&](caf::message msg) {
    status s;
    auto start = std::chrono::steady_clock::now();
    self->request(edge, std::chrono::seconds(5), std::move(msg))
        .receive([&](caf::message&) { s = status::ok(); }, [&](caf::error& e) { s = to_status(e); });
    INFO(s.to_string());
    CHECK(s.code() == errc::invalid_input);
    CHECK(s.message().find("edge protocol") != std::string::npos);
    CHECK(std::chrono::steady_clock::now() - start < 2s);
  };
  refused(caf::make_message(caf::ok_atom::value, std::string{"hello"}));
  refused(caf::make_message(caf::get_atom::value, uint64_t{7}));
  refused(caf::make_message(std::string{"no atom at all"}));
  // Compaction and house member calls from another node: checked as a client's.
  auto answer = [&](caf::message msg) {
    status s;
    self->request(edge, std::chrono::seconds(5), std::move(msg))
        .receive([&](caf::message&) { s = status::ok(); }, [&](caf::error& e) { s = to_status(e); });
    return s;
  };
  const std::string& owned = m.id;
  std::string foreign;  // a thread id node 1 does not own
  for (int i = 0; foreign.empty(); ++i) {
    std::string id = "th_20261125_" + std::to_string(100000 + i);
    if (f.owner(id) != 1) foreign = id;
  }
  REQUIRE(f.owner(owned) == 1);  // minted by node 1: an id it owns
  compact_wire huge;
  huge.has_keep_turns = true;
  huge.keep_turns = compact_keep_turns_max + 1;
  huge.stages = {std::string(1 << 20, 's')};
  status s = answer(caf::make_message(compact_atom::value, owned, huge));
  INFO(s.to_string());
  CHECK(s.code() == errc::invalid_input);
  s = answer(caf::make_message(member_atom::value, owned, std::string{"helper"}, std::string{"sometimes"}, true));
  INFO(s.to_string());
  CHECK(s.code() == errc::invalid_input);
  CHECK(s.field() == "trigger");
  s = answer(caf::make_message(member_atom::value, owned, std::string(100000, 'a'), std::string{"always"}, true));
  CHECK(s.code() == errc::invalid_input);
  s = answer(caf::make_message(compact_atom::value, foreign, compact_wire{}));
  CHECK(s.code() == errc::unavailable);
  s = answer(caf::make_message(member_atom::value, foreign, std::string{"helper"}, std::string{"always"}, true));
  CHECK(s.code() == errc::unavailable);
  schedule forged;
  forged.id = foreign + ".sc_1";
  forged.agent_id = "helper";
  forged.thread_id = foreign;
  forged.kind = schedule_kind::interval;
  forged.interval_ms = 60000;
  forged.input_text = "x";
  s = answer(caf::make_message(schedule_atom::value, create_atom::value, forged));
  CHECK(s.code() == errc::unavailable);  // not this node's: never stored here
  s = answer(caf::make_message(schedule_atom::value, caf::get_atom::value, forged.id));
  CHECK(s.code() == errc::unavailable);
  forged.id.clear();
  s = answer(caf::make_message(schedule_atom::value, create_atom::value, forged));
  CHECK(s.code() == errc::invalid_input);
  s = answer(caf::make_message(schedule_atom::value, list_atom::value, std::string{}, uint64_t{1} << 40));
  CHECK(s.code() == errc::invalid_input);
  s = answer(caf::make_message(search_atom::value, std::string{"helper"}, std::string{"q"}, uint64_t{1} << 40));
  CHECK(s.code() == errc::invalid_input);
  s = answer(caf::make_message(search_atom::value, std::string(100000, 'a'), std::string{"q"}, uint64_t{3}));
  CHECK((s.code() == errc::invalid_input || s.code() == errc::not_found));
  s = answer(caf::make_message(member_atom::value, std::string{"../../etc"}, std::string{"helper"}, std::string{"always"}, true));
  CHECK(s.code() == errc::invalid_input);
  manifest back;
  REQUIRE(f.nodes[f.owner(m.id) == 0 ? 1 : 0]->get_thread(m.id, &back).is_ok());
  CHECK(back.id == m.id);
  CHECK(back.members.empty());
  CHECK(back.compaction_seq == 0);
}

// A port free_port gives is this process's until it exits: another process's
// probe (a bind without SO_REUSEADDR, as free_port's own) is refused, while a
// node that listens with reuse, as the cluster link does, binds it. Before, two
// test processes of a parallel ctest could pick one port, and a node of one of
// them could not listen.
TEST_CASE("cluster: a port the tests name for a node stays reserved until the node listens") {
  uint16_t port = free_port();
  auto bound = [port](bool reuse, bool listen) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    int on = 1;
    if (reuse) REQUIRE(::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) == 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && (!listen || ::listen(fd, 1) == 0);
    ::close(fd);
    return ok;
  };
  CHECK_FALSE(bound(false, false));  // another process's probe
  CHECK(bound(true, true));          // the node's listener
  // And a node really opens on it.
  test::temp_dir dir;
  runtime_options o;
  o.data_dir = dir.str();
  o.effects.titles = o.effects.embeddings = o.effects.compaction = false;
  o.cluster.node_id = "n1";
  o.cluster.members = {{"n1", "127.0.0.1", port}};
  std::unique_ptr<runtime> rt;
  REQUIRE(runtime::open(o, &rt).is_ok());
  CHECK(rt->close().is_ok());
}
