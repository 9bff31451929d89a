// The thread actor and the run it drives (DESIGN §5).
//
// A run: input appended with signal thread.start (status running); then ticks of
// engine call -> the step's events (thinking, assistant_text, tool_calls) ->
// the tools, in parallel -> their results; at the end the assistant message, a
// result event and thread.stop, with the manifest update, in one commit. Every
// commit goes through the journal one at a time, in order; the continuation of
// each runs only after its ack (persist before deliver).
#include "actors/thread_actor.hpp"

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <deque>
#include <optional>

#include "actors/error.hpp"
#include "actors/journal.hpp"
#include "persistence/event_log.hpp"
#include "persistence/recovery.hpp"
#include "runtime/model/conversation.hpp"
#include "runtime/model/ids.hpp"
#include "runtime/model/json_writer.hpp"

namespace skein {
namespace {

using engine_done_atom = caf::atom_constant<caf::atom("engdone")>;
using tool_done_atom = caf::atom_constant<caf::atom("tooldone")>;
using run_timeout_atom = caf::atom_constant<caf::atom("runtimeout")>;
using idle_check_atom = caf::atom_constant<caf::atom("idlecheck")>;
using tool_timeout_atom = caf::atom_constant<caf::atom("tooltime")>;
using idle_timer_atom = caf::atom_constant<caf::atom("idletimer")>;
using heartbeat_atom = caf::atom_constant<caf::atom("heartbeat")>;

using clock_type = caf::actor_clock::clock_type;
using time_point = caf::actor_clock::time_point;

std::string signal_data(std::initializer_list<std::pair<const char*, std::string>> fields) {
  std::string out;
  json_writer w{&out};
  w.begin_object();
  for (const auto& [k, v] : fields)
    if (!v.empty()) w.field(k, v);
  w.end_object();
  return out;
}

struct pending_input {
  run_input input;
  std::vector<caf::response_promise> waiters;
};

struct pending_tool {
  requested_tool_call call;
  std::unique_ptr<call_handle> handle;
  bool done = false;
  tool_output output;
};

struct run_state {
  uint64_t gen = 0;  // names this run in callbacks and timers
  run_input input;
  std::vector<caf::response_promise> waiters;
  time_point started;
  uint64_t first_seq = 0;
  uint32_t turns = 0;

  uint64_t call_gen = 0;  // names the engine call in flight
  bool engine_pending = false;
  std::unique_ptr<call_handle> engine_call;
  time_point last_activity;
  bool resume_disabled = false;
  bool resume_retried = false;
  std::string session_id;  // the newest one the engine reported

  std::vector<pending_tool> tools;  // the current tick's calls
  size_t tools_left = 0;

  token_usage usage;
  double cost_usd = 0;
  bool ending = false;
};

struct commit_job {
  std::vector<event> events;
  std::function<void(manifest&)> mutate;
  std::function<void(uint64_t first_seq)> on_done;
  std::function<void(const caf::error&)> on_failed;  // when the journal refused it
  std::string idempotency_key;
  std::string run_id;
};

class thread_actor : public caf::event_based_actor {
 public:
  thread_actor(caf::actor_config& cfg, std::shared_ptr<const thread_context> ctx, manifest m,
               agent_spec_ptr agent)
      : caf::event_based_actor(cfg), ctx_(std::move(ctx)), manifest_(std::move(m)),
        agent_(std::move(agent)) {
    policy_ = effective_policy(manifest_.config, agent_->config.policy);
  }

  const char* name() const override { return "skein.thread"; }

  caf::behavior make_behavior() override {
    set_down_handler([this](caf::down_msg& msg) { drop_subscriber(msg.source); });
    arm_idle_timer();
    return {
        [this](send_atom, run_input& in) -> caf::result<run_result> { return on_send(std::move(in)); },
        [this](submit_atom, run_input& in) -> caf::result<std::string> { return on_submit(std::move(in)); },
        [this](cancel_atom) { return cancel_run(); },
        [this](subscribe_atom, uint64_t from_seq, caf::actor& sink) -> caf::result<uint64_t> {
          return subscribe(from_seq, sink);
        },
        [this](unsubscribe_atom, caf::actor& sink) { drop_subscriber(sink.address()); },
        [this](caf::get_atom) { return manifest_; },
        [this](mint_child_atom) -> caf::result<std::string> { return mint_child(); },
        [this](passivate_atom) {
          if (idle()) passivate();
        },
        [this](stop_atom, bool graceful) -> caf::result<void> { return stop(graceful); },
        [this](engine_done_atom, uint64_t gen, engine_reply& r) { on_engine_done(gen, std::move(r)); },
        [this](delta_atom, uint64_t gen, std::string& text) { on_delta(gen, std::move(text)); },
        [this](tool_done_atom, uint64_t gen, std::string& call_id, tool_output& out) {
          on_tool_done(gen, call_id, std::move(out));
        },
        [this](tool_timeout_atom, uint64_t gen, std::string& call_id) { on_tool_timeout(gen, call_id); },
        [this](run_timeout_atom, uint64_t gen) { on_run_timeout(gen); },
        [this](idle_check_atom, uint64_t call_gen) { on_idle_check(call_gen); },
        [this](heartbeat_atom, uint64_t gen) { on_heartbeat(gen); },
        [this](reconcile_atom) -> caf::result<bool> { return reconcile(); },
        [this](idle_timer_atom, uint64_t gen) {
          if (gen == idle_gen_ && idle()) passivate();
        },
    };
  }

 private:
  // --- inputs ---------------------------------------------------------------

  // What became of an input: refused (error), answered from an earlier run with
  // the same idempotency key (earlier), or taken (run_id; `waiters` of its run).
  struct admission {
    caf::error error;
    std::optional<run_result> earlier;
    std::string run_id;
    std::vector<caf::response_promise>* waiters = nullptr;
  };

  admission admit(run_input in) {
    admission a;
    if (stopping_) {
      a.error = to_error(status::not_found("thread " + manifest_.id + " is being deleted"));
      return a;
    }
    if (status s = validate_input(in); !s) {
      a.error = to_error(s);
      return a;
    }
    if (in.run_id.empty()) in.run_id = new_run_id();
    if (!in.idempotency_key.empty()) {
      if (auto p = pending_key(in.idempotency_key)) {
        a.run_id = p->input.run_id;
        a.waiters = &p->waiters;
        return a;
      }
      run_result earlier;
      status found = earlier_run(in.idempotency_key, &earlier);
      if (found) a.earlier = std::move(earlier);
      else if (found.code() != errc::not_found) a.error = to_error(found);
      if (found.code() != errc::not_found) return a;
    }
    bool busy = run_ != nullptr || !queue_.empty();
    if (busy && policy_ == mid_run_policy::reject) {
      a.error = to_error(status::conflict("thread " + manifest_.id + " is running and its mid-run policy is reject"));
      return a;
    }
    if (queue_.size() >= ctx_->options.thread_queue_max) {
      a.error = to_error(status::overloaded("thread " + manifest_.id + " has " + std::to_string(queue_.size()) +
                                            " inputs waiting: thread_queue_max (" +
                                            std::to_string(ctx_->options.thread_queue_max) + ")"));
      return a;
    }
    a.run_id = in.run_id;
    pending_input p{std::move(in), {}};
    if (busy && policy_ == mid_run_policy::interrupt) {
      queue_.push_front(std::move(p));
      a.waiters = &queue_.front().waiters;
      if (run_ && !run_->ending) end_run(run_outcome::cancelled, "", "interrupted by a new input");
    } else {
      queue_.push_back(std::move(p));
      a.waiters = &queue_.back().waiters;
    }
    return a;
  }

  // (send_atom, input): answers with the run's result when it has ended.
  caf::result<run_result> on_send(run_input in) {
    admission a = admit(std::move(in));
    if (a.error) return a.error;
    if (a.earlier) return *a.earlier;
    a.waiters->push_back(make_response_promise());
    auto promise = a.waiters->back();
    start_next();
    return promise;
  }

  // (submit_atom, input): answers with the run id as soon as the input is taken.
  caf::result<std::string> on_submit(run_input in) {
    admission a = admit(std::move(in));
    if (a.error) return a.error;
    if (a.earlier) return a.earlier->run_id;
    start_next();
    return a.run_id;
  }

  // The run or queued input that carries this idempotency key, if any.
  struct pending_ref {
    run_input& input;
    std::vector<caf::response_promise>& waiters;
  };
  std::optional<pending_ref> pending_key(const std::string& key) {
    if (run_ && run_->input.idempotency_key == key) return pending_ref{run_->input, run_->waiters};
    for (auto& p : queue_)
      if (p.input.idempotency_key == key) return pending_ref{p.input, p.waiters};
    return std::nullopt;
  }

  status earlier_run(const std::string& key, run_result* out) {
    idempotent_run found;
    SKEIN_TRY(ctx_->log->find_idempotent(manifest_.id, key, &found));
    std::vector<event> events;
    SKEIN_TRY(ctx_->log->read_events(manifest_.id, found.first_seq, 0, &events));
    status s = result_from_log(manifest_.id, found.run_id, events, out);
    if (s.code() == errc::not_found)
      return status::corruption("run " + found.run_id + " of key " + key + " has no thread.stop");
    return s;
  }

  void start_next() {
    if (run_ || queue_.empty() || stopping_ || failed_) return;
    pending_input p = std::move(queue_.front());
    queue_.pop_front();
    start_run(std::move(p));
  }

  // --- the run ----------------------------------------------------------------

  void start_run(pending_input p) {
    run_ = std::make_unique<run_state>();
    run_->gen = ++gens_;
    run_->input = std::move(p.input);
    run_->waiters = std::move(p.waiters);
    run_->started = clock().now();
    std::vector<event> events;
    if (manifest_.last_seq == 0 && !conversation_ && !in_flight_ && commits_.empty())
      conversation_.emplace();  // an empty log: nothing to read, the commits fill it
    if (manifest_.last_seq == 0 && !agent_->config.system_prompt.empty())
      events.push_back(make_system_prompt(agent_->config.system_prompt));
    events.push_back(make_message(run_->input.role, run_->input.text));
    events.push_back(make_signal("thread.start", signal_data({{"run_id", run_->input.run_id},
                                                              {"source", run_->input.source}})));
    delayed_send(this, std::chrono::milliseconds(agent_->config.budgets.run_time_ms_max),
                 run_timeout_atom::value, run_->gen);
    delayed_send(this, ctx_->options.heartbeat_interval, heartbeat_atom::value, run_->gen);
    commit_job job;
    job.events = std::move(events);
    job.mutate = [](manifest& m) { m.status = thread_status::running; };
    job.idempotency_key = run_->input.idempotency_key;
    job.run_id = run_->input.run_id;
    uint64_t gen = run_->gen;
    job.on_done = [this, gen](uint64_t first_seq) {
      if (run_ && run_->gen == gen) run_->first_seq = first_seq;
      if (!current(gen)) return;
      if (!conversation_) {  // the first run since activation reads the log once
        std::vector<event> log;
        if (status s = ctx_->log->read_events(manifest_.id, 1, 0, &log); !s) {
          end_run(run_outcome::failed, "", "cannot read the thread's log: " + s.to_string());
          return;
        }
        conversation_ = working_conversation(log);
      }
      call_engine();
    };
    commit(std::move(job));
  }

  // True while run `gen` is the current run and still going.
  bool current(uint64_t gen) const { return run_ && run_->gen == gen && !run_->ending && !stopping_; }

  void call_engine() {
    const auto& budgets = agent_->config.budgets;
    if (run_->turns >= budgets.ticks_max) {
      end_run(run_outcome::failed, "", "tick budget exhausted: ticks_max (" +
                                            std::to_string(budgets.ticks_max) + ")");
      return;
    }
    ++run_->turns;
    engine_request req;
    req.thread_id = manifest_.id;
    req.run_id = run_->input.run_id;
    req.turn = run_->turns;
    req.session_id = run_->resume_disabled ? std::string{} : manifest_.session_id;
    req.conversation = *conversation_;
    req.tools = agent_->tool_specs;
    run_->call_gen = ++gens_;
    run_->engine_pending = true;
    run_->last_activity = clock().now();
    caf::actor_addr me = address();
    uint64_t call_gen = run_->call_gen;
    engine_callbacks cb;
    cb.on_delta = [me, call_gen](std::string delta) {
      if (auto a = caf::actor_cast<caf::actor>(me)) caf::anon_send(a, delta_atom::value, call_gen, std::move(delta));
    };
    cb.on_done = [me, call_gen](engine_reply reply) {
      if (auto a = caf::actor_cast<caf::actor>(me))
        caf::anon_send(a, engine_done_atom::value, call_gen, std::move(reply));
    };
    delayed_send(this, std::chrono::milliseconds(budgets.engine_idle_ms), idle_check_atom::value, call_gen);
    try {
      run_->engine_call = agent_->engine->start(std::move(req), std::move(cb));
    } catch (const std::exception& e) {
      run_->engine_pending = false;
      end_run(run_outcome::failed, "", std::string("engine threw: ") + e.what());
    }
  }

  void on_delta(uint64_t call_gen, std::string text) {
    if (!run_ || run_->call_gen != call_gen || !run_->engine_pending) return;
    run_->last_activity = clock().now();
    for (const auto& sub : subscribers_)
      send(sub.sink, delta_atom::value, manifest_.id, run_->input.run_id, text);
  }

  void on_engine_done(uint64_t call_gen, engine_reply reply) {
    if (!run_ || run_->call_gen != call_gen || !run_->engine_pending || run_->ending) return;
    run_->engine_pending = false;
    run_->engine_call.reset();
    if (!reply.result.is_ok()) {
      bool resumed = !run_->resume_disabled && !manifest_.session_id.empty();
      if (reply.resume_failed && resumed && !run_->resume_retried) {
        // Retry once with the context rebuilt from the log, never with an empty one.
        run_->resume_retried = true;
        run_->resume_disabled = true;
        --run_->turns;
        call_engine();
        return;
      }
      end_run(run_outcome::failed, "", reply.result.message());
      return;
    }
    engine_step& step = reply.step;
    run_->usage += step.usage;
    run_->cost_usd += step.cost_usd;
    if (!step.session_id.empty()) run_->session_id = step.session_id;
    if (step.tool_calls.empty()) {
      end_run(run_outcome::completed, std::move(step.text), "", std::move(step.thinking));
      return;
    }
    std::vector<event> events;
    if (!step.thinking.empty()) events.push_back(make_thinking(std::move(step.thinking)));
    if (!step.text.empty()) events.push_back(make_assistant_text(std::move(step.text)));
    run_->tools.clear();
    for (size_t i = 0; i < step.tool_calls.size(); ++i) {
      auto& call = step.tool_calls[i];
      if (call.call_id.empty())
        call.call_id = "call_" + std::to_string(run_->turns) + "_" + std::to_string(i + 1);
      events.push_back(make_tool_call(call.call_id, call.name, call.arguments_json));
      run_->tools.push_back(pending_tool{call, nullptr, false, {}});
    }
    run_->tools_left = run_->tools.size();
    uint64_t gen = run_->gen;
    commit_job job;
    job.events = std::move(events);
    job.on_done = [this, gen](uint64_t) {
      if (current(gen)) invoke_tools();
    };
    commit(std::move(job));
  }

  void invoke_tools() {
    caf::actor_addr me = address();
    uint64_t gen = run_->gen;
    auto timeout = std::chrono::milliseconds(agent_->config.budgets.tool_timeout_ms);
    for (auto& t : run_->tools) {
      auto impl = agent_->find_tool(t.call.name);
      if (!impl) {
        finish_tool(t, {"(error: unknown tool '" + t.call.name + "')", true});
        continue;
      }
      tool_invocation inv{manifest_.id, run_->input.run_id, t.call.call_id, t.call.arguments_json};
      std::string call_id = t.call.call_id;
      auto done = [me, gen, call_id](tool_output out) {
        if (auto a = caf::actor_cast<caf::actor>(me))
          caf::anon_send(a, tool_done_atom::value, gen, call_id, std::move(out));
      };
      delayed_send(this, timeout, tool_timeout_atom::value, gen, call_id);
      try {
        t.handle = impl->invoke(std::move(inv), std::move(done));
      } catch (const std::exception& e) {
        finish_tool(t, {std::string("(error: tool threw: ") + e.what() + ")", true});
      }
    }
    if (run_->tools_left == 0) commit_tool_results();
  }

  // Records a tool's output; false if it had one already.
  bool finish_tool(pending_tool& t, tool_output out) {
    if (t.done) return false;
    t.done = true;
    t.output = std::move(out);
    if (t.handle) {
      t.handle->cancel();  // no-op for finished calls; stops timed-out ones
      t.handle.reset();
    }
    --run_->tools_left;
    return true;
  }

  pending_tool* find_pending(const std::string& call_id) {
    for (auto& t : run_->tools)
      if (t.call.call_id == call_id) return &t;
    return nullptr;
  }

  void on_tool_done(uint64_t gen, const std::string& call_id, tool_output out) {
    if (!current(gen)) return;
    auto* t = find_pending(call_id);
    if (t == nullptr || !finish_tool(*t, std::move(out))) return;
    if (run_->tools_left == 0) commit_tool_results();
  }

  void on_tool_timeout(uint64_t gen, const std::string& call_id) {
    if (!current(gen)) return;
    auto* t = find_pending(call_id);
    if (t == nullptr || t->done) return;
    auto ms = agent_->config.budgets.tool_timeout_ms;
    finish_tool(*t, {"(error: tool '" + t->call.name + "' timed out after " + std::to_string(ms) +
                         " ms: tool_timeout_ms)", true});
    if (run_->tools_left == 0) commit_tool_results();
  }

  void commit_tool_results() {
    std::vector<event> events;
    for (auto& t : run_->tools)
      events.push_back(make_tool_result(t.call.call_id, t.call.name, std::move(t.output.text), t.output.is_error));
    run_->tools.clear();
    uint64_t gen = run_->gen;
    commit_job job;
    job.events = std::move(events);
    job.on_done = [this, gen](uint64_t) {
      if (current(gen)) call_engine();
    };
    commit(std::move(job));
  }

  void on_run_timeout(uint64_t gen) {
    if (!current(gen)) return;
    end_run(run_outcome::failed, "", "run time budget exhausted: run_time_ms_max (" +
                                         std::to_string(agent_->config.budgets.run_time_ms_max) + " ms)");
  }

  void on_idle_check(uint64_t call_gen) {
    if (!run_ || run_->call_gen != call_gen || !run_->engine_pending || run_->ending) return;
    auto idle_ms = std::chrono::milliseconds(agent_->config.budgets.engine_idle_ms);
    auto silent = clock().now() - run_->last_activity;
    if (silent < idle_ms) {
      delayed_send(this, std::chrono::duration_cast<std::chrono::milliseconds>(idle_ms - silent) +
                             std::chrono::milliseconds(1),
                   idle_check_atom::value, call_gen);
      return;
    }
    end_run(run_outcome::failed, "", "engine idle for " + std::to_string(idle_ms.count()) +
                                         " ms: engine_idle_ms (" + std::to_string(idle_ms.count()) + ")");
  }

  // While a run goes on, its heartbeat rides on every commit; when no commit
  // happened for a heartbeat interval, a manifest-only one records it.
  void on_heartbeat(uint64_t gen) {
    if (!current(gen)) return;
    int64_t interval = ctx_->options.heartbeat_interval.count();
    if (!in_flight_ && commits_.empty() && wall_now() - manifest_.heartbeat_at_ms >= interval)
      commit(commit_job{});
    delayed_send(this, ctx_->options.heartbeat_interval, heartbeat_atom::value, gen);
  }

  int64_t wall_now() const { return ctx_->options.wall_clock ? ctx_->options.wall_clock() : now_ms(); }

  // Closes a run that stopped sending heartbeats, as failed with thread.orphaned.
  caf::result<bool> reconcile() {
    if (manifest_.status != thread_status::running || !run_is_stale(manifest_, ctx_->options, wall_now()))
      return false;
    auto promise = make_response_promise<bool>();
    if (run_ && !run_->ending) {
      end_run(run_outcome::failed, "", "orphaned: no heartbeat since " + std::to_string(manifest_.heartbeat_at_ms),
              "", "thread.orphaned");
    } else if (!run_) {
      // The log says running but no run lives here: close it from the log.
      std::vector<event> log;
      if (status s = ctx_->log->read_events(manifest_.id, 1, 0, &log); !s) return to_error(s);
      commit_job job;
      job.events = interrupted_run_closing(log, "thread.orphaned");
      job.mutate = [](manifest& m) { m.status = thread_status::failed; };
      commit(std::move(job));
    }
    commit_job marker;  // answers once everything before it is durable
    marker.on_done = [promise](uint64_t) mutable { promise.deliver(true); };
    marker.on_failed = [promise](const caf::error& e) mutable { promise.deliver(e); };
    commit(std::move(marker));
    return promise;
  }

  bool cancel_run() {
    if (!run_ || run_->ending) return false;
    end_run(run_outcome::cancelled, "", "cancelled");
    return true;
  }

  // Ends the current run: stops what is in flight and commits the closing events.
  void end_run(run_outcome outcome, std::string text, std::string error, std::string thinking = "",
               const char* signal_before_stop = nullptr) {
    run_->ending = true;
    if (run_->engine_pending && run_->engine_call) run_->engine_call->cancel();
    run_->engine_pending = false;
    std::vector<event> events;
    for (auto& t : run_->tools) {
      if (t.handle) t.handle->cancel();
      std::string why = outcome == run_outcome::cancelled ? "(cancelled)" : "(error: run ended: " + error + ")";
      events.push_back(make_tool_result(t.call.call_id, t.call.name, t.done ? std::move(t.output.text) : why,
                                        t.done ? t.output.is_error : true));
    }
    run_->tools.clear();
    if (!thinking.empty()) events.push_back(make_thinking(std::move(thinking)));
    if (outcome == run_outcome::failed) text = "(error: " + error + ")";
    if (outcome == run_outcome::cancelled) text = "(stopped by user)";
    events.push_back(make_message(message_role::assistant, text));
    auto duration = std::chrono::duration_cast<std::chrono::milliseconds>(clock().now() - run_->started);
    events.push_back(make_result(run_->usage, run_->cost_usd, static_cast<uint64_t>(duration.count()),
                                 run_->turns, std::string{to_string(outcome)}));
    std::string err = outcome == run_outcome::completed ? "" : error;
    if (signal_before_stop != nullptr)
      events.push_back(make_signal(signal_before_stop, signal_data({{"run_id", run_->input.run_id}})));
    events.push_back(make_signal("thread.stop", signal_data({{"run_id", run_->input.run_id},
                                                             {"outcome", std::string{to_string(outcome)}},
                                                             {"error", err}})));
    run_result result;
    result.thread_id = manifest_.id;
    result.run_id = run_->input.run_id;
    result.outcome = outcome;
    result.text = text;
    result.error = err;
    result.usage = run_->usage;
    result.cost_usd = run_->cost_usd;
    result.duration_ms = static_cast<uint64_t>(duration.count());
    result.turns = run_->turns;

    commit_job job;
    job.events = std::move(events);
    auto usage = run_->usage;
    double cost = run_->cost_usd;
    std::string session = outcome == run_outcome::completed ? run_->session_id : "";
    bool bound = manifest_.parent != parent_kind::none;
    job.mutate = [usage, cost, session, outcome, bound](manifest& m) {
      m.usage += usage;
      m.cost_usd += cost;
      if (!session.empty()) m.session_id = session;
      if (!bound) m.status = thread_status::open;
      else if (outcome == run_outcome::completed) m.status = thread_status::completed;
      else if (outcome == run_outcome::failed) m.status = thread_status::failed;
      else m.status = thread_status::cancelled;
    };
    job.on_done = [this, result](uint64_t) mutable {
      if (!run_) return;  // stopped meanwhile: the waiters were answered
      result.last_seq = manifest_.last_seq;
      result.first_seq = run_->first_seq;
      for (auto& w : run_->waiters) w.deliver(result);
      run_.reset();
      start_next();
      arm_idle_timer();
    };
    commit(std::move(job));
  }

  // --- commits ----------------------------------------------------------------

  void commit(commit_job job) {
    commits_.push_back(std::move(job));
    pump();
  }

  void pump() {
    if (in_flight_ || commits_.empty() || failed_) return;
    in_flight_ = true;
    commit_job& job = commits_.front();
    tick t;
    t.thread_id = manifest_.id;
    t.manifest = manifest_;
    if (job.mutate) job.mutate(t.manifest);
    int64_t now = wall_now();
    t.manifest.updated_at_ms = now;
    if (t.manifest.status == thread_status::running) t.manifest.heartbeat_at_ms = now;
    uint64_t seq = manifest_.last_seq;
    std::string run_id = run_ ? run_->input.run_id : std::string{};
    for (auto& e : job.events) {
      e.seq = ++seq;
      e.ts_ms = now;
      if (e.run_id.empty()) e.run_id = run_id;
    }
    t.events = job.events;
    t.idempotency_key = job.idempotency_key;
    t.run_id = job.run_id;
    manifest after = t.manifest;
    request(ctx_->journal, caf::infinite, commit_atom::value, std::move(t))
        .then(
            [this, after](uint64_t last_seq) mutable {
              after.last_seq = last_seq;
              on_committed(std::move(after));
            },
            [this](caf::error& e) { on_commit_failed(to_status(e)); });
  }

  void on_committed(manifest after) {
    commit_job job = std::move(commits_.front());
    commits_.pop_front();
    in_flight_ = false;
    manifest_ = std::move(after);
    uint64_t first_seq = job.events.empty() ? 0 : job.events.front().seq;
    for (const auto& e : job.events) {
      for (const auto& sub : subscribers_)
        if (e.seq >= sub.from_seq) send(sub.sink, event_atom::value, manifest_.id, e);
      if (conversation_) extend_working_conversation(&*conversation_, e);
    }
    if (job.on_done) job.on_done(first_seq);
    if (stopping_ && commits_.empty()) finish_stop();
    else pump();
  }

  // Storage failed: nothing more can be recorded for this thread. Every waiter
  // learns it; the actor leaves so that the next use reloads from the log.
  void on_commit_failed(const status& s) {
    in_flight_ = false;
    failed_ = true;
    auto err = to_error(s);
    for (auto& job : commits_)
      if (job.on_failed) job.on_failed(err);
    commits_.clear();
    if (run_) {
      if (run_->engine_call) run_->engine_call->cancel();
      for (auto& t : run_->tools)
        if (t.handle) t.handle->cancel();
      for (auto& w : run_->waiters) w.deliver(err);
      run_.reset();
    }
    for (auto& p : queue_)
      for (auto& w : p.waiters) w.deliver(err);
    queue_.clear();
    if (stopping_) finish_stop();
    else passivate();
  }

  caf::result<std::string> mint_child() {
    auto promise = make_response_promise<std::string>();
    commit_job job;
    job.mutate = [](manifest& m) { ++m.children_count; };
    job.on_done = [this, promise](uint64_t) mutable {
      promise.deliver(child_thread_id(manifest_.id, manifest_.children_count));
    };
    job.on_failed = [promise](const caf::error& e) mutable { promise.deliver(e); };
    commit(std::move(job));
    return promise;
  }

  // --- subscribers ------------------------------------------------------------

  caf::result<uint64_t> subscribe(uint64_t from_seq, caf::actor& sink) {
    if (!sink) return to_error(status::invalid_input("subscribe: no sink"));
    std::vector<event> backlog;
    if (from_seq <= manifest_.last_seq) {
      if (status s = ctx_->log->read_events(manifest_.id, std::max<uint64_t>(from_seq, 1), 0, &backlog); !s)
        return to_error(s);
    }
    // Only what was acknowledged: a commit in flight is delivered when its ack comes.
    for (const auto& e : backlog)
      if (e.seq <= manifest_.last_seq) send(sink, event_atom::value, manifest_.id, e);
    monitor(sink);
    subscribers_.push_back(subscriber{sink, from_seq});
    return manifest_.last_seq + 1;
  }

  void drop_subscriber(const caf::actor_addr& who) {
    auto it = std::find_if(subscribers_.begin(), subscribers_.end(),
                           [&](const subscriber& s) { return s.sink.address() == who; });
    if (it == subscribers_.end()) return;
    demonitor(it->sink);
    subscribers_.erase(it);
    arm_idle_timer();
  }

  // --- lifecycle ----------------------------------------------------------------

  bool idle() const {
    return !run_ && queue_.empty() && commits_.empty() && !in_flight_ && subscribers_.empty();
  }

  void arm_idle_timer() {
    if (!idle()) return;
    delayed_send(this, ctx_->options.idle_passivate, idle_timer_atom::value, ++idle_gen_);
  }

  void passivate() {
    send(ctx_->directory, passivate_atom::value, manifest_.id, caf::actor_cast<caf::actor>(this));
    quit();
  }

  // graceful (runtime closing): the run ends as cancelled and every queued commit
  // is written. Otherwise (the thread is being deleted): nothing more is written.
  caf::result<void> stop(bool graceful) {
    stopping_ = true;
    stop_promise_ = make_response_promise();
    if (graceful) {
      auto closing = to_error(status::overloaded("the runtime is closing"));
      for (auto& p : queue_)
        for (auto& w : p.waiters) w.deliver(closing);
      queue_.clear();
      if (run_ && !run_->ending) end_run(run_outcome::cancelled, "", "the runtime is closing");
      if (commits_.empty()) finish_stop();
      return stop_promise_;
    }
    auto gone = to_error(status::not_found("thread " + manifest_.id + " was deleted"));
    if (run_) {
      if (run_->engine_call) run_->engine_call->cancel();
      for (auto& t : run_->tools)
        if (t.handle) t.handle->cancel();
      for (auto& w : run_->waiters) w.deliver(gone);
      run_.reset();
    }
    for (auto& p : queue_)
      for (auto& w : p.waiters) w.deliver(gone);
    queue_.clear();
    // Queued commits are dropped; one in flight finishes first.
    size_t keep = in_flight_ ? 1 : 0;
    for (size_t i = keep; i < commits_.size(); ++i)
      if (commits_[i].on_failed) commits_[i].on_failed(gone);
    commits_.erase(commits_.begin() + static_cast<std::ptrdiff_t>(keep), commits_.end());
    if (!in_flight_) finish_stop();
    return stop_promise_;
  }

  void finish_stop() {
    if (stop_promise_.pending()) stop_promise_.deliver(caf::unit);
    quit();
  }

  std::shared_ptr<const thread_context> ctx_;
  manifest manifest_;  // as last acknowledged by the journal
  agent_spec_ptr agent_;
  mid_run_policy policy_ = mid_run_policy::queue;

  std::deque<pending_input> queue_;
  std::unique_ptr<run_state> run_;
  // The working conversation, loaded by the first run after activation and kept
  // up to date by every commit, so later runs do not read the log again.
  std::optional<std::vector<event>> conversation_;
  std::deque<commit_job> commits_;  // front() is in flight when in_flight_
  bool in_flight_ = false;
  bool failed_ = false;
  bool stopping_ = false;
  caf::response_promise stop_promise_;
  struct subscriber {
    caf::actor sink;
    uint64_t from_seq;  // events before it are not this subscriber's
  };
  std::vector<subscriber> subscribers_;
  uint64_t gens_ = 0;
  uint64_t idle_gen_ = 0;
};

}  // namespace

bool run_is_stale(const manifest& m, const core_options& options, int64_t now_ms) {
  if (m.status != thread_status::running) return false;
  if (m.heartbeat_at_ms != 0) return now_ms - m.heartbeat_at_ms > options.heartbeat_stale_ms;
  return now_ms - m.updated_at_ms > options.start_stale_ms;
}

caf::actor spawn_thread_actor(caf::actor_system& sys, std::shared_ptr<const thread_context> ctx,
                              manifest m, agent_spec_ptr agent) {
  return sys.spawn<thread_actor>(std::move(ctx), std::move(m), std::move(agent));
}

}  // namespace skein
