// Usage queries over the usage rows, and agents' daily budgets: runs refused
// before they start once the day's tokens or cost reach the budget.
#include <atomic>
#include <catch2/catch.hpp>

#include "persistence/keys.hpp"
#include "tests/support/raw_db.hpp"
#include "tests/support/runtime_fixture.hpp"

using namespace skein;
using namespace skein::test;
using namespace std::chrono_literals;

namespace {

// 2026-11-23T00:00:00Z
constexpr int64_t day0_ms = 1795392000000;
constexpr int64_t day_ms = 86400000;

// Every run of this engine reports 100 input and 10 output tokens and 0.5 USD.
const char* metered_rules = R"({"default": {"reply": "ok", "usage": {"input_tokens": 100, "output_tokens": 10}, "cost_usd": 0.5}})";

void make_agent(runtime_fixture& f, const std::string& id, uint64_t tokens_per_day_max = 0,
                double cost_usd_per_day_max = 0, const char* rules = metered_rules) {
  agent_config a;
  a.id = id;
  a.engine_config = rules;
  a.budgets.tokens_per_day_max = tokens_per_day_max;
  a.budgets.cost_usd_per_day_max = cost_usd_per_day_max;
  f.add_agent(a);
}

usage_report query(runtime_fixture& f, usage_query q) {
  usage_report r;
  auto s = f.rt->usage(q, &r);
  INFO(s.to_string());
  REQUIRE(s.is_ok());
  return r;
}

status try_run(runtime_fixture& f, const std::string& thread, run_result* r = nullptr) {
  run_input in;
  in.text = "hello";
  run_result ignored;
  return f.rt->send(thread, in).wait(r != nullptr ? r : &ignored, 60s);
}

}  // namespace

TEST_CASE("usage: totals grouped by agent, thread and UTC day, filters, since and until half-open") {
  std::atomic<int64_t> now{day0_ms + 3600000};
  runtime_options o;
  o.clock = [&] { return now.load(); };
  runtime_fixture f{o};
  make_agent(f, "a");
  make_agent(f, "b");
  auto a1 = f.thread("a"), a2 = f.thread("a"), b1 = f.thread("b");
  f.run(a1.id, "1");
  f.run(a1.id, "2");
  f.run(b1.id, "3");
  now += day_ms;  // the next UTC day
  f.run(a2.id, "4");

  usage_report all = query(f, {});
  REQUIRE(all.groups.size() == 1);
  CHECK(all.groups[0].runs == 4);
  CHECK(all.groups[0].usage.input_tokens == 400);
  CHECK(all.groups[0].usage.output_tokens == 40);
  CHECK(all.groups[0].cost_usd == Approx(2.0));
  CHECK(all.rows == 4);
  CHECK(all.unreadable == 0);

  // Grouped by agent, then by UTC day: each group's key and runs, in order.
  struct grouping {
    usage_query::group by;
    std::vector<std::pair<std::string, uint64_t>> key_runs;
  };
  const grouping groupings[] = {{usage_query::group::agent, {{"a", 3}, {"b", 1}}},
                                {usage_query::group::day, {{"2026-11-23", 3}, {"2026-11-24", 1}}}};
  for (const grouping& g : groupings) {
    usage_query q;
    q.group_by = g.by;
    usage_report r = query(f, q);
    REQUIRE(r.groups.size() == g.key_runs.size());
    for (size_t i = 0; i < g.key_runs.size(); ++i) {
      INFO("group " << i << ": expected " << g.key_runs[i].first);
      CHECK(r.groups[i].key == g.key_runs[i].first);
      CHECK(r.groups[i].runs == g.key_runs[i].second);
    }
  }

  usage_query agent_a;
  agent_a.agent_id = "a";
  agent_a.group_by = usage_query::group::thread;
  usage_report rt = query(f, agent_a);
  REQUIRE(rt.groups.size() == 2);
  for (const auto& g : rt.groups) CHECK(g.runs == (g.key == a1.id ? 2u : 1u));

  usage_query one_thread;
  one_thread.thread_id = a1.id;
  CHECK(query(f, one_thread).groups[0].runs == 2);

  // [since, until): the first day only, then the second day only.
  usage_query first_day;
  first_day.since_ms = day0_ms;
  first_day.until_ms = day0_ms + day_ms;
  CHECK(query(f, first_day).groups[0].runs == 3);
  usage_query second_day;
  second_day.since_ms = day0_ms + day_ms;
  CHECK(query(f, second_day).groups[0].runs == 1);
  // A run at exactly `until` is out; at exactly `since`, in.
  usage_query until_edge;
  until_edge.until_ms = day0_ms + 3600000;
  CHECK(query(f, until_edge).groups[0].runs == 0);
  usage_query since_edge;
  since_edge.since_ms = day0_ms + day_ms + 3600000;
  CHECK(query(f, since_edge).groups[0].runs == 1);

  usage_query bad;
  bad.agent_id = "no such/agent";
  usage_report r;
  CHECK(f.rt->usage(bad, &r).code() == errc::invalid_input);
}

TEST_CASE("usage: a row that does not decode is skipped and counted, never fails the query") {
  temp_dir dir;
  runtime_options o;
  o.data_dir = dir.str();
  std::string thread;
  {
    runtime_fixture f{without_effects(o), false};
    make_agent(f, "a");
    thread = f.thread("a").id;
    f.run(thread, "1");
  }
  {
    raw_db raw{dir.str()};
    raw.put("usage", keys::usage_key(thread, 999), "{not json");
  }
  runtime_fixture f{without_effects(o), false};
  usage_query q;
  q.thread_id = thread;
  usage_report r = query(f, q);
  CHECK(r.unreadable == 1);
  CHECK(r.groups[0].runs == 1);
  usage_query all;
  CHECK(query(f, all).unreadable == 1);
}

TEST_CASE("budget: a run past the agent's daily tokens is refused before it starts and writes nothing") {
  std::atomic<int64_t> now{day0_ms + 1000};
  temp_dir dir;
  runtime_options o;
  o.data_dir = dir.str();
  o.clock = [&] { return now.load(); };
  std::string t1, t2;
  {
    runtime_fixture f{without_effects(o), false};
    make_agent(f, "a", /*tokens_per_day_max=*/250);
    make_agent(f, "free");  // no budget: never refused
    t1 = f.thread("a").id;
    t2 = f.thread("a").id;
    // 110 tokens a run: 0, 110, 220 are under 250; at 330 the next is refused.
    f.run(t1, "1");
    f.run(t2, "2");
    f.run(t1, "3");
    size_t before1 = f.events(t1).size(), before2 = f.events(t2).size();
    log_counters commits_before = f.stats().log;
    for (const auto& t : {t1, t2}) {
      status s = try_run(f, t);
      INFO(s.to_string());
      CHECK(s.code() == errc::budget_exceeded);
      CHECK(s.limit() == "tokens_per_day_max");
      CHECK(s.message().find("tokens_per_day_max (250)") != std::string::npos);
    }
    // Submitted inputs are refused the same way, before they are accepted.
    run_input in;
    in.text = "submitted";
    std::string run_id;
    CHECK(f.rt->submit(t2, in, &run_id).code() == errc::budget_exceeded);
    CHECK(f.events(t1).size() == before1);
    CHECK(f.events(t2).size() == before2);
    CHECK(f.stats().log.commits == commits_before.commits);
    manifest m;
    REQUIRE(f.rt->get_thread(t1, &m).is_ok());
    CHECK(m.status == thread_status::open);
    // Another agent's spending is its own.
    auto free = f.thread("free");
    f.run(free.id, "unmetered");
    f.run(free.id, "unmetered");
    f.run(free.id, "unmetered");
    CHECK(f.run(free.id, "unmetered").outcome == run_outcome::completed);

    // The next UTC day the budget is fresh.
    now += day_ms;
    CHECK(f.run(t1, "next day").outcome == run_outcome::completed);
    f.run(t2, "next day");
    f.run(t1, "next day");
    CHECK(try_run(f, t2).code() == errc::budget_exceeded);
  }
  // Reopened: the ledger is rebuilt from the day's usage rows, still refused.
  runtime_fixture f{without_effects(o), false};
  size_t before = f.events(t1).size();
  status s = try_run(f, t1);
  CHECK(s.code() == errc::budget_exceeded);
  CHECK(s.limit() == "tokens_per_day_max");
  CHECK(f.events(t1).size() == before);
  now += day_ms;
  CHECK(try_run(f, t1).is_ok());
}

TEST_CASE("budget: a run past the agent's daily cost is refused naming cost_usd_per_day_max") {
  std::atomic<int64_t> now{day0_ms + 5000};
  runtime_options o;
  o.clock = [&] { return now.load(); };
  runtime_fixture f{o};
  make_agent(f, "a", 0, /*cost_usd_per_day_max=*/1.0);
  auto t = f.thread("a");
  f.run(t.id, "0.5");
  f.run(t.id, "1.0");
  status s = try_run(f, t.id);
  INFO(s.to_string());
  CHECK(s.code() == errc::budget_exceeded);
  CHECK(s.limit() == "cost_usd_per_day_max");
  usage_query q;
  q.agent_id = "a";
  CHECK(query(f, q).groups[0].cost_usd == Approx(1.0));
}

TEST_CASE("budget: inputs waiting in the inbox when the budget runs out leave it, refused, with a signal") {
  std::atomic<int64_t> now{day0_ms + 7000};
  temp_dir dir;
  runtime_options o;
  o.data_dir = dir.str();
  o.clock = [&] { return now.load(); };
  std::string thread, third;
  {
    runtime_fixture f{without_effects(o), false};
    const char* slow = R"({"default": {"reply": "ok", "latency_ms": 300, "usage": {"input_tokens": 100, "output_tokens": 10}}})";
    make_agent(f, "a", /*tokens_per_day_max=*/150, 0, slow);
    thread = f.thread("a").id;
    run_input first;
    first.text = "first";
    auto h = f.rt->send(thread, first);
    manifest m;
    REQUIRE(runtime_fixture::eventually(
        [&] { return f.rt->get_thread(thread, &m).is_ok() && m.status == thread_status::running; }));
    run_input in;
    in.text = "second";
    std::string second;
    REQUIRE(f.rt->submit(thread, in, &second).is_ok());  // into the inbox: the thread is busy
    in.text = "third";
    REQUIRE(f.rt->submit(thread, in, &third).is_ok());
    run_result r;
    REQUIRE(h.wait(&r, 60s).is_ok());
    // 110 < 150: the second runs; at 220 the third is refused when its turn comes.
    auto refused = [&] {
      for (const auto& e : f.events(thread))
        if (e.type == event_type::signal && e.name == "thread.budget_exceeded") return true;
      return false;
    };
    REQUIRE(runtime_fixture::eventually(refused));
    auto log = f.events(thread);
    CHECK(check_runs(log) == 2);
    const event& signal = log.back();
    CHECK(signal.name == "thread.budget_exceeded");
    CHECK(signal.json.find(third) != std::string::npos);
    CHECK(signal.json.find("tokens_per_day_max") != std::string::npos);
  }
  // The refused input left the inbox: reopening runs nothing more.
  std::unique_ptr<event_log> log;
  log_options lo;
  lo.path = dir.str();
  REQUIRE(event_log::open(lo, &log).is_ok());
  std::vector<inbox_item> inbox;
  REQUIRE(log->read_inbox(thread, &inbox).is_ok());
  CHECK(inbox.empty());
}
