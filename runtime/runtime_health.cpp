// skein::runtime's view of thread health: reconcile a stale run, prune them
// all, diagnose where a thread stands. Each asks the owner node when another
// node owns the thread.
#include "runtime/model/json_reader.hpp"
#include "runtime/runtime_impl.hpp"

namespace skein {

status runtime::reconcile(const std::string& id, bool* reconciled) {
  SKEIN_TRY(impl_->check_open());
  std::string owner;
  SKEIN_TRY(impl_->route(id, &owner));
  if (!owner.empty()) {
    bool closed = false;
    SKEIN_TRY(impl_->cluster->call(owner, [&](bool b) { closed = b; }, reconcile_atom::value, id));
    if (reconciled != nullptr) *reconciled = closed;
    return status::ok();
  }
  manifest m;
  SKEIN_TRY(impl_->log->read_manifest(id, &m));
  bool closed = false;
  // Most reads find nothing stale: only then does the thread actor get involved.
  if (run_is_stale(m, impl_->core_opts, impl_->core_opts.wall_clock()))
    SKEIN_TRY(impl_->ask_thread(id, &closed, reconcile_atom::value));
  if (reconciled != nullptr) *reconciled = closed;
  return status::ok();
}

status runtime::prune(std::vector<std::string>* reconciled) {
  SKEIN_TRY(impl_->check_open());
  reconciled->clear();
  std::vector<std::string> running;
  SKEIN_TRY(impl_->log->list_running(&running));
  for (const auto& id : running) {
    bool closed = false;
    SKEIN_TRY(reconcile(id, &closed));
    if (closed) reconciled->push_back(id);
  }
  return status::ok();
}

status runtime::diagnose(const std::string& id, diagnosis* out) {
  SKEIN_TRY(impl_->check_open());
  std::string owner;
  SKEIN_TRY(impl_->route(id, &owner));
  if (!owner.empty())
    return impl_->cluster->call(owner, [&](diagnosis& d) { *out = std::move(d); }, diagnose_atom::value, id);
  manifest m;
  SKEIN_TRY(impl_->log->read_manifest(id, &m));
  int64_t now = impl_->core_opts.wall_clock();
  diagnosis d;
  d.thread_id = id;
  d.status = m.status;
  d.last_seq = m.last_seq;
  d.heartbeat_age_ms = m.heartbeat_at_ms == 0 ? -1 : now - m.heartbeat_at_ms;
  std::vector<event> tail;  // the last run's stop is near the end of the log
  std::vector<unreadable_record> unreadable;  // a quarantined thread's bad records
  SKEIN_TRY(impl_->log->read_events_lenient(id, m.last_seq > 64 ? m.last_seq - 63 : 1, 0, &tail, &unreadable));
  for (auto it = tail.rbegin(); it != tail.rend(); ++it) {
    if (it->type == event_type::signal && it->name == "thread.quarantined" && !d.quarantined) {
      json::document data;
      json::object_reader r;
      d.quarantined = true;
      if (json::parse(it->json, {}, "thread.quarantined data", &data).is_ok() &&
          json::object_reader::open(data.root(), "data", &r).is_ok()) {
        r.string("key", &d.quarantine_key, false).ignore();
        r.string("reason", &d.quarantine_reason, false).ignore();
      }
    }
  }
  for (auto it = tail.rbegin(); it != tail.rend(); ++it) {
    if (it->type == event_type::signal && it->name == "thread.start" && d.last_run_id.empty()) d.last_run_id = it->run_id;
    if (it->type != event_type::signal || it->name != "thread.stop") continue;
    run_result r;
    std::vector<event> one{*it};
    if (result_from_log(id, it->run_id, one, &r).is_ok()) {
      d.last_outcome = std::string{to_string(r.outcome)};
      d.last_error = r.error;
      if (d.last_run_id.empty()) d.last_run_id = it->run_id;
    }
    break;
  }
  // The log's last stop, for a manifest written before it kept last_outcome.
  std::optional<run_outcome> last = m.last_outcome;
  if (!last && !d.last_outcome.empty()) last = parse_run_outcome(d.last_outcome);
  d.stage = std::string{thread_stage(m.status, last, run_is_stale(m, impl_->core_opts, now))};
  *out = std::move(d);
  return status::ok();
}

}  // namespace skein
