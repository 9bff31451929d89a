// The thread actor's class, shared by its translation units: thread_actor.cpp
// (inputs, commits, subscribers, lifecycle), thread_run.cpp (the run: engine
// calls, tools, budgets, heartbeats, the end of a run), thread_compact.cpp
// (compaction between runs, and the working view read at activation),
// thread_delegate.cpp (the built-in ask_agent tool: delegation to other agents)
// and thread_house.cpp (house members: who runs an input, member changes).
// Internal to actors/.
#pragma once

#include <caf/typed_event_based_actor.hpp>
#include <deque>
#include <optional>
#include <unordered_map>

#include "actors/published_event.hpp"
#include "actors/thread_actor.hpp"
#include "persistence/event_log.hpp"
#include "runtime/model/compaction.hpp"
#include "runtime/model/event_list.hpp"
#include "runtime/model/ids.hpp"

namespace skein {
struct work_op;
}

namespace skein::detail {

using engine_done_atom = caf::atom_constant<caf::atom("engdone")>;
using tool_done_atom = caf::atom_constant<caf::atom("tooldone")>;
using run_timeout_atom = caf::atom_constant<caf::atom("runtimeout")>;
using idle_check_atom = caf::atom_constant<caf::atom("idlecheck")>;
using tool_timeout_atom = caf::atom_constant<caf::atom("tooltime")>;
using idle_timer_atom = caf::atom_constant<caf::atom("idletimer")>;
using heartbeat_atom = caf::atom_constant<caf::atom("heartbeat")>;
using summary_done_atom = caf::atom_constant<caf::atom("sumdone")>;
using summary_timeout_atom = caf::atom_constant<caf::atom("sumtime")>;

using time_point = caf::actor_clock::time_point;

// A signal's data object from its non-empty fields.
std::string signal_data(std::initializer_list<std::pair<const char*, std::string>> fields);

struct pending_input {
  run_input input;
  std::vector<caf::response_promise> waiters;
  uint64_t inbox_order = 0;  // its key in the inbox; 0: not in the inbox (a waited send)
  // Set: this entry is a compaction waiting its turn, not an input (`input` is
  // empty; its one waiter gets the compact_result).
  std::shared_ptr<compact_request> compaction;
  // A house's later member turn (input.follow_up) whose input was interrupted: it
  // runs nothing, its turn only takes its inbox entry.
  bool dropped = false;
};

// A compaction in progress (thread_compact.cpp): its stages run in order; a
// summarize stage waits for the engine, and no run starts until it is over.
struct compaction_state {
  uint64_t gen = 0;  // names it in callbacks and timers
  compact_request request;
  caf::response_promise promise;
  compaction_options options;
  size_t next_stage = 0;
  std::vector<event> events;  // being compacted: the view without its prompt, expanded
  std::optional<event> prompt;
  uint64_t from_seq = 1;
  uint64_t to_seq = 0;        // the last seq it covers: the log's last at its start
  uint64_t tokens_before = 0;
  uint64_t events_before = 0;
  bool summarized = false;    // a summary replaced events: no reduction is a failure
  size_t boundary = 0;        // summarize: the kept tail starts here
  std::unique_ptr<call_handle> call;
  bool call_pending = false;
};

struct pending_tool {
  requested_tool_call call;
  std::unique_ptr<call_handle> handle;
  bool done = false;
  tool_output output;
  std::shared_ptr<cancel_token> token;  // given to the tool; cancelled when the run gives up on it
  std::optional<event> signal;          // recorded after the result, in the same tick (ask_agent)
  std::string child_id;                 // ask_agent: the child thread, once minted
  std::string ask_target;               // ask_agent, permitted: the agent asked ("": none)
  std::string ask_question;
};

struct run_state {
  uint64_t gen = 0;  // names this run in callbacks and timers
  agent_spec_ptr agent;  // the agent it runs under: the thread's, or a house member's
  run_input input;
  std::vector<caf::response_promise> waiters;
  uint64_t inbox_order = 0;  // taken from the inbox by the run's first commit
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
  bool closing_refused = false;  // the closing commit was refused once: the next is minimal
};

// What a commit is for: a refused commit is answered according to it.
enum class commit_kind : uint8_t {
  plain,         // outside runs: heartbeats, child counters, repairs, markers
  run_start,     // the input and thread.start: refused, the run never began
  step_calls,    // the engine's output and tool calls of a step
  step_results,  // the results of a step's tool calls
  run_end,       // the closing events of a run
};

struct commit_job {
  commit_kind kind = commit_kind::plain;
  std::vector<event> events;
  std::function<void(manifest&)> mutate;
  std::function<void(uint64_t first_seq)> on_done;
  std::function<void(const caf::error&)> on_failed;  // when the journal refused it
  std::string idempotency_key;
  std::string run_id;
  std::vector<std::pair<uint64_t, run_input>> inbox_put;
  uint64_t inbox_take = 0;
  // The manifest keeps its updated_at: a retention mark (archive) is no touch.
  bool keep_updated_at = false;
  std::vector<std::pair<std::string, uint64_t>> effect_cursors;  // tick::effect_cursors
  std::vector<schedule_row> side_rows;  // tick::side_rows: a schedule's firing
  // More side rows computed from the manifest after the commit and the seq of its
  // first event (a work transition's item row and triples); appended to side_rows.
  std::function<std::vector<side_row>(const manifest& after, uint64_t first_seq)> rows_of;
};

// The thread actor's own messages (its timers, and its engine's and tools'
// answers) beside its interface; nobody outside the actor holds this handle.
using thread_impl_actor = thread_actor::extend<
    caf::reacts_to<engine_done_atom, uint64_t, engine_reply>,
    caf::reacts_to<delta_atom, uint64_t, std::string>,
    caf::reacts_to<tool_done_atom, uint64_t, std::string, tool_output>,
    caf::reacts_to<tool_timeout_atom, uint64_t, std::string>,
    caf::reacts_to<run_timeout_atom, uint64_t>,
    caf::reacts_to<idle_check_atom, uint64_t>,
    caf::reacts_to<heartbeat_atom, uint64_t>,
    caf::reacts_to<summary_done_atom, uint64_t, engine_reply>,
    caf::reacts_to<summary_timeout_atom, uint64_t>,
    caf::reacts_to<idle_timer_atom, uint64_t>>;

class thread_impl : public thread_impl_actor::base {
 public:
  thread_impl(caf::actor_config& cfg, std::shared_ptr<const thread_context> ctx, manifest m,
               agent_spec_ptr agent);

  const char* name() const override { return "skein.thread"; }

  behavior_type make_behavior() override;

 private:
  // --- inputs ---------------------------------------------------------------

  // What became of an input: refused (error), answered from an earlier run with
  // the same idempotency key (earlier), or taken (run_id; `waiters` of its run).
  struct admission {
    caf::error error;
    std::optional<run_result> earlier;
    std::string run_id;
    std::vector<caf::response_promise>* waiters = nullptr;
    bool fresh = false;  // a new input (not a retry of a pending one)
  };

  admission admit(run_input in);

  // (send_atom, input): answers with the run's result when it has ended.
  caf::result<run_result> on_send(run_input in);

  // (submit_atom, input): answers with the run id as soon as the input is taken.
  // `rows`: a schedule's firing (tick::side_rows), written in the tick that
  // takes the input — its inbox entry, or its run's first tick.
  caf::result<std::string> on_submit(run_input in, std::vector<schedule_row> rows = {});
  std::vector<schedule_row> take_firing_rows(const std::string& run_id);

  // The run or queued input that carries this idempotency key, if any.
  struct pending_ref {
    run_input& input;
    std::vector<caf::response_promise>& waiters;
  };
  std::optional<pending_ref> pending_key(const std::string& key);

  status earlier_run(const std::string& key, run_result* out);

  void start_next();

  // Loads the inbox at activation: its inputs queue up, oldest first.
  void load_inbox();

  // Makes a queued input durable in the inbox; `run_id`'s submitters get their
  // answer once it is.
  void put_in_inbox(const std::string& run_id);

  // Answers the submitters waiting for `run_id` to be durable.
  void answer_accepted(const std::string& run_id, const caf::error& err);
  // --- the run ----------------------------------------------------------------

  void start_run(pending_input p);

  // --- houses (manifest.members; thread_house.cpp) ------------------------------

  // A house whose runs may go to agents other than the thread's own (a DM thread,
  // whose one member is its own agent, runs as any thread does).
  bool is_house() const;
  // Asks the directory for the member agents' specs, then lets the next run in.
  void fetch_members();
  // The spec a member runs under, or null and why it cannot run (gone, over budget).
  agent_spec_ptr member_spec(const std::string& agent_id, std::string* why) const;
  // Picks the members `p` triggers: the first runnable carries the input, the
  // others queue as follow-ups ahead of any other input, each put in the inbox
  // (*inbox_put) by the tick that starts the first. *failed gets a
  // dispatch.failed signal per member that cannot run.
  agent_spec_ptr dispatch_members(pending_input& p, std::vector<event>* failed,
                                  std::vector<std::pair<uint64_t, run_input>>* inbox_put);
  // (member_atom, ...): adds or removes a member, with its house.* signal.
  caf::result<manifest> change_member(std::string agent_id, std::string trigger, bool add);
  // (dispatch_atom, data): a dispatch.failed signal in a tick of its own.
  void record_dispatch_failed(std::string data);
  // The agent of the current run (the thread's outside runs).
  const agent_spec& run_agent() const { return run_ && run_->agent ? *run_->agent : *agent_; }

  // An input whose agent's daily budget is spent (budget_ledger): it never
  // starts. Its waiters and submitters get `why`; nothing of it is written,
  // except that an input from the inbox leaves it with a thread.budget_exceeded
  // signal, so that the log says why an accepted input never ran.
  void refuse_over_budget(pending_input p, const status& why);

  // (archive_atom, at_ms): the retention effect archives an idle thread (true)
  // or finds it busy (false, nothing written).
  caf::result<bool> archive(int64_t at_ms);

  // (retire_atom, before_ms): retention is about to erase the thread. True, and
  // no input is taken any more, only if it is idle and untouched since before_ms.
  // (retire_atom, before_ms, true): the same for a cluster handoff (the
  // directory's freeze): the thread is moving, and refusals say so.
  bool retire(int64_t before_ms, bool moving = false);
  // What a call gets once the thread is stopping: deleted, or moving.
  caf::error gone_error() const;

  // True while run `gen` is the current run and still going.
  bool current(uint64_t gen) const { return run_ && run_->gen == gen && !run_->ending && !stopping_; }

  void call_engine();

  void on_delta(uint64_t call_gen, std::string text);

  void on_engine_done(uint64_t call_gen, engine_reply reply);

  void invoke_tools();

  // Records a tool's output; false if it had one already.
  bool finish_tool(pending_tool& t, tool_output out);

  pending_tool* find_pending(const std::string& call_id);

  void on_tool_done(uint64_t gen, const std::string& call_id, tool_output out);

  void on_tool_timeout(uint64_t gen, const std::string& call_id);

  void commit_tool_results();

  // The run stops wanting this call's answer: its token and handle are cancelled.
  static void abandon_tool(pending_tool& t);

  // --- delegation: the built-in ask_agent tool (thread_delegate.cpp) -----------

  // Whether `name` is ask_agent and this agent may delegate.
  bool delegates(const std::string& name) const;

  // Checks each ask_agent call of the step before its calls are committed:
  // refused ones are answered (with permission.denied); returns how many may
  // go, whose child ids the step's commit mints (children_count += that).
  uint64_t check_delegations();

  // After the step's commit: gives the permitted calls their child ids, in order.
  void name_children(uint64_t count);

  // Creates the child with its question, wakes it and waits for its run.
  void start_child(uint64_t gen, std::string call_id, std::string child_id, std::string target,
                   std::string question);

  // An ask_agent call's answer, with the signal that goes in its tick, if any.
  void finish_delegation(uint64_t gen, const std::string& call_id, tool_output out,
                         std::optional<event> signal = std::nullopt);

  void on_run_timeout(uint64_t gen);

  void on_idle_check(uint64_t call_gen);

  // While a run goes on, its heartbeat rides on every commit; when no commit
  // happened for a heartbeat interval, a manifest-only one records it.
  void on_heartbeat(uint64_t gen);

  int64_t wall_now() const { return ctx_->options.wall_clock ? ctx_->options.wall_clock() : now_ms(); }

  // Closes a run that stopped sending heartbeats, as failed with thread.orphaned.
  caf::result<bool> reconcile();

  bool cancel_run();

  // Ends the current run: stops what is in flight and commits the closing events.
  void end_run(run_outcome outcome, std::string text, std::string error, std::string thinking = "",
               const char* signal_before_stop = nullptr);

  // --- compaction (thread_compact.cpp) ------------------------------------------

  // (compact_atom, request): queued like an input; answers when it is over.
  caf::result<compact_result> on_compact(compact_request req);

  void start_compaction(pending_input p);

  // Runs the stages from next_stage on until a summary call or the end.
  void compaction_next();

  void on_summary_done(uint64_t gen, engine_reply reply);

  void on_summary_timeout(uint64_t gen);

  // Checks the compacted events and commits the compaction event.
  void commit_compaction();

  // Leaves the thread as it was, but for one thread.compaction_failed signal.
  void fail_compaction(std::string reason);

  // Answers the compaction's caller and lets the next input in.
  void end_compaction(compact_result result);

  // The thread is going (stop, storage failure): the compaction's caller gets `err`.
  void abort_compaction(const caf::error& err);

  // Loads the working conversation once after activation (read_working_view).
  status load_conversation();
  // The working conversation, then `then(ok)`; read on a reader the first time
  // (the first run after activation), so the actor goes on meanwhile. `then`
  // gets the read's error if it failed (overloaded when the readers are full).
  void with_conversation(std::function<void(const status&)> then);

  // --- commits ----------------------------------------------------------------

  void commit(commit_job job);

  void pump();

  void on_committed(manifest after);

  // Storage failed: nothing more can be recorded for this thread. Every waiter
  // learns it; the actor leaves so that the next use reloads from the log.
  void on_commit_failed(const status& s);

  // The journal refused the commit in flight for what it held (not for storage):
  // nothing of it was written. A run it belonged to ends as failed, in a closing
  // commit built to be storable whatever the run produced.
  void on_commit_refused(const status& s);

  // A manifest that says running while no run lives here (a run whose closing
  // commit never landed): close it from the log before any new run starts.
  void repair_open_run(const char* signal);

  // Host code (engine and tool handles) never throws into the actor.
  static void cancel_quietly(std::unique_ptr<call_handle>& h);

  // Text an engine or tool produced, made storable under the agent's budget.
  void storable(std::string* text) const;

  caf::result<std::string> mint_child();

  // (title_atom, title, cursor) from the titles effect: sets the title only if the
  // thread has none, and records the effect's cursor in the same tick either way.
  caf::result<bool> generated_title(std::string title, uint64_t cursor);
  // (title_atom, title) from a user: replaces any title, generated or not.
  caf::result<manifest> user_title(std::string title);
  // A work-item transition (thread_work.cpp; actors/work_messages.hpp).
  caf::result<manifest> on_work(work_op op);

  // --- subscribers ------------------------------------------------------------

  caf::result<uint64_t> subscribe(uint64_t from_seq, event_sink_actor& sink);

  // The backlog read for `sink` (events up to `last`) is done: it goes out, then
  // what was held meanwhile.
  void on_backlog(const event_sink_actor& sink, uint64_t last, const status& read, std::vector<raw_event>& backlog);

  // The actor is leaving: subscriptions whose backlog is still being read get `err`.
  void end_backlogs(const caf::error& err);

  void drop_subscriber(const caf::actor_addr& who);

  // --- lifecycle ----------------------------------------------------------------

  bool idle() const;

  void arm_idle_timer();

  void passivate();

  // graceful (runtime closing): the run ends as cancelled and every queued commit
  // is written. Otherwise (the thread is being deleted): nothing more is written.
  // graceful: the runtime closes (runs end as cancelled). Else the thread goes
  // away — `reason` "deleted", or "moved" (a cluster handoff: callers are told
  // to ask again) — and what is queued is refused.
  caf::result<void> stop(bool graceful, std::string reason = "deleted");

  void finish_stop();

  std::shared_ptr<const thread_context> ctx_;
  manifest manifest_;  // as last acknowledged by the journal
  agent_spec_ptr agent_;
  mid_run_policy policy_ = mid_run_policy::queue;
  // House members' specs from the directory (null: the agent does not exist),
  // fetched once per activation and again after a member is added.
  std::unordered_map<std::string, agent_spec_ptr> member_specs_;
  bool members_known_ = false;
  bool fetching_members_ = false;

  std::deque<pending_input> queue_;
  std::unique_ptr<run_state> run_;
  std::unique_ptr<compaction_state> compacting_;  // set while a compaction is under way
  // The working conversation, loaded by the first run after activation and kept
  // up to date by every commit, so later runs do not read the log again. Each
  // engine call borrows it (an O(1) copy), so a step costs the same on a long thread.
  std::optional<event_list> conversation_;
  bool conversation_loading_ = false;         // with_conversation's read is in flight
  std::vector<event> conversation_tail_;      // events committed while it is
  std::vector<std::function<void(const status&)>> conversation_waiters_;
  std::deque<commit_job> commits_;  // front() is in flight when in_flight_
  bool in_flight_ = false;
  bool failed_ = false;
  bool stopping_ = false;
  bool moving_ = false;  // stopping for a cluster handoff, not a delete
  bool repairing_ = false;  // a repair of an open run is queued: no run starts before it lands
  uint64_t inbox_next_ = 1;  // arrival order of the next input put in the inbox
  // Submitters waiting for their input to be durable (in the inbox, or in the
  // log by its run's first commit), by run id.
  std::unordered_map<std::string, std::vector<caf::response_promise>> accepted_;
  // Schedule rows of submitted inputs not yet written, by run id (on_submit).
  // The work fields as the queued work commits leave them (thread_work.cpp).
  std::optional<work_item> pending_work_;
  size_t work_in_flight_ = 0;
  std::unordered_map<std::string, std::vector<schedule_row>> firing_rows_;
  caf::response_promise stop_promise_;
  struct subscriber {
    event_sink_actor sink;
    uint64_t from_seq;  // events before it are not this subscriber's
    // While its backlog is read (on a reader): live events wait here, so that
    // they follow the backlog; `answer` gets the next seq once it is sent.
    bool backlog_pending = false;
    std::vector<published_ptr> held;
    caf::response_promise answer;
  };
  std::vector<subscriber> subscribers_;
  uint64_t gens_ = 0;
  uint64_t idle_gen_ = 0;
};

}  // namespace skein::detail
