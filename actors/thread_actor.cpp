// The thread actor (DESIGN §4): inputs and the mid-run policy, the commit
// pipeline, passivation and stop. The run itself is in thread_run.cpp, the
// subscribers in thread_subscribe.cpp.
//
// A run: input appended with signal thread.start (status running); then ticks of
// engine call -> the step's events (thinking, assistant_text, tool_calls) ->
// the tools, in parallel -> their results; at the end the assistant message, a
// result event and thread.stop, with the manifest update, in one commit. Every
// commit goes through the journal one at a time, in order; the continuation of
// each runs only after its ack (persist before deliver).
#include "actors/thread_actor.hpp"
#include "actors/thread_actor_impl.hpp"

#include <algorithm>
#include <caf/actor_system.hpp>
#include <cassert>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <deque>
#include <optional>

#include "actors/error.hpp"
#include "actors/journal.hpp"
#include "actors/work_messages.hpp"
#include "persistence/event_log.hpp"
#include "persistence/recovery.hpp"
#include "runtime/model/conversation.hpp"
#include "runtime/model/ids.hpp"
#include "runtime/model/json_writer.hpp"
#include "runtime/model/text.hpp"


namespace skein {
namespace detail {

thread_impl::thread_impl(caf::actor_config& cfg, std::shared_ptr<const thread_context> ctx, manifest m,
                         agent_spec_ptr agent)
    : thread_impl_actor::base(cfg), ctx_(std::move(ctx)), manifest_(std::move(m)),
      agent_(std::move(agent)) {
  policy_ = effective_policy(manifest_.config, agent_->config.policy);
}

thread_impl_actor::behavior_type thread_impl::make_behavior() {
  set_down_handler([this](caf::down_msg& msg) { drop_subscriber(msg.source); });
  // Running with no run alive: a run whose closing commit never landed (recovery
  // at open repairs the ones a crash left). Close it before anything starts.
  if (manifest_.status == thread_status::running) repair_open_run("thread.interrupted");
  load_inbox();
  arm_idle_timer();
  return {
      [this](send_atom, run_input& in) -> caf::result<run_result> { return on_send(std::move(in)); },
      [this](submit_atom, run_input& in) -> caf::result<std::string> { return on_submit(std::move(in)); },
      [this](submit_atom, run_input& in, std::vector<schedule_row>& rows) -> caf::result<std::string> {
        return on_submit(std::move(in), std::move(rows));
      },
      [this](cancel_atom) { return cancel_run(); },
      [this](subscribe_atom, uint64_t from_seq, event_sink_actor& sink) -> caf::result<uint64_t> {
        return subscribe(from_seq, sink);
      },
      [this](unsubscribe_atom, event_sink_actor& sink) { drop_subscriber(sink.address()); },
      [this](caf::get_atom) { return manifest_; },
      [this](mint_child_atom) -> caf::result<std::string> { return mint_child(); },
      [this](title_atom, std::string& title, uint64_t cursor) -> caf::result<bool> {
        return generated_title(std::move(title), cursor);
      },
      [this](title_atom, std::string& title) -> caf::result<manifest> { return user_title(std::move(title)); },
      [this](work_atom, work_op& op) -> caf::result<manifest> { return on_work(std::move(op)); },
      [this](member_atom, std::string& agent, std::string& trigger, bool add) -> caf::result<manifest> {
        return change_member(std::move(agent), std::move(trigger), add);
      },
      [this](dispatch_atom, std::string& data) { record_dispatch_failed(std::move(data)); },
      [this](passivate_atom) {
        if (idle()) passivate();
      },
      [this](stop_atom, bool graceful) -> caf::result<void> { return stop(graceful); },
      [this](stop_atom, bool graceful, std::string& reason) -> caf::result<void> {
        return stop(graceful, std::move(reason));
      },
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
      [this](archive_atom, int64_t at_ms) -> caf::result<bool> { return archive(at_ms); },
      [this](retire_atom, int64_t before_ms) { return retire(before_ms); },
      [this](retire_atom, int64_t before_ms, bool moving) { return retire(before_ms, moving); },
      [this](compact_atom, compact_request& req) -> caf::result<compact_result> {
        return on_compact(std::move(req));
      },
      [this](summary_done_atom, uint64_t gen, engine_reply& r) { on_summary_done(gen, std::move(r)); },
      [this](summary_timeout_atom, uint64_t gen) { on_summary_timeout(gen); },
      [this](idle_timer_atom, uint64_t gen) {
        if (gen == idle_gen_ && idle()) passivate();
      },
  };
}

thread_impl::admission thread_impl::admit(run_input in) {
  admission a;
  in.member.clear();  // the house fields are this actor's, never a caller's
  in.follow_up = false;
  if (stopping_) {
    a.error = gone_error();
    return a;
  }
  if (failed_) {
    a.error = to_error(status::io_error("thread " + manifest_.id +
                                        " takes no input now: an earlier write or read of it failed (it is retried when the thread is next activated)"));
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
  // The database's quotas (event_log.hpp, log_quota) refuse a new input, never a
  // retry of an accepted one (answered above) nor a run already admitted.
  if (status s = ctx_->log->admit_input(wall_now()); !s) {
    a.error = to_error(s);
    return a;
  }
  bool busy = run_ != nullptr || compacting_ != nullptr || !queue_.empty();
  // A compaction is no run: under `reject` an input waits for it instead.
  if (run_ != nullptr && policy_ == mid_run_policy::reject) {
    a.error = to_error(status::conflict("thread " + manifest_.id + " is running and its mid-run policy is reject"));
    return a;
  }
  if (queue_.size() >= ctx_->options.thread_queue_max) {
    a.error = to_error(status::overloaded("thread " + manifest_.id + " has " + std::to_string(queue_.size()) +
                                          " inputs waiting: thread_queue_max (" +
                                          std::to_string(ctx_->options.thread_queue_max) + ")")
                             .with_limit("thread_queue_max"));
    return a;
  }
  a.run_id = in.run_id;
  a.fresh = true;
  pending_input p{std::move(in), {}, 0, nullptr};
  if (busy && policy_ == mid_run_policy::interrupt) {
    // The interrupted input's later house members go with its run.
    // They are in the inbox: each takes its entry when its turn comes, and runs nothing.
    for (auto& q : queue_)
      if (q.input.follow_up) q.dropped = true;
    queue_.push_front(std::move(p));
    a.waiters = &queue_.front().waiters;
    if (run_ && !run_->ending) end_run(run_outcome::cancelled, "", "interrupted by a new input");
  } else {
    queue_.push_back(std::move(p));
    a.waiters = &queue_.back().waiters;
  }
  return a;
}

caf::result<run_result> thread_impl::on_send(run_input in) {
  admission a = admit(std::move(in));
  if (a.error) return a.error;
  if (a.earlier) return *a.earlier;
  a.waiters->push_back(make_response_promise());
  auto promise = a.waiters->back();
  start_next();
  return promise;
}

std::vector<schedule_row> thread_impl::take_firing_rows(const std::string& run_id) {
  auto it = firing_rows_.find(run_id);
  if (it == firing_rows_.end()) return {};
  std::vector<schedule_row> rows = std::move(it->second);
  firing_rows_.erase(it);
  return rows;
}

caf::result<std::string> thread_impl::on_submit(run_input in, std::vector<schedule_row> rows) {
  admission a = admit(std::move(in));
  if (a.error) return a.error;
  if (a.earlier) return a.earlier->run_id;
  // The answer means durable (DESIGN §5): it waits for the input's inbox entry,
  // or for its run's first commit when the run starts at once.
  // A retry of a pending input is answered with the first one: at once if that
  // is durable (or was a waited send), else when it becomes durable.
  if (!a.fresh && accepted_.find(a.run_id) == accepted_.end()) return a.run_id;
  auto promise = make_response_promise<std::string>();
  accepted_[a.run_id].push_back(promise);
  if (!a.fresh) return promise;
  if (!rows.empty()) firing_rows_[a.run_id] = std::move(rows);
  bool starts_now = !run_ && !compacting_ && !repairing_ && !failed_ && !stopping_ && queue_.size() == 1;
  if (starts_now) start_next();
  else put_in_inbox(a.run_id);
  return promise;
}

void thread_impl::answer_accepted(const std::string& run_id, const caf::error& err) {
  auto it = accepted_.find(run_id);
  if (it == accepted_.end()) return;
  for (auto& p : it->second) {
    if (err) p.deliver(err);
    else p.deliver(run_id);
  }
  accepted_.erase(it);
}

void thread_impl::put_in_inbox(const std::string& run_id) {
  auto it = std::find_if(queue_.begin(), queue_.end(),
                         [&](const pending_input& p) { return p.input.run_id == run_id; });
  assert(it != queue_.end());  // admitted just now
  it->inbox_order = inbox_next_++;
  commit_job job;
  job.inbox_put.emplace_back(it->inbox_order, it->input);
  job.side_rows = take_firing_rows(run_id);
  job.on_done = [this, run_id](uint64_t) { answer_accepted(run_id, caf::error{}); };
  job.on_failed = [this, run_id](const caf::error& e) {
    answer_accepted(run_id, e);
    // Refused, so never accepted: it must not run.
    auto q = std::find_if(queue_.begin(), queue_.end(),
                          [&](const pending_input& p) { return p.input.run_id == run_id; });
    if (q != queue_.end()) {
      for (auto& w : q->waiters) w.deliver(e);
      queue_.erase(q);
    }
  };
  commit(std::move(job));
}

void thread_impl::load_inbox() {
  std::vector<inbox_item> items;
  if (status s = ctx_->log->read_inbox(manifest_.id, &items); !s) {
    failed_ = true;  // an unreadable inbox: no input may run out of order
    return;
  }
  // A house input's later member turns were put in the inbox after inputs that
  // queued behind it, but run before them: first, in their order.
  std::stable_partition(items.begin(), items.end(), [](const inbox_item& i) { return i.input.follow_up; });
  for (auto& item : items) {
    inbox_next_ = std::max(inbox_next_, item.order + 1);
    pending_input p{std::move(item.input), {}, 0, nullptr};
    p.inbox_order = item.order;
    queue_.push_back(std::move(p));
  }
  start_next();
}

std::optional<thread_impl::pending_ref> thread_impl::pending_key(const std::string& key) {
  if (run_ && run_->input.idempotency_key == key) return pending_ref{run_->input, run_->waiters};
  for (auto& p : queue_)
    if (p.input.idempotency_key == key) return pending_ref{p.input, p.waiters};
  return std::nullopt;
}

status thread_impl::earlier_run(const std::string& key, run_result* out) {
  idempotent_run found;
  SKEIN_TRY(ctx_->log->find_idempotent(manifest_.id, key, &found));
  std::vector<event> events;
  SKEIN_TRY(ctx_->log->read_events(manifest_.id, found.first_seq, 0, &events));
  status s = result_from_log(manifest_.id, found.run_id, events, out);
  if (s.code() == errc::not_found)
    return status::corruption("run " + found.run_id + " of key " + key + " has no thread.stop");
  return s;
}

void thread_impl::start_next() {
  if (run_ || compacting_ || queue_.empty() || stopping_ || failed_ || repairing_ || fetching_members_) return;
  if (!queue_.front().compaction && is_house() && !members_known_) return fetch_members();
  pending_input p = std::move(queue_.front());
  queue_.pop_front();
  if (p.compaction) start_compaction(std::move(p));
  else start_run(std::move(p));
}

void thread_impl::commit(commit_job job) {
  commits_.push_back(std::move(job));
  pump();
}

void thread_impl::pump() {
  if (in_flight_ || commits_.empty() || failed_) return;
  in_flight_ = true;
  commit_job& job = commits_.front();
  tick t;
  t.thread_id = manifest_.id;
  t.manifest = manifest_;
  if (job.mutate) job.mutate(t.manifest);
  int64_t now = wall_now();
  if (!job.keep_updated_at) t.manifest.updated_at_ms = now;
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
  t.inbox_put = job.inbox_put;
  t.inbox_take = job.inbox_take;
  t.effect_cursors = job.effect_cursors;
  t.side_rows = job.side_rows;
  if (job.rows_of) {
    auto more = job.rows_of(t.manifest, manifest_.last_seq + 1);
    t.side_rows.insert(t.side_rows.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
  }
  manifest after = t.manifest;
  request(ctx_->journal, caf::infinite, commit_atom::value, std::move(t))
      .then(
          [this, after](uint64_t last_seq) mutable {
            after.last_seq = last_seq;
            on_committed(std::move(after));
          },
          [this](caf::error& e) {
            status s = to_status(e);
            switch (s.code()) {
              case errc::io_error:
              case errc::no_space:
              case errc::corruption:
                on_commit_failed(s);  // storage: nothing more can be written here
                break;
              default:
                on_commit_refused(s);  // the tick itself: the log is fine
            }
          });
}

void thread_impl::on_commit_refused(const status& s) {
  commit_job job = std::move(commits_.front());
  commits_.pop_front();
  in_flight_ = false;
  auto err = to_error(s);
  if (job.on_failed) job.on_failed(err);
  std::string why = "commit refused: " + s.to_string();
  make_storable_text(&why, 4096, "error_text_bytes_max");
  switch (job.kind) {
    case commit_kind::plain:
      break;
    case commit_kind::run_start:
      // Nothing of the run reached the log: it never began.
      if (run_) {
        for (auto& w : run_->waiters) w.deliver(err);
        run_.reset();
      }
      break;
    case commit_kind::step_calls:
    case commit_kind::step_results:
      if (run_ && !run_->ending) end_run(run_outcome::failed, "", why);
      break;
    case commit_kind::run_end:
      if (run_ && !run_->closing_refused) {
        // Close again with nothing but short, storable events: error results for
        // the calls it answered, the reason, result and thread.stop.
        run_->closing_refused = true;
        for (const auto& e : job.events)
          if (e.type == event_type::tool_result)
            run_->tools.push_back(pending_tool{{e.call_id, e.name, "{}"}, nullptr, true,
                                               {"(error: closing commit refused)", true}, nullptr, std::nullopt, {}, {}, {}});
        run_->ending = false;
        // The new closing must land before anything queued after the refused
        // one: hold the pipeline while it is queued, then move it to the front.
        in_flight_ = true;
        end_run(run_outcome::failed, "", why);
        in_flight_ = false;
        commit_job closing = std::move(commits_.back());
        commits_.pop_back();
        commits_.push_front(std::move(closing));
      } else {
        on_commit_failed(s);  // not even a minimal closing: leave; the next activation repairs
        return;
      }
      break;
  }
  if (stopping_ && commits_.empty() && !in_flight_) {
    finish_stop();
    return;
  }
  pump();
  start_next();
  arm_idle_timer();
}

void thread_impl::repair_open_run(const char* signal) {
  std::vector<event> log;
  if (status s = ctx_->log->read_events(manifest_.id, 1, 0, &log); !s) {
    failed_ = true;  // unreadable: refuse inputs; the directory reloads it next time
    return;
  }
  repairing_ = true;
  commit_job job;
  job.events = interrupted_run_closing(log, signal);
  job.mutate = [](manifest& m) {
    m.status = thread_status::failed;
    m.last_outcome = run_outcome::failed;
  };
  job.on_done = [this](uint64_t) {
    repairing_ = false;
    start_next();
  };
  job.on_failed = [this](const caf::error& e) {
    // The open run cannot be closed: no run may start on top of it. The thread
    // refuses inputs until it is activated again (and the repair retried).
    repairing_ = false;
    failed_ = true;
    for (auto& p : queue_)
      for (auto& w : p.waiters) w.deliver(e);
    queue_.clear();
    for (auto& [id, promises] : accepted_)
      for (auto& p : promises) p.deliver(e);
    accepted_.clear();
  };
  commit(std::move(job));
}

void thread_impl::on_committed(manifest after) {
  commit_job job = std::move(commits_.front());
  commits_.pop_front();
  in_flight_ = false;
  manifest_ = std::move(after);
  uint64_t first_seq = job.events.empty() ? 0 : job.events.front().seq;
  for (const auto& e : job.events) {
    published_ptr shared;  // one for every subscriber: encoded or decoded at most once
    for (auto& sub : subscribers_) {
      if (e.seq < sub.from_seq) continue;
      if (!shared) shared = std::make_shared<const published_event>(e);
      if (sub.backlog_pending) sub.held.push_back(shared);
      else send(sub.sink, event_atom::value, manifest_.id, shared);
    }
    if (conversation_) extend_working_conversation(&*conversation_, e);
    else if (conversation_loading_) conversation_tail_.push_back(e);
  }
  if (job.on_done) job.on_done(first_seq);
  if (stopping_ && commits_.empty()) finish_stop();
  else pump();
}

void thread_impl::on_commit_failed(const status& s) {
  in_flight_ = false;
  failed_ = true;
  auto err = to_error(s);
  for (auto& job : commits_)
    if (job.on_failed) job.on_failed(err);
  commits_.clear();
  if (run_) {
    cancel_quietly(run_->engine_call);
    for (auto& t : run_->tools) abandon_tool(t);
    for (auto& w : run_->waiters) w.deliver(err);
    run_.reset();
  }
  abort_compaction(err);
  for (auto& p : queue_)
    for (auto& w : p.waiters) w.deliver(err);
  queue_.clear();
  if (stopping_) finish_stop();
  else passivate();
}

caf::result<std::string> thread_impl::mint_child() {
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

caf::result<bool> thread_impl::generated_title(std::string title, uint64_t cursor) {
  if (stopping_) return gone_error();
  auto promise = make_response_promise<bool>();
  // Decided when the tick is built (pump), after every commit queued before it:
  // a user title that lands first is kept.
  auto set = std::make_shared<bool>(false);
  commit_job job;
  job.mutate = [title = std::move(title), set](manifest& m) {
    if (!m.title.empty()) return;
    m.title = title;
    m.title_generated = true;
    *set = true;
  };
  job.effect_cursors.emplace_back("titles", cursor);
  job.on_done = [promise, set](uint64_t) mutable { promise.deliver(*set); };
  job.on_failed = [promise](const caf::error& e) mutable { promise.deliver(e); };
  commit(std::move(job));
  return promise;
}

caf::result<manifest> thread_impl::user_title(std::string title) {
  if (stopping_) return gone_error();
  auto promise = make_response_promise<manifest>();
  commit_job job;
  job.mutate = [title = std::move(title)](manifest& m) {
    m.title = title;
    m.title_generated = false;
  };
  job.on_done = [this, promise](uint64_t) mutable { promise.deliver(manifest_); };
  job.on_failed = [promise](const caf::error& e) mutable { promise.deliver(e); };
  commit(std::move(job));
  return promise;
}

bool thread_impl::idle() const {
  return !run_ && !compacting_ && queue_.empty() && commits_.empty() && !in_flight_ && subscribers_.empty();
}

void thread_impl::arm_idle_timer() {
  if (!idle()) return;
  delayed_send(this, ctx_->options.idle_passivate, idle_timer_atom::value, ++idle_gen_);
}

void thread_impl::passivate() {
  end_backlogs(to_error(status::io_error("thread " + manifest_.id + " left before the subscription's backlog was read")));
  send(ctx_->directory, passivate_atom::value, manifest_.id, thread_actor{this});
  quit();
}

caf::result<void> thread_impl::stop(bool graceful, std::string reason) {
  stopping_ = true;
  stop_promise_ = make_response_promise();
  if (graceful) {
    auto closing = to_error(status::overloaded("the runtime is closing"));
    for (auto& p : queue_)
      for (auto& w : p.waiters) w.deliver(closing);
    queue_.clear();
    abort_compaction(closing);
    if (run_ && !run_->ending) end_run(run_outcome::cancelled, "", "the runtime is closing");
    if (commits_.empty()) finish_stop();
    return stop_promise_;
  }
  auto gone = to_error(reason == "moved" ? status::unavailable("thread " + manifest_.id +
                                                                " moved to another node: ask again")
                                         : status::not_found("thread " + manifest_.id + " was deleted"));
  // Subscribers hear the end now; a commit still in flight has nobody left to tell.
  end_backlogs(gone);
  for (const auto& sub : subscribers_) {
    send(sub.sink, caf::close_atom::value, manifest_.id, reason);
    demonitor(sub.sink.address());
  }
  subscribers_.clear();
  if (run_) {
    cancel_quietly(run_->engine_call);
    for (auto& t : run_->tools) abandon_tool(t);
    for (auto& w : run_->waiters) w.deliver(gone);
    run_.reset();
  }
  abort_compaction(gone);
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

caf::error thread_impl::gone_error() const {
  if (moving_) return to_error(status::unavailable("thread " + manifest_.id + " is moving to another node: ask again"));
  return to_error(status::not_found("thread " + manifest_.id + " is being deleted"));
}

void thread_impl::finish_stop() {
  end_backlogs(to_error(status::not_found("thread " + manifest_.id + " stopped before the subscription's backlog was read")));
  if (stop_promise_.pending()) stop_promise_.deliver(caf::unit);
  quit();
}

}  // namespace detail
bool run_is_stale(const manifest& m, const core_options& options, int64_t now_ms) {
  if (m.status != thread_status::running) return false;
  if (m.heartbeat_at_ms != 0) return now_ms - m.heartbeat_at_ms > options.heartbeat_stale_ms;
  return now_ms - m.updated_at_ms > options.start_stale_ms;
}

thread_actor spawn_thread_actor(caf::actor_system& sys, std::shared_ptr<const thread_context> ctx,
                                manifest m, agent_spec_ptr agent) {
  return sys.spawn<detail::thread_impl>(std::move(ctx), std::move(m), std::move(agent));
}

}  // namespace skein
