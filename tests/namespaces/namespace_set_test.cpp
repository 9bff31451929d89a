// namespace_set: one database per namespace. Every runtime call made in one
// namespace with another's ids answers as for missing ids; removal erases a
// namespace whole; a data directory from before namespaces becomes `default`.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <thread>

#include "runtime/namespaces/namespaces.hpp"
#include "tests/support/raw_db.hpp"
#include "tests/support/runtime_fixture.hpp"
#include "tests/support/temp_dir.hpp"

using namespace skein;
using namespace skein::test;
namespace fs = std::filesystem;

namespace {

constexpr const char* rules = R"({"default":{"reply":"noted"}})";

namespace_set_options set_options(const temp_dir& dir) {
  namespace_set_options o;
  o.data_dir = dir.str("data");
  o.runtime = without_effects();
  o.runtime.mode = durability::flush;
  return o;
}

std::unique_ptr<namespace_set> open_set(const temp_dir& dir) {
  std::unique_ptr<namespace_set> set;
  auto s = namespace_set::open(set_options(dir), &set);
  INFO(s.to_string());
  REQUIRE(s.is_ok());
  return set;
}

std::shared_ptr<runtime> runtime_in(namespace_set& set, const std::string& ns) {
  std::shared_ptr<runtime> rt;
  auto s = set.runtime_of(ns, &rt);
  INFO(s.to_string());
  REQUIRE(s.is_ok());
  return rt;
}

void add_agent(runtime& rt, const std::string& id) {
  agent_config a;
  a.id = id;
  a.system_prompt = "test";
  a.engine_config = rules;
  auto s = rt.create_agent(a);
  INFO(s.to_string());
  REQUIRE(s.is_ok());
}

std::string thread_with_text(runtime& rt, const std::string& agent, const std::string& text) {
  manifest m;
  thread_options o;
  o.agent_id = agent;
  o.task_id = "task-" + text;
  REQUIRE(rt.create_thread(o, &m).is_ok());
  run_result r;
  run_input in;
  in.text = text;
  REQUIRE(rt.send(m.id, in).wait(&r).is_ok());
  return m.id;
}

// Every byte of every file under `dir`, as one string per file.
std::vector<std::string> file_bytes(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::ifstream in(e.path(), std::ios::binary);
    out.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return out;
}

// A status with `id` replaced, so that two answers about two ids compare.
std::string shape(const status& s, const std::string& id) {
  std::string text = s.to_string();
  for (size_t at; (at = text.find(id)) != std::string::npos;) text.replace(at, id.size(), "<id>");
  return text;
}

}  // namespace

TEST_CASE("namespaces: create, list, get, quota and remove, with names and bodies checked by field") {
  temp_dir dir;
  auto set = open_set(dir);
  std::vector<namespace_info> all;
  REQUIRE(set->list(&all).is_ok());
  REQUIRE(all.size() == 1);
  CHECK(all[0].name == "default");

  namespace_info info;
  namespace_quota q;
  q.threads_max = 7;
  REQUIRE(set->create("acme", q, &info).is_ok());
  CHECK(info.name == "acme");
  CHECK(info.quota.threads_max == 7);
  CHECK(set->create("acme", {}).code() == errc::conflict);
  for (const std::string& bad : std::vector<std::string>{"", "Acme", "a/b", "a.b", "-x", std::string(65, 'a'), "..", "a b"}) {
    auto s = set->create(bad, {});
    INFO(bad << ": " << s.to_string());
    CHECK(s.code() == errc::invalid_input);
    CHECK(s.field() == "name");
  }
  CHECK(set->create(std::string(65, 'a'), {}).limit() == "namespace_name_bytes_max");
  CHECK(set->create(std::string(64, 'a'), {}).is_ok());

  q.threads_max = 9;
  REQUIRE(set->set_quota("acme", q, &info).is_ok());
  CHECK(info.quota.threads_max == 9);
  CHECK(set->set_quota("nobody", q).code() == errc::not_found);
  CHECK(set->get("nobody", &info).code() == errc::not_found);
  CHECK(set->remove("default").code() == errc::invalid_input);
  CHECK(set->remove("nobody").code() == errc::not_found);
  std::shared_ptr<runtime> rt;
  CHECK(set->runtime_of("nobody", &rt).code() == errc::not_found);

  // The registry survives a restart, quotas included.
  set.reset();
  set = open_set(dir);
  REQUIRE(set->get("acme", &info).is_ok());
  CHECK(info.quota.threads_max == 9);
  REQUIRE(set->list(&all).is_ok());
  CHECK(all.size() == 3);
}

TEST_CASE("namespaces: every runtime call with another namespace's ids answers as for missing ids") {
  temp_dir dir;
  auto set = open_set(dir);
  REQUIRE(set->create("acme", {}).is_ok());
  REQUIRE(set->create("bravo", {}).is_ok());
  auto a = runtime_in(*set, "acme");
  auto b = runtime_in(*set, "bravo");
  // The same agent id in both: two agents that never meet.
  add_agent(*a, "alpha");
  add_agent(*b, "alpha");
  std::string theirs = thread_with_text(*a, "alpha", "acme-secret-plan");
  std::string mine = thread_with_text(*b, "alpha", "bravo-own-words");
  const std::string nobody = "th_20260101_zzzzzzzzzzzz";

  // One call as bravo on an id; the same call on an id no namespace has must
  // answer the same way.
  auto same_as_missing = [&](const char* what, const std::function<status(const std::string&)>& call) {
    status foreign = call(theirs);
    status missing = call(nobody);
    INFO(what << ": foreign " << foreign.to_string() << " / missing " << missing.to_string());
    CHECK(foreign.code() == missing.code());
    CHECK(shape(foreign, theirs) == shape(missing, nobody));
  };
  manifest m;
  std::vector<event> events;
  same_as_missing("get_thread", [&](const std::string& id) { return b->get_thread(id, &m); });
  same_as_missing("read", [&](const std::string& id) { return b->read(id, history_view::complete, 1, 100, &events); });
  CHECK(events.empty());
  REQUIRE(b->read(theirs, history_view::complete, 1, 100, &events).is_ok());
  CHECK(events.empty());
  same_as_missing("send", [&](const std::string& id) {
    run_result r;
    run_input in;
    in.text = "hijack";
    return b->send(id, in).wait(&r);
  });
  same_as_missing("submit", [&](const std::string& id) {
    std::string run;
    run_input in;
    in.text = "hijack";
    return b->submit(id, in, &run);
  });
  same_as_missing("cancel", [&](const std::string& id) { return b->cancel(id); });
  same_as_missing("fork", [&](const std::string& id) { return b->fork(id, 1, &m); });
  same_as_missing("set_title", [&](const std::string& id) { return b->set_title(id, "x", &m); });
  same_as_missing("diagnose", [&](const std::string& id) {
    diagnosis d;
    return b->diagnose(id, &d);
  });
  same_as_missing("subscribe", [&](const std::string& id) {
    uint64_t sub = 0;
    event_sink sink;
    sink.on_event = [](const event&) {};
    return b->subscribe(id, 0, sink, &sub);
  });
  same_as_missing("compact", [&](const std::string& id) {
    compact_result r;
    return b->compact(id, compact_options{}, &r);
  });
  same_as_missing("find_task_thread", [&](const std::string&) {
    return b->find_task_thread("task-acme-secret-plan", &m);
  });
  same_as_missing("touch_item", [&](const std::string& id) {
    work_entry w;
    return b->touch_item(id, &w);
  });
  same_as_missing("get_item", [&](const std::string& id) {
    work_entry w;
    return b->get_item(id, &w);
  });
  same_as_missing("add_member", [&](const std::string& id) {
    house_member hm;
    hm.agent_id = "alpha";
    return b->add_member(id, hm, &m);
  });
  same_as_missing("remove_member", [&](const std::string& id) { return b->remove_member(id, "alpha", &m); });
  same_as_missing("reconcile", [&](const std::string& id) { return b->reconcile(id); });
  same_as_missing("relate_item", [&](const std::string& id) {
    work_entry w;
    return b->relate_item(id, "X-1", &w);
  });
  same_as_missing("resolve_item", [&](const std::string& id) {
    work_resolve r;
    r.agent_id = "alpha";
    r.thread_id = id;
    work_entry w;
    return b->resolve_item(r, &w);
  });
  std::vector<work_triple> triples;
  same_as_missing("graph_connected_to", [&](const std::string& id) {
    return b->graph_connected_to("thread:" + id, 100, &triples);
  });
  CHECK(triples.empty());
  same_as_missing("graph_provenance", [&](const std::string& id) {
    return b->graph_provenance("thread:" + id, 2, 100, &triples);
  });
  CHECK(triples.empty());
  // Schedules: acme's, by id.
  schedule sched;
  sched.id = "sched-a";
  sched.agent_id = "alpha";
  sched.kind = schedule_kind::interval;
  sched.interval_ms = 3600000;
  sched.input_text = "tick";
  sched.thread_id = theirs;
  REQUIRE(a->create_schedule(sched).is_ok());
  auto same_schedule_answer = [&](const char* what, const std::function<status(const std::string&)>& call) {
    status foreign = call("sched-a");
    status missing = call("sched-z");
    INFO(what << ": foreign " << foreign.to_string() << " / missing " << missing.to_string());
    CHECK(foreign.code() == missing.code());
    CHECK(shape(foreign, "sched-a") == shape(missing, "sched-z"));
  };
  schedule got;
  same_schedule_answer("get_schedule", [&](const std::string& id) { return b->get_schedule(id, &got); });
  same_schedule_answer("pause_schedule", [&](const std::string& id) { return b->pause_schedule(id, &got); });
  same_schedule_answer("resume_schedule", [&](const std::string& id) { return b->resume_schedule(id, &got); });
  same_schedule_answer("preview_schedule", [&](const std::string& id) {
    std::vector<int64_t> at;
    return b->preview_schedule(id, 3, &at);
  });
  // A schedule in bravo bound to acme's thread: as if the thread were missing.
  schedule bound = sched;
  bound.id = "sched-b";
  status bind_foreign = b->create_schedule(bound);
  bound.thread_id = nobody;
  status bind_missing = b->create_schedule(bound);
  CHECK(bind_foreign.code() == bind_missing.code());
  CHECK(shape(bind_foreign, theirs) == shape(bind_missing, nobody));
  REQUIRE(b->delete_schedule("sched-a").is_ok());
  REQUIRE(a->get_schedule("sched-a", &got).is_ok());
  CHECK_FALSE(got.paused);
  // Deleting is idempotent: ok for both, and acme's thread is untouched.
  CHECK(b->delete_thread(theirs).is_ok());
  REQUIRE(a->get_thread(theirs, &m).is_ok());

  // Listings, searches and usage see bravo's own only.
  thread_page page;
  thread_query q;
  q.index = thread_query::by::updated;
  REQUIRE(b->list_threads(q, &page).is_ok());
  REQUIRE(page.threads.size() == 1);
  CHECK(page.threads[0].id == mine);
  usage_report usage;
  REQUIRE(b->usage(usage_query{}, &usage).is_ok());
  std::vector<memory_hit> hits;
  REQUIRE(b->memory_search("alpha", "acme-secret-plan", 10, &hits).is_ok());
  for (const auto& h : hits) CHECK(h.thread_id != theirs);
  std::vector<agent_config> agents;
  REQUIRE(b->list_agents(&agents).is_ok());
  CHECK(agents.size() == 1);

  // An import into bravo with acme's thread id is bravo's own thread: the two
  // namespaces hold the same id without meeting.
  manifest imported;
  imported.id = theirs;
  imported.agent_id = "alpha";
  REQUIRE(a->read(theirs, history_view::complete, 1, 100, &events).is_ok());
  std::vector<event> copy = events;
  for (auto& e : copy)
    if (e.type == event_type::message && e.role == message_role::user) e.text = "bravo-copy";
  REQUIRE(b->import_thread(imported, copy, &m).is_ok());
  std::vector<event> back;
  REQUIRE(a->read(theirs, history_view::complete, 1, 100, &back).is_ok());
  REQUIRE(back.size() == events.size());
  for (size_t i = 0; i < back.size(); ++i) CHECK(back[i].text == events[i].text);

  // On disk: no byte of acme's planted text in bravo's database.
  a.reset();
  b.reset();
  set.reset();
  for (const auto& bytes : file_bytes(fs::path(dir.str("data")) / "namespaces" / "bravo"))
    CHECK(bytes.find("acme-secret-plan") == std::string::npos);
}

TEST_CASE("namespaces: removing one waits for its calls, then erases its database whole") {
  temp_dir dir;
  auto set = open_set(dir);
  REQUIRE(set->create("gone", {}).is_ok());
  REQUIRE(set->create("kept", {}).is_ok());
  auto gone = runtime_in(*set, "gone");
  auto kept = runtime_in(*set, "kept");
  add_agent(*gone, "alpha");
  add_agent(*kept, "alpha");
  thread_with_text(*gone, "alpha", "doomed-words");
  std::string survivor = thread_with_text(*kept, "alpha", "kept-words");
  fs::path db = set->database_dir("gone");
  REQUIRE(fs::exists(db));

  // A lease in use holds the removal back; the namespace is unregistered at once.
  std::atomic<bool> removed{false};
  status result;
  std::thread remover([&] {
    result = set->remove("gone");
    removed = true;
  });
  namespace_info info;
  for (int i = 0; i < 500 && set->get("gone", &info).is_ok(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK(set->get("gone", &info).code() == errc::not_found);
  std::shared_ptr<runtime> again;
  CHECK(set->runtime_of("gone", &again).code() == errc::not_found);
  CHECK_FALSE(removed.load());
  manifest m;
  std::vector<agent_config> listed;
  CHECK(gone->list_agents(&listed).is_ok());  // the lease held is still served
  gone.reset();  // the last lease: the runtime closes, the database goes
  remover.join();
  INFO(result.to_string());
  REQUIRE(result.is_ok());
  CHECK_FALSE(fs::exists(db));

  // Nothing of it is left in any database, column family by column family.
  kept.reset();
  set.reset();
  for (const auto& e : fs::directory_iterator(fs::path(dir.str("data")) / "namespaces")) {
    INFO(e.path().filename().string());
    CHECK(e.path().filename().string() != "gone");
    raw_db raw{e.path().string()};
    for (const auto& cf : raw.names())
      for (const auto& k : raw.keys(cf)) {
        std::string v;
        raw.get(cf, k, &v);
        CHECK(v.find("doomed-words") == std::string::npos);
      }
  }
  set = open_set(dir);
  auto k = runtime_in(*set, "kept");
  REQUIRE(k->get_thread(survivor, &m).is_ok());
  // The name can be taken again, empty.
  REQUIRE(set->create("gone", {}).is_ok());
  auto fresh = runtime_in(*set, "gone");
  std::vector<agent_config> agents;
  REQUIRE(fresh->list_agents(&agents).is_ok());
  CHECK(agents.empty());
}

TEST_CASE("namespaces: an unregistered database (a removal cut short) is erased at open") {
  temp_dir dir;
  {
    auto set = open_set(dir);
    REQUIRE(set->create("half", {}).is_ok());
    auto rt = runtime_in(*set, "half");
    add_agent(*rt, "alpha");
  }
  // The registry without it, as a removal leaves it right after unregistering.
  fs::path data = dir.str("data");
  {
    auto set = open_set(dir);
    REQUIRE(fs::exists(data / "namespaces" / "half"));
    fs::copy(data / "namespaces" / "half", data / "namespaces" / "stray", fs::copy_options::recursive);
  }
  auto set = open_set(dir);
  CHECK_FALSE(fs::exists(data / "namespaces" / "stray"));
  CHECK(fs::exists(data / "namespaces" / "half"));
}

TEST_CASE("namespaces: a data directory from before namespaces becomes default in place, also after a crash mid-move") {
  for (bool crash : {false, true}) {
    DYNAMIC_SECTION((crash ? "resumed after a crash" : "in one go")) {
      temp_dir dir;
      fs::path data = dir.str("data");
      std::string id;
      {
        runtime_options o = without_effects();
        o.data_dir = data.string();
        o.mode = durability::flush;
        std::unique_ptr<runtime> rt;
        REQUIRE(runtime::open(o, &rt).is_ok());
        add_agent(*rt, "alpha");
        id = thread_with_text(*rt, "alpha", "from-before");
        REQUIRE(rt->close().is_ok());
      }
      REQUIRE(fs::exists(data / "CURRENT"));
      if (crash) {
        // The move stopped after half of the files: CURRENT among the moved.
        fs::path staging = data / "namespaces" / "default.migrating";
        fs::create_directories(staging);
        std::vector<fs::path> files;
        for (const auto& e : fs::directory_iterator(data))
          if (e.path().filename() != "namespaces") files.push_back(e.path());
        std::sort(files.begin(), files.end());
        for (size_t i = 0; i < files.size(); i += 2) fs::rename(files[i], staging / files[i].filename());
        if (fs::exists(data / "CURRENT")) fs::rename(data / "CURRENT", staging / "CURRENT");
      }
      auto set = open_set(dir);
      CHECK_FALSE(fs::exists(data / "CURRENT"));
      CHECK_FALSE(fs::exists(data / "namespaces" / "default.migrating"));
      auto rt = runtime_in(*set, "default");
      manifest m;
      REQUIRE(rt->get_thread(id, &m).is_ok());
      std::vector<event> events;
      REQUIRE(rt->read(id, history_view::complete, 1, 100, &events).is_ok());
      bool found = false;
      for (const auto& e : events) found = found || e.text == "from-before";
      CHECK(found);
    }
  }
}
