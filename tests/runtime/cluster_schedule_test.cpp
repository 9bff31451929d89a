// Schedules in a cluster (runtime_cluster.cpp, route_schedule): a schedule
// lives where its id routes — a bound one's id starts with its thread's root
// id, so it lives and fires with the thread — and every schedule call works
// through any node; listing pages over every node's schedules; a rebalance that
// would move one is refused, naming it, before any thread of its node moves.
#include <catch2/catch.hpp>

#include <set>

#include "runtime/cluster_link.hpp"
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

TEST_CASE("cluster: a rebalance that would move a schedule is refused naming it") {
  cluster_fixture f;
  f.agent(0);
  for (size_t k = 0; k < 30; ++k) f.thread(k % f.n);
  size_t n4 = f.add_member();
  f.open(n4);
  // An unbound schedule whose id the fourth node will own.
  std::string id;
  for (int i = 0; id.empty(); ++i) {
    std::string candidate = "sched-" + std::to_string(i);
    if (f.owner(candidate) == n4) id = candidate;
  }
  schedule s = every_hour("");
  s.id = id;
  REQUIRE(f.nodes[0]->create_schedule(s, nullptr).is_ok());
  for (size_t i = 0; i < 3; ++i) REQUIRE(f.nodes[i]->reload_cluster(f.members).is_ok());
  cluster_rebalance_state st;
  status r = f.nodes[0]->rebalance(&st);
  INFO(r.to_string() << " " << st.error);
  CHECK(!r);
  CHECK(st.phase == "failed");
  CHECK(st.error.find(id) != std::string::npos);
  // Deleted, the rebalance goes through and the schedule's id is free again.
  REQUIRE(f.nodes[1]->delete_schedule(id).is_ok());
  r = f.nodes[0]->rebalance(&st);
  INFO(r.to_string() << " " << st.error);
  CHECK(r.is_ok());
  CHECK(st.phase == "committed");
  REQUIRE(f.nodes[2]->create_schedule(s, nullptr).is_ok());
  schedule read;
  REQUIRE(f.nodes[n4]->get_schedule(id, &read).is_ok());
  CHECK(read.id == id);
}
