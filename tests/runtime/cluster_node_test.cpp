// Three runtimes as the nodes of one cluster, in one process (each its own CAF
// actor system and node id, linked over loopback by the middleman): every call
// made on any node reaches the thread's owner; a node that is gone answers
// `unavailable` naming itself, within the timeout; back, it has everything.
// The edge protocol's encoding and refusals are in cluster_edge_test.cpp.
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
#include "tests/support/runtime_call.hpp"
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

  test::scripted_agent_on(*n1, "helper", R"({"default":{"reply":"done"}})");
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
