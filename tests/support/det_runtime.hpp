// A runtime core under CAF's test coordinator: every actor runs only when the
// test says so, and time moves only when the test advances it. The journal is
// the scheduled variant (same event_log calls) on a real RocksDB in a temp dir.
#pragma once

#include <caf/all.hpp>
#include <catch2/catch.hpp>
#include <deque>
#include <functional>
#include <mutex>
#include <variant>

#include "actors/core.hpp"
#include "actors/error.hpp"
#include "persistence/event_log.hpp"
#include "runtime/engines/scripted_engine.hpp"
#include "tests/support/temp_dir.hpp"

namespace skein::test {

// A tool whose calls finish only when the test completes them; records cancels.
class manual_tool : public tool {
 public:
  struct call {
    tool_invocation inv;
    std::function<void(tool_output)> done;
    std::shared_ptr<bool> cancelled;
  };

  explicit manual_tool(std::string name) : spec_{std::move(name), "finishes on command", "{}"} {}
  const tool_spec& spec() const override { return spec_; }

  std::unique_ptr<call_handle> invoke(tool_invocation inv, std::function<void(tool_output)> done) override {
    auto flag = std::make_shared<bool>(false);
    std::lock_guard<std::mutex> lock{mu_};
    calls_.push_back({std::move(inv), std::move(done), flag});
    return std::make_unique<handle>(flag);
  }

  std::vector<call> calls() {
    std::lock_guard<std::mutex> lock{mu_};
    return calls_;
  }

 private:
  struct handle : call_handle {
    explicit handle(std::shared_ptr<bool> f) : flag(std::move(f)) {}
    void cancel() override { *flag = true; }
    std::shared_ptr<bool> flag;
  };
  tool_spec spec_;
  std::mutex mu_;
  std::vector<call> calls_;
};

// The scripted engine behind a wrapper that shows `observe` every request before
// the engine answers it.
inline engine_factory observing_scripted(std::function<void(const engine_request&)> observe) {
  return [observe](std::string_view config, timer_service& timers, std::shared_ptr<engine>* out) -> status {
    std::shared_ptr<engine> inner;
    SKEIN_TRY(make_scripted_engine(config, timers, &inner));
    struct observing : engine {
      std::shared_ptr<engine> inner;
      std::function<void(const engine_request&)> observe;
      std::unique_ptr<call_handle> start(engine_request r, engine_callbacks cb) override {
        observe(r);
        return inner->start(std::move(r), std::move(cb));
      }
    };
    auto e = std::make_shared<observing>();
    e->inner = std::move(inner);
    e->observe = observe;
    *out = std::move(e);
    return status::ok();
  };
}

// Records every engine request, then lets the scripted engine answer it.
struct request_log {
  std::mutex mu;
  std::vector<engine_request> requests;
};

inline engine_factory recording_scripted(std::shared_ptr<request_log> rec) {
  return observing_scripted([rec](const engine_request& r) {
    std::lock_guard<std::mutex> lock{rec->mu};
    rec->requests.push_back(r);
  });
}

using reply = std::variant<run_result, status>;

struct det_runtime {
  temp_dir dir;
  std::unique_ptr<event_log> log;
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  caf::scheduler::test_coordinator* sched = nullptr;
  core actors;
  std::unique_ptr<caf::scoped_actor> self;
  std::shared_ptr<request_log> requests = std::make_shared<request_log>();
  std::shared_ptr<manual_tool> slow = std::make_shared<manual_tool>("slow");

  // `setup` may register more engines and tools and change the log's limits.
  using setup_fn = std::function<void(core_config&, log_options&)>;

  explicit det_runtime(core_options options = {}, setup_fn setup = {}) {
    log_options lo;
    lo.path = dir.str();
    lo.mode = durability::flush;
    core_config cc;
    // Effects are off unless a test turns them on: they call engines, which
    // tests count. Readers are scheduled actors, so the coordinator drives them.
    cc.effects.titles = false;
    cc.effects.embeddings = false;
    cc.effects.compaction = false;
    cc.effects.detached_readers = false;
    if (setup) setup(cc, lo);
    REQUIRE(event_log::open(lo, &log).is_ok());
    register_skein_types(cfg);
    cfg.set("scheduler.policy", caf::atom("testing"));
    sys = std::make_unique<caf::actor_system>(cfg);
    sched = &dynamic_cast<caf::scheduler::test_coordinator&>(sys->scheduler());
    cc.options = options;
    cc.options.detached_readers = false;
    cc.journal.detached = false;
    cc.reg.engines["scripted"] = recording_scripted(requests);
    cc.reg.tools["slow"] = slow;
    cc.reg.tools["echo"] = make_function_tool({"echo", "echoes its arguments", "{}"}, [](const tool_invocation& inv) {
      return tool_output{"echo " + inv.arguments_json, false};
    });
    cc.reg.tools["broken"] = make_function_tool({"broken", "always fails", "{}"}, [](const tool_invocation&) {
      return tool_output{"disk on fire", true};
    });
    REQUIRE(start_core(*sys, *log, std::move(cc), &actors).is_ok());
    self = std::make_unique<caf::scoped_actor>(*sys);
    run();
  }

  ~det_runtime() {
    (*self)->send(actors.directory, caf::close_atom::value);
    run();
    drain();
    for (auto& fx : actors.effects) (*self)->send_exit(fx, caf::exit_reason::user_shutdown);
    (*self)->send_exit(actors.directory, caf::exit_reason::user_shutdown);
    (*self)->send_exit(actors.journal, caf::exit_reason::user_shutdown);
    actors.timers->stop();
    run();
    self.reset();
    sys.reset();
    actors.timers.reset();
  }

  void run() { sched->run(); }

  void advance(std::chrono::milliseconds ms) {
    sched->advance_time(ms);
    run();
  }

  // Takes every message the test's actor received, as replies.
  std::vector<reply> drain() {
    std::vector<reply> out;
    while (!(*self)->mailbox().empty()) {
      (*self)->receive([&](run_result& r) { out.emplace_back(std::move(r)); },
                       [&](caf::error& e) { out.emplace_back(to_status(e)); },
                       [](bool) {},  // a cancel's answer
                       [] {});
    }
    return out;
  }

  template <class T, class Dest, class... Ts>
  T ask(const Dest& dest, Ts&&... xs) {
    (*self)->send(dest, std::forward<Ts>(xs)...);
    run();
    T value{};
    bool got = false;
    REQUIRE_FALSE((*self)->mailbox().empty());
    (*self)->receive([&](T& v) { value = std::move(v); got = true; },
                     [&](caf::error& e) { FAIL("ask failed: " << to_status(e).to_string()); });
    REQUIRE(got);
    return value;
  }

  void add_agent(agent_config a) { ask<agent_config>(actors.directory, caf::put_atom::value, std::move(a)); }

  manifest add_thread(const std::string& agent, std::optional<mid_run_policy> policy = {}) {
    thread_options o;
    o.agent_id = agent;
    o.policy = policy;
    return ask<manifest>(actors.directory, create_atom::value, std::move(o));
  }

  // Adds agent `a`, opens a thread of it and sends it `text`; runs until nothing
  // is left to do at the current time.
  manifest start_run(agent_config a, const std::string& text) {
    std::string agent = a.id;
    add_agent(std::move(a));
    manifest t = add_thread(agent);
    send(t.id, text);
    run();
    return t;
  }

  thread_actor thread(const std::string& id) { return ask<thread_actor>(actors.directory, resolve_atom::value, id); }

  void send(const std::string& thread_id, const std::string& text, const std::string& key = "") {
    run_input in;
    in.text = text;
    in.idempotency_key = key;
    (*self)->send(thread(thread_id), send_atom::value, std::move(in));
  }

  void cancel(const std::string& thread_id) {
    (*self)->send<caf::message_priority::high>(thread(thread_id), cancel_atom::value);
  }

  std::vector<event> events(const std::string& thread_id) {
    std::vector<event> out;
    REQUIRE(log->read_events(thread_id, 1, 0, &out).is_ok());
    return out;
  }

  manifest read_manifest(const std::string& thread_id) {
    manifest m;
    REQUIRE(log->read_manifest(thread_id, &m).is_ok());
    return m;
  }
};

inline agent_config scripted_agent(const std::string& id, const std::string& rules,
                                   std::vector<std::string> tools = {}) {
  agent_config a;
  a.id = id;
  a.system_prompt = "You are a test agent.";
  a.engine_config = rules;
  a.tools = std::move(tools);
  return a;
}

inline const run_result& as_result(const reply& r) {
  if (auto* s = std::get_if<status>(&r)) FAIL("expected a run result, got " << s->to_string());
  return std::get<run_result>(r);
}

inline const status& as_error(const reply& r) {
  if (std::holds_alternative<run_result>(r)) FAIL("expected an error, got a run result");
  return std::get<status>(r);
}

// The one reply the test's actor holds, a run result; the test stops unless
// exactly one reply waits and it is a result.
inline run_result only_result(det_runtime& rt) {
  auto replies = rt.drain();
  REQUIRE(replies.size() == 1);
  return as_result(replies[0]);
}

// The signal names of a log, in order ("start", "stop", ...), with their run ids.
inline std::vector<std::string> signals(const std::vector<event>& log) {
  std::vector<std::string> out;
  for (const auto& e : log)
    if (e.type == event_type::signal) out.push_back(e.name + "@" + e.run_id);
  return out;
}

}  // namespace skein::test
