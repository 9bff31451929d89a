// skein::runtime's life: open (the log, the memory index, the actor system and
// its actors, the cluster link, the work service, in that order; a refusal
// midway closes what started), close (the reverse), and what open found.
// The runtime's other calls: runtime_threads.cpp (agents and threads),
// runtime_runs.cpp (inputs and runs), runtime_reads.cpp (history, subscriptions,
// memory search), runtime_upkeep.cpp (usage, quota, stats, retention, compaction),
// runtime_health.cpp, runtime_schedules.cpp, runtime_work.cpp, runtime_cluster.cpp.
#include "runtime/runtime.hpp"

#include <caf/all.hpp>
#include <mutex>
#include <thread>

#include "actors/caller.hpp"
#include "actors/core.hpp"
#include "actors/effects/retention.hpp"
#include "actors/error.hpp"
#include "actors/messages.hpp"
#include "actors/scheduler.hpp"
#include "actors/timers.hpp"
#include "actors/work_messages.hpp"
#include "runtime/engines/openai_embedder.hpp"
#include "runtime/engines/openai_engine.hpp"
#include "runtime/engines/process_engine.hpp"
#include "runtime/engines/scripted_engine.hpp"
#include "runtime/host_sink.hpp"
#include "runtime/model/hashing_embedder.hpp"
#include "runtime/model/ids.hpp"
#include "runtime/runtime_impl.hpp"
#include "runtime/work/work_service.hpp"

namespace skein {

runtime::runtime(std::unique_ptr<impl> p) : impl_(std::move(p)) {}

work_service* runtime::works() const { return impl_->work.get(); }

runtime::~runtime() { close().ignore(); }

status runtime::open(runtime_options options, std::unique_ptr<runtime>* out) {
  auto p = std::make_unique<impl>();
  p->options = std::move(options);
  const bool clustered = !p->options.cluster.node_id.empty();
  const bool replicated = clustered && p->options.cluster.replication.enabled();
  if (clustered) {  // before anything is opened: a refusal touches nothing
    SKEIN_TRY(check_cluster(p->options.cluster));
    if (p->options.cluster.tls.enabled()) {
      p->tls_files = std::make_unique<cluster_tls_files>();
      SKEIN_TRY(p->tls_files->open(p->options.cluster.tls));
      p->options.cluster.tls = p->tls_files->paths();
    }
  }
  log_options lo;
  lo.path = p->options.data_dir;
  lo.mode = p->options.mode;
  lo.env = p->options.env;
  lo.encryption = p->options.encryption;
  lo.quota = p->options.quota;
  if (replicated) {  // every write of the log replicates first (runtime/cluster/replicated_cluster.hpp)
    SKEIN_TRY(replicated_cluster::connect(p->options.cluster, p->options.encryption, &p->replicated));
    lo.replicator = p->replicated->replicator();
  }
  SKEIN_TRY(event_log::open(lo, &p->log));

  // The memory index first, alone on the cores (memory_service::rebuild).
  {
    std::map<std::string, embedder_factory> embedders = registry{}.embedders;
    embedders["openai"] = make_openai_embedder;
    for (auto& [name, factory] : p->options.embedders) embedders[name] = factory;
    p->memory = std::make_shared<memory_service>(*p->log, std::move(embedders));
    SKEIN_TRY(p->memory->rebuild());
  }

  register_skein_types(p->cfg);
  if (clustered) prepare_cluster_config(p->cfg, p->options.cluster.tls);
  size_t workers = p->options.worker_threads > 0 ? p->options.worker_threads
                                                 : std::max<size_t>(2, std::thread::hardware_concurrency());
  p->cfg.set("scheduler.max-threads", workers);
  p->sys = std::make_unique<caf::actor_system>(p->cfg);
  release_logger();  // this thread may not be the one that closes (actors/caller.hpp)
  std::function<bool(std::string_view)> owns_id;
  std::function<bool(std::string_view)> serves;
  if (clustered) {
    p->cluster = std::make_unique<cluster_link>(*p->sys, p->options.cluster);
    if (replicated) {
      replicated_cluster* r = p->replicated.get();
      p->cluster->set_placement([r](std::string_view key) { return r->owner(key); });
      serves = [r](std::string_view id) { return r->serves_thread(id); };
    } else {
      SKEIN_TRY(p->load_membership());
    }
    owns_id = p->cluster->id_filter();
  }

  core_config cc;
  cc.options.active_threads_max = p->options.active_threads_max;
  cc.options.idle_passivate = std::chrono::milliseconds(p->options.idle_passivate_ms);
  cc.options.thread_queue_max = p->options.thread_queue_max;
  cc.options.wall_clock = p->options.clock ? p->options.clock : std::function<int64_t()>(skein::now_ms);
  cc.options.heartbeat_interval = std::chrono::milliseconds(p->options.heartbeat_interval_ms);
  cc.options.heartbeat_stale_ms = p->options.heartbeat_stale_ms;
  cc.options.start_stale_ms = p->options.start_stale_ms;
  cc.options.owns_id = owns_id;
  cc.options.serves = serves;
  cc.recover = !replicated;  // a replicated node recovers each partition it takes (start_replication: its recover hook)
  p->core_opts = cc.options;
  cc.reg.engines["scripted"] = make_scripted_engine;
  cc.reg.engines["openai"] = make_openai_engine;
  cc.reg.engines["process"] = make_process_engine;
  cc.reg.embedders["openai"] = make_openai_embedder;
  for (auto& [name, factory] : p->options.engines) cc.reg.engines[name] = factory;
  for (auto& [name, factory] : p->options.embedders) cc.reg.embedders[name] = factory;
  // The index is complete before any actor (or the embeddings effect) can touch
  // it. The host's own tools come last: one may replace memory_search.
  p->memory_timers = make_actor_timers(*p->sys);
  p->memory->start_searches(*p->memory_timers);
  cc.reg.tools["memory_search"] = make_memory_search_tool(p->memory);
  for (auto& t : p->options.tools) cc.reg.tools[t->spec().name] = t;
  const runtime_effects& fx = p->options.effects;
  cc.effects.titles = fx.titles;
  cc.effects.embeddings = fx.embeddings;
  cc.effects.compaction = fx.compaction;
  // The memory index hears every durable embedding and every erasure (delete,
  // retention) first; then the host's hooks, if any.
  cc.effects.on_embedded = [index = p->memory, host = fx.on_embedded](const std::string& thread, uint64_t seq,
                                                                      const embedding_record& r) {
    (void)index->index().add(thread, seq, r);  // refused only for dims the agent's matrix does not have
    if (host) host(thread, seq, r);
  };
  cc.effects.on_erased = [index = p->memory, host = fx.on_erased](const std::string& thread) {
    index->index().remove_thread(thread);
    if (host) host(thread);
  };
  cc.effects.serves = serves;
  cc.effects.job_timeout = std::chrono::milliseconds(fx.job_timeout_ms);
  cc.effects.retry_delay_min = std::chrono::milliseconds(fx.retry_delay_min_ms);
  cc.effects.retry_delay_max = std::chrono::milliseconds(fx.retry_delay_max_ms);
  SKEIN_TRY(start_core(*p->sys, *p->log, std::move(cc), &p->actors));
  size_t n = std::max<size_t>(2, p->sys->scheduler().num_workers());
  for (size_t i = 0; i < n; ++i) p->clients.push_back(p->sys->spawn(client_actor, p->actors.directory));
  retention_config rc;
  rc.log = p->log.get();
  rc.directory = p->actors.directory;
  rc.wall_clock = p->core_opts.wall_clock;
  rc.interval = std::chrono::milliseconds(p->options.retention_interval_ms);
  p->retention = spawn_retention(*p->sys, std::move(rc));
  scheduler_config sc;
  sc.log = p->log.get();
  sc.journal = p->actors.journal;
  sc.directory = p->actors.directory;
  sc.wall_clock = p->core_opts.wall_clock;
  sc.grace_ms = p->options.schedule_grace_ms;
  sc.wake_period = std::chrono::milliseconds(p->options.schedule_wake_ms);
  sc.timers = p->actors.timers.get();
  sc.owns_id = owns_id;
  // A schedule this node marked for handoff (a change under way) never fires
  // here again, not after a restart either: the marks were loaded above.
  if (p->cluster) sc.skip = [impl = p.get()](std::string_view id) { return impl->marked(id); };
  // A replicated node arms the schedules of a partition when it takes its lead.
  if (replicated) sc.skip = [](std::string_view) { return true; };
  if (status s = spawn_scheduler(*p->sys, std::move(sc), &p->scheduler); !s) {
    runtime partial{std::move(p)};  // close() stops what started
    return s;
  }
  // The work service on the runtime's actors: births through the directory,
  // transitions through thread actors, session and suggestion rows through the
  // journal. Its index is filled from the work column family before it serves.
  auto start_work = [](impl& p) -> status {
    work_hooks h;
    runtime::impl* self = &p;
    h.create = [self](work_birth b, manifest* out) {
      return self->ask(self->actors.directory, out, work_atom::value, std::move(b));
    };
    h.transition = [self](const std::string& thread, work_op op, manifest* out) {
      return self->ask_thread(thread, out, work_atom::value, std::move(op));
    };
    h.write_rows = [self](std::vector<side_row> rows) {
      SKEIN_TRY(self->check_open());
      tick t;
      t.side_rows = std::move(rows);
      return journal_commit(*self->sys, self->actors.journal, t);
    };
    h.embedder_of = [self](const std::string& agent, std::shared_ptr<embedder>* out) {
      agent_config a;
      SKEIN_TRY(self->log->read_agent(agent, &a));
      if (!a.effects.embedder.empty()) return self->memory->embedder_for(agent, out);
      std::lock_guard lock{self->hashing_mu};
      if (!self->hashing) SKEIN_TRY(make_hashing_embedder("{}", *self->memory_timers, &self->hashing));
      *out = self->hashing;
      return status::ok();
    };
    h.clock = p.core_opts.wall_clock;
    p.work = std::make_unique<work_service>(*p.log, std::move(h));
    SKEIN_TRY(p.work->rebuild());
    p.work->start_sweeps(p.options.work_sweep_interval_ms, p.options.work_auto_archive);
    return status::ok();
  };
  if (status s = start_work(*p); !s) {
    runtime partial{std::move(p)};
    return s;
  }
  std::unique_ptr<runtime> rt{new runtime(std::move(p))};
  if (clustered) {
    SKEIN_TRY(rt->impl_->cluster->start(*rt, rt->impl_->hooks()));
    if (replicated) {
      SKEIN_TRY(rt->impl_->start_replication());
    } else {
      SKEIN_TRY(rt->impl_->learn_membership());
      // Agents written while this node was down: best effort, creations fetch them again.
      rt->impl_->sync_agents().ignore();
    }
  }
  *out = std::move(rt);
  return status::ok();
}


int64_t runtime::now_ms() const { return impl_->core_opts.wall_clock(); }

const std::vector<std::string>& runtime::repaired_at_open() const { return impl_->actors.repaired; }

const std::vector<quarantined_thread>& runtime::quarantined_at_open() const {
  return impl_->actors.quarantined;
}

status runtime::close() {
  std::lock_guard<std::mutex> lock{impl_->close_mu};
  if (impl_->closed) return status::ok();
  impl_->closed = true;
  // Other nodes' calls first: the edge's workers finish the call they run and go.
  impl_->stop_handoffs();  // a pass or a rebalance under way stops between two threads
  if (impl_->cluster) impl_->cluster->stop();
  if (impl_->work) impl_->work->stop();  // its sweeps use the actors
  // The retention effect first: it stops after a sweep in progress, before the threads close.
  caf::anon_send_exit(impl_->retention, caf::exit_reason::user_shutdown);
  impl_->retention = nullptr;
  // The scheduler next: a firing it started is durable whole or not at all, and
  // its state is in the same batch, so the next open goes on from the log.
  if (impl_->scheduler) caf::anon_send_exit(impl_->scheduler, caf::exit_reason::user_shutdown);
  impl_->scheduler = nullptr;
  // Effects first: what they have half done is redone after the next open, once.
  for (auto& fx : impl_->actors.effects) caf::anon_send_exit(fx, caf::exit_reason::user_shutdown);
  impl_->actors.effects.clear();
  status result = impl_->tell(impl_->actors.directory, caf::close_atom::value);
  status journal = journal_close(*impl_->sys, impl_->actors.journal);
  if (result.is_ok()) result = journal;
  // A planned stop: the node's leases released and its membership deleted,
  // so that the next leaders take its partitions at once.
  if (impl_->replicated) impl_->replicated->stop(true);
  if (impl_->replication_targets) *impl_->replication_targets = {};  // no hook runs any more
  {
    std::lock_guard<std::mutex> subs{impl_->subs_mu};
    // Each subscriber hears that nothing more comes ("closed": the runtime closed,
    // e.g. its namespace was removed) before its actor goes.
    for (auto& [id, sub] : impl_->subs) {
      caf::anon_send(sub.actor, caf::close_atom::value, std::string{}, std::string{"closed"});
      caf::anon_send_exit(sub.actor, caf::exit_reason::user_shutdown);
    }
    impl_->subs.clear();
  }
  for (auto& c : impl_->clients) caf::anon_send_exit(c, caf::exit_reason::user_shutdown);

  caf::anon_send_exit(impl_->actors.directory, caf::exit_reason::user_shutdown);
  impl_->memory->close();  // a late embedder answer now finds no log
  impl_->actors.timers->stop();
  impl_->memory_timers->stop();
  impl_->clients.clear();
  impl_->actors.directory = nullptr;
  impl_->actors.journal = nullptr;
  impl_->cluster.reset();
  impl_->sys.reset();  // waits for every actor; they borrow the log
  // Engines and memory searches hold the timers by reference until their actors end.
  impl_->actors.timers.reset();
  impl_->memory_timers.reset();
  impl_->work.reset();  // borrows the log
  impl_->log.reset();
  impl_->replicated.reset();  // the log's replicator borrowed its NATS connection
  return result;
}

}  // namespace skein
