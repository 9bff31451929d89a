// The work items' knowledge graph (triples with their events, each lens, stats,
// provenance depth), the sweep under the clock, sessions and suggestions end to end.
#include <catch2/catch.hpp>

#include "tests/runtime/work_fixture.hpp"

using namespace skein;
using namespace skein::test;

namespace {

std::vector<std::string> predicates(const std::vector<work_triple>& ts) {
  std::vector<std::string> out;
  for (const auto& t : ts) out.push_back(t.subject + " " + t.predicate + " " + t.object);
  std::sort(out.begin(), out.end());
  return out;
}

work_session_closed close_session(work_fixture& f, const std::string& agent, const std::string& session,
                                  std::vector<std::string> topics, std::vector<std::string> open_items = {}) {
  work_session_close c;
  c.agent_id = agent;
  c.session_id = session;
  c.topics = std::move(topics);
  c.open_items = std::move(open_items);
  f.now->fetch_add(1000);  // sessions close in order: the latest ones are compared
  work_session_closed out;
  auto s = f.rt->session_close(c, &out);
  INFO(s.to_string());
  REQUIRE(s.is_ok());
  return out;
}

}  // namespace

TEST_CASE("triples are written with their events, each lens, stats, and they survive a reopen", "[work]") {
  work_fixture f;
  f.agent("a");
  auto x = f.create("a", "ship the billing export", "s1", {"GH-9"});
  const std::string node = "thread:" + x.thread.id;
  // Right after the ack: the creation tick held them.
  std::vector<work_triple> got;
  REQUIRE(f.rt->graph_connected_to(node, 100, &got).is_ok());
  CHECK(predicates(got) == std::vector<std::string>{"session:s1 created_thread " + node,
                                                    node + " relates_to_thread issue:GH-9"});
  for (const auto& t : got) {
    CHECK(t.thread_id == x.thread.id);
    CHECK(t.seq == 1);  // the work.created signal
    CHECK(t.agent_id == "a");
    CHECK(t.at_ms == t0);
  }
  work_resolve r;
  r.thread_id = x.thread.id;
  r.session_id = "s2";
  work_entry e;
  REQUIRE(f.rt->resolve_item(r, &e).is_ok());
  REQUIRE(f.rt->graph_connected_to(node, 100, &got).is_ok());
  REQUIRE(got.size() == 3);
  auto resolves = std::find_if(got.begin(), got.end(), [](const auto& t) { return t.predicate == "resolves_thread"; });
  REQUIRE(resolves != got.end());
  CHECK(resolves->subject == "session:s2");
  CHECK(resolves->seq == 2);  // the work.resolved signal
  auto y = f.create("a", "unrelated chore");
  std::vector<work_triple> by_agent;
  REQUIRE(f.rt->graph_produced_by("a", 100, &by_agent).is_ok());
  CHECK(by_agent.size() == 4);
  REQUIRE(f.rt->graph_produced_by("a", 2, &by_agent).is_ok());
  CHECK(by_agent.size() == 2);
  work_graph_stats st;
  REQUIRE(f.rt->graph_stats(&st).is_ok());
  CHECK(st.triples == 4);
  CHECK(st.nodes == 6);  // thread x, thread y, session s1, session s2, issue GH-9, agent a
  CHECK(st.by_predicate == std::vector<std::pair<std::string, uint64_t>>{
                               {"created_thread", 2}, {"relates_to_thread", 1}, {"resolves_thread", 1}});
  std::vector<work_triple> before;
  REQUIRE(f.rt->graph_connected_to(node, 100, &before).is_ok());
  f.reopen();
  REQUIRE(f.rt->graph_connected_to(node, 100, &got).is_ok());
  CHECK(got == before);
  (void)y;
}

TEST_CASE("provenance follows triples backwards, depth by depth", "[work]") {
  work_fixture f;
  f.agent("a");
  auto x = f.create("a", "plan the data migration", "s1", {"GH-1"});
  // issue:GH-1 <- thread:x <- session:s1
  std::vector<work_triple> got;
  REQUIRE(f.rt->graph_provenance("issue:GH-1", 1, 100, &got).is_ok());
  CHECK(predicates(got) == std::vector<std::string>{"thread:" + x.thread.id + " relates_to_thread issue:GH-1"});
  REQUIRE(f.rt->graph_provenance("issue:GH-1", 2, 100, &got).is_ok());
  CHECK(predicates(got) == std::vector<std::string>{"session:s1 created_thread thread:" + x.thread.id,
                                                    "thread:" + x.thread.id + " relates_to_thread issue:GH-1"});
  REQUIRE(f.rt->graph_provenance("issue:GH-1", 8, 100, &got).is_ok());
  CHECK(got.size() == 2);
}

TEST_CASE("the sweep records dormancy, and session_start archives at 30 days of it", "[work]") {
  work_fixture f;
  f.agent("a");
  auto x = f.create("a", "fix the broken deploy");   // operational: 3-day half-life
  auto y = f.create("a", "plan the roadmap");        // backlog: 21 days
  work_sweep_options o;
  o.agent_id = "a";
  work_sweep_result r;
  f.now->store(t0 + 10 * day_ms);  // x dormant (about 4.4 days on), y cooling
  REQUIRE(f.rt->sweep_items(o, &r).is_ok());
  CHECK(r.examined == 2);
  CHECK(r.dormant == std::vector<std::string>{x.thread.id});
  CHECK(r.archived.empty());
  work_entry e;
  REQUIRE(f.rt->get_item(x.thread.id, &e).is_ok());
  int64_t since = e.thread.work->dormant_since_ms;
  CHECK(since > t0 + 4 * day_ms);
  CHECK(since < t0 + 5 * day_ms);
  CHECK(f.signals(x.thread.id) == std::vector<std::string>{"work.created", "work.dormant"});
  REQUIRE(f.rt->sweep_items(o, &r).is_ok());  // recorded once
  CHECK(r.dormant.empty());
  CHECK(f.signals(x.thread.id).size() == 2);

  work_session_start in;
  in.agent_id = "a";
  work_session_started started;
  f.now->store(since + work_archive_after_dormant_ms - 1);
  REQUIRE(f.rt->session_start(in, &started).is_ok());
  CHECK(started.sweep.archived.empty());
  f.now->store(since + work_archive_after_dormant_ms);  // exactly 30 days of dormancy
  REQUIRE(f.rt->session_start(in, &started).is_ok());
  CHECK(started.sweep.archived == std::vector<std::string>{x.thread.id});
  CHECK(f.signals(x.thread.id) == std::vector<std::string>{"work.created", "work.dormant", "work.archived"});
  for (const auto& item : started.items) CHECK(item.thread.id != x.thread.id);
  REQUIRE(f.rt->get_item(x.thread.id, &e).is_ok());
  CHECK(e.vitality.stage == work_stage::archived);
  CHECK(f.rt->touch_item(x.thread.id, &e).code() == errc::conflict);

  // A touch revives a dormant item: the record cleared, work.revived in the log.
  REQUIRE(f.rt->get_item(y.thread.id, &e).is_ok());
  REQUIRE(e.thread.work->dormant_since_ms != 0);  // the sweeps above recorded it
  REQUIRE(f.rt->touch_item(y.thread.id, &e).is_ok());
  CHECK(e.thread.work->dormant_since_ms == 0);
  auto names = f.signals(y.thread.id);
  CHECK(names.back() == "work.revived");
  CHECK(names[names.size() - 2] == "work.touched");
}

TEST_CASE("suggestions: recurring topics, covered, evidence, promote, dismiss three times", "[work]") {
  work_fixture f;
  f.agent("a");
  const std::string topic = "flaky integration tests in the payments service";
  CHECK(close_session(f, "a", "s1", {topic}).suggestions.empty());
  CHECK(close_session(f, "a", "s2", {"release checklist for version two"}).suggestions.empty());
  CHECK(close_session(f, "a", "s3", {topic + " keep failing"}).suggestions.empty());  // two sessions so far
  auto third = close_session(f, "a", "s4", {topic});
  REQUIRE(third.suggestions.size() == 1);
  auto sug = third.suggestions[0];
  CHECK(sug.status == suggestion_status::pending);
  CHECK(sug.sessions == std::vector<std::string>{"s1", "s3", "s4"});
  // A later recurrence adds evidence to the pending suggestion, no new one.
  auto fourth = close_session(f, "a", "s5", {topic});
  REQUIRE(fourth.suggestions.size() == 1);
  CHECK(fourth.suggestions[0].id == sug.id);
  CHECK(fourth.suggestions[0].sessions.back() == "s5");
  std::vector<work_suggestion> pending;
  REQUIRE(f.rt->list_suggestions("a", false, &pending).is_ok());
  REQUIRE(pending.size() == 1);
  work_session_start in;
  in.agent_id = "a";
  work_session_started started;
  REQUIRE(f.rt->session_start(in, &started).is_ok());
  REQUIRE(started.suggestions.size() == 1);

  // Dismissed: it returns when the topic recurs, until the third dismissal.
  work_suggestion d;
  for (uint32_t i = 1; i <= work_suggest_dismissals_max; ++i) {
    REQUIRE(f.rt->dismiss_suggestion(sug.id, &d).is_ok());
    CHECK(d.dismissals == i);
    auto again = close_session(f, "a", "r" + std::to_string(i), {topic});
    if (i < work_suggest_dismissals_max) {
      CHECK(d.status == suggestion_status::dismissed);
      REQUIRE(again.suggestions.size() == 1);
      CHECK(again.suggestions[0].status == suggestion_status::pending);
    } else {
      CHECK(d.status == suggestion_status::suppressed);
      CHECK(again.suggestions.empty());  // suppressed for good: no new one either
    }
  }
  REQUIRE(f.rt->list_suggestions("a", false, &pending).is_ok());
  CHECK(pending.empty());
  work_create_result promoted;
  CHECK(f.rt->promote_suggestion(sug.id, &promoted).code() == errc::conflict);
}

TEST_CASE("suggestions: a topic an open item covers makes none, promote makes an item", "[work]") {
  work_fixture f;
  f.agent("a");
  const std::string topic = "flaky integration tests in the payments service";
  f.create("a", topic);
  for (auto s : {"s1", "s2", "s3", "s4"}) CHECK(close_session(f, "a", s, {topic}).suggestions.empty());

  f.agent("b");
  const std::string other = "migrate the build to the new runner";
  close_session(f, "b", "t1", {other});
  close_session(f, "b", "t2", {other});
  auto third = close_session(f, "b", "t3", {other});
  REQUIRE(third.suggestions.size() == 1);
  work_create_result item;
  REQUIRE(f.rt->promote_suggestion(third.suggestions[0].id, &item).is_ok());
  CHECK(item.thread.work->text == other);
  std::vector<work_suggestion> all;
  REQUIRE(f.rt->list_suggestions("b", true, &all).is_ok());
  REQUIRE(all.size() == 1);
  CHECK(all[0].status == suggestion_status::promoted);
  CHECK(all[0].promoted_thread == item.thread.id);
  // The item now covers the topic: a fourth recurrence changes nothing.
  CHECK(close_session(f, "b", "t4", {other}).suggestions.empty());
}

TEST_CASE("session_close turns open items into items, deduplicated, created by the session", "[work]") {
  work_fixture f;
  f.agent("a");
  auto existing = f.create("a", "Fix the login bug");
  auto closed = close_session(f, "a", "s9", {}, {"fix the login bug", "write the release notes"});
  REQUIRE(closed.items.size() == 2);
  CHECK(closed.items[0].deduplicated);
  CHECK(closed.items[0].thread.id == existing.thread.id);
  CHECK_FALSE(closed.items[1].deduplicated);
  std::vector<work_triple> got;
  REQUIRE(f.rt->graph_connected_to("session:s9", 10, &got).is_ok());
  REQUIRE(got.size() == 1);
  CHECK(got[0].object == "thread:" + closed.items[1].thread.id);
}
