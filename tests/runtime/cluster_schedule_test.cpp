// Schedules in a cluster (runtime_cluster.cpp, route_schedule): a schedule
// lives where its id routes — a bound one's id starts with its thread's root
// id, so it lives and fires with the thread — and every schedule call works
// through any node; listing pages over every node's schedules; a rebalance
// moves schedules with their threads (definition and history), and a schedule
// released for a handoff fires nowhere until its new node has it.
#include <catch2/catch.hpp>

#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>
#include <map>
#include <set>

#include "actors/error.hpp"

#include "runtime/cluster/cluster_link.hpp"
#include "tests/runtime/cluster_fixture.hpp"
#include "tests/support/runtime_fixture.hpp"

using namespace skein;
using namespace skein::test;
using namespace std::chrono_literals;

namespace {

schedule every_hour(const std::string& thread_id) {
  schedule s;
  s.agent_id = "helper";
  s.thread_id = thread_id;
  s.kind = schedule_kind::interval;
  s.interval_ms = 3600000;  // never due by itself during the test
  s.input_text = "tick";
  return s;
}

}  // namespace

TEST_CASE("cluster: schedules are made, fired, changed and listed through any node") {
  cluster_fixture f;
  f.agent(0);
  std::vector<manifest> threads;
  for (size_t k = 0; k < 6; ++k) threads.push_back(f.thread(k % f.n));

  // Bound schedules, each made through a node that does not own its thread.
  std::vector<schedule> bound;
  for (const auto& t : threads) {
    size_t away = (f.owner(t.id) + 1) % f.n;
    schedule made;
    status s = f.nodes[away]->create_schedule(every_hour(t.id), &made);
    INFO(t.id << ": " << s.to_string());
    REQUIRE(s.is_ok());
    CHECK(made.id.rfind(t.id + ".", 0) == 0);  // lives with the thread, on its node
    CHECK(made.thread_id == t.id);
    CHECK(made.next_fire_at_ms > 0);
    bound.push_back(made);
  }
  // Unbound ones, minted for the node they are made through.
  std::vector<schedule> unbound;
  for (size_t i = 0; i < f.n; ++i) {
    schedule made;
    REQUIRE(f.nodes[i]->create_schedule(every_hour(""), &made).is_ok());
    CHECK(f.owner(made.id) == i);
    unbound.push_back(made);
  }

  // Read, paused, resumed, previewed through a third node.
  for (const auto& s : bound) {
    size_t third = (f.owner(s.thread_id) + 2) % f.n;
    schedule read;
    REQUIRE(f.nodes[third]->get_schedule(s.id, &read).is_ok());
    CHECK(read == s);
    REQUIRE(f.nodes[third]->pause_schedule(s.id, &read).is_ok());
    CHECK(read.paused);
    REQUIRE(f.nodes[f.owner(s.thread_id)]->get_schedule(s.id, &read).is_ok());
    CHECK(read.paused);
    REQUIRE(f.nodes[third]->resume_schedule(s.id, &read).is_ok());
    CHECK(!read.paused);
    std::vector<int64_t> due;
    REQUIRE(f.nodes[third]->preview_schedule(s.id, 3, &due).is_ok());
    REQUIRE(due.size() == 3);
    CHECK(due[1] - due[0] == 3600000);
  }

  // Listing: every node's schedules, each once, paged two at a time, through each node.
  std::set<std::string> want;
  for (const auto& s : bound) want.insert(s.id);
  for (const auto& s : unbound) want.insert(s.id);
  for (size_t via = 0; via < f.n; ++via) {
    std::vector<std::string> seen;
    std::string after, next;
    for (int page = 0; page < 50; ++page) {
      std::vector<schedule> items;
      REQUIRE(f.nodes[via]->list_schedules(after, 2, &items, &next).is_ok());
      CHECK(items.size() <= 2);
      for (const auto& s : items) seen.push_back(s.id);
      if (next.empty()) break;
      after = next;
    }
    CHECK(std::is_sorted(seen.begin(), seen.end()));
    CHECK(std::set<std::string>(seen.begin(), seen.end()) == want);
    CHECK(seen.size() == want.size());
  }

  // A firing on the thread's own node: the input lands in the bound thread.
  {
    const schedule& s = bound[0];
    size_t home = f.owner(s.thread_id);
    schedule once = every_hour(s.thread_id);
    once.kind = schedule_kind::once;
    once.interval_ms = 0;
    once.at_ms = 1;  // long past: due at once
    once.missed = missed_policy::run_once;
    schedule made;
    status created = f.nodes[(home + 1) % f.n]->create_schedule(once, &made);
    INFO(created.to_string());
    REQUIRE(created.is_ok());
    bool fired = runtime_fixture::eventually([&] {
      size_t n = 0;
      f.nodes[home]->fire_due_schedules(&n).ignore();
      std::vector<schedule_firing> history;
      uint64_t next = 0;
      return f.nodes[(home + 2) % f.n]->schedule_history(made.id, 0, 10, &history, &next).is_ok() &&
             !history.empty() && history.front().outcome == firing_outcome::fired;
    }, 30s);
    CHECK(fired);
    std::vector<event> log;
    bool ran = runtime_fixture::eventually([&] {
      log.clear();
      return f.nodes[(home + 1) % f.n]->read(s.thread_id, history_view::complete, 1, 0, &log).is_ok() &&
             std::any_of(log.begin(), log.end(), [](const event& e) {
               return e.type == event_type::message && e.text == "tick";
             });
    }, 30s);
    CHECK(ran);
  }

  // Deleted through any node, gone on every node.
  REQUIRE(f.nodes[0]->delete_schedule(bound[1].id).is_ok());
  for (size_t via = 0; via < f.n; ++via) {
    schedule gone;
    CHECK(f.nodes[via]->get_schedule(bound[1].id, &gone).code() == errc::not_found);
  }

  // A bound schedule's own id must route with its thread; a bad id is refused
  // before anything crosses; another node's call for a schedule this node
  // does not own is refused at the edge.
  schedule mine = every_hour(threads[0].id);
  mine.id = "my-schedule";
  status refused = f.nodes[1]->create_schedule(mine, nullptr);
  INFO(refused.to_string());
  CHECK(refused.code() == errc::invalid_input);
  CHECK(refused.field() == "id");
  mine.id = threads[0].id + ".nightly";
  CHECK(f.nodes[2]->create_schedule(mine, nullptr).is_ok());
  schedule read;
  CHECK(f.nodes[0]->get_schedule("../x", &read).code() == errc::invalid_input);
}

namespace {

// A bound schedule due at once (long past; run_once delivers the latest
// missed time): fired by the next fire_due_schedules() of its node.
schedule due_now(const std::string& thread_id) {
  schedule s = every_hour(thread_id);
  s.kind = schedule_kind::once;
  s.interval_ms = 0;
  s.at_ms = 1;
  s.missed = missed_policy::run_once;
  return s;
}

// Schedules stored on node `i` itself, asked at its edge as another node would.
std::set<std::string> schedules_on(cluster_fixture& f, size_t i) {
  caf::actor_system_config cfg;
  prepare_cluster_config(cfg);
  caf::actor_system sys{cfg};
  auto edge = sys.middleman().remote_actor<edge_actor>("127.0.0.1", f.members[i].port);
  REQUIRE(edge);
  std::set<std::string> ids;
  caf::scoped_actor self{sys};
  self->request(*edge, 10s, schedule_atom::value, list_atom::value, std::string{}, uint64_t{1000})
      .receive(
          [&](std::vector<schedule>& page, std::string&) {
            for (const auto& s : page) ids.insert(s.id);
          },
          [&](caf::error& e) { FAIL(to_status(e).to_string()); });
  return ids;
}

// How many messages of `text` the thread's log holds, read through node `via`.
size_t inputs_of(cluster_fixture& f, size_t via, const std::string& thread, const std::string& text) {
  std::vector<event> log;
  REQUIRE(f.nodes[via]->read(thread, history_view::complete, 1, 0, &log).is_ok());
  return static_cast<size_t>(std::count_if(log.begin(), log.end(), [&](const event& e) {
    return e.type == event_type::message && e.role == message_role::user && e.text == text;
  }));
}

}  // namespace

TEST_CASE("cluster: a rebalance moves schedules with their threads, history and all, and they fire there") {
  cluster_fixture f{3, [](runtime_options& o) { o.schedule_wake_ms = 0; }};  // firings only when a test asks
  f.agent(0);
  size_t n4 = f.add_member();
  f.open(n4);
  std::vector<manifest> threads;
  for (size_t k = 0; k < 40; ++k) threads.push_back(f.thread(k % 3));
  auto moves = [&](const std::string& id) { return f.owner(id, 3) != f.owner(id); };
  std::vector<std::string> moving_threads, staying_threads;
  for (const auto& t : threads) (moves(t.id) ? moving_threads : staying_threads).push_back(t.id);
  REQUIRE(moving_threads.size() >= 2);
  REQUIRE(!staying_threads.empty());

  // Bound schedules on moving threads, each with a firing in its history;
  // one more due now and not fired yet; one on a thread that stays; an
  // unbound one whose id the fourth node will own.
  std::map<std::string, schedule> before;  // id -> as before the change
  std::set<std::string> expect_moved;
  for (size_t k = 0; k < 2; ++k) {
    const std::string& t = moving_threads[k];
    schedule fired_once;
    REQUIRE(f.nodes[0]->create_schedule(due_now(t), &fired_once).is_ok());
    size_t fired = 0;
    REQUIRE(f.nodes[f.owner(t, 3)]->fire_due_schedules(&fired).is_ok());
    CHECK(fired == 1);
    REQUIRE(f.nodes[1]->get_schedule(fired_once.id, &fired_once).is_ok());
    CHECK(fired_once.history_seq == 1);
    before[fired_once.id] = fired_once;
    expect_moved.insert(fired_once.id);
    schedule hourly;
    REQUIRE(f.nodes[2]->create_schedule(every_hour(t), &hourly).is_ok());
    before[hourly.id] = hourly;
    expect_moved.insert(hourly.id);
  }
  schedule pending;
  REQUIRE(f.nodes[1]->create_schedule(due_now(moving_threads[0]), &pending).is_ok());
  before[pending.id] = pending;
  expect_moved.insert(pending.id);
  schedule stays;
  REQUIRE(f.nodes[0]->create_schedule(every_hour(staying_threads[0]), &stays).is_ok());
  before[stays.id] = stays;
  std::string unbound_id;
  for (int i = 0; unbound_id.empty(); ++i) {
    std::string candidate = "sched-" + std::to_string(i);
    if (f.owner(candidate) == n4) unbound_id = candidate;
  }
  schedule unbound = every_hour("");
  unbound.id = unbound_id;
  REQUIRE(f.nodes[0]->create_schedule(unbound, &unbound).is_ok());
  before[unbound.id] = unbound;
  expect_moved.insert(unbound.id);
  std::map<std::string, size_t> old_home;
  for (const auto& [id, s] : before) old_home[id] = f.owner(id, 3);

  for (size_t i = 0; i < 3; ++i) REQUIRE(f.nodes[i]->reload_cluster(f.members).is_ok());
  cluster_rebalance_state st;
  status r = f.nodes[0]->rebalance(&st);
  INFO(r.to_string() << " " << st.error);
  REQUIRE(r.is_ok());
  CHECK(st.phase == "committed");
  CHECK(st.schedules == expect_moved.size());

  // Each schedule is stored on exactly one node, its owner now, and reads the
  // same through every node, its history with it.
  std::vector<std::set<std::string>> stored;
  for (size_t i = 0; i < 4; ++i) stored.push_back(schedules_on(f, i));
  for (const auto& [id, old] : before) {
    INFO(id);
    size_t home = f.owner(id);
    CHECK(home == (expect_moved.count(id) ? n4 : old_home[id]));
    for (size_t i = 0; i < 4; ++i) CHECK(stored[i].count(id) == (i == home ? 1u : 0u));
    for (size_t via = 0; via < 4; ++via) {
      schedule now;
      REQUIRE(f.nodes[via]->get_schedule(id, &now).is_ok());
      CHECK(now.history_seq == old.history_seq);
      CHECK(now.fire_count == old.fire_count);
      CHECK(now.next_fire_at_ms == old.next_fire_at_ms);
      std::vector<schedule_firing> history;
      uint64_t next = 0;
      REQUIRE(f.nodes[via]->schedule_history(id, 0, 10, &history, &next).is_ok());
      CHECK(history.size() == old.history_seq);
    }
  }
  std::vector<schedule> listed;
  std::string cursor;
  REQUIRE(f.nodes[2]->list_schedules("", 100, &listed, &cursor).is_ok());
  CHECK(listed.size() == before.size());

  // The pending firing happens on its new node, once: the old ones have
  // nothing to fire, the new one fires it into the thread, which moved there.
  for (size_t i = 0; i < 3; ++i) {
    size_t fired = 99;
    REQUIRE(f.nodes[i]->fire_due_schedules(&fired).is_ok());
    CHECK(fired == 0);
  }
  size_t fired = 0;
  REQUIRE(f.nodes[n4]->fire_due_schedules(&fired).is_ok());
  CHECK(fired == 1);
  REQUIRE(f.nodes[n4]->fire_due_schedules(&fired).is_ok());
  CHECK(fired == 0);
  std::vector<schedule_firing> history;
  uint64_t next = 0;
  REQUIRE(f.nodes[1]->schedule_history(pending.id, 0, 10, &history, &next).is_ok());
  REQUIRE(history.size() == 1);
  CHECK(history[0].outcome == firing_outcome::fired);
  CHECK(runtime_fixture::eventually([&] { return inputs_of(f, 0, moving_threads[0], "tick") == 2; }));
  // Calls reach it through any node: paused through the first, deleted through the second.
  schedule paused;
  REQUIRE(f.nodes[0]->pause_schedule(before.begin()->first, &paused).is_ok());
  CHECK(paused.paused);
  REQUIRE(f.nodes[1]->delete_schedule(unbound_id).is_ok());
  CHECK(schedules_on(f, n4).count(unbound_id) == 0);
}

TEST_CASE("cluster: a schedule released for a handoff that failed fires nowhere until a rerun moves it") {
  cluster_fixture f{3, [](runtime_options& o) { o.schedule_wake_ms = 0; }};
  f.agent(0);
  size_t n4 = f.add_member();
  f.open(n4);
  std::vector<std::string> threads;
  for (size_t k = 0; k < 600; ++k) threads.push_back(f.thread(k % 3).id);
  std::string moving;
  for (const auto& t : threads)
    if (f.owner(t) == n4) moving = t;
  REQUIRE(!moving.empty());
  const size_t old_home = f.owner(moving, 3);
  schedule pending;
  REQUIRE(f.nodes[0]->create_schedule(due_now(moving), &pending).is_ok());
  for (size_t i = 0; i < 3; ++i) REQUIRE(f.nodes[i]->reload_cluster(f.members).is_ok());

  // The new owner goes away once some threads reached it: the pass fails
  // after every node released its moving schedules.
  cluster_rebalance_state st = f.cut_short_rebalance(0, n4, 10);

  // Released, it fires nowhere — not after its old node restarts either —
  // and calls for it say it is moving.
  f.close(old_home);
  f.open(old_home);
  for (size_t i = 0; i < 3; ++i) {
    size_t fired = 99;
    REQUIRE(f.nodes[i]->fire_due_schedules(&fired).is_ok());
    CHECK(fired == 0);
  }
  schedule read;
  status s = f.nodes[old_home]->get_schedule(pending.id, &read);
  INFO(s.to_string());
  CHECK(s.code() == errc::unavailable);
  CHECK(s.message().find("moving") != std::string::npos);

  // A rerun moves it; it fires once, on the new node, into its thread there.
  f.open(n4);
  s = f.rerun_rebalance(2, &st);
  INFO(s.to_string() << " " << st.error);
  REQUIRE(s.is_ok());
  size_t fired = 0;
  REQUIRE(f.nodes[old_home]->fire_due_schedules(&fired).is_ok());
  CHECK(fired == 0);
  REQUIRE(f.nodes[n4]->fire_due_schedules(&fired).is_ok());
  CHECK(fired == 1);
  CHECK(runtime_fixture::eventually([&] { return inputs_of(f, old_home, moving, "tick") == 1; }));
  CHECK(schedules_on(f, old_home).count(pending.id) == 0);
  CHECK(schedules_on(f, n4).count(pending.id) == 1);
}
