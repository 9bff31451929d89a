// Compaction in the thread actor (DESIGN §6), and the working view read at
// activation. The class is in thread_actor_impl.hpp; the strategies in
// runtime/model/compaction.hpp.
//
// A compaction runs between runs, never during one: it waits in the input queue
// like an input (no thread.start/stop), and inputs that come while it is under
// way — a summary call may take seconds — wait for it. Its one commit holds the
// compaction event, the manifest's compaction_seq and, when an effect asked for
// it, that effect's cursor. Anything that goes wrong before that commit (engine
// error or timeout, data that is not storable, orphan tool results, no
// reduction after a summary) leaves the thread as it was plus one
// thread.compaction_failed signal {reason}: signals are not in the working
// view, so the view is unchanged.
#include <caf/send.hpp>
#include <cassert>

#include "actors/error.hpp"
#include "actors/reader_pool.hpp"
#include "actors/thread_actor_impl.hpp"
#include "persistence/event_log.hpp"
#include "runtime/model/conversation.hpp"
#include "runtime/model/text.hpp"

namespace skein {

status read_working_view(const event_log& log, const manifest& m, std::vector<event>* out,
                         size_t* events_read, bool upto_last_seq) {
  std::vector<event> read;
  if (upto_last_seq && m.last_seq == 0) {
    if (events_read != nullptr) *events_read = 0;
    out->clear();
    return status::ok();
  }
  if (m.compaction_seq != 0 && m.compaction_seq <= m.last_seq) {
    const size_t limit = upto_last_seq ? m.last_seq - m.compaction_seq + 1 : 0;
    SKEIN_TRY(log.read_events(m.id, m.compaction_seq, limit, &read));
    // The manifest names a compaction event: trust it only if it is one, and
    // one that says where the prompt is. One without counts (a v1 payload:
    // older or imported) does not: the full read below finds the prompt.
    if (!read.empty() && read.front().seq == m.compaction_seq && read.front().type == event_type::compaction &&
        read.front().original_events != 0) {
      std::vector<event> prompt;
      uint64_t prompt_seq = read.front().prompt_seq;
      if (prompt_seq != 0 && prompt_seq < m.compaction_seq) {
        SKEIN_TRY(log.read_events(m.id, prompt_seq, 1, &prompt));
        if (prompt.empty() || prompt.front().type != event_type::system_prompt)
          return status::corruption("thread " + m.id + ": compaction " + std::to_string(m.compaction_seq) +
                                    " names system prompt " + std::to_string(prompt_seq) + ", which is not one");
      }
      if (events_read != nullptr) *events_read = read.size() + prompt.size();
      read.insert(read.begin(), prompt.begin(), prompt.end());
      *out = working_conversation(read);
      return status::ok();
    }
    read.clear();
  }
  SKEIN_TRY(log.read_events(m.id, 1, upto_last_seq ? m.last_seq : 0, &read));
  if (events_read != nullptr) *events_read = read.size();
  *out = working_conversation(read);
  return status::ok();
}

namespace detail {
namespace {

constexpr size_t failure_reason_bytes_max = 1024;

}  // namespace

status thread_impl::load_conversation() {
  if (conversation_) return status::ok();
  std::vector<event> view;
  SKEIN_TRY(read_working_view(*ctx_->log, manifest_, &view));
  conversation_ = working_list(std::move(view));
  conversation_tail_.clear();  // a read in flight finds conversation_ set and is dropped
  return status::ok();
}

void thread_impl::with_conversation(std::function<void(const status&)> then) {
  if (conversation_) return then(status::ok());
  conversation_waiters_.push_back(std::move(then));
  if (conversation_loading_) return;
  conversation_loading_ = true;
  conversation_tail_.clear();
  // The view up to the last acknowledged seq, read on a reader; what commits
  // while it is read goes to conversation_tail_ and is added after it.
  auto view = std::make_shared<std::vector<event>>();
  const event_log* log = ctx_->log;
  std::function<status()> job = [log, m = manifest_, view] {
    return read_working_view(*log, m, view.get(), nullptr, true);
  };
  std::function<void(const status&)> done = [this, view](const status& s) {
    conversation_loading_ = false;
    if (s && !conversation_) {
      conversation_ = working_list(std::move(*view));
      for (const auto& e : conversation_tail_) extend_working_conversation(&*conversation_, e);
    }
    conversation_tail_.clear();
    auto waiters = std::move(conversation_waiters_);
    conversation_waiters_.clear();
    for (auto& w : waiters) w(conversation_ ? status::ok() : s);
  };
  ctx_->readers->read_or_inline(this, std::move(job), std::move(done));
}

caf::result<compact_result> thread_impl::on_compact(compact_request req) {
  if (stopping_) return gone_error();
  if (failed_)
    return to_error(status::io_error("thread " + manifest_.id + " cannot be compacted now: an earlier write or read of it failed"));
  if (status s = validate_compact_options(req.options); !s) return to_error(s);
  if (queue_.size() >= ctx_->options.thread_queue_max)
    return to_error(status::overloaded("thread " + manifest_.id + " has " + std::to_string(queue_.size()) +
                                       " inputs waiting: thread_queue_max (" +
                                       std::to_string(ctx_->options.thread_queue_max) + ")")
                        .with_limit("thread_queue_max"));
  auto promise = make_response_promise<compact_result>();
  pending_input p;
  p.compaction = std::make_shared<compact_request>(std::move(req));
  p.waiters.push_back(promise);
  queue_.push_back(std::move(p));
  start_next();
  return promise;
}

void thread_impl::start_compaction(pending_input p) {
  assert(!run_);         // between runs only: start_next lets one thing in at a time
  assert(!compacting_);  // one compaction at a time, like runs
  const compaction_settings& agent = agent_->config.compaction;
  auto c = std::make_unique<compaction_state>();
  c->gen = ++gens_;
  c->request = std::move(*p.compaction);
  c->promise = std::move(p.waiters.front());
  c->options.stages = c->request.options.stages.empty() ? agent.stages : c->request.options.stages;
  c->options.keep_turns = c->request.options.keep_turns.value_or(agent.keep_turns);
  c->options.tool_result_bytes_max = c->request.options.tool_result_bytes_max.value_or(agent.tool_result_bytes_max);
  c->to_seq = manifest_.last_seq;
  compacting_ = std::move(c);
  if (status s = validate_stages(compacting_->options.stages, "agent.compaction.stages"); !s) {
    compact_result r;
    r.reason = s.message();
    end_compaction(std::move(r));
    return;
  }
  if (status s = load_conversation(); !s) {
    fail_compaction("cannot read the thread's log: " + s.to_string());
    return;
  }
  const std::vector<event> view = conversation_->to_vector();  // a compaction reads it all anyway
  for (const auto& e : view)
    if (e.type == event_type::system_prompt) compacting_->prompt = e;
    else if (e.type == event_type::compaction) compacting_->from_seq = std::max<uint64_t>(e.from_seq, 1);
  uint64_t prompt_seq = 0;
  if (status s = compaction_input(view, &compacting_->events, &prompt_seq, ctx_->log->options().limits); !s) {
    fail_compaction("the previous compaction does not decode: " + s.to_string());
    return;
  }
  compacting_->tokens_before = estimate_tokens(compacting_->events);
  compacting_->events_before = compacting_->events.size();
  // The compaction effect asked when the view passed the threshold; a run or an
  // earlier request may have changed that by this turn. Under it, nothing is
  // written: the effect moves its cursor itself, and nothing is compacted twice.
  if (compacting_->request.automatic && (agent.auto_tokens == 0 || estimate_tokens(view) <= agent.auto_tokens)) {
    compact_result r;
    r.reason = "the working view's estimated tokens are under compaction.auto_tokens (" +
               std::to_string(agent.auto_tokens) + ")";
    r.tokens_before = r.tokens_after = estimate_tokens(view);
    end_compaction(std::move(r));
    return;
  }
  compaction_next();
}

void thread_impl::compaction_next() {
  compaction_state& c = *compacting_;
  while (c.next_stage < c.options.stages.size()) {
    const std::string& stage = c.options.stages[c.next_stage];
    if (apply_pure_stage(stage, c.options, &c.events)) {
      ++c.next_stage;
      continue;
    }
    assert(stage == stage_summarize);  // validate_stages let only known stages in
    c.boundary = summary_boundary(c.events, c.options.keep_turns);
    if (c.boundary == 0) {  // fewer turns than are kept: nothing to summarize
      ++c.next_stage;
      continue;
    }
    engine_request req;
    req.purpose = engine_purpose::summary;
    req.thread_id = manifest_.id;
    if (c.prompt) req.conversation.push_back(*c.prompt);
    req.conversation.append(c.events.begin(), c.events.begin() + static_cast<std::ptrdiff_t>(c.boundary));
    caf::actor_addr me = address();
    uint64_t gen = c.gen;
    engine_callbacks cb;
    cb.on_done = [me, gen](engine_reply reply) {
      if (auto a = caf::actor_cast<thread_impl_actor>(me)) caf::anon_send(a, summary_done_atom::value, gen, std::move(reply));
    };
    c.call_pending = true;
    delayed_send(this, std::chrono::milliseconds(agent_->config.budgets.engine_idle_ms),
                 summary_timeout_atom::value, gen);
    try {
      c.call = agent_->engine->start(std::move(req), std::move(cb));
    } catch (const std::exception& e) {
      c.call_pending = false;
      fail_compaction(std::string("summary engine call threw: ") + e.what());
    } catch (...) {
      c.call_pending = false;
      fail_compaction("summary engine call threw a non-standard exception");
    }
    return;  // on_summary_done goes on
  }
  commit_compaction();
}

void thread_impl::on_summary_done(uint64_t gen, engine_reply reply) {
  if (!compacting_ || compacting_->gen != gen || !compacting_->call_pending) return;
  compaction_state& c = *compacting_;
  c.call_pending = false;
  c.call.reset();
  if (!reply.result.is_ok()) {
    fail_compaction("summary engine call failed: " + reply.result.message());
    return;
  }
  std::string text = std::move(reply.step.text);
  storable(&text);
  if (text.empty()) {
    fail_compaction("summary engine call returned no text");
    return;
  }
  apply_summary(&c.events, c.boundary, std::move(text));
  c.summarized = true;
  ++c.next_stage;
  compaction_next();
}

void thread_impl::on_summary_timeout(uint64_t gen) {
  if (!compacting_ || compacting_->gen != gen || !compacting_->call_pending) return;
  compacting_->call_pending = false;
  cancel_quietly(compacting_->call);
  fail_compaction("summary engine call timed out after " + std::to_string(agent_->config.budgets.engine_idle_ms) +
                  " ms: engine_idle_ms");
}

void thread_impl::commit_compaction() {
  compaction_state& c = *compacting_;
  uint64_t tokens_after = estimate_tokens(c.events);
  if (tokens_after >= c.tokens_before) {
    if (c.summarized) {
      fail_compaction("no reduction: the summary leaves " + std::to_string(tokens_after) +
                      " estimated tokens of " + std::to_string(c.tokens_before));
      return;
    }
    compact_result r;
    r.reason = c.events.empty() ? "nothing to compact: the working view is empty"
                                : "nothing to compact: the stages leave " + std::to_string(tokens_after) +
                                      " estimated tokens of " + std::to_string(c.tokens_before);
    r.tokens_before = r.tokens_after = c.tokens_before;
    r.events_before = r.events_after = c.events_before;
    end_compaction(std::move(r));
    return;
  }
  if (status s = check_compacted(c.events); !s) {
    fail_compaction(s.message());
    return;
  }
  const json_limits& limits = ctx_->log->options().limits;
  std::string json;
  if (status s = encode_compacted(c.events, &json, limits); !s) {
    fail_compaction("compacted events not storable: " + s.message());
    return;
  }
  event e = make_compaction(strategy_name(c.options.stages), c.from_seq, c.to_seq, std::move(json));
  e.original_events = c.events_before;
  e.tokens_before = c.tokens_before;
  e.tokens_after = tokens_after;
  e.prompt_seq = c.prompt ? c.prompt->seq : 0;
  e.seq = manifest_.last_seq + 1;
  e.ts_ms = wall_now();
  if (status s = check_storable(e, limits); !s) {
    fail_compaction("compaction event not storable: " + s.message());
    return;
  }
  if (manifest_.last_seq != c.to_seq) {  // nothing appends while compacting_ holds runs back
    fail_compaction("the log moved during the compaction");
    return;
  }
  compact_result r;
  r.compacted = true;
  r.tokens_before = c.tokens_before;
  r.tokens_after = tokens_after;
  r.events_before = c.events_before;
  r.events_after = c.events.size();
  commit_job job;
  job.events.push_back(std::move(e));
  // The compaction event is the job's only event: its seq is last_seq + 1.
  job.mutate = [](manifest& m) { m.compaction_seq = m.last_seq + 1; };
  if (!c.request.effect.empty()) job.effect_cursors.emplace_back(c.request.effect, c.request.effect_seq);
  uint64_t gen = c.gen;
  job.on_done = [this, gen, r](uint64_t first_seq) mutable {
    if (!compacting_ || compacting_->gen != gen) return;  // aborted meanwhile
    r.seq = first_seq;
    ctx_->options.compactions->done.fetch_add(1, std::memory_order_relaxed);
    ctx_->options.compactions->tokens_before.fetch_add(r.tokens_before, std::memory_order_relaxed);
    ctx_->options.compactions->tokens_after.fetch_add(r.tokens_after, std::memory_order_relaxed);
    end_compaction(std::move(r));
  };
  job.on_failed = [this, gen](const caf::error& err) {
    if (!compacting_ || compacting_->gen != gen) return;
    fail_compaction("compaction commit refused: " + to_status(err).message());
  };
  commit(std::move(job));
}

void thread_impl::fail_compaction(std::string reason) {
  make_storable_text(&reason, failure_reason_bytes_max, "failure_reason_bytes_max");
  ctx_->options.compactions->failed.fetch_add(1, std::memory_order_relaxed);
  compact_result r;
  r.failed = true;
  r.reason = reason;
  r.tokens_before = r.tokens_after = compacting_->tokens_before;
  r.events_before = r.events_after = compacting_->events_before;
  commit_job job;
  job.events.push_back(make_signal("thread.compaction_failed", signal_data({{"reason", reason}})));
  // A failure is the outcome of the effect's attempt: its cursor lands with the
  // signal, so an automatic compaction is not retried on the same seq.
  const compact_request& req = compacting_->request;
  if (!req.effect.empty()) job.effect_cursors.emplace_back(req.effect, req.effect_seq);
  uint64_t gen = compacting_->gen;
  auto finish = [this, gen, r](uint64_t) mutable {
    if (compacting_ && compacting_->gen == gen) end_compaction(std::move(r));
  };
  job.on_done = finish;
  job.on_failed = [finish](const caf::error&) mutable { finish(0); };
  commit(std::move(job));
}

void thread_impl::end_compaction(compact_result result) {
  if (!compacting_) return;
  compacting_->promise.deliver(std::move(result));
  compacting_.reset();
  start_next();
  arm_idle_timer();
}

void thread_impl::abort_compaction(const caf::error& err) {
  if (!compacting_) return;
  cancel_quietly(compacting_->call);
  compacting_->promise.deliver(err);
  compacting_.reset();
}

}  // namespace detail
}  // namespace skein
