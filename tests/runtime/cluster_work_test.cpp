// Work items in a cluster (runtime_work.cpp): an agent's work lives on its work
// home (the owner of work_home_key(agent)), its items' ids lead with that key,
// and every call — by agent or by item — answers the same through any node; the
// graph lenses gather every node's triples; a rebalance moves an agent's items
// (rows and triples), sessions and suggestions together to its new home.
#include <catch2/catch.hpp>

#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/scoped_actor.hpp>
#include <map>
#include <set>

#include "actors/error.hpp"
#include "persistence/work_rows.hpp"
#include "runtime/cluster/cluster_link.hpp"
#include "tests/runtime/cluster_fixture.hpp"
#include "tests/support/runtime_call.hpp"

using namespace skein;
using namespace skein::test;
using namespace std::chrono_literals;

namespace {

size_t home_of(cluster_fixture& f, const std::string& agent, size_t count = 0) {
  return f.owner(work_home_key(agent), count);
}

void make_agent(cluster_fixture& f, size_t via, const std::string& id) {
  agent_config a;
  a.id = id;
  a.system_prompt = "test";
  a.engine_config = R"({"default":{"reply":"done"}})";
  status s = f.nodes[via]->create_agent(a);
  INFO(s.to_string());
  REQUIRE(s.is_ok());
}

// answer_of() on node `via`, naming the node and the agent on failure.
template <class Out, class In>
Out answer_of(cluster_fixture& f, size_t via, const std::string& agent, status (runtime::*call)(const In&, Out*),
              const In& request) {
  INFO(agent << " via n" << via + 1);
  return test::answer_of(*f.nodes[via], call, request);
}

work_create_result create(cluster_fixture& f, size_t via, const std::string& agent, const std::string& text,
                          std::vector<std::string> relates = {}) {
  work_create c;
  c.agent_id = agent;
  c.text = text;
  c.relates_to = std::move(relates);
  return answer_of(f, via, agent, &runtime::create_item, c);
}

work_session_closed close_session(cluster_fixture& f, size_t via, const std::string& agent, const std::string& session,
                                  std::vector<std::string> topics) {
  work_session_close c;
  c.agent_id = agent;
  c.session_id = session;
  c.topics = std::move(topics);
  return answer_of(f, via, agent, &runtime::session_close, c);
}

std::vector<std::string> ids_of(const work_list_page& p) {
  std::vector<std::string> out;
  for (const auto& e : p.items) out.push_back(e.thread.id);
  return out;
}

work_list_page list(cluster_fixture& f, size_t via, const std::string& agent) {
  work_list_query q;
  q.agent_id = agent;
  return answer_of(f, via, agent, &runtime::list_items, q);
}

uint64_t threads_stored(cluster_fixture& f, size_t node) {
  std::vector<cluster_member_state> members;
  REQUIRE(f.nodes[node]->cluster_members(&members).is_ok());
  for (const auto& m : members)
    if (m.self) return m.threads;
  FAIL("no member is this node");
  return 0;
}

const std::string topic = "flaky integration tests in the payments service";

}  // namespace

TEST_CASE("cluster: an agent's work lives on its home and answers the same through any node") {
  cluster_fixture f;
  f.agent(0);
  const size_t home = home_of(f, "helper");
  // Items created through every node: all on the agent's home.
  std::vector<std::string> items;
  const std::vector<std::string> texts = {"fire the kiln", "moor at the harbor", "shape the anvil"};
  for (size_t i = 0; i < f.n; ++i) {
    auto r = create(f, i, "helper", texts[i], {"GH-" + std::to_string(i)});
    CHECK(!r.deduplicated);
    CHECK(work_home_key_of(r.thread.id) == work_home_key("helper"));
    CHECK(f.owner(r.thread.id) == home);
    items.push_back(r.thread.id);
  }
  // Dedup sees every item, whichever node is asked: the same text is the same item.
  for (size_t i = 0; i < f.n; ++i) {
    auto again = create(f, (i + 1) % f.n, "helper", texts[i]);
    CHECK(again.deduplicated);
    CHECK(again.thread.id == items[i]);
  }
  // One listing, the same through every node.
  auto first = list(f, 0, "helper");
  CHECK(first.items.size() == 3);
  for (size_t via = 1; via < f.n; ++via) CHECK(ids_of(list(f, via, "helper")) == ids_of(first));
  // By item id through any node.
  for (size_t k = 0; k < items.size(); ++k) {
    work_entry touched, related, read;
    REQUIRE(f.nodes[(k + 1) % f.n]->touch_item(items[k], &touched).is_ok());
    CHECK(touched.thread.work->touch_count == 2);  // the dedup above touched it once
    REQUIRE(f.nodes[(k + 2) % f.n]->relate_item(items[k], "JIRA-" + std::to_string(k), &related).is_ok());
    REQUIRE(f.nodes[k]->get_item(items[k], &read).is_ok());
    CHECK(read.thread.work->touch_count == 2);
  }
  // Resolve by text through a node that is not the home.
  work_resolve by_text;
  by_text.agent_id = "helper";
  by_text.text_match = "kiln";
  by_text.note = "fired";
  work_entry resolved;
  REQUIRE(f.nodes[(home + 1) % f.n]->resolve_item(by_text, &resolved).is_ok());
  CHECK(resolved.thread.id == items[0]);
  CHECK(resolved.thread.work->status == work_status::resolved);
  for (size_t via = 0; via < f.n; ++via) CHECK(list(f, via, "helper").items.size() == 2);
  // Sessions through different nodes: the topic recurs in three, a suggestion
  // appears, listed and dismissed through any node.
  work_session_start start;
  start.agent_id = "helper";
  work_session_started started;
  REQUIRE(f.nodes[(home + 2) % f.n]->session_start(start, &started).is_ok());
  CHECK(started.items.size() == 2);
  close_session(f, 0, "helper", "s1", {topic});
  close_session(f, 1, "helper", "s2", {topic});
  auto third = close_session(f, 2, "helper", "s3", {topic});
  REQUIRE(third.suggestions.size() == 1);
  const work_suggestion sug = third.suggestions[0];
  CHECK(work_home_key_of(sug.id) == work_home_key("helper"));
  CHECK(std::set<std::string>(sug.sessions.begin(), sug.sessions.end()) == std::set<std::string>{"s1", "s2", "s3"});
  for (size_t via = 0; via < f.n; ++via) {
    std::vector<work_suggestion> pending;
    REQUIRE(f.nodes[via]->list_suggestions("helper", false, &pending).is_ok());
    REQUIRE(pending.size() == 1);
    CHECK(pending[0].id == sug.id);
  }
  work_suggestion dismissed;
  REQUIRE(f.nodes[(home + 1) % f.n]->dismiss_suggestion(sug.id, &dismissed).is_ok());
  CHECK(dismissed.status == suggestion_status::dismissed);
  // The graph: every lens the same through every node.
  work_graph_stats stats0;
  REQUIRE(f.nodes[0]->graph_stats(&stats0).is_ok());
  CHECK(stats0.triples == 3 + 3 + 3 + 1);  // created, relates GH, relates JIRA, one resolve
  for (size_t via = 0; via < f.n; ++via) {
    std::vector<work_triple> t;
    REQUIRE(f.nodes[via]->graph_connected_to("issue:GH-1", 10, &t).is_ok());
    REQUIRE(t.size() == 1);
    CHECK(t[0].subject == "thread:" + items[1]);
    REQUIRE(f.nodes[via]->graph_produced_by("helper", 100, &t).is_ok());
    CHECK(t.size() == stats0.triples);
    REQUIRE(f.nodes[via]->graph_provenance("issue:GH-2", 2, 10, &t).is_ok());
    CHECK(t.size() == 2);  // relates_to, then the item's creation
    work_graph_stats st;
    REQUIRE(f.nodes[via]->graph_stats(&st).is_ok());
    CHECK(st.triples == stats0.triples);
    CHECK(st.nodes == stats0.nodes);
    CHECK(st.by_predicate == stats0.by_predicate);
    // The merged tops are those of every triple counted in one place.
    std::vector<work_triple> every;
    REQUIRE(f.nodes[via]->graph_produced_by("helper", work_list_limit_max, &every).is_ok());
    work_graph_tally one;
    for (const auto& x : every) one.add(x);
    work_graph_stats whole = one.stats();
    CHECK(st.nodes == whole.nodes);
    CHECK(st.top_subjects == whole.top_subjects);
    CHECK(st.top_objects == whole.top_objects);
    CHECK(st.top_issues == whole.top_issues);
    CHECK(st.top_agents == whole.top_agents);
    CHECK_FALSE(st.top_issues.empty());
    work_sweep_result swept;
    REQUIRE(f.nodes[via]->sweep_items({}, &swept).is_ok());
    CHECK(swept.examined >= 2);
  }
  // Refusals name the field before anything crosses.
  work_create bad;
  bad.agent_id = "../x";
  bad.text = "t";
  work_create_result r;
  CHECK(f.nodes[(home + 1) % f.n]->create_item(bad, &r).code() == errc::invalid_input);
  bad.agent_id = std::string(100000, 'a');
  CHECK(f.nodes[(home + 1) % f.n]->create_item(bad, &r).code() == errc::invalid_input);
  std::vector<work_triple> t;
  CHECK(f.nodes[0]->graph_connected_to("no-colon", 10, &t).code() == errc::invalid_input);
  CHECK(f.nodes[0]->graph_connected_to("issue:x", 0, &t).code() == errc::invalid_input);

  // At the edge of a node that is not the home: a call by agent is refused as
  // another's, an unknown lens, a work handoff while no change is under way.
  const size_t away = (home + 1) % f.n;
  caf::actor_system_config cfg;
  prepare_cluster_config(cfg);
  caf::actor_system sys{cfg};
  auto edge = sys.middleman().remote_actor<edge_actor>("127.0.0.1", f.members[away].port);
  REQUIRE(edge);
  caf::scoped_actor self{sys};
  // Each call answered by an error; R: the reply the interface names for it.
  auto ask = [&](auto reply, auto... xs) {
    using R = decltype(reply);
    status s = status::ok();
    self->request(*edge, 5s, xs...).receive([&](R&) {}, [&](caf::error& err) { s = to_status(err); });
    return s;
  };
  work_create c;
  c.agent_id = "helper";
  c.text = "sneaked in";
  status s = ask(work_create_result{}, work_atom::value, create_atom::value, c);
  CHECK(s.code() == errc::unavailable);
  CHECK(s.message().find("not the work home") != std::string::npos);
  s = ask(std::vector<work_triple>{}, work_atom::value, graph_atom::value, uint8_t{9}, std::string{"issue:x"}, uint64_t{10},
          work_graph_filter{});
  CHECK(s.code() == errc::invalid_input);
  s = ask(std::vector<work_triple>{}, work_atom::value, graph_atom::value, uint8_t{0}, std::string(100000, 'x'), uint64_t{10},
          work_graph_filter{});
  CHECK(s.code() == errc::invalid_input);
  s = ask(std::vector<work_triple>{}, work_atom::value, graph_atom::value, uint8_t{0}, std::string{"issue:x"}, uint64_t{10},
          work_graph_filter{std::string(100000, 'p'), ""});
  CHECK(s.code() == errc::invalid_input);
  CHECK(s.field() == "predicate");
  s = ask(true, work_atom::value, adopt_atom::value, std::string{"helper"}, std::vector<log_row>{});
  CHECK(s.code() == errc::unavailable);
  CHECK(s.message().find("not the new work home") != std::string::npos);
  // By item id at an edge: an item this node does not own, a resolve by text
  // through the item call, a 100 kB issue id.
  s = ask(work_entry{}, item_atom::value, caf::get_atom::value, items[1]);
  CHECK(s.code() == errc::unavailable);
  CHECK(s.message().find("does not own") != std::string::npos);
  s = ask(work_entry{}, item_atom::value, item_resolve_atom::value, by_text);
  CHECK(s.code() == errc::invalid_input);
  CHECK(s.field() == "thread_id");
  auto home_edge = sys.middleman().remote_actor<edge_actor>("127.0.0.1", f.members[home].port);
  REQUIRE(home_edge);
  status big = status::ok();
  self->request(*home_edge, 5s, item_atom::value, relate_atom::value, items[1], std::string(100000, 'x'))
      .receive([&](work_entry&) {}, [&](caf::error& err) { big = to_status(err); });
  CHECK(big.code() == errc::invalid_input);
  CHECK(list(f, away, "helper").items.size() == 2);  // nothing was created
}

TEST_CASE("cluster: each work message round-trips through the wire encoding") {
  caf::actor_system_config cfg;
  register_wire_types(cfg);
  caf::actor_system sys{cfg};
  auto same = [&](const caf::message& m) {
    std::vector<char> buf;
    caf::binary_serializer sink{sys, buf};
    REQUIRE(!sink(const_cast<caf::message&>(m)));
    caf::message back;
    caf::binary_deserializer source{sys, buf};
    auto e = source(back);
    INFO(sys.render(e));
    REQUIRE(!e);
    CHECK(caf::to_string(back) == caf::to_string(m));
    return back;
  };
  manifest item;
  item.id = work_item_id("helper", 1795391999000);
  item.agent_id = "helper";
  item.work = work_item{};
  item.work->text = "an item";
  work_create c{"helper", "an item", "s1", {"GH-1"}, {"t"}};
  CHECK(same(caf::make_message(work_atom::value, create_atom::value, c)).get_as<work_create>(2).relates_to == c.relates_to);
  work_create_result cr{item, true, "embedding", 0.93};
  auto crm = same(caf::make_message(cr));
  CHECK(crm.get_as<work_create_result>(0).thread == item);
  CHECK(crm.get_as<work_create_result>(0).similarity == 0.93);
  work_list_query q;
  q.agent_id = "helper";
  q.stages = {work_stage::dormant, work_stage::resolved};
  q.project_state = true;
  q.limit = 7;
  q.cursor = "c";
  auto qm = same(caf::make_message(work_atom::value, list_atom::value, q));
  CHECK(qm.get_as<work_list_query>(2).stages == q.stages);
  CHECK(qm.get_as<work_list_query>(2).limit == 7);
  work_list_page page;
  page.items = {{item, {0.5, 0.25, 0.75, work_stage::cooling, 9}}};
  page.next_cursor = "n";
  CHECK(same(caf::make_message(page)).get_as<work_list_page>(0).items.front().vitality.stage == work_stage::cooling);
  same(caf::make_message(work_atom::value, work_sweep_atom::value, work_sweep_options{"helper", true}));
  work_sweep_result sr{4, {"a"}, {"b", "c"}};
  CHECK(same(caf::make_message(sr)).get_as<work_sweep_result>(0).archived == sr.archived);
  work_suggestion sug{"wk_0_sug_1", "helper", "a topic", suggestion_status::suppressed, {"s1", "s2"}, 3, "th", 5, 6};
  CHECK(same(caf::make_message(std::vector<work_suggestion>{sug})).get_as<std::vector<work_suggestion>>(0).front() == sug);
  CHECK(same(caf::make_message(sug)).get_as<work_suggestion>(0) == sug);
  same(caf::make_message(work_atom::value, suggest_atom::value, std::string{"helper"}, true));
  same(caf::make_message(work_atom::value, promote_atom::value, sug.id, std::string{"web"}));
  same(caf::make_message(work_atom::value, dismiss_atom::value, sug.id));
  same(caf::make_message(work_atom::value, session_start_atom::value, work_session_start{"helper", "s9", false}));
  work_session_started st{"s9", page.items, page.items, {sug}, sr};
  CHECK(same(caf::make_message(st)).get_as<work_session_started>(0).suggestions.front() == sug);
  work_session_close close{"helper", "s9", "summary", {"open"}, {"topic"}};
  CHECK(same(caf::make_message(work_atom::value, session_close_atom::value, close))
            .get_as<work_session_close>(2)
            .topics == close.topics);
  work_session_closed closed{{cr}, {sug}};
  CHECK(same(caf::make_message(closed)).get_as<work_session_closed>(0).items.front().thread == item);
  work_triple t{"agent:helper", "created_thread", "thread:" + item.id, "helper", item.id, 1, 2};
  CHECK(same(caf::make_message(std::vector<work_triple>{t, t})).get_as<std::vector<work_triple>>(0).back() == t);
  auto gm = same(caf::make_message(work_atom::value, graph_atom::value, uint8_t{2}, std::string{"issue:x"}, uint64_t{10},
                                   work_graph_filter{"created_thread", "web"}));
  CHECK(gm.get_as<work_graph_filter>(5).project == "web");
  same(caf::make_message(work_atom::value, graph_stats_atom::value, std::string{"web"}));
  work_graph_stats gs{10, 7, {{"created_thread", 3}, {"relates_to_thread", 7}}, {{"agent:helper", 3}}, {{"issue:x", 2}},
                      {{"issue:x", 2}}, {{"agent:helper", 10}}};
  work_graph_shared part{{{"agent:helper", 3}}, {{"issue:x", 2}}, {{"agent:helper", 10}}, {{"thread:t", 1}}, {}, 4};
  auto gsm = same(caf::make_message(gs, part));
  CHECK(gsm.get_as<work_graph_stats>(0).by_predicate == gs.by_predicate);
  CHECK(gsm.get_as<work_graph_stats>(0).top_agents == gs.top_agents);
  CHECK(gsm.get_as<work_graph_shared>(1).thread_subjects == part.thread_subjects);
  CHECK(gsm.get_as<work_graph_shared>(1).thread_nodes == 4);
  same(caf::make_message(work_atom::value, adopt_atom::value, std::string{"helper"},
                         std::vector<log_row>{{13, "helper/s1", "{}"}}));
  // A stage or status out of range is refused on load.
  std::vector<char> buf;
  caf::binary_serializer sink{sys, buf};
  work_suggestion bad = sug;
  bad.status = static_cast<suggestion_status>(9);
  REQUIRE(!sink(bad));
  work_suggestion back;
  caf::binary_deserializer source{sys, buf};
  CHECK(source(back));
  buf.clear();
  caf::binary_serializer sink2{sys, buf};
  work_list_query badq = q;
  badq.stages.push_back(static_cast<work_stage>(42));
  REQUIRE(!sink2(badq));
  work_list_query backq;
  caf::binary_deserializer source2{sys, buf};
  CHECK(source2(backq));
}

TEST_CASE("cluster: a rebalance moves an agent's items, sessions and suggestions to its new home") {
  cluster_fixture f;
  // Agents whose home moves to the fourth member, and one whose home stays.
  std::vector<std::string> moving;
  std::string staying;
  const rendezvous four{{"n1", "n2", "n3", "n4"}};  // the members once the fourth has joined
  for (int i = 0; moving.size() < 2 || staying.empty(); ++i) {
    std::string id = "agent-" + std::to_string(i);
    if (four.owner(work_home_key(id)) == 3) {
      if (moving.size() < 2) moving.push_back(id);
    } else if (staying.empty()) {
      staying = id;
    }
  }
  std::map<std::string, std::vector<std::string>> items;
  std::map<std::string, std::string> suggestion;
  std::vector<std::string> agents = moving;
  agents.push_back(staying);
  for (const auto& a : agents) {
    make_agent(f, 0, a);
    for (int k = 0; k < 3; ++k)
      items[a].push_back(create(f, k % f.n, a, a + " chore " + std::to_string(k), {a + "-issue-" + std::to_string(k)})
                             .thread.id);
    for (int k = 0; k < 2; ++k) close_session(f, k % f.n, a, a + "-s" + std::to_string(k), {topic});
    auto third = close_session(f, 2, a, a + "-s2", {topic});
    REQUIRE(third.suggestions.size() == 1);
    suggestion[a] = third.suggestions[0].id;
  }
  work_graph_stats before;
  REQUIRE(f.nodes[0]->graph_stats(&before).is_ok());
  uint64_t stored_before = 0;
  for (size_t i = 0; i < f.n; ++i) stored_before += threads_stored(f, i);

  const size_t added = f.join_and_rebalance(1);
  REQUIRE(added == 3);
  // Every item of a moving agent is stored on the new home, and each thread on one node.
  uint64_t stored_after = 0;
  for (size_t i = 0; i < 4; ++i) stored_after += threads_stored(f, i);
  CHECK(stored_after == stored_before);
  for (const auto& a : agents) {
    const size_t home = home_of(f, a);
    CHECK(home == (a == staying ? home_of(f, a, 3) : 3));
    for (const auto& id : items[a]) {
      CHECK(f.owner(id) == home);
      for (size_t via = 0; via < 4; ++via) {
        work_entry e;
        status s = f.nodes[via]->get_item(id, &e);
        INFO(a << " " << id << " via n" << via + 1 << ": " << s.to_string());
        REQUIRE(s.is_ok());
        CHECK(e.thread.work->status == work_status::open);
      }
    }
    // Listing and dedup on the new home see every item (its index took them up).
    for (size_t via = 0; via < 4; ++via) CHECK(list(f, via, a).items.size() == 3);
    auto again = create(f, 0, a, a + " chore 1");
    CHECK(again.deduplicated);
    CHECK(again.thread.id == items[a][1]);
    // The sessions moved: a fourth recurrence is evidence for the same suggestion,
    // which the new home finds by its id.
    auto fourth = close_session(f, 1, a, a + "-s3", {topic});
    REQUIRE(fourth.suggestions.size() == 1);
    CHECK(fourth.suggestions[0].id == suggestion[a]);
    CHECK(fourth.suggestions[0].sessions.size() == 4);
    work_suggestion d;
    REQUIRE(f.nodes[2]->dismiss_suggestion(suggestion[a], &d).is_ok());
    CHECK(d.status == suggestion_status::dismissed);
    // The triples came with the items: each issue is still connected, once.
    for (int k = 0; k < 3; ++k) {
      std::vector<work_triple> t;
      REQUIRE(f.nodes[k]->graph_connected_to("issue:" + a + "-issue-" + std::to_string(k), 10, &t).is_ok());
      CHECK(t.size() == 1);
    }
  }
  work_graph_stats after;
  REQUIRE(f.nodes[3]->graph_stats(&after).is_ok());
  CHECK(after.by_predicate == before.by_predicate);  // nothing lost, nothing doubled (the dedups touched, no triple)
  CHECK(after.nodes == before.nodes);
}

TEST_CASE("cluster: an item's rows and an agent's work adopted by another log, and foreign rows refused") {
  test::temp_dir a_dir, b_dir;
  runtime_options o;
  o.data_dir = a_dir.str();
  o.effects.titles = o.effects.embeddings = o.effects.compaction = false;
  std::string id, other;
  {
    std::unique_ptr<runtime> rt;
    REQUIRE(runtime::open(o, &rt).is_ok());
    for (const char* name : {"helper", "rival"}) {
      agent_config a;
      a.id = name;
      REQUIRE(rt->create_agent(a).is_ok());
    }
    work_create c;
    c.agent_id = "helper";
    c.text = "mend the sails";
    c.relates_to = {"GH-1"};
    work_create_result r;
    REQUIRE(rt->create_item(c, &r).is_ok());
    id = r.thread.id;
    c.agent_id = "rival";
    c.text = "steal the sails";
    REQUIRE(rt->create_item(c, &r).is_ok());
    other = r.thread.id;
    for (const char* agent : {"helper", "rival"})
      for (int k = 0; k < 3; ++k) {
        work_session_close s;
        s.agent_id = agent;
        s.session_id = std::string{agent} + "-s" + std::to_string(k);
        s.topics = {topic};
        work_session_closed closed;
        REQUIRE(rt->session_close(s, &closed).is_ok());
      }
    REQUIRE(rt->close().is_ok());
  }
  log_options lo;
  lo.path = a_dir.str();
  std::unique_ptr<event_log> src;
  REQUIRE(event_log::open(lo, &src).is_ok());
  std::vector<log_row> rows, rival_rows;
  REQUIRE(src->thread_rows(id, &rows).is_ok());
  REQUIRE(src->thread_rows(other, &rival_rows).is_ok());
  auto family = [](const std::vector<log_row>& v, uint8_t fam) {
    std::vector<log_row> out;
    for (const auto& r : v)
      if (r.family == fam) out.push_back(r);
    return out;
  };
  CHECK(family(rows, 11).size() == 1);  // the work row
  CHECK(family(rows, 12).size() == 6);  // two triples, three keys each
  std::vector<std::string> agents;
  REQUIRE(src->work_agents(&agents).is_ok());
  CHECK(agents == std::vector<std::string>{"helper", "rival"});
  std::vector<log_row> work, rival_work;
  REQUIRE(src->agent_work_rows("helper", &work).is_ok());
  REQUIRE(src->agent_work_rows("rival", &rival_work).is_ok());
  CHECK(family(work, 13).size() == 3);  // sessions
  CHECK(family(work, 14).size() == 1);  // the suggestion

  lo.path = b_dir.str();
  std::unique_ptr<event_log> dst;
  REQUIRE(event_log::open(lo, &dst).is_ok());
  auto with = [](std::vector<log_row> v, const log_row& extra) {
    v.push_back(extra);
    return v;
  };
  // An item's handoff carrying another item's work row or triple: refused whole.
  for (const auto& bad : {with(rows, family(rival_rows, 11).front()), with(rows, family(rival_rows, 12).front()),
                          with(rows, log_row{12, "s/thread:" + id + std::string{"\0x", 2}, "{not json"})}) {
    bool adopted = true;
    status s = dst->adopt_thread(id, bad, &adopted);
    INFO(s.to_string());
    CHECK(s.code() == errc::invalid_input);
    CHECK(!adopted);
    manifest m;
    CHECK(dst->read_manifest(id, &m).code() == errc::not_found);
  }
  // An agent's work carrying another agent's session, an item's row, or bytes
  // that do not decode: refused whole.
  for (const auto& bad : {with(work, family(rival_work, 13).front()), with(work, family(rows, 11).front()),
                          with(work, log_row{13, "helper/x", "{not json"})}) {
    status s = dst->adopt_agent_work("helper", bad);
    INFO(s.to_string());
    CHECK(s.code() == errc::invalid_input);
    std::vector<log_row> none;
    REQUIRE(dst->agent_work_rows("helper", &none).is_ok());
    CHECK(none.empty());
  }
  // Whole: written, and read back the same.
  bool adopted = false;
  REQUIRE(dst->adopt_thread(id, rows, &adopted).is_ok());
  CHECK(adopted);
  REQUIRE(dst->adopt_agent_work("helper", work).is_ok());
  std::vector<log_row> back;
  REQUIRE(dst->thread_rows(id, &back).is_ok());
  CHECK(family(back, 11).size() == 1);
  CHECK(family(back, 12).size() == 6);
  REQUIRE(dst->agent_work_rows("helper", &back).is_ok());
  CHECK(back.size() == work.size());
  // Erased on the old log: its other agent's work stays.
  REQUIRE(src->erase_agent_work("helper").is_ok());
  REQUIRE(src->agent_work_rows("helper", &back).is_ok());
  CHECK(back.empty());
  REQUIRE(src->agent_work_rows("rival", &back).is_ok());
  CHECK(back.size() == rival_work.size());
}

TEST_CASE("cluster: an agent's work whose move was cut short answers moving, and a rerun moves it whole") {
  cluster_fixture f;
  f.agent(0);
  const size_t n4 = f.add_member();
  f.open(n4);
  const rendezvous four{{"n1", "n2", "n3", "n4"}};
  std::string agent;
  for (int i = 0; agent.empty(); ++i) {
    std::string id = "mover-" + std::to_string(i);
    if (four.owner(work_home_key(id)) == 3) agent = id;
  }
  make_agent(f, 0, agent);
  const size_t old_home = home_of(f, agent, 3);
  std::vector<std::string> items;
  const std::vector<std::string> texts = {"fire the kiln", "moor at the harbor", "shape the anvil"};
  for (size_t k = 0; k < 3; ++k) items.push_back(create(f, k, agent, texts[k]).thread.id);
  close_session(f, 0, agent, "s1", {topic});
  close_session(f, 1, agent, "s2", {topic});
  auto third = close_session(f, 2, agent, "s3", {topic});
  REQUIRE(third.suggestions.size() == 1);
  // Enough other threads that the new home goes away while threads still move.
  for (size_t k = 0; k < 600; ++k) f.thread(k % 3);
  for (size_t i = 0; i < 3; ++i) REQUIRE(f.nodes[i]->reload_cluster(f.members).is_ok());
  cluster_rebalance_state st = f.cut_short_rebalance(0, n4, 10);

  // The old home marked the agent's key before any thread moved: its work
  // answers "moving" through every node, after a restart of the old home too;
  // nothing is created meanwhile.
  f.close(old_home);
  f.open(old_home);
  for (size_t via = 0; via < 3; ++via) {
    work_list_query q;
    q.agent_id = agent;
    work_list_page page;
    status s = f.nodes[via]->list_items(q, &page);
    INFO("via n" << via + 1 << ": " << s.to_string());
    CHECK(s.code() == errc::unavailable);
    CHECK(s.message().find("moving") != std::string::npos);
    work_create c;
    c.agent_id = agent;
    c.text = "sneaked in while moving";
    work_create_result r;
    CHECK(f.nodes[via]->create_item(c, &r).code() == errc::unavailable);
  }

  // A rerun moves it whole: items, sessions, the suggestion, on the new home.
  f.open(n4);
  status s = f.rerun_rebalance(1, &st);
  INFO(s.to_string() << " " << st.error);
  REQUIRE(s.is_ok());
  for (size_t via = 0; via < 4; ++via) {
    auto page = list(f, via, agent);
    CHECK(page.items.size() == 3);
    std::vector<work_suggestion> pending;
    REQUIRE(f.nodes[via]->list_suggestions(agent, false, &pending).is_ok());
    REQUIRE(pending.size() == 1);
    CHECK(pending[0].id == third.suggestions[0].id);
  }
  for (const auto& id : items) CHECK(f.owner(id) == n4);
  auto fourth = close_session(f, 3, agent, "s4", {topic});
  REQUIRE(fourth.suggestions.size() == 1);
  CHECK(fourth.suggestions[0].sessions.size() == 4);
}
