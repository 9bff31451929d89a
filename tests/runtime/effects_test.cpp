// Effects through the embedded runtime, real scheduler and RocksDB: titles,
// user titles, embeddings with the memory hook, retries of a failing effect,
// catch-up at open, and the erasure of everything a thread had.
#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "runtime/model/compaction.hpp"
#include "runtime/model/hashing_embedder.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/fault_fs.hpp"
#include "tests/support/runtime_fixture.hpp"

using namespace skein;
using namespace skein::test;
using namespace std::chrono_literals;

namespace {

constexpr const char* titled_rules =
    R"({"default": {"reply": "ok"}, "title": {"reply": "\"Planning the garden party\" is what this is\nSecond line"}})";

void add_agent(runtime_fixture& f, const std::string& id, const std::string& rules,
               const std::string& embedder = "hashing") {
  agent_config a;
  a.id = id;
  a.system_prompt = "test";
  a.engine_config = rules;
  a.effects.embedder = embedder;
  auto s = f.rt->create_agent(a);
  INFO(s.to_string());
  REQUIRE(s.is_ok());
}

// Every effect has nothing left to do. Sound right after a run: the journal
// tells effects before it acknowledges a commit, so their mailboxes hold the
// news before this asks.
bool drained(runtime_fixture& f) {
  runtime_stats s = f.stats();
  for (const auto& e : s.effects)
    if (e.backlog != 0) return false;
  return !s.effects.empty();
}

const effect_stats& stats_of(const runtime_stats& s, const std::string& name) {
  for (const auto& e : s.effects)
    if (e.effect == name) return e;
  FAIL("no effect " << name);
  return s.effects.front();
}

std::set<uint64_t> message_seqs(const std::vector<event>& log) {
  std::set<uint64_t> out;
  for (const auto& e : log)
    if (e.type == event_type::message && !e.text.empty() &&
        (e.role == message_role::user || e.role == message_role::assistant))
      out.insert(e.seq);
  return out;
}

// An embedder that fails its first `failures` calls, then hashes.
struct flaky_embedder : embedder {
  std::shared_ptr<embedder> inner;
  std::shared_ptr<std::atomic<int>> left;
  size_t dimensions() const override { return inner->dimensions(); }
  void embed(std::vector<std::string> texts, std::function<void(embed_reply)> done) override {
    if (left->fetch_sub(1) > 0) {
      embed_reply r;
      r.result = status::io_error("flaky: not yet");
      done(std::move(r));
      return;
    }
    inner->embed(std::move(texts), std::move(done));
  }
};

}  // namespace

TEST_CASE("titles: a thread with 2 user messages gets one sanitized title, one with 1 gets none") {
  runtime_fixture f;
  add_agent(f, "a", titled_rules);
  auto two = f.thread("a");
  auto one = f.thread("a");
  f.run(two.id, "we need a garden party");
  f.run(one.id, "just one message");
  f.run(two.id, "with lanterns");
  REQUIRE(runtime_fixture::eventually([&] { return drained(f); }));
  manifest m;
  REQUIRE(f.rt->get_thread(two.id, &m).is_ok());
  CHECK(m.title == "Planning the garden party is what");  // quotes gone, cut to 6 words, first line
  CHECK(m.title_generated);
  REQUIRE(f.rt->get_thread(one.id, &m).is_ok());
  CHECK(m.title.empty());
  auto s = f.stats();
  CHECK(stats_of(s, "titles").failed == 0);
  CHECK(stats_of(s, "titles").done >= 2);
  CHECK(stats_of(s, "titles").discarded == 0);
}

TEST_CASE("titles: a user's title is never overwritten, and replaces a generated one") {
  runtime_fixture f;
  add_agent(f, "a", titled_rules);
  auto t = f.thread("a");
  f.run(t.id, "first");
  manifest m;
  REQUIRE(f.rt->set_title(t.id, "My own title", &m).is_ok());
  CHECK(m.title == "My own title");
  CHECK_FALSE(m.title_generated);
  f.run(t.id, "second");
  f.run(t.id, "third");
  REQUIRE(runtime_fixture::eventually([&] { return drained(f); }));
  REQUIRE(f.rt->get_thread(t.id, &m).is_ok());
  CHECK(m.title == "My own title");
  CHECK_FALSE(m.title_generated);

  auto g = f.thread("a");
  f.run(g.id, "one");
  f.run(g.id, "two");
  REQUIRE(runtime_fixture::eventually([&] { return drained(f); }));
  REQUIRE(f.rt->get_thread(g.id, &m).is_ok());
  REQUIRE(m.title_generated);
  REQUIRE(f.rt->set_title(g.id, "Renamed by hand").is_ok());
  f.run(g.id, "three");
  REQUIRE(runtime_fixture::eventually([&] { return drained(f); }));
  REQUIRE(f.rt->get_thread(g.id, &m).is_ok());
  CHECK(m.title == "Renamed by hand");
  CHECK_FALSE(m.title_generated);

  CHECK(f.rt->set_title(g.id, "").code() == errc::invalid_input);
  CHECK(f.rt->set_title(g.id, "two\nlines").code() == errc::invalid_input);
  CHECK(f.rt->set_title("nope", "x").code() == errc::not_found);
}

TEST_CASE("embeddings: every user and assistant message gets exactly one row, the hook hears each once") {
  std::mutex mu;
  std::map<std::string, std::vector<uint64_t>> heard;  // guarded by mu
  std::set<std::string> heard_agents;                    // guarded by mu
  runtime_options o;
  // The hook runs on a runtime thread: it records, and the test thread checks
  // (Catch2's assertions are not thread-safe).
  o.effects.on_embedded = [&](const std::string& thread, uint64_t seq, const embedding_record& r) {
    std::lock_guard<std::mutex> lock{mu};
    heard[thread].push_back(seq);
    heard_agents.insert(r.agent_id);
  };
  runtime_fixture f{o};
  add_agent(f, "a", R"({"default": {"reply": "a reply to remember"}})");
  std::vector<std::string> threads;
  for (int i = 0; i < 5; ++i) threads.push_back(f.thread("a").id);
  for (int run = 0; run < 3; ++run)
    for (const auto& id : threads) f.run(id, "message " + std::to_string(run) + " of " + id);
  REQUIRE(runtime_fixture::eventually([&] { return drained(f); }));
  std::map<std::string, std::set<uint64_t>> expected;
  for (const auto& id : threads) expected[id] = message_seqs(f.events(id));
  REQUIRE(f.rt->close().is_ok());
  {
    std::lock_guard<std::mutex> lock{mu};
    CHECK(heard_agents == std::set<std::string>{"a"});
  }
  auto log = open_log(f.dir.str());
  for (const auto& id : threads) {
    INFO("thread " << id);
    std::vector<std::pair<uint64_t, embedding_record>> rows;
    REQUIRE(log->read_embeddings(id, &rows).is_ok());
    std::set<uint64_t> seqs;
    for (const auto& [seq, rec] : rows) {
      seqs.insert(seq);
      CHECK(rec.vector.size() == hashing_dims_default);
    }
    CHECK(rows.size() == seqs.size());
    CHECK(seqs == expected[id]);
    CHECK(expected[id].size() == 6);
    std::lock_guard<std::mutex> lock{mu};
    CHECK(std::set<uint64_t>(heard[id].begin(), heard[id].end()) == expected[id]);
    CHECK(heard[id].size() == expected[id].size());
    uint64_t cursor = 0;
    REQUIRE(log->read_effect_cursor("embeddings", id, &cursor).is_ok());
    manifest m;
    REQUIRE(log->read_manifest(id, &m).is_ok());
    CHECK(cursor == m.last_seq);
  }
}

TEST_CASE("a failing effect retries with backoff and is counted while titles and replies go on") {
  auto left = std::make_shared<std::atomic<int>>(4);
  runtime_options o;
  o.effects.retry_delay_min_ms = 5;
  o.effects.retry_delay_max_ms = 40;
  o.embedders["flaky"] = [left](std::string_view, timer_service& timers, std::shared_ptr<embedder>* out) -> status {
    auto e = std::make_shared<flaky_embedder>();
    SKEIN_TRY(make_hashing_embedder("", timers, &e->inner));
    e->left = left;
    *out = e;
    return status::ok();
  };
  runtime_fixture f{o};
  add_agent(f, "a", titled_rules, "flaky");
  auto t = f.thread("a");
  // Replies come while the embeddings effect fails.
  CHECK(f.run(t.id, "first").outcome == run_outcome::completed);
  CHECK(f.run(t.id, "second").outcome == run_outcome::completed);
  REQUIRE(runtime_fixture::eventually([&] {
    manifest m;
    return f.rt->get_thread(t.id, &m).is_ok() && !m.title.empty();
  }));
  REQUIRE(runtime_fixture::eventually([&] { return drained(f); }));
  auto s = f.stats();
  const auto& fx = stats_of(s, "embeddings");
  CHECK(fx.failed >= 4);
  CHECK(fx.retries >= 4);
  CHECK(fx.done >= 1);
  CHECK(fx.last_error.find("flaky") != std::string::npos);
  CHECK(stats_of(s, "titles").failed == 0);
  std::set<uint64_t> expected = message_seqs(f.events(t.id));
  REQUIRE(f.rt->close().is_ok());
  auto log = open_log(f.dir.str());
  std::vector<std::pair<uint64_t, embedding_record>> rows;
  REQUIRE(log->read_embeddings(t.id, &rows).is_ok());
  CHECK(rows.size() == expected.size());
}

TEST_CASE("effects catch up at open with what was committed before a close") {
  temp_dir dir;
  std::string id;
  std::set<uint64_t> expected;
  {
    runtime_options o;
    o.data_dir = dir.str();
    o.effects.titles = false;
    o.effects.embeddings = false;
    o.effects.compaction = false;
    runtime_fixture f{o, false};
    add_agent(f, "a", titled_rules);
    id = f.thread("a").id;
    f.run(id, "first");
    f.run(id, "second");
    expected = message_seqs(f.events(id));
    CHECK(f.stats().effects.empty());
  }
  {
    runtime_options o;
    o.data_dir = dir.str();
    runtime_fixture f{o, false};
    REQUIRE(runtime_fixture::eventually([&] {
      manifest m;
      auto s = f.stats();
      return f.rt->get_thread(id, &m).is_ok() && !m.title.empty() && stats_of(s, "embeddings").done > 0 &&
             drained(f);
    }));
    manifest m;
    REQUIRE(f.rt->get_thread(id, &m).is_ok());
    CHECK(m.title == "Planning the garden party is what");
  }
  auto log = open_log(dir.str());
  std::vector<std::pair<uint64_t, embedding_record>> rows;
  REQUIRE(log->read_embeddings(id, &rows).is_ok());
  CHECK(rows.size() == expected.size());
}

TEST_CASE("deleting a thread leaves no key of it in any column family") {
  runtime_options o;
  runtime_fixture f{o};
  add_agent(f, "a", R"({"latency_ms": 300, "default": {"reply": "ok"}, "title": {"reply": "A thread to erase"}})");
  auto t = f.thread("a");
  auto keep = f.thread("a");
  for (const auto& id : {t.id, keep.id}) {
    run_input in;
    in.text = "first";
    in.idempotency_key = "key-1";
    run_result r;
    REQUIRE(f.rt->send(id, in).wait(&r, 60s).is_ok());
    f.run(id, "second");
  }
  REQUIRE(runtime_fixture::eventually([&] { return drained(f); }));
  manifest m;
  REQUIRE(f.rt->get_thread(t.id, &m).is_ok());
  REQUIRE(m.title == "A thread to erase");
  // An input waiting in the inbox behind a run in flight.
  run_input busy;
  busy.text = "busy";
  auto running = f.rt->send(t.id, busy);
  std::string queued;
  run_input later;
  later.text = "later";
  REQUIRE(f.rt->submit(t.id, later, &queued).is_ok());
  REQUIRE(f.rt->delete_thread(t.id).is_ok());
  run_result ignored;
  running.wait(&ignored, 60s).ignore();
  REQUIRE(f.rt->close().is_ok());

  auto log = open_log(f.dir.str());
  size_t keys = 99;
  REQUIRE(log->count_thread_keys(t.id, &keys).is_ok());
  CHECK(keys == 0);
  // The twin that was not deleted shows what there was to erase.
  REQUIRE(log->count_thread_keys(keep.id, &keys).is_ok());
  CHECK(keys > 0);
  uint64_t cursor = 0;
  REQUIRE(log->read_effect_cursor("titles", keep.id, &cursor).is_ok());
  CHECK(cursor > 0);
  REQUIRE(log->read_effect_cursor("embeddings", keep.id, &cursor).is_ok());
  CHECK(cursor > 0);
  std::vector<std::pair<uint64_t, embedding_record>> rows;
  REQUIRE(log->read_embeddings(keep.id, &rows).is_ok());
  CHECK(rows.size() == 4);
  idempotent_run found;
  CHECK(log->find_idempotent(keep.id, "key-1", &found).is_ok());
}

namespace {

size_t compactions_in(const std::vector<event>& log) {
  return static_cast<size_t>(std::count_if(log.begin(), log.end(),
                                           [](const event& e) { return e.type == event_type::compaction; }));
}

void add_compacting_agent(runtime_fixture& f, const std::string& id, uint64_t auto_tokens) {
  agent_config a;
  a.id = id;
  a.system_prompt = "test";
  a.engine_config = R"({"default": {"reply": "noted"}})";
  a.effects.titles = false;
  a.compaction.auto_tokens = auto_tokens;
  a.compaction.keep_turns = 1;
  auto s = f.rt->create_agent(a);
  INFO(s.to_string());
  REQUIRE(s.is_ok());
}

}  // namespace

TEST_CASE("compaction effect: past auto_tokens a thread is compacted once, between runs, and stays so") {
  temp_dir dir;
  runtime_options o;
  o.data_dir = dir.str();
  std::string id;
  std::vector<event> before_reopen;
  {
    runtime_fixture f{o, false};
    add_compacting_agent(f, "c", 600);
    add_compacting_agent(f, "never", 0);
    auto t = f.thread("c");
    auto quiet = f.thread("never");
    id = t.id;
    std::string big(800, 'x');  // ~200 estimated tokens a message
    for (int i = 0; i < 4; ++i) {
      f.run(t.id, "turn " + std::to_string(i) + " " + big);
      f.run(quiet.id, "turn " + std::to_string(i) + " " + big);
    }
    REQUIRE(runtime_fixture::eventually([&] { return drained(f); }));
    std::vector<event> log;
    REQUIRE(f.rt->read(t.id, history_view::complete, 1, 0, &log).is_ok());
    CHECK(compactions_in(log) >= 1);
    // The complete history keeps every input; the working view starts at the latest compaction.
    size_t inputs = static_cast<size_t>(std::count_if(log.begin(), log.end(), [](const event& e) {
      return e.type == event_type::message && e.role == message_role::user;
    }));
    CHECK(inputs == 4);
    std::vector<event> view;
    REQUIRE(f.rt->read(t.id, history_view::working, 1, 0, &view).is_ok());
    CHECK(std::any_of(view.begin(), view.end(), [](const event& e) { return e.type == event_type::compaction; }));
    CHECK(estimate_tokens(view) < estimate_tokens(log));
    // A compaction tick is never inside a run: it lands after a thread.stop, before the next start.
    bool in_run = false;
    for (const auto& e : log) {
      if (e.type == event_type::signal && e.name == "thread.start") in_run = true;
      if (e.type == event_type::signal && e.name == "thread.stop") in_run = false;
      if (e.type == event_type::compaction) CHECK_FALSE(in_run);
    }
    std::vector<event> quiet_log;
    REQUIRE(f.rt->read(quiet.id, history_view::complete, 1, 0, &quiet_log).is_ok());
    CHECK(compactions_in(quiet_log) == 0);  // auto_tokens 0: only on request
    CHECK(f.stats().compactions == compactions_in(log));
    before_reopen = log;
  }
  // Reopened, the effect catches up from its cursor: nothing is compacted again.
  runtime_fixture f{o, false};
  REQUIRE(runtime_fixture::eventually([&] { return drained(f); }));
  std::vector<event> log;
  REQUIRE(f.rt->read(id, history_view::complete, 1, 0, &log).is_ok());
  CHECK(log.size() == before_reopen.size());
  CHECK(f.stats().compactions == 0);
}

TEST_CASE("memory search finds a message the embeddings effect embedded live, first among many") {
  runtime_fixture f;
  add_agent(f, "m", R"({"default": {"reply": "ok"}})");
  auto t = f.thread("m");
  for (int i = 0; i < 40; ++i) f.run(t.id, "routine status update number " + std::to_string(i) + " all quiet");
  auto planted = f.thread("m");
  f.run(planted.id, "the spare key to the lighthouse hides under the blue anchor");
  REQUIRE(runtime_fixture::eventually([&] { return drained(f); }));
  std::vector<memory_hit> hits;
  REQUIRE(f.rt->memory_search("m", "where is the lighthouse key", 5, &hits).is_ok());
  REQUIRE_FALSE(hits.empty());
  CHECK(hits.front().thread_id == planted.id);
  CHECK(hits.front().snippet.find("lighthouse") != std::string::npos);
  // Deleting the thread takes its rows out of the index (the erasure hook).
  REQUIRE(f.rt->delete_thread(planted.id).is_ok());
  REQUIRE(runtime_fixture::eventually([&] {
    std::vector<memory_hit> again;
    return f.rt->memory_search("m", "where is the lighthouse key", 5, &again).is_ok() &&
           std::none_of(again.begin(), again.end(), [&](const memory_hit& h) { return h.thread_id == planted.id; });
  }));
}

TEST_CASE("titles: a thread compacted before its title is generated still gets one from its messages") {
  temp_dir dir;
  runtime_options o;
  o.data_dir = dir.str();
  std::string id;
  {
    runtime_options off = without_effects(o);
    runtime_fixture f{off, false};
    add_agent(f, "a", R"({"default": {"reply": "ok"}})");  // no title rule: the engine echoes the view's first input
    id = f.thread("a").id;
    std::string long_tail(800, 'x');  // so that the summary shrinks the view
    f.run(id, "plan the harvest festival " + long_tail);
    f.run(id, "with a long table " + long_tail);
    compact_options c;
    c.stages = {"summarize"};
    c.keep_turns = 0;
    compact_result r;
    REQUIRE(f.rt->compact(id, c, &r).is_ok());
    REQUIRE(r.compacted);  // the working view now holds no user message of its own
  }
  runtime_fixture f{o, false};  // titles on: the catch-up finds the untitled, compacted thread
  manifest m;
  // A bounded wait on the outcome itself: right after open a drained backlog may
  // only mean that the catch-up scan has not reported yet.
  REQUIRE(runtime_fixture::eventually([&] { return f.rt->get_thread(id, &m).is_ok() && !m.title.empty(); }));
  CHECK(m.title == "plan the harvest festival");
  CHECK(stats_of(f.stats(), "titles").failed == 0);
}

namespace {

// An engine whose title calls wait at a gate, then use the timers hard: a call
// still in flight while the runtime closes. Run steps answer at once.
struct gated_titles {
  std::mutex mu;
  std::condition_variable cv;
  bool entered = false;
  bool released = false;
  std::atomic<uint64_t> timer_calls{0};
};

class gated_engine final : public engine {
 public:
  gated_engine(std::shared_ptr<gated_titles> gate, timer_service& timers) : gate_(std::move(gate)), timers_(timers) {}

  std::unique_ptr<call_handle> start(engine_request request, engine_callbacks callbacks) override {
    engine_reply reply;
    reply.step.text = "fine";
    if (request.purpose == engine_purpose::title) {
      std::unique_lock<std::mutex> lock{gate_->mu};
      gate_->entered = true;
      gate_->cv.notify_all();
      gate_->cv.wait_for(lock, std::chrono::seconds(30), [&] { return gate_->released; });
      lock.unlock();
      // close() runs meanwhile on another thread. For a second the call keeps
      // scheduling timers, as a slow engine would: the service must outlive it.
      auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
      while (std::chrono::steady_clock::now() < until) {
        timers_.after(std::chrono::milliseconds(0), [] {});
        gate_->timer_calls.fetch_add(1, std::memory_order_relaxed);
      }
      reply.step.text = "Gated title";
    }
    timers_.after(std::chrono::milliseconds(0), [cb = std::move(callbacks), reply]() mutable { cb.on_done(reply); });
    return nullptr;
  }

 private:
  std::shared_ptr<gated_titles> gate_;
  timer_service& timers_;
};

}  // namespace

TEST_CASE("close while an effect's engine call is in flight: the call may still use the timers") {
  auto gate = std::make_shared<gated_titles>();
  runtime_options o;
  o.engines["gated"] = [gate](std::string_view, timer_service& timers, std::shared_ptr<engine>* out) -> status {
    *out = std::make_shared<gated_engine>(gate, timers);
    return status::ok();
  };
  runtime_fixture f{o};
  f.engine_agent("g", "gated");
  auto t = f.thread("g");
  f.run(t.id, "first");
  f.run(t.id, "second");  // two user messages: the titles effect calls the engine
  {
    std::unique_lock<std::mutex> lock{gate->mu};
    REQUIRE(gate->cv.wait_for(lock, std::chrono::seconds(30), [&] { return gate->entered; }));
  }
  status closed;
  std::thread closer{[&] { closed = f.rt->close(); }};  // no Catch2 macro off the test's thread
  {
    std::lock_guard<std::mutex> lock{gate->mu};
    gate->released = true;
  }
  gate->cv.notify_all();
  closer.join();
  CHECK(closed.is_ok());
  CHECK(gate->timer_calls.load() > 0);
}
