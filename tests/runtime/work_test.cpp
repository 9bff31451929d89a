// Work items through the runtime (runtime.hpp, work_service.hpp), real RocksDB,
// the runtime's clock under the test's control: transitions and their log,
// resolve by text, dedup, concurrency, PROJECT STATE, reopen, delete, limits.
#include <atomic>
#include <catch2/catch.hpp>
#include <thread>

#include "persistence/event_log.hpp"
#include "runtime/runtime.hpp"
#include "tests/runtime/work_fixture.hpp"

using namespace skein;
using namespace skein::test;

TEST_CASE("create, touch, relate, resolve: each a signal in order, the manifest's work fields", "[work]") {
  work_fixture f;
  f.agent("a");
  auto c = f.create("a", "Fix the deploy script", "", {"GH-12"});
  CHECK_FALSE(c.deduplicated);
  const std::string id = c.thread.id;
  REQUIRE(c.thread.work.has_value());
  CHECK(c.thread.title == "Fix the deploy script");
  CHECK(c.thread.work->cls == work_class::operational);
  CHECK(c.thread.work->created_at_ms == t0);
  CHECK(c.thread.work->touch_count == 0);

  f.now->store(t0 + 1000);
  work_entry e;
  REQUIRE(f.rt->touch_item(id, &e).is_ok());
  CHECK(e.thread.work->touch_count == 1);
  CHECK(e.thread.work->last_touched_at_ms == t0 + 1000);
  CHECK(e.vitality.stage == work_stage::emerging);
  REQUIRE(f.rt->relate_item(id, "JIRA-4", &e).is_ok());
  work_resolve r;
  r.thread_id = id;
  r.note = "script fixed";
  r.session_id = "s1";
  f.now->store(t0 + 2000);
  REQUIRE(f.rt->resolve_item(r, &e).is_ok());
  CHECK(e.thread.work->status == work_status::resolved);
  CHECK(e.thread.work->resolution == "script fixed");
  CHECK(e.thread.work->resolved_session == "s1");
  CHECK(e.thread.work->resolved_at_ms == t0 + 2000);
  CHECK(e.vitality.stage == work_stage::resolved);
  CHECK(f.signals(id) == std::vector<std::string>{"work.created", "work.touched", "work.related", "work.resolved"});
  auto log = f.log_of(id);
  CHECK(log[3].json == R"({"note":"script fixed","session_id":"s1"})");

  // The stored manifest is what the calls answered.
  work_entry got;
  REQUIRE(f.rt->get_item(id, &got).is_ok());
  CHECK(got.thread.work == e.thread.work);
  // Terminal: every further transition is refused and writes nothing.
  CHECK(f.rt->touch_item(id, &e).code() == errc::conflict);
  CHECK(f.rt->resolve_item(r, &e).code() == errc::conflict);
  CHECK(f.rt->relate_item(id, "X-1", &e).code() == errc::conflict);
  CHECK(f.log_of(id).size() == 4);
  // A thread that is no item: invalid_input naming thread_id.
  thread_options o;
  o.agent_id = "a";
  manifest plain;
  REQUIRE(f.rt->create_thread(o, &plain).is_ok());
  auto s = f.rt->touch_item(plain.id, &e);
  CHECK(s.code() == errc::invalid_input);
  CHECK(s.field() == "thread_id");
  CHECK(f.rt->touch_item("th_nope", &e).code() == errc::not_found);
}

TEST_CASE("resolve by text: none, one, several (the error lists the candidates)", "[work]") {
  work_fixture f;
  f.agent("a");
  auto one = f.create("a", "Rotate the API keys");
  auto two = f.create("a", "Write the migration guide");
  auto three = f.create("a", "Review the migration script");
  work_resolve r;
  r.agent_id = "a";
  work_entry e;
  r.text_match = "kubernetes";
  CHECK(f.rt->resolve_item(r, &e).code() == errc::not_found);
  r.text_match = "MIGRATION";
  auto s = f.rt->resolve_item(r, &e);
  CHECK(s.code() == errc::conflict);
  CHECK(s.message().find(two.thread.id) != std::string::npos);
  CHECK(s.message().find(three.thread.id) != std::string::npos);
  CHECK(s.message().find("Write the migration guide") != std::string::npos);
  r.text_match = "api KEYS";
  REQUIRE(f.rt->resolve_item(r, &e).is_ok());
  CHECK(e.thread.id == one.thread.id);
  CHECK(f.open_ids("a") == [&] {
    std::vector<std::string> v{two.thread.id, three.thread.id};
    std::sort(v.begin(), v.end());
    return v;
  }());
}

TEST_CASE("dedup: by embedding (hashing, words reordered) and by text when the embedder fails", "[work]") {
  work_fixture f;
  f.agent("a");
  f.agent("b", "failing");
  auto first = f.create("a", "update the onboarding docs for new hires and the wiki");
  auto again = f.create("a", "the wiki and the onboarding docs for new hires: update");
  CHECK(again.deduplicated);
  CHECK(again.matched_by == "embedding");
  CHECK(again.similarity > work_dedup_similarity);
  CHECK(again.thread.id == first.thread.id);
  CHECK(again.thread.work->touch_count == 1);  // the existing item, touched
  CHECK(f.signals(first.thread.id) == std::vector<std::string>{"work.created", "work.touched"});
  auto other = f.create("a", "write the quarterly report");
  CHECK_FALSE(other.deduplicated);

  auto b1 = f.create("b", "Fix the login bug!");
  auto b2 = f.create("b", "  fix THE login   bug ");
  CHECK(b2.deduplicated);
  CHECK(b2.matched_by == "text");
  CHECK(b2.thread.id == b1.thread.id);
  auto b3 = f.create("b", "the login bug fix");  // the same words, but no embedder to see it
  CHECK_FALSE(b3.deduplicated);
  // Agents never share items.
  auto a2 = f.create("a", "Fix the login bug!");
  CHECK_FALSE(a2.deduplicated);
}

TEST_CASE("concurrent creates of one text give one item", "[work]") {
  work_fixture f;
  f.agent("a");
  std::vector<work_create_result> results(8);
  std::vector<status> statuses(8);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < 8; ++i)
    threads.emplace_back([&, i] {
      work_create c;
      c.agent_id = "a";
      c.text = "Investigate the memory leak in the indexer";
      statuses[i] = f.rt->create_item(c, &results[i]);
    });
  for (auto& t : threads) t.join();
  size_t created = 0;
  for (size_t i = 0; i < 8; ++i) {
    REQUIRE(statuses[i].is_ok());
    CHECK(results[i].thread.id == results[0].thread.id);
    if (!results[i].deduplicated) ++created;
  }
  CHECK(created == 1);
  CHECK(f.open_ids("a").size() == 1);
  work_entry e;
  REQUIRE(f.rt->get_item(results[0].thread.id, &e).is_ok());
  CHECK(e.thread.work->touch_count == 7);
}

TEST_CASE("PROJECT STATE items are listed apart and never deduplicated against ordinary ones", "[work]") {
  work_fixture f;
  f.agent("a");
  auto ps = f.create("a", "PROJECT STATE: release 2 is frozen");
  auto plain = f.create("a", "release 2 is frozen");
  CHECK_FALSE(plain.deduplicated);
  CHECK(ps.thread.work->project_state);
  CHECK(f.open_ids("a") == std::vector<std::string>{plain.thread.id});
  CHECK(f.open_ids("a", true) == std::vector<std::string>{ps.thread.id});
  work_session_start in;
  in.agent_id = "a";
  work_session_started out;
  REQUIRE(f.rt->session_start(in, &out).is_ok());
  REQUIRE(out.items.size() == 1);
  CHECK(out.items[0].thread.id == plain.thread.id);
  REQUIRE(out.project_state.size() == 1);
  CHECK(out.project_state[0].thread.id == ps.thread.id);
}

TEST_CASE("reopen: the index is rebuilt, dedup still works, listings are equal", "[work]") {
  work_fixture f;
  f.agent("a");
  auto x = f.create("a", "update the onboarding docs for new hires and the wiki");
  f.create("a", "write the quarterly report");
  auto before = f.open_ids("a");
  f.reopen();
  CHECK(f.open_ids("a") == before);
  auto again = f.create("a", "the wiki and the onboarding docs for new hires: update");
  CHECK(again.deduplicated);
  CHECK(again.matched_by == "embedding");
  CHECK(again.thread.id == x.thread.id);
}

TEST_CASE("delete_thread leaves no key of the item in any column family", "[work]") {
  work_fixture f;
  f.agent("a");
  auto x = f.create("a", "fix the flaky deploy", "s1", {"GH-1"});
  work_entry e;
  REQUIRE(f.rt->touch_item(x.thread.id, &e).is_ok());
  REQUIRE(f.rt->delete_thread(x.thread.id).is_ok());
  CHECK(f.open_ids("a").empty());
  // A new item of the same text is new: the deleted one left the index.
  auto y = f.create("a", "fix the flaky deploy");
  CHECK_FALSE(y.deduplicated);
  std::vector<work_triple> triples;
  REQUIRE(f.rt->graph_connected_to("thread:" + x.thread.id, 100, &triples).is_ok());
  CHECK(triples.empty());
  REQUIRE(f.rt->close().is_ok());
  f.rt.reset();
  log_options lo;
  lo.path = f.dir.str();
  std::unique_ptr<event_log> log;
  REQUIRE(event_log::open(lo, &log).is_ok());
  size_t n = 99;
  REQUIRE(log->count_thread_keys(x.thread.id, &n).is_ok());
  CHECK(n == 0);
  REQUIRE(log->count_thread_keys(y.thread.id, &n).is_ok());
  CHECK(n > 0);
}

TEST_CASE("every input limit is refused naming the field, nothing stored", "[work]") {
  work_fixture f;
  f.agent("a");
  work_create_result r;
  auto refused = [&](work_create c, const std::string& field) {
    auto s = f.rt->create_item(c, &r);
    INFO(s.to_string());
    CHECK(s.code() == errc::invalid_input);
    CHECK(s.message().find(field) != std::string::npos);
  };
  work_create c;
  c.agent_id = "a";
  c.text = std::string(work_text_bytes_max + 1, 'x');
  refused(c, "text");
  c.text = "";
  refused(c, "text");
  c.text = "\xc3";
  refused(c, "text");
  c.text = "ok";
  c.session_id = "bad/id";
  refused(c, "session_id");
  c.session_id.clear();
  c.relates_to.assign(work_relates_max + 1, "GH-1");
  refused(c, "relates_to");
  c.relates_to = {"has space"};
  refused(c, "relates_to[0]");
  c.relates_to.clear();
  c.agent_id = "";
  refused(c, "agent_id");
  c.agent_id = "nobody";
  CHECK(f.rt->create_item(c, &r).code() == errc::not_found);
  CHECK(f.open_ids("a").empty());

  auto x = f.create("a", "a real one");
  work_resolve res;
  res.thread_id = x.thread.id;
  res.note = std::string(work_note_bytes_max + 1, 'n');
  work_entry e;
  auto s = f.rt->resolve_item(res, &e);
  CHECK(s.field() == "note");
  CHECK(s.limit() == "work_note_bytes_max");
  CHECK(f.signals(x.thread.id) == std::vector<std::string>{"work.created"});
  work_list_query q;
  q.agent_id = "a";
  q.limit = work_list_limit_max + 1;
  work_list_page page;
  CHECK(f.rt->list_items(q, &page).field() == "limit");
  std::vector<work_triple> t;
  CHECK(f.rt->graph_provenance("thread:" + x.thread.id, work_graph_depth_max + 1, 10, &t).field() == "depth");
  CHECK(f.rt->graph_connected_to("nocolon", 10, &t).field() == "node");
  work_session_close close;
  close.agent_id = "a";
  close.session_id = "s1";
  close.topics.assign(work_session_texts_max + 1, "t");
  work_session_closed closed;
  s = f.rt->session_close(close, &closed);
  CHECK(s.field() == "topics");
  CHECK(s.limit() == "work_session_texts_max");
}

TEST_CASE("a running thread takes a work transition between its run's commits, like a title", "[work]") {
  work_fixture f;
  // Long enough that the touch lands inside the run on a loaded sanitizer machine.
  f.agent("slow", "", R"({"default":{"reply":"done","latency_ms":5000}})");
  auto x = f.create("slow", "answer the customer");
  run_input in;
  in.text = "go";
  auto handle = f.rt->send(x.thread.id, in);
  // Bounded wait on the run's start (the thread's status), then the touch.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  manifest m;
  do {
    REQUIRE(f.rt->get_thread(x.thread.id, &m).is_ok());
    if (m.status != thread_status::running) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  } while (m.status != thread_status::running && std::chrono::steady_clock::now() < deadline);
  REQUIRE(m.status == thread_status::running);
  work_entry e;
  REQUIRE(f.rt->touch_item(x.thread.id, &e).is_ok());
  CHECK(e.thread.work->touch_count == 1);
  run_result r;
  REQUIRE(handle.wait(&r, std::chrono::seconds(60)).is_ok());
  CHECK(r.text == "done");
  REQUIRE(f.rt->get_thread(x.thread.id, &m).is_ok());
  CHECK(m.work->touch_count == 1);  // the run's closing commit kept it
  auto names = f.signals(x.thread.id);
  auto at = [&](const std::string& n) { return std::find(names.begin(), names.end(), n) - names.begin(); };
  CHECK(at("thread.start") < at("work.touched"));
  CHECK(at("work.touched") < at("thread.stop"));
}

namespace {

work_create_result create_in(work_fixture& f, const std::string& project, const std::string& text,
                             const std::string& linear_issue = "") {
  work_create c;
  c.agent_id = "a";
  c.text = text;
  c.project = project;
  c.linear_issue = linear_issue;
  work_create_result r;
  auto s = f.rt->create_item(c, &r);
  INFO(s.to_string());
  REQUIRE(s.is_ok());
  return r;
}

work_list_page list_in(work_fixture& f, const std::string& project, std::vector<work_stage> stages = {}) {
  work_list_query q;
  q.agent_id = "a";
  q.project = project;
  q.stages = std::move(stages);
  return answer_of(*f.rt, &runtime::list_items, q);
}

std::vector<std::string> ids_of(const work_list_page& page) {
  std::vector<std::string> ids;
  for (const auto& e : page.items) ids.push_back(e.thread.id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

}  // namespace

TEST_CASE("projects: stored with the item, dedup and listings stay within one, totals count it", "[work]") {
  work_fixture f;
  f.agent("a");
  auto billing = create_in(f, "billing", "fix the broken deploy pipeline", "PROJ-123");
  CHECK(billing.thread.work->project == "billing");
  CHECK(billing.thread.work->linear_issue == "PROJ-123");
  // The same text in another project is another item (the seed's dedup scope).
  auto plain = create_in(f, "", "fix the broken deploy pipeline");
  CHECK_FALSE(plain.deduplicated);
  CHECK(plain.thread.work->project == "default");
  CHECK(create_in(f, "billing", "Fix the broken deploy pipeline!").thread.id == billing.thread.id);
  auto other = create_in(f, "billing", "write the export docs");
  // linear_issue is named in the graph as relates_to does.
  std::vector<work_triple> got;
  REQUIRE(f.rt->graph_connected_to("issue:PROJ-123", 10, &got).is_ok());
  REQUIRE(got.size() == 1);
  CHECK(got[0].subject == "thread:" + billing.thread.id);
  CHECK(got[0].project == "billing");

  auto sorted = [](std::vector<std::string> v) { return std::sort(v.begin(), v.end()), v; };
  CHECK(ids_of(list_in(f, "billing")) == sorted({billing.thread.id, other.thread.id}));
  CHECK(ids_of(list_in(f, "default")) == std::vector<std::string>{plain.thread.id});
  CHECK(ids_of(list_in(f, "")).size() == 3);  // the runtime's "": every project
  CHECK(list_in(f, "nowhere").items.empty());

  work_resolve r;
  r.agent_id = "a";
  r.text_match = "deploy pipeline";
  r.project = "billing";  // two items match the text, one in this project
  r.note = "rolled back";
  work_entry e;
  REQUIRE(f.rt->resolve_item(r, &e).is_ok());
  CHECK(e.thread.id == billing.thread.id);
  auto page = list_in(f, "billing");
  CHECK(ids_of(page) == std::vector<std::string>{other.thread.id});
  CHECK(page.total_open == 1);
  CHECK(page.total_resolved == 1);
  CHECK(ids_of(list_in(f, "billing", {work_stage::resolved})) == std::vector<std::string>{billing.thread.id});
  page = list_in(f, "default");
  CHECK(page.total_open == 1);
  CHECK(page.total_resolved == 0);
  // By id from another project's scope: refused, nothing written.
  r = {};
  r.agent_id = "a";
  r.thread_id = other.thread.id;
  r.project = "default";
  auto s = f.rt->resolve_item(r, &e);
  CHECK(s.code() == errc::invalid_input);
  CHECK(s.field() == "project");
  CHECK(f.signals(other.thread.id) == std::vector<std::string>{"work.created"});

  // A sweep of one project examines its items only.
  work_sweep_options so;
  so.agent_id = "a";
  so.project = "billing";
  work_sweep_result swept;
  REQUIRE(f.rt->sweep_items(so, &swept).is_ok());
  CHECK(swept.examined == 1);

  // Stored: after a reopen the index and the rows still know each item's project.
  f.reopen();
  CHECK(ids_of(list_in(f, "billing")) == std::vector<std::string>{other.thread.id});
  CHECK(list_in(f, "billing").total_resolved == 1);
  CHECK(create_in(f, "billing", "write the export docs").deduplicated);
  CHECK_FALSE(create_in(f, "default", "write the export docs").deduplicated);
  work_entry got_item;
  REQUIRE(f.rt->get_item(billing.thread.id, &got_item).is_ok());
  CHECK(got_item.thread.work->linear_issue == "PROJ-123");
  CHECK(got_item.thread.work->project == "billing");
}

TEST_CASE("projects: a bad project or linear_issue is refused naming the field, nothing stored", "[work]") {
  work_fixture f;
  f.agent("a");
  work_create c;
  c.agent_id = "a";
  c.text = "x";
  c.project = std::string(work_project_bytes_max + 1, 'p');
  work_create_result r;
  auto s = f.rt->create_item(c, &r);
  CHECK(s.field() == "project");
  CHECK(s.limit() == "work_project_bytes_max");
  c.project = "ok";
  c.linear_issue = "not an id";
  CHECK(f.rt->create_item(c, &r).field() == "linear_issue");
  CHECK(f.open_ids("a").empty());
}
