// Work-item transitions on the thread actor (actors/work_messages.hpp): each is a
// signal in the item's log, written in one tick with the manifest's new work
// fields and the rows the runtime computes from them (the item's row in the work
// column family, the triples it implies). Like a user's title, a transition is
// metadata: a running thread takes it between its run's commits.
#include <caf/event_based_actor.hpp>

#include "actors/error.hpp"
#include "actors/thread_actor_impl.hpp"
#include "actors/work_messages.hpp"
#include "runtime/model/json_writer.hpp"

namespace skein::detail {
namespace {

std::string_view op_name(work_op_kind k) {
  switch (k) {
    case work_op_kind::touch: return "touch";
    case work_op_kind::resolve: return "resolve";
    case work_op_kind::relate: return "relate";
    case work_op_kind::dormant: return "dormant";
    case work_op_kind::archive: return "archive";
  }
  return "touch";
}

// Applies `op` to `w`: the signals it records, or a refusal (nothing written).
// *noop: nothing to record (dormancy recorded already).
status apply_work_op(const std::string& thread_id, const work_op& op, work_item* w, std::vector<event>* signals,
                     bool* noop) {
  if (w->status != work_status::open)
    return status::conflict("thread " + thread_id + ": work item is " + std::string{to_string(w->status)} +
                            " (terminal): " + std::string{op_name(op.kind)} + " refused");
  std::string data;
  json_writer j(&data);
  j.begin_object();
  switch (op.kind) {
    case work_op_kind::touch: {
      // Dormant as recorded, or by the clock (archived by it too, while no sweep
      // archived it): the touch revives it.
      auto v = assess_work(*w, op.at_ms);
      bool dormant = w->dormant_since_ms != 0 || v.stage == work_stage::dormant || v.stage == work_stage::archived;
      int64_t since = w->dormant_since_ms != 0 ? w->dormant_since_ms : v.dormant_since_ms;
      ++w->touch_count;
      w->last_touched_at_ms = op.at_ms;
      j.field_uint("touch_count", w->touch_count);
      j.end_object();
      signals->push_back(make_signal("work.touched", data));
      if (dormant) {
        std::string revived;
        json_writer r(&revived);
        r.begin_object();
        r.field_int("dormant_since", since);
        r.end_object();
        w->dormant_since_ms = 0;
        signals->push_back(make_signal("work.revived", revived));
      }
      return status::ok();
    }
    case work_op_kind::resolve:
      w->status = work_status::resolved;
      w->resolved_at_ms = op.at_ms;
      w->resolution = op.note;
      w->resolved_session = op.session_id;
      j.field("note", op.note);
      if (!op.session_id.empty()) j.field("session_id", op.session_id);
      j.end_object();
      signals->push_back(make_signal("work.resolved", data));
      return status::ok();
    case work_op_kind::relate:
      j.field("issue", op.issue_id);
      j.end_object();
      signals->push_back(make_signal("work.related", data));
      return status::ok();
    case work_op_kind::dormant:
      if (w->dormant_since_ms != 0) {
        *noop = true;
        return status::ok();
      }
      w->dormant_since_ms = op.dormant_since_ms;
      j.field_int("dormant_since", op.dormant_since_ms);
      j.end_object();
      signals->push_back(make_signal("work.dormant", data));
      return status::ok();
    case work_op_kind::archive:
      if (w->dormant_since_ms == 0) w->dormant_since_ms = op.dormant_since_ms;
      w->status = work_status::archived;
      w->archived_at_ms = op.at_ms;
      j.field_int("dormant_since", w->dormant_since_ms);
      j.end_object();
      signals->push_back(make_signal("work.archived", data));
      return status::ok();
  }
  return status::invalid_input("work op: unknown kind");
}

}  // namespace

caf::result<manifest> thread_impl::on_work(work_op op) {
  if (stopping_) return gone_error();
  if (!manifest_.work)
    return to_error(status::invalid_input("thread_id: thread " + manifest_.id + " is not a work item").with_field("thread_id"));
  // Commits apply in order: the transition is checked against the work fields as
  // the queued commits leave them, so a second resolve behind a first is refused.
  work_item w = pending_work_ ? *pending_work_ : *manifest_.work;
  std::vector<event> signals;
  bool noop = false;
  if (status s = apply_work_op(manifest_.id, op, &w, &signals, &noop); !s) return to_error(s);
  if (noop) return manifest_;
  pending_work_ = w;
  auto promise = make_response_promise<manifest>();
  commit_job job;
  job.events = std::move(signals);
  job.mutate = [w](manifest& m) { m.work = w; };
  job.rows_of = std::move(op.rows);
  ++work_in_flight_;
  job.on_done = [this, promise](uint64_t) mutable {
    if (--work_in_flight_ == 0) pending_work_.reset();  // the manifest holds them now
    promise.deliver(manifest_);
  };
  job.on_failed = [this, promise](const caf::error& e) mutable {
    if (--work_in_flight_ == 0) pending_work_.reset();
    promise.deliver(e);
  };
  commit(std::move(job));
  return promise;
}

}  // namespace skein::detail
