// A runtime for the work-item tests: real RocksDB in a temp dir, the clock
// under the test's control, no periodic sweep, a failing embedder to name.
#pragma once

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>

#include "runtime/runtime.hpp"
#include "tests/support/runtime_call.hpp"
#include "tests/support/temp_dir.hpp"

namespace skein::test {

constexpr int64_t day_ms = 24LL * 3600 * 1000;
constexpr int64_t t0 = 1700000000000;

// An embedder that always fails: dedup falls back to the text.
class failing_embedder : public embedder {
 public:
  size_t dimensions() const override { return 8; }
  void embed(std::vector<std::string>, std::function<void(embed_reply)> on_done) override {
    embed_reply r;
    r.result = status::io_error("the test's embedder fails");
    on_done(std::move(r));
  }
};

struct work_fixture {
  temp_dir dir;
  std::shared_ptr<std::atomic<int64_t>> now = std::make_shared<std::atomic<int64_t>>(t0);
  std::unique_ptr<runtime> rt;

  uint64_t sweep_interval_ms = 0;  // the test sweeps under its own clock unless set
  bool auto_archive = false;

  work_fixture() { open(); }
  work_fixture(uint64_t sweep_ms, bool archive) : sweep_interval_ms(sweep_ms), auto_archive(archive) { open(); }

  runtime_options options() {
    runtime_options o;
    o.data_dir = dir.str();
    o.effects.titles = false;
    o.effects.embeddings = false;
    o.effects.compaction = false;
    o.work_sweep_interval_ms = sweep_interval_ms;
    o.work_auto_archive = auto_archive;
    o.clock = [n = now] { return n->load(); };
    o.embedders["failing"] = [](std::string_view, timer_service&, std::shared_ptr<embedder>* out) {
      *out = std::make_shared<failing_embedder>();
      return status::ok();
    };
    return o;
  }

  void open() {
    auto s = runtime::open(options(), &rt);
    INFO(s.to_string());
    REQUIRE(s.is_ok());
  }

  void reopen() {
    REQUIRE(rt->close().is_ok());
    rt.reset();
    open();
  }

  void agent(const std::string& id, const std::string& embedder_name = "", const std::string& engine_config = "") {
    agent_config a;
    a.id = id;
    a.system_prompt = "test";
    a.effects.embedder = embedder_name;
    if (!engine_config.empty()) a.engine_config = engine_config;
    auto s = rt->create_agent(a);
    INFO(s.to_string());
    REQUIRE(s.is_ok());
  }

  work_create_result create(const std::string& agent, const std::string& text, const std::string& session = "",
                            std::vector<std::string> relates = {}) {
    work_create c;
    c.agent_id = agent;
    c.text = text;
    c.session_id = session;
    c.relates_to = std::move(relates);
    return answer_of(*rt, &runtime::create_item, c);
  }

  std::vector<event> log_of(const std::string& thread) {
    std::vector<event> out;
    REQUIRE(rt->read(thread, history_view::complete, 1, 0, &out).is_ok());
    return out;
  }

  std::vector<std::string> signals(const std::string& thread) {
    std::vector<std::string> names;
    for (const auto& e : log_of(thread)) names.push_back(e.type == event_type::signal ? e.name : "?");
    return names;
  }

  std::vector<std::string> open_ids(const std::string& agent, bool project_state = false) {
    work_list_query q;
    q.agent_id = agent;
    q.project_state = project_state;
    work_list_page page;
    REQUIRE(rt->list_items(q, &page).is_ok());
    std::vector<std::string> ids;
    for (const auto& e : page.items) ids.push_back(e.thread.id);
    std::sort(ids.begin(), ids.end());
    return ids;
  }
};

}  // namespace skein::test
