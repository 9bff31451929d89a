// The retention effect: per-agent policies archive or erase threads untouched
// for N days, by the injected wall clock; running threads are skipped.
#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>

#include "tests/support/runtime_fixture.hpp"

using namespace skein;
using namespace skein::test;
using namespace std::chrono_literals;

namespace {

constexpr int64_t day_ms = 86400000;

bool has(const std::vector<std::string>& ids, const std::string& id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

std::vector<std::string> listed(runtime_fixture& f, const std::string& agent,
                                thread_query::archived filter = thread_query::archived::exclude) {
  thread_query q;
  q.index = thread_query::by::agent;
  q.value = agent;
  q.archived_filter = filter;
  thread_page page;
  REQUIRE(f.rt->list_threads(q, &page).is_ok());
  std::vector<std::string> ids;
  for (const auto& m : page.threads) ids.push_back(m.id);
  return ids;
}

retention_result sweep(runtime_fixture& f) {
  retention_result r;
  auto s = f.rt->apply_retention(&r);
  INFO(s.to_string());
  REQUIRE(s.is_ok());
  return r;
}

}  // namespace

TEST_CASE("retention: archive after N days, erase after M, running skipped, un-archive on input") {
  std::atomic<int64_t> now{1795392000000};
  runtime_options o;
  o.clock = [&] { return now.load(); };
  o.heartbeat_interval_ms = 3600000;  // no heartbeat commit moves updated_at during the test
  // Nor a late effect's: a title committed after the clock moved on would touch
  // r2, and the sweep then finds it not due (the likely cause of one failure
  // under ASan: r2 was not archived at day 31).
  o.effects.titles = o.effects.embeddings = o.effects.compaction = false;
  runtime_fixture f{o};
  agent_config a;
  a.id = "r";
  a.engine_config = R"({"rules": [{"match": "long", "stall": true}], "default": {"reply": "ok"}})";
  a.retention.archive_after_days = 7;
  a.retention.delete_after_days = 30;
  REQUIRE(f.rt->create_agent(a).is_ok());
  f.agent("keep", R"({"default": {"reply": "ok"}})");  // no policy
  auto r1 = f.thread("r"), r2 = f.thread("r"), r3 = f.thread("r"), k1 = f.thread("keep");
  for (const auto& t : {r1, r2, k1}) f.run(t.id, "hello");
  run_input in;
  in.text = "long job";  // stalls: r3 stays running
  auto running = f.rt->send(r3.id, in);
  manifest m;
  REQUIRE(runtime_fixture::eventually(
      [&] { return f.rt->get_thread(r3.id, &m).is_ok() && m.status == thread_status::running; }));

  // Six days: nothing is due.
  now += 6 * day_ms;
  retention_result r = sweep(f);
  CHECK(r.archived.empty());
  CHECK(r.deleted.empty());
  CHECK(r.skipped.empty());

  // Eight days: the idle threads of r are archived, the running one is skipped.
  now += 2 * day_ms;
  r = sweep(f);
  CHECK(r.archived.size() == 2);
  CHECK(has(r.archived, r1.id));
  CHECK(has(r.archived, r2.id));
  CHECK(r.skipped == std::vector<std::string>{r3.id});
  REQUIRE(f.rt->get_thread(r1.id, &m).is_ok());
  CHECK(m.archived_at_ms == now.load());
  int64_t touched = m.updated_at_ms;
  CHECK(touched == now.load() - 8 * day_ms);  // archiving is no touch
  REQUIRE(f.rt->get_thread(k1.id, &m).is_ok());
  CHECK(m.archived_at_ms == 0);

  // Archived threads leave default listings but stay readable.
  auto def = listed(f, "r");
  CHECK(!has(def, r1.id));
  CHECK(!has(def, r2.id));
  CHECK(has(def, r3.id));
  auto only = listed(f, "r", thread_query::archived::only);
  CHECK(only.size() == 2);
  CHECK(listed(f, "r", thread_query::archived::include).size() == 3);
  CHECK(f.events(r1.id).size() > 0);
  // A second sweep finds nothing new to do.
  r = sweep(f);
  CHECK(r.archived.empty());

  // An input un-archives the thread in its run's first tick.
  f.run(r2.id, "back again");
  REQUIRE(f.rt->get_thread(r2.id, &m).is_ok());
  CHECK(m.archived_at_ms == 0);
  CHECK(has(listed(f, "r"), r2.id));

  // Thirty-one days after the first runs: r1 is erased; r2 (touched on day 8) is
  // archived again; the running thread is still skipped; `keep` is untouched.
  now += 23 * day_ms;
  r = sweep(f);
  CHECK(r.deleted == std::vector<std::string>{r1.id});
  CHECK(r.archived == std::vector<std::string>{r2.id});
  CHECK(r.skipped == std::vector<std::string>{r3.id});
  CHECK(f.rt->get_thread(r1.id, &m).code() == errc::not_found);
  size_t keys = 1;
  // Erasure is the full delete path: no key of the thread is left.
  f.rt.reset();  // close, so that the count reads a quiet database
  {
    std::unique_ptr<event_log> log;
    log_options lo;
    lo.path = f.dir.str();
    REQUIRE(event_log::open(lo, &log).is_ok());
    REQUIRE(log->count_thread_keys(r1.id, &keys).is_ok());
    CHECK(keys == 0);
    manifest kept;
    REQUIRE(log->read_manifest(k1.id, &kept).is_ok());
    CHECK(kept.archived_at_ms == 0);
  }
  run_result ignored;
  running.wait(&ignored, 1s).ignore();  // ended as cancelled by the close
}

TEST_CASE("retention: agents without a policy are never swept") {
  std::atomic<int64_t> now{1795392000000};
  runtime_options o;
  o.clock = [&] { return now.load(); };
  runtime_fixture f{o};
  f.agent("keep", R"({"default": {"reply": "ok"}})");
  auto t = f.thread("keep");
  f.run(t.id, "hello");
  now += 3650 * day_ms;
  retention_result r = sweep(f);
  CHECK(r.archived.empty());
  CHECK(r.deleted.empty());
  CHECK(r.examined == 0);  // no policy: not even the index is read
  manifest m;
  REQUIRE(f.rt->get_thread(t.id, &m).is_ok());
  CHECK(m.archived_at_ms == 0);
}
