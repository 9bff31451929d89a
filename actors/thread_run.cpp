// The run a thread actor drives (DESIGN §5): the engine call of each step, its
// tools in parallel, the budgets and the watchdog, heartbeats and reconcile, and
// the closing commit. The class is in thread_actor_impl.hpp.
#include <caf/actor_system.hpp>
#include <cassert>
#include <caf/send.hpp>

#include "actors/error.hpp"
#include "actors/thread_actor_impl.hpp"
#include "persistence/event_log.hpp"
#include "persistence/keys.hpp"
#include "persistence/recovery.hpp"
#include "runtime/model/conversation.hpp"
#include "runtime/model/ids.hpp"
#include "runtime/model/json_writer.hpp"
#include "runtime/model/text.hpp"

namespace skein::detail {
namespace {

// Errors and ids from engines and tools end up in events: bounded and valid.
constexpr size_t error_text_bytes_max = 4096;
constexpr size_t call_field_bytes_max = 256;    // a tool call's id and name
constexpr size_t session_id_bytes_max = 4096;

std::string storable_error(std::string text) {
  make_storable_text(&text, error_text_bytes_max, "error_text_bytes_max");
  return text;
}

}  // namespace

void thread_impl::cancel_quietly(std::unique_ptr<call_handle>& h) {
  if (!h) return;
  try {
    h->cancel();
  } catch (...) {
    // The call is over for the run either way; a throwing cancel changes nothing.
  }
}

void thread_impl::storable(std::string* text) const {
  make_storable_text(text, run_agent().config.budgets.output_bytes_max, "output_bytes_max");
}

std::string signal_data(std::initializer_list<std::pair<const char*, std::string>> fields) {
  std::string out;
  json_writer w{&out};
  w.begin_object();
  for (const auto& [k, v] : fields)
    if (!v.empty()) w.field(k, v);
  w.end_object();
  return out;
}

void thread_impl::start_run(pending_input p) {
  assert(!run_);  // one run at a time: the mailbox serializes them
  // A run never starts on top of an open one: an open run left by a failed
  // closing commit is repaired (repair_open_run) before start_next lets one in.
  assert(manifest_.status != thread_status::running);
  if (p.dropped) {
    // A later member's turn on an interrupted input: only its inbox entry goes.
    commit_job job;
    job.inbox_take = p.inbox_order;
    if (job.inbox_take != 0) commit(std::move(job));
    start_next();
    return;
  }
  std::vector<event> dispatch_failed;  // house members that cannot run on this input
  std::vector<std::pair<uint64_t, run_input>> follow_ups;  // their later turns, into the inbox
  agent_spec_ptr spec = is_house() ? dispatch_members(p, &dispatch_failed, &follow_ups) : agent_;
  if (!spec) {
    // A follow-up whose member cannot run (any more): the log says so, the next goes on.
    start_next();
    return;
  }
  // Checked at the start, not at admission: an input queued before the budget
  // ran out is refused when its turn comes, like a new one.
  if (ctx_->ledger) {
    if (status b = ctx_->ledger->check(spec->config, wall_now()); !b) {
      refuse_over_budget(std::move(p), b);
      return;
    }
  }
  run_ = std::make_unique<run_state>();
  run_->gen = ++gens_;
  run_->agent = spec;
  run_->input = std::move(p.input);
  run_->waiters = std::move(p.waiters);
  run_->inbox_order = p.inbox_order;
  run_->started = clock().now();
  std::vector<event> events;
  if (manifest_.last_seq == 0 && !conversation_ && !in_flight_ && commits_.empty())
    conversation_.emplace();  // an empty log: nothing to read, the commits fill it
  if (manifest_.last_seq == 0 && !agent_->config.system_prompt.empty())
    events.push_back(make_system_prompt(agent_->config.system_prompt));
  if (!run_->input.follow_up) events.push_back(make_message(run_->input.role, run_->input.text));
  events.push_back(make_signal("thread.start", signal_data({{"run_id", run_->input.run_id},
                                                            {"source", run_->input.source},
                                                            {"member", run_->input.member}})));
  for (auto& e : dispatch_failed) events.push_back(std::move(e));
  delayed_send(this, std::chrono::milliseconds(spec->config.budgets.run_time_ms_max),
               run_timeout_atom::value, run_->gen);
  delayed_send(this, ctx_->options.heartbeat_interval, heartbeat_atom::value, run_->gen);
  commit_job job;
  job.kind = commit_kind::run_start;
  job.events = std::move(events);
  job.mutate = [](manifest& m) {
    m.status = thread_status::running;
    m.archived_at_ms = 0;  // an input un-archives the thread (retention)
  };
  job.idempotency_key = run_->input.idempotency_key;
  job.run_id = run_->input.run_id;
  job.inbox_take = run_->inbox_order;  // consumed in the batch that appends it
  job.inbox_put = std::move(follow_ups);  // a house's later member turns: durable with this start
  job.side_rows = take_firing_rows(run_->input.run_id);  // a schedule's firing, if this is one
  uint64_t gen = run_->gen;
  std::string run_id = run_->input.run_id;
  job.on_failed = [this, run_id](const caf::error& e) { answer_accepted(run_id, e); };
  job.on_done = [this, gen, run_id](uint64_t first_seq) {
    answer_accepted(run_id, caf::error{});
    if (run_ && run_->gen == gen) run_->first_seq = first_seq;
    if (!current(gen)) return;
    // The first run since activation reads the working view once, on a reader.
    with_conversation([this, gen](const status& s) {
      if (!current(gen)) return;
      if (!s) {
        end_run(run_outcome::failed, "", "cannot read the thread's log: " + s.to_string());
        return;
      }
      call_engine();
    });
  };
  commit(std::move(job));
}

void thread_impl::refuse_over_budget(pending_input p, const status& why) {
  caf::error err = to_error(why);
  take_firing_rows(p.input.run_id).clear();  // refused: the scheduler records the failure
  for (auto& w : p.waiters) w.deliver(err);
  answer_accepted(p.input.run_id, err);  // a submit that would have started now
  if (p.inbox_order != 0) {
    commit_job job;
    job.inbox_take = p.inbox_order;
    job.events.push_back(make_signal("thread.budget_exceeded",
                                     signal_data({{"run_id", p.input.run_id}, {"limit", why.limit()}})));
    commit(std::move(job));
  }
  start_next();
}

caf::result<bool> thread_impl::archive(int64_t at_ms) {
  // A running or queued thread is not archived this sweep: the next finds it idle.
  if (run_ || compacting_ || !queue_.empty() || stopping_ || failed_ || repairing_) return false;
  if (manifest_.archived_at_ms != 0) return true;
  auto promise = make_response_promise<bool>();
  commit_job job;
  job.keep_updated_at = true;
  job.mutate = [at_ms](manifest& m) { m.archived_at_ms = at_ms; };
  job.on_done = [promise](uint64_t) mutable { promise.deliver(true); };
  job.on_failed = [promise](const caf::error& e) mutable { promise.deliver(e); };
  commit(std::move(job));
  return promise;
}

bool thread_impl::retire(int64_t before_ms, bool moving) {
  if (run_ || compacting_ || !queue_.empty() || in_flight_ || !commits_.empty() || stopping_ || repairing_) return false;
  if (manifest_.status == thread_status::running || manifest_.updated_at_ms >= before_ms) return false;
  stopping_ = true;  // inputs from now on are refused (gone_error)
  moving_ = moving;
  return true;
}

void thread_impl::call_engine() {
  const auto& budgets = run_agent().config.budgets;
  if (run_->turns >= budgets.ticks_max) {
    end_run(run_outcome::failed, "", "tick budget exhausted: ticks_max (" +
                                          std::to_string(budgets.ticks_max) + ")");
    return;
  }
  ++run_->turns;
  engine_request req;
  req.thread_id = manifest_.id;
  req.task_id = manifest_.task_id;
  req.run_id = run_->input.run_id;
  req.turn = run_->turns;
  req.session_id = run_->resume_disabled ? std::string{} : manifest_.session_id;
  req.conversation = *conversation_;  // shared, not copied: O(1) however long the thread
  if (run_->agent != agent_) {
    // A house member speaks with its own system prompt, not the thread agent's.
    // The view holds its prompt pinned in front (working_list), if it has one.
    req.conversation.unpin_front();
    if (!run_agent().config.system_prompt.empty())
      req.conversation.pin_front(make_system_prompt(run_agent().config.system_prompt));
  }
  req.tools = run_agent().tool_specs;
  run_->call_gen = ++gens_;
  run_->engine_pending = true;
  run_->last_activity = clock().now();
  caf::actor_addr me = address();
  uint64_t call_gen = run_->call_gen;
  engine_callbacks cb;
  cb.on_delta = [me, call_gen](std::string delta) {
    if (auto a = caf::actor_cast<thread_impl_actor>(me)) caf::anon_send(a, delta_atom::value, call_gen, std::move(delta));
  };
  cb.on_done = [me, call_gen](engine_reply reply) {
    if (auto a = caf::actor_cast<thread_impl_actor>(me))
      caf::anon_send(a, engine_done_atom::value, call_gen, std::move(reply));
  };
  delayed_send(this, std::chrono::milliseconds(budgets.engine_idle_ms), idle_check_atom::value, call_gen);
  try {
    run_->engine_call = run_agent().engine->start(std::move(req), std::move(cb));
  } catch (const std::exception& e) {
    run_->engine_pending = false;
    end_run(run_outcome::failed, "", storable_error(std::string("engine threw: ") + e.what()));
  } catch (...) {
    run_->engine_pending = false;
    end_run(run_outcome::failed, "", "engine threw a non-standard exception");
  }
}

void thread_impl::on_delta(uint64_t call_gen, std::string text) {
  if (!run_ || run_->call_gen != call_gen || !run_->engine_pending) return;
  run_->last_activity = clock().now();
  for (const auto& sub : subscribers_)
    send(sub.sink, delta_atom::value, manifest_.id, run_->input.run_id, text);
}

void thread_impl::on_engine_done(uint64_t call_gen, engine_reply reply) {
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
    end_run(run_outcome::failed, "", storable_error(reply.result.message()));
    return;
  }
  engine_step& step = reply.step;
  run_->usage += step.usage;
  run_->cost_usd += step.cost_usd;
  // Everything the engine said is untrusted: made storable before it is committed.
  if (!step.session_id.empty() && step.session_id.size() <= session_id_bytes_max)
    run_->session_id = to_valid_utf8(step.session_id);
  storable(&step.text);
  storable(&step.thinking);
  uint32_t calls_max = run_agent().config.budgets.tool_calls_max;
  if (step.tool_calls.size() > calls_max) {
    end_run(run_outcome::failed, "", "the engine asked for " + std::to_string(step.tool_calls.size()) +
                                         " tool calls in one step: tool_calls_max (" +
                                         std::to_string(calls_max) + ")");
    return;
  }
  if (step.tool_calls.empty()) {
    end_run(run_outcome::completed, std::move(step.text), "", std::move(step.thinking));
    return;
  }
  std::vector<event> events;
  if (!step.thinking.empty()) events.push_back(make_thinking(std::move(step.thinking)));
  if (!step.text.empty()) events.push_back(make_assistant_text(std::move(step.text)));
  run_->tools.clear();
  const json_limits& limits = ctx_->log->options().limits;
  for (size_t i = 0; i < step.tool_calls.size(); ++i) {
    auto& call = step.tool_calls[i];
    call.call_id = to_valid_utf8(call.call_id);
    if (call.call_id.empty() || call.call_id.size() > call_field_bytes_max)
      call.call_id = "call_" + std::to_string(run_->turns) + "_" + std::to_string(i + 1);
    call.name = to_valid_utf8(call.name);
    make_storable_text(&call.name, call_field_bytes_max, "call_field_bytes_max");
    pending_tool pending{call, nullptr, false, {}, nullptr, std::nullopt, {}, {}, {}};
    std::string arguments;
    if (status s = storable_arguments(call.arguments_json, limits, &arguments); !s) {
      // Arguments no reader could take back are not stored: the call is recorded
      // with none, and answered with an error instead of being run.
      arguments = "{}";
      pending.done = true;
      pending.output = {"(error: tool call arguments refused: " + storable_error(s.message()) + ")", true};
    }
    pending.call.arguments_json = arguments;
    events.push_back(make_tool_call(call.call_id, call.name, std::move(arguments)));
    run_->tools.push_back(std::move(pending));
  }
  const uint64_t children = check_delegations();  // answers refused ask_agent calls
  run_->tools_left = 0;
  for (const auto& t : run_->tools)
    if (!t.done) ++run_->tools_left;
  uint64_t gen = run_->gen;
  commit_job job;
  job.kind = commit_kind::step_calls;
  job.events = std::move(events);
  // The permitted ask_agent calls' child ids, minted with the calls.
  if (children != 0) job.mutate = [children](manifest& m) { m.children_count += children; };
  job.on_done = [this, gen, children](uint64_t) {
    if (!current(gen)) return;
    if (children != 0) name_children(children);
    invoke_tools();
  };
  // Refused: the calls never reached the log, so the run's end answers none of them.
  job.on_failed = [this, gen](const caf::error&) {
    if (run_ && run_->gen == gen) run_->tools.clear();
  };
  commit(std::move(job));
}

void thread_impl::invoke_tools() {
  caf::actor_addr me = address();
  uint64_t gen = run_->gen;
  auto timeout = std::chrono::milliseconds(run_agent().config.budgets.tool_timeout_ms);
  std::vector<pending_tool*> asks;
  for (auto& t : run_->tools) {
    if (t.done) continue;  // answered already (refused arguments, refused delegations)
    t.token = std::make_shared<cancel_token>();
    if (!t.child_id.empty()) {
      // ask_agent: run by this actor itself (thread_delegate.cpp), under the same timeout.
      delayed_send(this, timeout, tool_timeout_atom::value, gen, t.call.call_id);
      asks.push_back(&t);
      continue;
    }
    auto impl = run_agent().find_tool(t.call.name);
    if (!impl) {
      finish_tool(t, {"(error: unknown tool '" + t.call.name + "')", true});
      continue;
    }
    tool_invocation inv{manifest_.id, run_->input.run_id, t.call.call_id, t.call.arguments_json,
                        manifest_.agent_id, manifest_.task_id, manifest_.depth, t.token};
    std::string call_id = t.call.call_id;
    auto done = [me, gen, call_id](tool_output out) {
      if (auto a = caf::actor_cast<thread_impl_actor>(me))
        caf::anon_send(a, tool_done_atom::value, gen, call_id, std::move(out));
    };
    delayed_send(this, timeout, tool_timeout_atom::value, gen, call_id);
    try {
      t.handle = impl->invoke(std::move(inv), std::move(done));
    } catch (const std::exception& e) {
      finish_tool(t, {storable_error(std::string("(error: tool threw: ") + e.what() + ")"), true});
    } catch (...) {
      finish_tool(t, {"(error: tool threw a non-standard exception)", true});
    }
  }
  for (pending_tool* t : asks) start_child(gen, t->call.call_id, t->child_id, t->ask_target, t->ask_question);
  if (run_->tools_left == 0) commit_tool_results();
}

void thread_impl::abandon_tool(pending_tool& t) {
  if (t.token) t.token->cancel();
  cancel_quietly(t.handle);
}

bool thread_impl::finish_tool(pending_tool& t, tool_output out) {
  if (t.done) return false;
  t.done = true;
  t.output = std::move(out);
  storable(&t.output.text);
  cancel_quietly(t.handle);  // no-op for finished calls; stops timed-out ones
  t.handle.reset();
  --run_->tools_left;
  return true;
}

pending_tool* thread_impl::find_pending(const std::string& call_id) {
  for (auto& t : run_->tools)
    if (t.call.call_id == call_id) return &t;
  return nullptr;
}

void thread_impl::on_tool_done(uint64_t gen, const std::string& call_id, tool_output out) {
  if (!current(gen)) return;
  auto* t = find_pending(call_id);
  if (t == nullptr || !finish_tool(*t, std::move(out))) return;
  if (run_->tools_left == 0) commit_tool_results();
}

void thread_impl::on_tool_timeout(uint64_t gen, const std::string& call_id) {
  if (!current(gen)) return;
  auto* t = find_pending(call_id);
  if (t == nullptr || t->done) return;
  auto ms = run_agent().config.budgets.tool_timeout_ms;
  if (t->token) t->token->cancel();
  std::string child = t->child_id.empty() ? "" : " (child thread " + t->child_id + " is cancelled)";
  finish_tool(*t, {"(error: tool '" + t->call.name + "' timed out after " + std::to_string(ms) +
                       " ms: tool_timeout_ms" + child + ")", true});
  if (run_->tools_left == 0) commit_tool_results();
}

void thread_impl::commit_tool_results() {
  std::vector<event> events;
  std::vector<requested_tool_call> calls;
  for (auto& t : run_->tools) {
    events.push_back(make_tool_result(t.call.call_id, t.call.name, std::move(t.output.text), t.output.is_error));
    if (t.signal) events.push_back(std::move(*t.signal));
    calls.push_back(std::move(t.call));
  }
  run_->tools.clear();
  uint64_t gen = run_->gen;
  commit_job job;
  job.kind = commit_kind::step_results;
  job.events = std::move(events);
  job.on_done = [this, gen](uint64_t) {
    if (current(gen)) call_engine();
  };
  // Refused: the calls are in the log without results; the run's end answers them.
  job.on_failed = [this, gen, calls = std::move(calls)](const caf::error&) mutable {
    if (!run_ || run_->gen != gen) return;
    for (auto& c : calls)
      run_->tools.push_back(pending_tool{std::move(c), nullptr, true, {"(error: tool result refused)", true},
                                         nullptr, std::nullopt, {}, {}, {}});
  };
  commit(std::move(job));
}

void thread_impl::on_run_timeout(uint64_t gen) {
  if (!current(gen)) return;
  end_run(run_outcome::failed, "", "run time budget exhausted: run_time_ms_max (" +
                                       std::to_string(run_agent().config.budgets.run_time_ms_max) + " ms)");
}

void thread_impl::on_idle_check(uint64_t call_gen) {
  if (!run_ || run_->call_gen != call_gen || !run_->engine_pending || run_->ending) return;
  auto idle_ms = std::chrono::milliseconds(run_agent().config.budgets.engine_idle_ms);
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

void thread_impl::on_heartbeat(uint64_t gen) {
  if (!current(gen)) return;
  int64_t interval = ctx_->options.heartbeat_interval.count();
  if (!in_flight_ && commits_.empty() && wall_now() - manifest_.heartbeat_at_ms >= interval)
    commit(commit_job{});
  delayed_send(this, ctx_->options.heartbeat_interval, heartbeat_atom::value, gen);
}

caf::result<bool> thread_impl::reconcile() {
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
    job.mutate = [](manifest& m) {
      m.status = thread_status::failed;
      m.last_outcome = run_outcome::failed;
    };
    commit(std::move(job));
  }
  commit_job marker;  // answers once everything before it is durable
  marker.on_done = [promise](uint64_t) mutable { promise.deliver(true); };
  marker.on_failed = [promise](const caf::error& e) mutable { promise.deliver(e); };
  commit(std::move(marker));
  return promise;
}

bool thread_impl::cancel_run() {
  if (!run_ || run_->ending) return false;
  end_run(run_outcome::cancelled, "", "cancelled");
  return true;
}

void thread_impl::end_run(run_outcome outcome, std::string text, std::string error, std::string thinking,
             const char* signal_before_stop) {
  run_->ending = true;
  if (run_->engine_pending) cancel_quietly(run_->engine_call);
  run_->engine_pending = false;
  error = storable_error(std::move(error));
  storable(&text);
  storable(&thinking);
  std::vector<event> events;
  for (auto& t : run_->tools) {
    if (!t.done) abandon_tool(t);  // a delegation's handle cancels its child, which cancels its own
    std::string why = outcome == run_outcome::cancelled ? "(cancelled)" : "(error: run ended: " + error + ")";
    events.push_back(make_tool_result(t.call.call_id, t.call.name, t.done ? std::move(t.output.text) : why,
                                      t.done ? t.output.is_error : true));
    if (t.done && t.signal) events.push_back(std::move(*t.signal));
  }
  run_->tools.clear();
  if (!thinking.empty()) events.push_back(make_thinking(std::move(thinking)));
  if (outcome == run_outcome::failed) text = "(error: " + error + ")";
  if (outcome == run_outcome::cancelled) text = "(stopped by user)";
  events.push_back(make_message(message_role::assistant, text));
  auto duration = std::chrono::duration_cast<std::chrono::milliseconds>(clock().now() - run_->started);
  const uint64_t result_index = events.size();  // its seq: the closing tick's first seq + this
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
  job.kind = commit_kind::run_end;
  job.events = std::move(events);
  auto usage = run_->usage;
  double cost = run_->cost_usd;
  std::string session = outcome == run_outcome::completed ? run_->session_id : "";
  bool bound = manifest_.parent != parent_kind::none;
  job.mutate = [usage, cost, session, outcome, bound](manifest& m) {
    m.usage += usage;
    m.cost_usd += cost;
    if (!session.empty()) m.session_id = session;
    m.last_outcome = outcome;
    if (!bound) m.status = thread_status::open;
    else if (outcome == run_outcome::completed) m.status = thread_status::completed;
    else if (outcome == run_outcome::failed) m.status = thread_status::failed;
    else m.status = thread_status::cancelled;
  };
  job.on_done = [this, result, usage, cost, result_index](uint64_t first_seq) mutable {
    if (ctx_->ledger)  // the day's spending, now that the usage row is durable
      ctx_->ledger->add(manifest_.agent_id, keys::usage_key(manifest_.id, first_seq + result_index),
                        manifest_.updated_at_ms, usage, cost);
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

}  // namespace skein::detail
