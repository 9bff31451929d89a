// skein::runtime's upkeep: usage and quota, stats, retention and compaction —
// what an operator (or the runtime's own effects) asks of it beside the threads.
#include <caf/all.hpp>

#include "actors/caller.hpp"
#include "actors/effects/retention.hpp"
#include "actors/error.hpp"
#include "actors/messages.hpp"
#include "runtime/model/ids.hpp"
#include "runtime/runtime.hpp"
#include "runtime/runtime_impl.hpp"

namespace skein {

status runtime::usage(const usage_query& query, usage_report* out) {
  SKEIN_TRY(impl_->check_open());
  if (impl_->cluster) return impl_->usage_cluster(query, out);
  return impl_->log->query_usage(query, out);
}

status runtime::apply_retention(retention_result* out) {
  retention_report r;
  SKEIN_TRY(impl_->ask(impl_->retention, &r, sweep_atom::value));
  out->archived = std::move(r.archived);
  out->deleted = std::move(r.deleted);
  out->skipped = std::move(r.skipped);
  out->examined = r.examined;
  out->unreadable = r.unreadable;
  if (!r.error.empty()) return status::io_error("retention: " + r.error);
  return status::ok();
}

status runtime::compact(const std::string& thread_id, const compact_options& options, compact_result* out) {
  SKEIN_TRY(validate_id(thread_id, "thread id"));
  SKEIN_TRY(impl_->check_open());
  SKEIN_TRY(validate_compact_options(options));
  std::string owner;
  SKEIN_TRY(impl_->route(thread_id, &owner));
  if (!owner.empty()) {
    compact_result r;
    SKEIN_TRY(impl_->cluster->call(owner, [&](compact_result& x) { r = std::move(x); }, compact_atom::value, thread_id,
                                   compact_wire::from(options)));
    if (out != nullptr) *out = std::move(r);
    return status::ok();
  }
  compact_request req;
  req.options = options;
  return impl_->ask_thread(thread_id, out, compact_atom::value, std::move(req));
}

status runtime::stats(runtime_stats* out) {
  directory_stats d;
  SKEIN_TRY(impl_->ask(impl_->actors.directory, &d, caf::get_atom::value, stats_atom::value));
  out->active_threads = d.active;
  out->activations = d.activations;
  out->passivations = d.passivations;
  out->agents = d.agents;
  out->log = impl_->log->counters();
  out->host_failures = impl_->host_failures->load(std::memory_order_relaxed);
  const compaction_counters& c = *impl_->core_opts.compactions;
  out->compactions = c.done.load(std::memory_order_relaxed);
  out->compactions_failed = c.failed.load(std::memory_order_relaxed);
  out->compaction_tokens_before = c.tokens_before.load(std::memory_order_relaxed);
  out->compaction_tokens_after = c.tokens_after.load(std::memory_order_relaxed);
  out->quota = impl_->log->quota();
  // Stats answer while storage fails (that is when they are looked at): a
  // storage figure that cannot be read stays 0.
  impl_->log->usage(impl_->core_opts.wall_clock(), &out->quota_usage).ignore();
  out->memory = impl_->memory->index().stats();
  out->memory_rebuild = impl_->memory->rebuilt();
  out->effects.clear();
  for (const auto& fx : impl_->actors.effects) {
    effect_stats es;
    SKEIN_TRY(impl_->ask(fx, &es, caf::get_atom::value, stats_atom::value));
    out->effects.push_back(std::move(es));
  }
  return status::ok();
}

status runtime::set_quota(const log_quota& q) {
  SKEIN_TRY(impl_->check_open());
  impl_->log->set_quota(q);
  return status::ok();
}

status runtime::quota_usage(log_usage* out) {
  SKEIN_TRY(impl_->check_open());
  return impl_->log->usage(impl_->core_opts.wall_clock(), out);
}

}  // namespace skein
