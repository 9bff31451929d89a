// The work items' knowledge graph (triples with their events, each lens, stats,
// provenance depth), the sweep under the clock, sessions and suggestions end to end.
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

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

TEST_CASE("the periodic sweep archives with work_auto_archive", "[work]") {
  work_fixture f{20, true};  // a sweep every 20 ms
  f.agent("a");
  auto x = f.create("a", "fix the broken deploy");
  f.now->store(t0 + 60 * day_ms);  // dormant since about day 4.4: more than 30 days of it
  // Bounded wait on the sweep's real outcome: the item's stored status.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  work_entry e;
  do {
    REQUIRE(f.rt->get_item(x.thread.id, &e).is_ok());
    if (e.thread.work->status != work_status::archived) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  } while (e.thread.work->status != work_status::archived && std::chrono::steady_clock::now() < deadline);
  CHECK(e.thread.work->status == work_status::archived);
  CHECK(f.signals(x.thread.id) == std::vector<std::string>{"work.created", "work.archived"});
}

namespace {

// Closes `session` of agent "a" in `project` with `topics`, the clock as it is.
work_session_closed close_in(work_fixture& f, const std::string& project, const std::string& session,
                             std::vector<std::string> topics) {
  work_session_close c;
  c.agent_id = "a";
  c.session_id = session;
  c.project = project;
  c.topics = std::move(topics);
  return answer_of(*f.rt, &runtime::session_close, c);
}

const std::string recurring = "flaky integration tests in the payments service";
// The seed's window, written out: the tests hold the constants to it.
constexpr size_t seed_sessions = 20;
constexpr int64_t seed_window_ms = 30 * day_ms;

// `n` sessions about other things, a minute apart: words no other session has.
void unrelated_sessions(work_fixture& f, size_t n, const std::string& prefix) {
  for (size_t i = 0; i < n; ++i) {
    f.now->fetch_add(60 * 1000);
    std::string k = std::to_string(i);
    CHECK(close_in(f, "", prefix + k, {"chore" + k + " errand" + k + " task" + k}).suggestions.empty());
  }
}

// Agent "a", and two of its sessions on the recurring topic, "old1" and then
// "old2" a minute later.
void recurring_pair(work_fixture& f) {
  f.agent("a");
  close_in(f, "", "old1", {recurring});
  f.now->fetch_add(60 * 1000);
  close_in(f, "", "old2", {recurring});
}

}  // namespace

TEST_CASE("suggestions compare with the last 20 sessions only (the seed's window)", "[work]") {
  CHECK(work_sessions_compared_max == seed_sessions);
  SECTION("two sessions 21 and 22 back, and one now: no suggestion") {
    work_fixture f;
    recurring_pair(f);
    unrelated_sessions(f, seed_sessions, "u");
    f.now->fetch_add(60 * 1000);
    CHECK(close_in(f, "", "now", {recurring}).suggestions.empty());
  }
  SECTION("two sessions 19 and 20 back, and one now: a suggestion") {
    work_fixture f;
    recurring_pair(f);
    unrelated_sessions(f, seed_sessions - 2, "u");
    f.now->fetch_add(60 * 1000);
    auto now = close_in(f, "", "now", {recurring});
    REQUIRE(now.suggestions.size() == 1);
    CHECK(now.suggestions[0].sessions == std::vector<std::string>{"old1", "old2", "now"});
  }
}

TEST_CASE("suggestions compare with the sessions of the last 30 days only (the seed's window)", "[work]") {
  CHECK(work_sessions_compared_ms == seed_window_ms);
  SECTION("two sessions 45 days back, and one now: no suggestion") {
    work_fixture f;
    recurring_pair(f);
    f.now->fetch_add(45 * day_ms);
    CHECK(close_in(f, "", "now", {recurring}).suggestions.empty());
  }
  SECTION("two sessions 29 days back, and one now: a suggestion") {
    work_fixture f;
    recurring_pair(f);
    f.now->fetch_add(29 * day_ms);
    REQUIRE(close_in(f, "", "now", {recurring}).suggestions.size() == 1);
  }
  SECTION("closed exactly 30 days back they count; a millisecond more and they do not") {
    for (int64_t extra : {int64_t{0}, int64_t{1}}) {
      work_fixture f;
      f.agent("a");
      close_in(f, "", "old1", {recurring});
      close_in(f, "", "old2", {recurring});  // the same moment
      f.now->fetch_add(seed_window_ms + extra);
      INFO("extra ms: " << extra);
      CHECK(close_in(f, "", "now", {recurring}).suggestions.size() == (extra == 0 ? 1u : 0u));
    }
  }
}

TEST_CASE("suggestions stay within a project: its sessions, its items, its pending suggestions", "[work]") {
  work_fixture f;
  f.agent("a");
  close_in(f, "billing", "b1", {recurring});
  f.now->fetch_add(1000);
  close_in(f, "billing", "b2", {recurring});
  f.now->fetch_add(1000);
  // Two billing sessions and one of another project: no topic recurs in three of one.
  CHECK(close_in(f, "search", "s1", {recurring}).suggestions.empty());
  f.now->fetch_add(1000);
  auto third = close_in(f, "billing", "b3", {recurring});
  REQUIRE(third.suggestions.size() == 1);
  CHECK(third.suggestions[0].project == "billing");
  // session_start of another project does not carry it; of billing it does.
  work_session_start in;
  in.agent_id = "a";
  in.project = "search";
  work_session_started started;
  REQUIRE(f.rt->session_start(in, &started).is_ok());
  CHECK(started.project == "search");
  CHECK(started.suggestions.empty());
  in.project = "billing";
  REQUIRE(f.rt->session_start(in, &started).is_ok());
  REQUIRE(started.suggestions.size() == 1);
  // Promoted without a project: an item of the suggestion's.
  work_create_result item;
  REQUIRE(f.rt->promote_suggestion(third.suggestions[0].id, &item).is_ok());
  CHECK(item.thread.work->project == "billing");
  // A session started in a project closes in it: its open items are the project's.
  work_session_start s9;
  s9.agent_id = "a";
  s9.session_id = "s9";
  s9.project = "search";
  REQUIRE(f.rt->session_start(s9, &started).is_ok());
  work_session_close c;
  c.agent_id = "a";
  c.session_id = "s9";
  c.open_items = {"tune the ranking weights"};
  work_session_closed closed = answer_of(*f.rt, &runtime::session_close, c);
  REQUIRE(closed.items.size() == 1);
  CHECK(closed.items[0].thread.work->project == "search");
}

TEST_CASE("stats: the seed's top subjects, objects, issues and agents", "[work]") {
  work_fixture f;
  f.agent("a");
  f.agent("b");
  auto x = f.create("a", "ship the billing export", "s1", {"GH-9", "GH-10"});
  auto y = f.create("a", "write the billing docs", "s1", {"GH-9"});
  auto z = f.create("b", "review the billing export", "", {"GH-9"});
  // Triples: s1 -> x, s1 -> y, agent:b -> z; x -> GH-9, x -> GH-10, y -> GH-9, z -> GH-9.
  work_graph_stats st;
  REQUIRE(f.rt->graph_stats(&st).is_ok());
  CHECK(st.triples == 7);
  CHECK(st.nodes == 7);  // s1, agent:b, x, y, z, GH-9, GH-10
  const std::string tx = "thread:" + x.thread.id, ty = "thread:" + y.thread.id, tz = "thread:" + z.thread.id;
  // Most first, then by name.
  work_counts subjects{{tx, 2}, {"session:s1", 2}, {"agent:b", 1}, {ty, 1}, {tz, 1}};
  std::sort(subjects.begin(), subjects.end(), [](const auto& l, const auto& r) {
    return l.second != r.second ? l.second > r.second : l.first < r.first;
  });
  CHECK(st.top_subjects == subjects);
  REQUIRE(!st.top_objects.empty());
  CHECK(st.top_objects[0] == std::pair<std::string, uint64_t>{"issue:GH-9", 3});
  CHECK(st.top_issues == work_counts{{"issue:GH-9", 3}, {"issue:GH-10", 1}});
  CHECK(st.top_agents == work_counts{{"agent:a", 5}, {"agent:b", 2}});
  // At most work_graph_top_max of each.
  for (int i = 0; i < 14; ++i) {  // 16 issues in all; words of their own, so that none is deduplicated
    std::string k = std::to_string(i);
    CHECK_FALSE(f.create("a", "chore" + k + " errand" + k, "", {"X-" + k}).deduplicated);
  }
  REQUIRE(f.rt->graph_stats(&st).is_ok());
  CHECK(st.top_subjects.size() == work_graph_top_max);
  CHECK(st.top_objects.size() == work_graph_top_max);
  CHECK(st.top_issues.size() == work_graph_top_issues_max);
  CHECK(st.top_issues[0] == std::pair<std::string, uint64_t>{"issue:GH-9", 3});
}

TEST_CASE("lenses filter by predicate and project, stats by project", "[work]") {
  work_fixture f;
  f.agent("a");
  auto x = f.create("a", "ship the billing export", "s1", {"GH-9"});
  work_create c;
  c.agent_id = "a";
  c.text = "tune the search ranking";
  c.session_id = "s1";
  c.project = "search";
  work_create_result y;
  REQUIRE(f.rt->create_item(c, &y).is_ok());
  std::vector<work_triple> got;
  work_graph_filter only_created;
  only_created.predicate = "created_thread";
  REQUIRE(f.rt->graph_connected_to("thread:" + x.thread.id, 10, &got, only_created).is_ok());
  CHECK(predicates(got) == std::vector<std::string>{"session:s1 created_thread thread:" + x.thread.id});
  work_graph_filter search;
  search.project = "search";
  REQUIRE(f.rt->graph_connected_to("session:s1", 10, &got, search).is_ok());
  CHECK(predicates(got) == std::vector<std::string>{"session:s1 created_thread thread:" + y.thread.id});
  REQUIRE(f.rt->graph_produced_by("a", 10, &got, search).is_ok());
  CHECK(got.size() == 1);
  REQUIRE(f.rt->graph_provenance("issue:GH-9", 2, 10, &got, search).is_ok());
  CHECK(got.empty());
  work_graph_stats st;
  REQUIRE(f.rt->graph_stats(&st, "search").is_ok());
  CHECK(st.triples == 1);
  REQUIRE(f.rt->graph_stats(&st, "default").is_ok());
  CHECK(st.triples == 2);
  REQUIRE(f.rt->graph_stats(&st).is_ok());
  CHECK(st.triples == 3);
}
