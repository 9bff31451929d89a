// Delegation (DESIGN §4): the built-in ask_agent tool, run by the asking
// thread's actor itself. The class is in thread_actor_impl.hpp.
//
// One call: check the target against agent.delegation (list, self, depth) — a
// refusal is an error result and a permission.denied signal in the same tick;
// mint the child id from this thread's children_count (bumped in the commit of
// the step's tool calls: this actor is the only writer of the counter, and the
// ids are durable before any child exists); ask the target's agent actor to
// create the child with the question in its inbox (one tick); wake it; wait
// for its run by message (caf::infinite request, never a blocking wait). The child's final
// text is the call's result; its failure, cancellation or the call's timeout is
// an error result naming the child. A delegation that cannot start records
// dispatch.failed on this thread.
//
// The call's handle cancels the child's run: whatever ends this run (cancel,
// interrupt, run or tool timeout, close) cancels its children, and they theirs.
// Each ask makes a new thread, so an agent asked by its own child never waits
// behind the asker's run: cycles cannot deadlock, and depth_max bounds them.
#include <caf/send.hpp>
#include <cassert>

#include "actors/agent_actor.hpp"
#include "actors/error.hpp"
#include "actors/thread_actor_impl.hpp"
#include "runtime/model/json_reader.hpp"

namespace skein::detail {
namespace {

// The child thread of a call, as far as it is known; shared by the call's
// handle and the replies of its requests, all on the parent's actor.
struct delegation_state {
  thread_actor child;
  bool cancelled = false;
};

class delegation_handle final : public call_handle {
 public:
  explicit delegation_handle(std::shared_ptr<delegation_state> st) : st_(std::move(st)) {}
  // Called on the parent's actor (finish_tool, end_run): no lock needed.
  void cancel() override {
    if (st_->cancelled) return;
    st_->cancelled = true;
    if (st_->child) caf::anon_send<caf::message_priority::high>(st_->child, cancel_atom::value);
  }

 private:
  std::shared_ptr<delegation_state> st_;
};

struct ask_arguments {
  std::string agent;
  std::string question;
};

status parse_ask(const std::string& json_text, ask_arguments* out) {
  json::document doc;
  json::object_reader r;
  SKEIN_TRY(json::parse_object(json_text, {}, "ask_agent arguments", &doc, &r));
  SKEIN_TRY(r.string("agent", &out->agent));
  SKEIN_TRY(r.string("question", &out->question));
  SKEIN_TRY(validate_id(out->agent, "ask_agent arguments.agent"));
  if (out->question.empty()) return status::invalid_input("ask_agent arguments.question: must not be empty");
  return status::ok();
}

tool_output error_output(std::string text) { return {"(error: " + std::move(text) + ")", true}; }

}  // namespace

bool thread_impl::delegates(const std::string& name) const {
  return name == ask_agent_tool_name && !run_agent().config.delegation.agents.empty();
}

uint64_t thread_impl::check_delegations() {
  const delegation_settings& d = run_agent().config.delegation;
  uint64_t permitted = 0;
  for (pending_tool& t : run_->tools) {
    if (t.done || !delegates(t.call.name)) continue;
    ask_arguments args;
    const char* rule = nullptr;
    std::string why;
    if (status s = parse_ask(t.call.arguments_json, &args); !s) {
      why = s.message();
    } else if (std::find(d.agents.begin(), d.agents.end(), args.agent) == d.agents.end()) {
      rule = "delegation.agents";
      why = "agent " + args.agent + " is not in agent.delegation.agents of " + manifest_.agent_id;
    } else if (args.agent == manifest_.agent_id && !d.self_allowed) {
      rule = "delegation.self_allowed";
      why = "agent " + manifest_.agent_id + " may not ask itself: agent.delegation.self_allowed is false";
    } else if (manifest_.depth + 1 > d.depth_max) {
      rule = "delegation.depth_max";
      why = "a child of thread " + manifest_.id + " would be at depth " + std::to_string(manifest_.depth + 1) +
            ", past agent.delegation.depth_max (" + std::to_string(d.depth_max) + ")";
    } else {
      t.ask_target = std::move(args.agent);
      t.ask_question = std::move(args.question);
      ++permitted;
      continue;
    }
    // Answered before it runs, like a call whose arguments were refused.
    t.done = true;
    t.output = error_output(rule == nullptr ? why : "permission denied: " + why);
    storable(&t.output.text);
    if (rule != nullptr)
      t.signal = make_signal("permission.denied",
                             signal_data({{"rule", rule}, {"target", args.agent}, {"call_id", t.call.call_id}}));
  }
  return permitted;
}

void thread_impl::name_children(uint64_t count) {
  assert(manifest_.children_count >= count);  // the step's commit added them
  uint64_t next = manifest_.children_count - count + 1;
  for (pending_tool& t : run_->tools)
    if (!t.done && !t.ask_target.empty()) t.child_id = child_thread_id(manifest_.id, next++);
  assert(next == manifest_.children_count + 1);  // one id for each permitted call
}

void thread_impl::start_child(uint64_t gen, std::string call_id, std::string child_id, std::string target,
                               std::string question) {
  pending_tool* t = find_pending(call_id);
  if (t == nullptr || t->done) return;  // timed out meanwhile: nothing to start
  t->child_id = child_id;
  auto st = std::make_shared<delegation_state>();
  t->handle = std::make_unique<delegation_handle>(st);
  delegation_child c;
  c.agent_id = target;
  c.thread_id = child_id;
  c.parent_id = manifest_.id;
  c.depth = manifest_.depth + 1;
  c.input.text = std::move(question);
  c.input.source = "agent";
  c.input.run_id = new_run_id();
  // The key finds the run again: queued, running or already ended (admit()).
  c.input.idempotency_key = c.input.run_id;
  run_input in = c.input;
  auto not_started = [this, gen, call_id, child_id, target](const caf::error& e) {
    std::string reason = to_status(e).message();
    finish_delegation(gen, call_id, error_output("delegation to agent " + target + " could not start (child thread " +
                                                 child_id + "): " + reason),
                      make_signal("dispatch.failed", signal_data({{"target", target},
                                                                  {"child_id", child_id},
                                                                  {"reason", reason}})));
  };
  auto on_result = [this, gen, call_id, child_id](run_result& r) {
    switch (r.outcome) {
      case run_outcome::completed:
        finish_delegation(gen, call_id, {std::move(r.text), false});
        break;
      case run_outcome::failed:
        finish_delegation(gen, call_id, error_output("child thread " + child_id + " failed: " + r.error));
        break;
      case run_outcome::cancelled:
        finish_delegation(gen, call_id, error_output("child thread " + child_id + " was cancelled"));
        break;
    }
  };
  // The child's actor refused the question or went away (deleted, a storage
  // failure): no run of it will answer this call.
  auto on_lost = [this, gen, call_id, child_id, target](caf::error& e) {
    std::string reason = to_status(e).message();
    finish_delegation(gen, call_id, error_output("child thread " + child_id + ": " + reason),
                      make_signal("dispatch.failed", signal_data({{"target", target},
                                                                  {"child_id", child_id},
                                                                  {"reason", reason}})));
  };
  request(ctx_->directory, caf::infinite, delegate_atom::value, std::move(c))
      .then(
          [this, st, in, child_id, not_started, on_result, on_lost](manifest&) {
            request(ctx_->directory, caf::infinite, resolve_atom::value, child_id)
                .then(
                    [this, st, in, not_started, on_result, on_lost](thread_actor& child) {
                      st->child = child;
                      // Its actor woke with the question from its inbox: the
                      // same input (same key) joins that run as a waiter.
                      request(child, caf::infinite, send_atom::value, in).then(on_result, on_lost);
                      if (st->cancelled) caf::anon_send<caf::message_priority::high>(child, cancel_atom::value);
                    },
                    on_lost);
          },
          [not_started](caf::error& e) { not_started(e); });
}

void thread_impl::finish_delegation(uint64_t gen, const std::string& call_id, tool_output out,
                                     std::optional<event> signal) {
  if (!current(gen)) return;
  pending_tool* t = find_pending(call_id);
  if (t == nullptr || t->done) return;
  if (signal) t->signal = std::move(signal);
  t->handle.reset();  // the child's run is over (or never began): nothing to cancel
  if (!finish_tool(*t, std::move(out))) return;
  if (run_->tools_left == 0) commit_tool_results();
}

}  // namespace skein::detail
