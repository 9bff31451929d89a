// The edge protocol between cluster nodes as bytes: every message form
// round-trips through the wire encoding with the types a node registers, cut
// and hostile bytes are refused, and a message outside the protocol is answered
// with an error. Calls served across live nodes are in cluster_node_test.cpp.
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
