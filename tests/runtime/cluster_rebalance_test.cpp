// Membership change: a fourth node joins three, or one of them fails during
// the handoff; and the event log's side (a thread's rows, adopted elsewhere).
#include <catch2/catch.hpp>

#include <atomic>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "persistence/event_log.hpp"
#include "runtime/cluster/cluster_link.hpp"
#include "runtime/runtime.hpp"
#include "tests/runtime/cluster_fixture.hpp"
#include "tests/support/runtime_call.hpp"
#include "tests/support/temp_dir.hpp"

using namespace skein;
using namespace std::chrono_literals;
using skein::test::cluster_fixture;

namespace {

// Sends to random threads through random nodes until told to stop; a send
// refused as unavailable (its thread moving) is tried again with a new run id.
struct load {
  cluster_fixture& f;
  const std::vector<std::string>& threads;
  size_t nodes;
  uint32_t seed;
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::map<std::string, std::string> acked;  // run id -> thread
  std::set<std::string> tried;               // every run id sent
  std::vector<std::string> errors;           // anything but unavailable
  uint64_t refused = 0;                      // unavailable answers
  std::thread worker;

  load(cluster_fixture& fx, const std::vector<std::string>& ts, size_t n, uint32_t s)
      : f(fx), threads(ts), nodes(n), seed(s) {
    worker = std::thread([this] { run(); });
  }
  ~load() { finish(); }
  void finish() {
    stop = true;
    if (worker.joinable()) worker.join();
  }

  void run() {
    std::mt19937 rng{seed};
    for (uint64_t k = 0; !stop; ++k) {
      const std::string& thread = threads[rng() % threads.size()];
      size_t via = rng() % nodes;
      run_input in;
      in.text = "load " + std::to_string(k);
      in.run_id = "run_load_" + std::to_string(k);
      {
        std::lock_guard lock{mu};
        tried.insert(in.run_id);
      }
      run_result r;
      status s = f.nodes[via]->send(thread, in).wait(&r, 30s);
      std::lock_guard lock{mu};
      if (s) acked[in.run_id] = thread;
      else if (s.code() == errc::unavailable) ++refused;
      else errors.push_back(thread + " via n" + std::to_string(via + 1) + ": " + s.to_string());
    }
  }
};

// Every run in the thread's complete log, checked for one writer: seqs 1..n
// without a gap, each run id's input and result once.
void check_log(runtime& via, const std::string& thread, std::map<std::string, int>* inputs) {
  std::vector<event> events;
  status s = via.read(thread, history_view::complete, 1, 0, &events);
  INFO(thread << ": " << s.to_string());
  REQUIRE(s.is_ok());
  std::map<std::string, int> results;
  for (size_t i = 0; i < events.size(); ++i) {
    INFO(thread << " event " << i);
    CHECK(events[i].seq == i + 1);
    if (events[i].type == event_type::message && events[i].role == message_role::user) ++(*inputs)[events[i].run_id];
    if (events[i].type == event_type::result) ++results[events[i].run_id];
  }
  for (const auto& [run, n] : results) {
    INFO(thread << " run " << run);
    CHECK(n == 1);
  }
}

}  // namespace

TEST_CASE("cluster: a fourth node joins and a rebalance under load moves only its threads once each") {
  const uint32_t seed = std::random_device{}();
  INFO("seed " << seed);
  std::printf("cluster rebalance test seed: %u\n", seed);
  cluster_fixture f;
  f.agent(0);
  const size_t total = 1000;
  std::vector<std::string> threads;
  for (size_t k = 0; k < total; ++k) threads.push_back(f.thread(k % 3).id);
  // Task and DM claims made before the change: some whose key stays with its
  // node (its thread may move), some whose key moves to the new node.
  rendezvous by3{{"n1", "n2", "n3"}}, by4{{"n1", "n2", "n3", "n4"}};
  auto moves = [&](const std::string& key) { return by3.owner_id(key) != by4.owner_id(key); };
  std::vector<std::string> tasks, dm_agents;
  for (int k = 0; tasks.size() < 6 || dm_agents.size() < 4; ++k) {
    std::string t = "task-" + std::to_string(k), a = "dm-agent-" + std::to_string(k);
    if (tasks.size() < 6 && moves(task_key(t)) == (tasks.size() % 2 == 0)) tasks.push_back(t);
    if (dm_agents.size() < 4 && moves(dm_key(a)) == (dm_agents.size() % 2 == 0)) dm_agents.push_back(a);
  }
  std::map<std::string, std::string> claimed;  // task id or DM agent -> its thread
  for (size_t k = 0; k < tasks.size(); ++k) {
    thread_options task;
    task.agent_id = "helper";
    task.task_id = tasks[k];
    manifest m;
    REQUIRE(f.nodes[k % 3]->create_thread(task, &m).is_ok());
    claimed[tasks[k]] = m.id;
    threads.push_back(m.id);
  }
  for (size_t k = 0; k < dm_agents.size(); ++k) {
    test::scripted_agent_on(*f.nodes[0], dm_agents[k], R"({"default":{"reply":"done"}})");
    manifest m;
    REQUIRE(f.nodes[(k + 1) % 3]->dm_thread(dm_agents[k], &m).is_ok());
    claimed[dm_agents[k]] = m.id;
    threads.push_back(m.id);
  }
  for (size_t k = 0; k < 100; ++k) {
    run_input in;
    in.text = "before";
    in.run_id = "run_before_" + std::to_string(k);
    run_result r;
    REQUIRE(f.nodes[k % 3]->send(threads[k * 7], in).wait(&r, 30s).is_ok());
  }

  // n4 joins: it learns the three active members from n1, and takes the
  // four as its target; the others get the same file (serve's SIGHUP).
  size_t n4 = f.add_member();
  f.open(n4);
  for (size_t i = 0; i < 3; ++i) REQUIRE(f.nodes[i]->reload_cluster(f.members).is_ok());
  std::vector<cluster_member_state> ms;
  REQUIRE(f.nodes[n4]->cluster_members(&ms).is_ok());
  REQUIRE(ms.size() == 4);
  CHECK(ms[3].role == "joining");
  CHECK(ms[3].threads == 0);
  // Before the rebalance n4 serves every thread through its active owner.
  manifest m;
  REQUIRE(f.nodes[n4]->get_thread(threads[7], &m).is_ok());

  size_t moving = 0;
  for (const auto& t : threads)
    if (f.owner(t, 3) != f.owner(t)) {
      ++moving;
      CHECK(f.owner(t) == n4);  // rendezvous moves threads onto the new member only
    }
  REQUIRE(moving > 0);

  // A subscriber of a thread that moves, through a node that is not its owner:
  // its stream ends "moved", and a new one resumes where it stopped.
  std::string followed;
  for (size_t k = 0; k < 100 && followed.empty(); ++k)
    if (f.owner(threads[k * 7], 3) != f.owner(threads[k * 7])) followed = threads[k * 7];
  REQUIRE(!followed.empty());
  std::mutex sub_mu;
  std::condition_variable sub_cv;
  uint64_t last_seen = 0;
  std::string end_reason;
  event_sink sink;
  sink.on_event_json = [&](uint64_t seq, event_type, const std::string&) {
    std::lock_guard lock{sub_mu};
    last_seen = seq;
  };
  sink.on_end = [&](const std::string& reason) {
    std::lock_guard lock{sub_mu};
    end_reason = reason;
    sub_cv.notify_all();
  };
  uint64_t sub = 0;
  size_t follow_via = (f.owner(followed, 3) + 1) % 3;
  REQUIRE(f.nodes[follow_via]->subscribe(followed, 1, sink, &sub).is_ok());

  load traffic{f, threads, 4, seed};
  cluster_rebalance_state st;
  status s = f.nodes[1]->rebalance(&st);
  INFO(s.to_string() << " " << st.error);
  REQUIRE(s.is_ok());
  CHECK(st.phase == "committed");
  CHECK(st.moved == moving);
  CHECK(st.remaining == 0);
  std::this_thread::sleep_for(200ms);  // some load after the commit too
  traffic.finish();
  std::printf("rebalance: %llu threads (%llu events, %llu claims) moved; load: %zu runs acknowledged, %llu refused "
              "while moving\n",
              static_cast<unsigned long long>(st.moved), static_cast<unsigned long long>(st.events),
              static_cast<unsigned long long>(st.claims), traffic.acked.size(),
              static_cast<unsigned long long>(traffic.refused));
  {
    INFO("errors: " << traffic.errors.size() << (traffic.errors.empty() ? "" : " first: " + traffic.errors.front()));
    CHECK(traffic.errors.empty());
  }
  CHECK(traffic.acked.size() > 0);

  {
    std::unique_lock lock{sub_mu};
    CHECK(sub_cv.wait_for(lock, 10s, [&] { return !end_reason.empty(); }));
    CHECK(end_reason == "moved");
    CHECK(last_seen > 0);
  }
  f.nodes[follow_via]->unsubscribe(sub).ignore();
  std::vector<event> rest;
  REQUIRE(f.nodes[follow_via]->read(followed, history_view::complete, last_seen + 1, 0, &rest).is_ok());
  event_sink again;
  REQUIRE(f.nodes[follow_via]->subscribe(followed, last_seen + 1, again, &sub).is_ok());
  f.nodes[follow_via]->unsubscribe(sub).ignore();

  // Each thread is stored once, on its owner by the four members.
  std::vector<uint64_t> expected(4, 0);
  for (const auto& t : threads) ++expected[f.owner(t)];
  for (size_t via = 0; via < 4; ++via) {
    REQUIRE(f.nodes[via]->cluster_members(&ms).is_ok());
    for (size_t i = 0; i < 4; ++i) {
      INFO("node n" << i + 1 << " as seen from n" << via + 1);
      CHECK(ms[i].role == "member");
      CHECK(ms[i].threads == expected[i]);
    }
  }
  // Every log gapless, every acknowledged run in it once, nothing twice.
  std::map<std::string, int> inputs;
  for (size_t k = 0; k < threads.size(); ++k) check_log(*f.nodes[k % 4], threads[k], &inputs);
  for (const auto& [run, thread] : traffic.acked) {
    INFO("acknowledged " << run << " on " << thread);
    CHECK(inputs[run] == 1);
  }
  for (const auto& [run, n] : inputs) {
    INFO(run);
    CHECK(n == 1);
    CHECK((run.starts_with("run_before_") || traffic.tried.count(run) == 1));
  }
  // The claims followed their keys: the same threads answer, through any node.
  CHECK(st.claims == 5);  // the keys chosen to move: 3 tasks, 2 DM agents
  for (size_t via = 0; via < 4; ++via) {
    for (const auto& t : tasks) {
      INFO("task " << t << " via n" << via + 1);
      status found = f.nodes[via]->find_task_thread(t, &m);
      INFO(found.to_string());
      REQUIRE(found.is_ok());
      CHECK(m.id == claimed[t]);
      thread_options again;
      again.agent_id = "helper";
      again.task_id = t;
      bool created = true;
      REQUIRE(f.nodes[via]->create_thread(again, &m, &created).is_ok());
      CHECK(m.id == claimed[t]);
      CHECK(!created);
    }
    for (const auto& a : dm_agents) {
      INFO("DM of " << a << " via n" << via + 1);
      bool created = true;
      status found = f.nodes[via]->dm_thread(a, &m, &created);
      INFO(found.to_string());
      REQUIRE(found.is_ok());
      CHECK(m.id == claimed[a]);
      CHECK(!created);
    }
  }
  // New threads after the commit land on their owners among the four.
  for (size_t k = 0; k < 8; ++k) {
    manifest fresh = f.thread(k % 4);
    CHECK(f.owner(fresh.id) == k % 4);
  }
  // A second rebalance has nothing to do.
  REQUIRE(f.nodes[3]->rebalance(&st).is_ok());
  CHECK(st.moved == 0);
}

TEST_CASE("cluster: a handoff cut short by a node going down loses nothing and a rerun finishes it") {
  cluster_fixture f;
  f.agent(0);
  std::vector<std::string> threads;
  for (size_t k = 0; k < 600; ++k) threads.push_back(f.thread(k % 3).id);
  size_t n4 = f.add_member();
  f.open(n4);
  for (size_t i = 0; i < 3; ++i) REQUIRE(f.nodes[i]->reload_cluster(f.members).is_ok());

  // The new owner goes away once some threads reached it.
  cluster_rebalance_state st = f.cut_short_rebalance(0, n4, 20);
  CHECK(st.error.find("n4") != std::string::npos);

  // Meanwhile: a thread is answered, or unavailable naming the node to wait
  // for — never not_found. An old owner restarts in the middle too: its
  // marks are durable.
  f.close(1);
  f.open(1);
  size_t unavailable = 0;
  for (const auto& t : threads) {
    manifest m;
    status s = f.nodes[2]->get_thread(t, &m);
    INFO(t << ": " << s.to_string());
    CHECK((s.is_ok() || s.code() == errc::unavailable));
    if (!s) ++unavailable;
  }
  CHECK(unavailable > 0);
  // A rebalance with a member down is refused before it moves anything.
  CHECK(f.nodes[2]->rebalance(&st).code() == errc::unavailable);

  // Right away: a rebalance asks every node again, past any reconnect backoff.
  f.open(n4);
  status s = f.rerun_rebalance(2, &st);
  INFO(s.to_string() << " " << st.error);
  REQUIRE(s.is_ok());
  std::vector<uint64_t> expected(4, 0);
  for (const auto& t : threads) ++expected[f.owner(t)];
  std::vector<cluster_member_state> ms;
  REQUIRE(f.nodes[0]->cluster_members(&ms).is_ok());
  for (size_t i = 0; i < 4; ++i) {
    INFO("n" << i + 1);
    CHECK(ms[i].threads == expected[i]);
  }
  for (size_t k = 0; k < threads.size(); ++k) {
    manifest m;
    INFO(threads[k]);
    CHECK(f.nodes[k % 4]->get_thread(threads[k], &m).is_ok());
  }
}

TEST_CASE("cluster: a thread's rows adopted by another log are the same thread and foreign rows are refused") {
  test::temp_dir a_dir, b_dir;
  // The source: a thread with runs, written through a runtime.
  std::string id;
  {
    runtime_options o;
    o.data_dir = a_dir.str();
    o.effects.titles = o.effects.embeddings = o.effects.compaction = false;
    std::unique_ptr<runtime> rt;
    REQUIRE(runtime::open(o, &rt).is_ok());
    test::scripted_agent_on(*rt, "helper", R"({"default":{"reply":"done"}})");
    thread_options t;
    t.agent_id = "helper";
    t.tags = {"x"};
    manifest m;
    REQUIRE(rt->create_thread(t, &m).is_ok());
    id = m.id;
    for (int k = 0; k < 3; ++k) {
      run_input in;
      in.text = "hello";
      in.idempotency_key = "key-" + std::to_string(k);
      run_result r;
      REQUIRE(rt->send(id, in).wait(&r, 30s).is_ok());
    }
    REQUIRE(rt->close().is_ok());
  }
  log_options lo;
  lo.path = a_dir.str();
  std::unique_ptr<event_log> src;
  REQUIRE(event_log::open(lo, &src).is_ok());
  std::vector<log_row> rows;
  REQUIRE(src->thread_rows(id, &rows).is_ok());
  CHECK(src->thread_rows("th_absent", &rows).code() == errc::not_found);
  REQUIRE(src->thread_rows(id, &rows).is_ok());

  lo.path = b_dir.str();
  std::unique_ptr<event_log> dst;
  REQUIRE(event_log::open(lo, &dst).is_ok());
  // Refused whole, nothing written: a row of another thread, a second threads
  // row, a manifest that does not decode, an unknown family.
  auto refused = [&](std::vector<log_row> bad, const char* why) {
    bool adopted = true;
    status s = dst->adopt_thread(id, bad, &adopted);
    INFO(why << ": " << s.to_string());
    CHECK(s.code() == errc::invalid_input);
    CHECK(!adopted);
    manifest m;
    CHECK(dst->read_manifest(id, &m).code() == errc::not_found);
  };
  auto with = [&](log_row extra) {
    auto v = rows;
    v.push_back(std::move(extra));
    return v;
  };
  refused(with({2, std::string{"th_other\0\0\0\0\0\0\0\0\x01", 17}, "{}"}), "another thread's event");
  refused(with({1, "th_other", rows.front().value}), "another thread's row");
  refused(with({5, std::string{"titles\0th_other", 15}, "1"}), "another thread's effect cursor");
  refused(with({3, "a/helper/th_other", ""}), "another thread's index entry");
  refused(with({8, "helper", "{}"}), "an agents row");
  auto broken = rows;
  for (auto& r : broken)
    if (r.family == 1) r.value = "{not json";
  refused(broken, "a manifest that does not decode");
  std::vector<log_row> no_manifest;
  for (const auto& r : rows)
    if (r.family != 1) no_manifest.push_back(r);
  refused(no_manifest, "no threads row");

  bool adopted = false;
  REQUIRE(dst->adopt_thread(id, rows, &adopted).is_ok());
  CHECK(adopted);
  REQUIRE(dst->adopt_thread(id, rows, &adopted).is_ok());
  CHECK(!adopted);  // there already: nothing written
  manifest a, b;
  REQUIRE(src->read_manifest(id, &a).is_ok());
  REQUIRE(dst->read_manifest(id, &b).is_ok());
  CHECK(a == b);
  std::vector<event> ea, eb;
  REQUIRE(src->read_events(id, 1, 0, &ea).is_ok());
  REQUIRE(dst->read_events(id, 1, 0, &eb).is_ok());
  CHECK(ea == eb);
  idempotent_run first;
  CHECK(dst->find_idempotent(id, "key-1", &first).is_ok());
  std::vector<log_row> again;
  REQUIRE(dst->thread_rows(id, &again).is_ok());
  CHECK(again.size() == rows.size());
  log_usage u;
  REQUIRE(dst->usage(0, &u).is_ok());
  CHECK(u.threads == 1);
  thread_query q;
  q.index = thread_query::by::tag;
  q.value = "x";
  thread_page page;
  REQUIRE(dst->list_threads(q, &page).is_ok());
  REQUIRE(page.threads.size() == 1);
  CHECK(page.threads[0].id == id);

  // Node rows live under "node/" only.
  CHECK(dst->write_node_rows({{"threads", "5"}}, {}).code() == errc::invalid_input);
  REQUIRE(dst->write_node_rows({{"node/x", "1"}}, {}).is_ok());
  std::vector<std::pair<std::string, std::string>> node_rows;
  REQUIRE(dst->read_node_rows("node/", &node_rows).is_ok());
  CHECK(node_rows.size() == 1);
}

// Another node's handoff messages are checked like a client's: parts out of
// order, rows for a thread this node will not own, rows of another thread.
TEST_CASE("cluster: handoff parts out of order or not this node's to take are refused") {
  cluster_fixture f;
  size_t n4 = f.add_member();
  f.open(n4);
  rendezvous by4{{"n1", "n2", "n3", "n4"}};
  std::string mine, theirs;
  for (int k = 0; mine.empty() || theirs.empty(); ++k) {
    std::string id = "th_20261125_" + std::to_string(100000 + k);
    if (by4.owner_id(id) == "n4" && mine.empty()) mine = id;
    if (by4.owner_id(id) == "n1" && theirs.empty()) theirs = id;
  }
  caf::actor_system_config cfg;
  prepare_cluster_config(cfg);
  caf::actor_system sys{cfg};
  // Connected as a node of this version would (the edge's interface), then
  // used untyped, as a hostile peer's raw messages would arrive.
  auto typed = sys.middleman().remote_actor<edge_actor>("127.0.0.1", f.members[n4].port);
  REQUIRE(typed);
  auto edge = caf::actor_cast<caf::actor>(*typed);
  caf::scoped_actor self{sys};
  auto ask = [&](caf::message msg) {
    status s;
    self->request(edge, std::chrono::seconds(5), std::move(msg))
        .receive([&](bool) { s = status::ok(); }, [&](caf::error& e) { s = to_status(e); });
    return s;
  };
  log_row row{1, mine, "{}"};
  status s = ask(caf::make_message(adopt_atom::value, mine, uint32_t{1}, uint32_t{3}, std::vector<log_row>{row}));
  INFO(s.to_string());
  CHECK(s.code() == errc::invalid_input);
  CHECK(s.message().find("part 0 was due") != std::string::npos);
  s = ask(caf::make_message(adopt_atom::value, mine, uint32_t{3}, uint32_t{3}, std::vector<log_row>{row}));
  CHECK(s.code() == errc::invalid_input);
  s = ask(caf::make_message(adopt_atom::value, theirs, uint32_t{0}, uint32_t{1}, std::vector<log_row>{row}));
  CHECK(s.code() == errc::unavailable);
  CHECK(s.message().find("not the new owner") != std::string::npos);
  // Rows that are no thread's own (a threads row that does not decode).
  s = ask(caf::make_message(adopt_atom::value, mine, uint32_t{0}, uint32_t{1}, std::vector<log_row>{row}));
  CHECK(s.code() == errc::invalid_input);
  std::vector<cluster_member_state> ms;
  REQUIRE(f.nodes[n4]->cluster_members(&ms).is_ok());
  CHECK(ms[n4].threads == 0);
  // A schedule's rows: only for a schedule this node will own, at most its
  // definition and schedule_history_max firings, each row the schedule's own;
  // a refusal writes nothing.
  std::string mine_s, theirs_s;
  for (int k = 0; mine_s.empty() || theirs_s.empty(); ++k) {
    std::string id = "sched-" + std::to_string(k);
    if (by4.owner_id(id) == "n4" && mine_s.empty()) mine_s = id;
    if (by4.owner_id(id) == "n1" && theirs_s.empty()) theirs_s = id;
  }
  schedule def;
  def.id = mine_s;
  def.agent_id = "helper";
  def.kind = schedule_kind::interval;
  def.interval_ms = 3600000;
  def.input_text = "tick";
  def.next_fire_at_ms = 1;
  std::string def_json;
  REQUIRE(encode_schedule(def, &def_json).is_ok());
  schedule_firing firing;
  firing.schedule_id = mine_s;
  firing.seq = 1;
  firing.scheduled_at_ms = firing.fired_at_ms = 1;
  std::string firing_json;
  REQUIRE(encode_firing(firing, &firing_json).is_ok());
  const uint8_t schedules_family = 7;
  log_row definition{schedules_family, "d/" + mine_s, def_json};
  log_row history{schedules_family, "h/" + mine_s + std::string{"\0\0\0\0\0\0\0\0\x01", 9}, firing_json};
  auto adopt_schedule = [&](const std::string& id, std::vector<log_row> rows) {
    return ask(caf::make_message(schedule_atom::value, adopt_atom::value, id, std::move(rows)));
  };
  auto refused = [&](std::vector<log_row> rows, errc code, const char* why) {
    status r = adopt_schedule(mine_s, std::move(rows));
    INFO(why << ": " << r.to_string());
    CHECK(r.code() == code);
    schedule none;
    CHECK(f.nodes[n4]->get_schedule(mine_s, &none).code() == errc::not_found);
  };
  s = adopt_schedule(theirs_s, {definition});
  CHECK(s.code() == errc::unavailable);
  CHECK(s.message().find("not the new owner") != std::string::npos);
  refused(std::vector<log_row>(schedule_history_max + 2, history), errc::invalid_input, "past schedule_history_max");
  refused({history}, errc::invalid_input, "no definition");
  refused({definition, definition, history}, errc::invalid_input, "two definitions");
  refused({{schedules_family, "d/" + theirs_s, def_json}, history}, errc::invalid_input, "another schedule's definition");
  refused({{schedules_family, "d/" + mine_s, "{not json"}}, errc::invalid_input, "a definition that does not decode");
  refused({definition, {schedules_family, history.key, "[1]"}}, errc::invalid_input, "a firing that does not decode");
  refused({definition, {schedules_family, "h/" + theirs_s + std::string{"\0\0\0\0\0\0\0\0\x01", 9}, firing_json}},
          errc::invalid_input, "another schedule's firing");
  refused({definition, {1, mine, "{}"}}, errc::invalid_input, "a threads row");
  s = adopt_schedule(mine_s, {definition, history});
  INFO(s.to_string());
  REQUIRE(s.is_ok());
  schedule adopted_schedule;
  REQUIRE(f.nodes[n4]->get_schedule(mine_s, &adopted_schedule).is_ok());
  CHECK(adopted_schedule.interval_ms == 3600000u);
  std::vector<schedule_firing> firings;
  uint64_t next_firing = 0;
  REQUIRE(f.nodes[n4]->schedule_history(mine_s, 0, 10, &firings, &next_firing).is_ok());
  CHECK(firings.size() == 1);
  // A commit or a pass for another target is refused by name.
  s = ask(caf::make_message(membership_commit_atom::value, std::string{"n1 127.0.0.1:1\n"}));
  CHECK(s.code() == errc::conflict);
  s = ask(caf::make_message(rebalance_atom::value, std::string{"n1 127.0.0.1:1\n"}));
  CHECK(s.code() == errc::conflict);
  CHECK(s.message().find("SIGHUP") != std::string::npos);
}

// Delegation through a cluster: a run sent through a node that does not own the
// thread delegates on the owner (a child lives with its parent: its id's root
// is the parent's), every node reads the family, and a rebalance moves the
// family together.
TEST_CASE("cluster: a delegation chain runs on its root's owner and moves with it") {
  cluster_fixture f;
  auto asker = [](const std::string& target, const std::string& prefix) {
    return R"({"rules": [{"turn": 1, "tool_calls": [{"name": "ask_agent", "id": "ask1", "arguments": {"agent": ")" +
           target + R"(", "question": "and you?"}}]}], "default": {"reply": ")" + prefix + R"({tool_result}"}})";
  };
  auto agent = [&](const std::string& id, const std::string& rules, std::vector<std::string> delegates) {
    agent_config a;
    a.id = id;
    a.engine_config = rules;
    a.delegation.agents = std::move(delegates);
    status s = f.nodes[1]->create_agent(a);  // through a node that is not the coordinator
    INFO(s.to_string());
    REQUIRE(s.is_ok());
  };
  agent("a", asker("b", "a heard: "), {"b"});
  agent("b", asker("c", "b heard: "), {"c"});
  agent("c", R"({"default": {"reply": "c says 42"}})", {});
  // Roots created on every node, until some will move to a fourth node and
  // some stay; each run sent through another node.
  std::vector<std::string> roots;
  rendezvous by4{{"n1", "n2", "n3", "n4"}};
  size_t moving = 0;
  for (size_t k = 0; k < 40 && (k < 6 || moving == 0 || moving == roots.size()); ++k) {
    thread_options o;
    o.agent_id = "a";
    manifest m;
    REQUIRE(f.nodes[k % 3]->create_thread(o, &m).is_ok());
    roots.push_back(m.id);
    moving += by4.owner_id(m.id) == "n4";
    run_input in;
    in.text = "go";
    run_result r;
    status s = f.nodes[(k + 1) % 3]->send(m.id, in).wait(&r, 30s);
    INFO(s.to_string() << " " << r.error);
    REQUIRE(s.is_ok());
    CHECK(r.outcome == run_outcome::completed);
    CHECK(r.text == "a heard: b heard: c says 42");
  }
  auto check_family = [&](const std::string& root, size_t via) {
    manifest child, grandchild;
    REQUIRE(f.nodes[via]->get_thread(root + ".1", &child).is_ok());
    CHECK(child.agent_id == "b");
    CHECK(child.parent_id == root);
    REQUIRE(f.nodes[via]->get_thread(root + ".1.1", &grandchild).is_ok());
    CHECK(grandchild.agent_id == "c");
    thread_query q;
    q.index = thread_query::by::parent;
    q.value = root;
    thread_page page;
    REQUIRE(f.nodes[via]->list_threads(q, &page).is_ok());
    REQUIRE(page.threads.size() == 1);
    CHECK(page.threads[0].id == root + ".1");
  };
  for (size_t k = 0; k < roots.size(); ++k) check_family(roots[k], (k + 2) % 3);
  // Each family is stored on its root's owner: three threads per root there.
  std::vector<uint64_t> expected(3, 0);
  for (const auto& root : roots) expected[f.owner(root)] += 3;
  std::vector<cluster_member_state> ms;
  REQUIRE(f.nodes[0]->cluster_members(&ms).is_ok());
  for (size_t i = 0; i < 3; ++i) CHECK(ms[i].threads == expected[i]);

  // A fourth node: whole families move, or none of their threads.
  size_t n4 = f.add_member();
  f.open(n4);
  for (size_t i = 0; i < 3; ++i) REQUIRE(f.nodes[i]->reload_cluster(f.members).is_ok());
  cluster_rebalance_state st;
  REQUIRE(f.nodes[2]->rebalance(&st).is_ok());
  std::vector<uint64_t> after(4, 0);
  for (const auto& root : roots) after[f.owner(root)] += 3;
  REQUIRE(moving > 0);
  CHECK(st.moved == after[n4]);
  CHECK(st.moved == 3 * moving);
  REQUIRE(f.nodes[0]->cluster_members(&ms).is_ok());
  for (size_t i = 0; i < 4; ++i) CHECK(ms[i].threads == after[i]);
  for (size_t k = 0; k < roots.size(); ++k) check_family(roots[k], k % 4);
  // A schedule bound to a thread of another node is made there, through any node.
  schedule sc;
  sc.agent_id = "a";
  sc.thread_id = roots[0];
  sc.kind = schedule_kind::interval;
  sc.interval_ms = 3600000;  // never due during the test
  sc.input_text = "tick";
  size_t home = f.owner(roots[0]), away = (home + 1) % 4;
  schedule made, read;
  REQUIRE(f.nodes[away]->create_schedule(sc, &made).is_ok());
  CHECK(made.id.rfind(roots[0] + ".", 0) == 0);
  REQUIRE(f.nodes[(away + 1) % 4]->get_schedule(made.id, &read).is_ok());
  CHECK(read.thread_id == roots[0]);

  // And a moved family delegates again on its new owner.
  std::string moved_root;
  for (const auto& root : roots)
    if (by4.owner_id(root) == "n4") moved_root = root;
  run_input in;
  in.text = "again";
  run_result r;
  REQUIRE(f.nodes[0]->send(moved_root, in).wait(&r, 30s).is_ok());
  CHECK(r.text == "a heard: b heard: c says 42");
}
