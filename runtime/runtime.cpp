#include "runtime/runtime.hpp"

#include <caf/all.hpp>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "actors/caller.hpp"
#include "actors/agent_actor.hpp"
#include "actors/core.hpp"
#include "actors/effects/retention.hpp"
#include "actors/thread_actor.hpp"
#include "actors/error.hpp"
#include "actors/messages.hpp"
#include "actors/published_event.hpp"
#include "actors/scheduler.hpp"
#include "actors/work_messages.hpp"
#include "persistence/keys.hpp"
#include "runtime/host_sink.hpp"
#include "runtime/runtime_impl.hpp"
#include "runtime/model/hashing_embedder.hpp"
#include "runtime/work/work_service.hpp"
#include "runtime/model/conversation.hpp"
#include "runtime/model/ids.hpp"
#include "runtime/model/json_reader.hpp"
#include "actors/timers.hpp"
#include "runtime/engines/openai_embedder.hpp"
#include "runtime/engines/openai_engine.hpp"
#include "runtime/model/text.hpp"
#include "runtime/engines/process_engine.hpp"
#include "runtime/engines/scripted_engine.hpp"

namespace skein {

struct run_handle::state {
  std::string run_id;
  std::string thread_id;
  mutable std::mutex mu;
  mutable std::condition_variable cv;
  bool done = false;  // guarded by mu
  status result;      // guarded by mu
  run_result value;   // guarded by mu
  std::vector<std::function<void(const status&, const run_result&)>> callbacks;  // guarded by mu
  std::shared_ptr<std::atomic<uint64_t>> host_failures;  // the runtime's count; set before sharing

  void finish(status s, run_result r) {
    std::vector<std::function<void(const status&, const run_result&)>> to_call;
    {
      std::lock_guard<std::mutex> lock{mu};
      if (done) return;
      done = true;
      result = std::move(s);
      value = std::move(r);
      to_call.swap(callbacks);
    }
    cv.notify_all();
    for (auto& fn : to_call)  // done is final: no lock needed to read
      guard_host_call(host_failures, "a run_handle::on_done callback", [&] { fn(result, value); });
  }
};

}  // namespace skein

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::shared_ptr<skein::run_handle::state>)

namespace skein {
namespace {

// Resolves the thread and sends the input; a thread that passivated between the
// two is resolved again (its mailbox never saw the input).
void deliver_send(caf::event_based_actor* self, directory_actor directory, std::string thread,
                  run_input in, std::shared_ptr<run_handle::state> st, int attempt) {
  self->request(directory, caf::infinite, resolve_atom::value, thread)
      .then(
          [=](thread_actor& target) {
            self->request(target, caf::infinite, send_atom::value, in)
                .then([st](run_result& r) { st->finish(status::ok(), std::move(r)); },
                      [=](caf::error& e) {
                        if (receiver_down(e) && attempt < 8) deliver_send(self, directory, thread, in, st, attempt + 1);
                        else st->finish(to_status(e), {});
                      });
          },
          [st](caf::error& e) { st->finish(to_status(e), {}); });
}

caf::behavior client_actor(caf::event_based_actor* self, directory_actor directory) {
  return {
      [=](send_atom, std::string& thread, run_input& in, std::shared_ptr<run_handle::state>& st) {
        deliver_send(self, directory, std::move(thread), std::move(in), std::move(st), 0);
      },
  };
}

}  // namespace

const std::string& run_handle::run_id() const { return state_->run_id; }
const std::string& run_handle::thread_id() const { return state_->thread_id; }

bool run_handle::ready() const {
  std::lock_guard<std::mutex> lock{state_->mu};
  return state_->done;
}

status run_handle::wait(run_result* out, std::chrono::milliseconds timeout) const {
  if (!state_) return status::invalid_input("run_handle: empty");
  std::unique_lock<std::mutex> lock{state_->mu};
  auto done = [&] { return state_->done; };
  if (timeout == std::chrono::milliseconds::max()) state_->cv.wait(lock, done);
  else if (!state_->cv.wait_for(lock, timeout, done))
    return status::overloaded("run " + state_->run_id + " still running after " +
                              std::to_string(timeout.count()) + " ms");
  if (state_->result.is_ok() && out != nullptr) *out = state_->value;
  return state_->result;
}

void run_handle::on_done(std::function<void(const status&, const run_result&)> fn) const {
  {
    std::lock_guard<std::mutex> lock{state_->mu};
    if (!state_->done) {
      state_->callbacks.push_back(std::move(fn));
      return;
    }
  }
  fn(state_->result, state_->value);
}

runtime::runtime(std::unique_ptr<impl> p) : impl_(std::move(p)) {}

work_service* runtime::works() const { return impl_->work.get(); }

runtime::~runtime() { close().ignore(); }

status runtime::open(runtime_options options, std::unique_ptr<runtime>* out) {
  auto p = std::make_unique<impl>();
  p->options = std::move(options);
  const bool clustered = !p->options.cluster.node_id.empty();
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
  if (clustered) {
    p->cluster = std::make_unique<cluster_link>(*p->sys, p->options.cluster);
    SKEIN_TRY(p->load_membership());
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
    SKEIN_TRY(rt->impl_->learn_membership());
    // Agents written while this node was down: best effort, creations fetch them again.
    rt->impl_->sync_agents().ignore();
  }
  *out = std::move(rt);
  return status::ok();
}

status runtime::get_agent(const std::string& id, agent_config* out) {
  return impl_->ask(impl_->actors.directory, out, agent_atom::value, id);
}

status runtime::list_agents(std::vector<agent_config>* out) {
  return impl_->ask(impl_->actors.directory, out, agent_atom::value);
}

status runtime::create_thread(thread_options options, manifest* out, bool* created) {
  SKEIN_TRY(validate_thread_options(options));
  cluster_link* c = impl_->cluster.get();
  if (c != nullptr) {
    std::string owner;
    SKEIN_TRY(impl_->route_creation(options, &owner));
    if (!owner.empty()) {
      bool made = false;
      SKEIN_TRY(c->call(owner, [&](manifest& m, bool b) {
        *out = std::move(m);
        made = b;
      }, create_atom::value, std::move(options)));
      if (created != nullptr) *created = made;
      return status::ok();
    }
  }
  auto here = [&](thread_options o) -> status {
    if (o.dm) return dm_thread(o.agent_id, out, created);
    std::string task_id = o.task_id, agent_id = o.agent_id;
    if (created != nullptr) *created = false;
    // The task's thread answers only the agent it belongs to: another agent
    // asking for it would otherwise get, and run inputs on, a thread not its own.
    auto existing = [&]() -> status {
      if (out->agent_id == agent_id) return status::ok();
      return status::conflict("task_id: " + quote_input(task_id) + " is bound to a thread of another agent")
          .with_field("task_id");
    };
    if (c != nullptr && !task_id.empty()) {
      // After a rebalance a claim and its thread may live on different nodes:
      // the log here cannot tell a thread elsewhere from a gone one, so ask
      // (a holder that cannot be asked is no reason to make a second thread).
      status found = find_task_thread(task_id, out);
      if (found.code() != errc::not_found) return found ? existing() : found;
    }
    status s = impl_->ask(impl_->actors.directory, out, create_atom::value, std::move(o));
    // The log refused the task's claim (keys.cpp): the thread that holds it answers.
    if (s.code() == errc::conflict && !task_id.empty() && find_task_thread(task_id, out).is_ok())
      return existing();
    if (s && created != nullptr) *created = true;
    return s;
  };
  if (c == nullptr || c->self() == c->coordinator()) return here(std::move(options));
  // An agent this node missed (it was down when the agent was written) is
  // fetched from the coordinator, and the creation tried once more.
  status s = here(options);
  if (s.code() != errc::not_found) return s;
  // Not known here is no answer while the coordinator cannot be asked.
  status synced = impl_->sync_agents();
  if (synced) return here(std::move(options));
  if (synced.code() == errc::unavailable)
    return status::unavailable(s.message() + " on node " + c->self() + ", which cannot ask the coordinator (" +
                               synced.message() + ")");
  return s;
}

status runtime::create_threads(const std::vector<thread_options>& options, std::vector<manifest>* out,
                               std::vector<status>* each) {
  SKEIN_TRY(impl_->check_open());
  const size_t n = options.size();
  if (n > create_threads_max)
    return status::invalid_input("options: " + std::to_string(n) + " creations exceed create_threads_max (" +
                                 std::to_string(create_threads_max) + ")")
        .with_limit("create_threads_max")
        .with_field("options");
  std::vector<status> local;
  std::vector<status>& results = each != nullptr ? *each : local;
  results.assign(n, status::ok());
  out->assign(n, manifest{});
  // Refusals decided here, before anything is in flight: each names its field.
  std::unordered_map<std::string, size_t> tasks;  // task_id -> the option that claims it in this call
  for (size_t i = 0; i < n; ++i) {
    const thread_options& o = options[i];
    if (o.dm) {
      results[i] = status::invalid_input("dm: create_threads creates; dm_thread() creates or reuses the DM thread")
                       .with_field("dm");
      continue;
    }
    if (status s = validate_thread_options(o); !s) {
      results[i] = std::move(s);
      continue;
    }
    if (o.task_id.empty()) continue;
    auto [it, fresh] = tasks.emplace(o.task_id, i);
    if (!fresh)
      results[i] = status::conflict("task_id: " + o.task_id + " is claimed by options[" +
                                    std::to_string(it->second) + "] of this call")
                       .with_field("task_id");
  }
  // Every request first, then the answers: the journal merges whatever is queued
  // while its previous write is in flight, so these share its fsyncs.
  caller self{*impl_->sys};
  using handle = decltype(self->request(impl_->actors.directory, caf::infinite, create_atom::value,
                                        std::declval<thread_options>()));
  std::vector<std::pair<size_t, handle>> inflight;
  inflight.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (!results[i]) continue;
    inflight.emplace_back(i, self->request(impl_->actors.directory, caf::infinite, create_atom::value, options[i]));
  }
  for (auto& [i, h] : inflight) {
    size_t k = i;  // structured bindings are not captured by lambdas in C++20
    h.receive([&](manifest& m) { (*out)[k] = std::move(m); },
              [&](caf::error& e) { results[k] = to_status(e); });
  }
  for (size_t i = 0; i < n; ++i) {
    if (results[i]) continue;
    return status{results[i].code(), "options[" + std::to_string(i) + "]: " + results[i].message()}
        .with_limit(results[i].limit())
        .with_field(results[i].field());
  }
  return status::ok();
}

status runtime::add_member(const std::string& thread_id, const house_member& member, manifest* out) {
  SKEIN_TRY(validate_id(thread_id, "thread id"));
  SKEIN_TRY(validate_id(member.agent_id, "agent"));
  agent_config a;
  SKEIN_TRY(get_agent(member.agent_id, &a));  // a member must be an agent now
  manifest m;
  std::string owner;
  SKEIN_TRY(impl_->route(thread_id, &owner));
  if (!owner.empty())
    SKEIN_TRY(impl_->cluster->call(owner, [&](manifest& r) { m = std::move(r); }, member_atom::value, thread_id,
                                   member.agent_id, std::string{to_string(member.trigger)}, true));
  else
    SKEIN_TRY(impl_->ask_thread(thread_id, &m, member_atom::value, member.agent_id,
                                std::string{to_string(member.trigger)}, true));
  if (out != nullptr) *out = std::move(m);
  return status::ok();
}

status runtime::remove_member(const std::string& thread_id, const std::string& agent_id, manifest* out) {
  SKEIN_TRY(validate_id(thread_id, "thread id"));
  SKEIN_TRY(validate_id(agent_id, "agent"));
  manifest m;
  std::string owner;
  SKEIN_TRY(impl_->route(thread_id, &owner));
  if (!owner.empty())
    SKEIN_TRY(impl_->cluster->call(owner, [&](manifest& r) { m = std::move(r); }, member_atom::value, thread_id,
                                   agent_id, std::string{}, false));
  else
    SKEIN_TRY(impl_->ask_thread(thread_id, &m, member_atom::value, agent_id, std::string{}, false));
  if (out != nullptr) *out = std::move(m);
  return status::ok();
}

status runtime::find_task_thread(const std::string& task_id, manifest* out) {
  SKEIN_TRY(impl_->check_open());
  std::string owner;
  SKEIN_TRY(impl_->route_claim(task_key(task_id), &owner));
  if (!owner.empty())
    return impl_->cluster->call(owner, [&](manifest& m) { *out = std::move(m); }, task_atom::value, task_id);
  std::string thread;
  SKEIN_TRY(impl_->log->find_claim("task", task_id, &thread));
  // After a rebalance a claim and its thread may live on different nodes.
  status s = get_thread(thread, out);
  if (s.code() == errc::not_found) return status::not_found("task " + task_id + " has no thread");
  return s;
}

status runtime::dm_thread(const std::string& agent_id, manifest* out, bool* created) {
  SKEIN_TRY(impl_->check_open());
  SKEIN_TRY(validate_id(agent_id, "agent_id"));
  if (created != nullptr) *created = false;
  std::string owner;
  SKEIN_TRY(impl_->route_claim(dm_key(agent_id), &owner));
  if (!owner.empty()) {
    thread_options o;
    o.agent_id = agent_id;
    o.dm = true;
    return create_thread(std::move(o), out, created);
  }
  auto existing = [&]() -> status {
    std::string thread;
    SKEIN_TRY(impl_->log->find_claim("dm", agent_id, &thread));
    return get_thread(thread, out);
  };
  if (existing().is_ok()) return status::ok();  // the common case: a read, no write
  thread_options o;
  o.agent_id = agent_id;
  o.dm = true;
  status s = impl_->ask(impl_->actors.directory, out, create_atom::value, std::move(o));
  // Another first message won the claim: its thread is the DM thread.
  if (s.code() == errc::conflict && existing().is_ok()) return status::ok();
  if (s && created != nullptr) *created = true;
  return s;
}

status runtime::get_thread(const std::string& id, manifest* out) {
  SKEIN_TRY(impl_->check_open());
  std::string owner;
  SKEIN_TRY(impl_->route(id, &owner));
  if (!owner.empty())
    return impl_->cluster->call(owner, [&](manifest& m) { *out = std::move(m); }, caf::get_atom::value, id);
  return impl_->log->read_manifest(id, out);
}

bool runtime::serves_here(const std::string& id) {
  std::string owner;
  return !impl_->route(id, &owner).is_ok() || owner.empty();
}

status runtime::delete_thread(const std::string& id) {
  std::string owner;
  SKEIN_TRY(impl_->route(id, &owner));
  if (!owner.empty())
    return impl_->cluster->call(owner, [](bool) {}, delete_atom::value, id);
  SKEIN_TRY(impl_->tell(impl_->actors.directory, delete_atom::value, id));
  impl_->memory->index().remove_thread(id);  // after the erase: a search meanwhile skips its gone events
  if (impl_->work) impl_->work->forget(id);
  return status::ok();
}

status runtime::memory_search(const std::string& agent_id, const std::string& query, size_t k,
                              std::vector<memory_hit>* out) {
  SKEIN_TRY(impl_->check_open());
  if (impl_->cluster) return impl_->search_cluster(agent_id, query, k, out);
  return impl_->memory->search_wait(agent_id, query, k, out);
}

memory_index& runtime::memory() { return impl_->memory->index(); }

status runtime::set_title(const std::string& id, const std::string& title, manifest* out) {
  SKEIN_TRY(validate_id(id, "thread id"));
  if (title.empty()) return status::invalid_input("title: empty (a thread without a title gets a generated one)");
  if (title.size() > title_bytes_max)
    return status::invalid_input("title: " + std::to_string(title.size()) + " bytes exceed title_bytes_max (" +
                                 std::to_string(title_bytes_max) + ")")
        .with_limit("title_bytes_max");
  if (to_valid_utf8(title) != title) return status::invalid_input("title: not valid UTF-8");
  for (unsigned char c : title)
    if (c < 0x20 || c == 0x7f) return status::invalid_input("title: control characters (one line only)");
  manifest m;
  std::string owner;
  SKEIN_TRY(impl_->route(id, &owner));
  if (!owner.empty())
    SKEIN_TRY(impl_->cluster->call(owner, [&](manifest& r) { m = std::move(r); }, title_atom::value, id, title));
  else
    SKEIN_TRY(impl_->ask_thread(id, &m, title_atom::value, title));
  if (out != nullptr) *out = std::move(m);
  return status::ok();
}

status runtime::fork(const std::string& id, uint64_t at_seq, manifest* out) {
  SKEIN_TRY(validate_id(id, "thread id"));
  std::string owner;
  SKEIN_TRY(impl_->route(id, &owner));
  if (!owner.empty())
    return impl_->cluster->call(owner, [&](manifest& m) { *out = std::move(m); }, fork_atom::value, id, at_seq);
  return impl_->ask(impl_->actors.directory, out, fork_atom::value, id, at_seq);
}

status runtime::import_thread(manifest m, std::vector<event> events, manifest* out) {
  SKEIN_TRY(validate_id(m.id, "manifest.id"));
  std::string owner;
  SKEIN_TRY(impl_->route(m.id, &owner));
  if (!owner.empty())
    return impl_->cluster->call(owner, [&](manifest& r) { *out = std::move(r); }, import_atom::value, std::move(m),
                                std::move(events));
  m.last_seq = events.size();
  return impl_->ask(impl_->actors.directory, out, import_atom::value, std::move(m), std::move(events));
}

status runtime::import_threads(std::vector<thread_import> threads, std::vector<manifest>* out) {
  std::vector<tick> ticks;
  ticks.reserve(threads.size());
  for (size_t i = 0; i < threads.size(); ++i) {
    tick& t = ticks.emplace_back();
    t.manifest = std::move(threads[i].manifest);
    t.events = std::move(threads[i].events);
    if (status s = validate_id(t.manifest.id, "manifest.id"); !s)
      return status(s.code(), "thread " + std::to_string(i + 1) + " of " + std::to_string(threads.size()) +
                                  ": " + s.message());
    t.manifest.last_seq = t.events.size();
    // All or nothing holds within one database: a batch whose threads other
    // nodes own is refused whole (import them one by one, or on their owner).
    std::string owner;
    SKEIN_TRY(impl_->route(t.manifest.id, &owner));
    if (!owner.empty())
      return status::invalid_input("thread " + std::to_string(i + 1) + " of " + std::to_string(threads.size()) +
                                   " (" + t.manifest.id + ") is owned by node " + owner +
                                   ": a batch import writes one node's database; use import_thread")
          .with_field("manifest.id");
  }
  return impl_->ask(impl_->actors.directory, out, import_atom::value, std::move(ticks));
}

run_handle runtime::send(const std::string& thread_id, run_input input) {
  auto st = std::make_shared<run_handle::state>();
  st->host_failures = impl_->host_failures;
  if (input.run_id.empty()) input.run_id = new_run_id();
  st->run_id = input.run_id;
  st->thread_id = thread_id;
  std::string owner;
  if (status c = impl_->check_open(); !c) st->finish(c, {});
  else if (status s = validate_id(thread_id, "thread id"); !s) st->finish(s, {});
  else if (status v = validate_input(input); !v) st->finish(v, {});
  else if (status r = impl_->route(thread_id, &owner); !r) st->finish(r, {});
  else if (!owner.empty())
    impl_->cluster->send(owner, thread_id, std::move(input),
                         [st](status s, run_result r) { st->finish(std::move(s), std::move(r)); });
  else {
    size_t i = impl_->next_client.fetch_add(1, std::memory_order_relaxed) % impl_->clients.size();
    caf::anon_send(impl_->clients[i], send_atom::value, thread_id, std::move(input), st);
  }
  return run_handle{st};
}

status runtime::submit(const std::string& thread_id, run_input input, std::string* run_id) {
  SKEIN_TRY(validate_id(thread_id, "thread id"));
  SKEIN_TRY(validate_input(input));
  if (input.run_id.empty()) input.run_id = new_run_id();
  std::string owner;
  SKEIN_TRY(impl_->route(thread_id, &owner));
  if (!owner.empty())
    return impl_->cluster->call(owner, [&](std::string& r) { *run_id = std::move(r); }, submit_atom::value,
                                thread_id, std::move(input));
  return impl_->ask_thread(thread_id, run_id, submit_atom::value, std::move(input));
}

status runtime::cancel(const std::string& thread_id, bool* cancelled) {
  bool was = false;
  // High priority: the cancel overtakes inputs queued in the thread's mailbox.
  std::string owner;
  SKEIN_TRY(impl_->route(thread_id, &owner));
  if (!owner.empty())
    SKEIN_TRY(impl_->cluster->call(owner, [&](bool b) { was = b; }, cancel_atom::value, thread_id));
  else
    SKEIN_TRY(impl_->ask_thread<caf::message_priority::high>(thread_id, &was, cancel_atom::value));
  if (cancelled != nullptr) *cancelled = was;
  return status::ok();
}

status runtime::read(const std::string& thread_id, history_view view, uint64_t from_seq, size_t limit,
                     std::vector<event>* out) {
  SKEIN_TRY(impl_->check_open());
  std::string owner;
  SKEIN_TRY(impl_->route(thread_id, &owner));
  if (!owner.empty())
    return impl_->cluster->call(owner, [&](std::vector<event>& v) { *out = std::move(v); }, read_atom::value,
                                thread_id, static_cast<uint8_t>(view), from_seq, static_cast<uint64_t>(limit));
  if (view == history_view::complete) return impl_->log->read_events(thread_id, from_seq, limit, out);
  manifest m;
  SKEIN_TRY(impl_->log->read_manifest(thread_id, &m));
  // From the latest compaction on, as activation reads it: O(working view).
  std::vector<event> working;
  SKEIN_TRY(read_working_view(*impl_->log, m, &working));
  out->clear();
  for (auto& e : working) {
    // Synthesized results (seq 0) follow the call they answer.
    if (e.seq != 0 && e.seq < from_seq) continue;
    if (e.seq == 0 && out->empty()) continue;
    if (limit != 0 && out->size() == limit) break;
    out->push_back(std::move(e));
  }
  return status::ok();
}

status runtime::read(const std::string& thread_id, history_view view, uint64_t from_seq, size_t limit,
                     const group_filter& groups, std::vector<event>* out, uint64_t* next_seq) {
  std::vector<event> all;
  SKEIN_TRY(read(thread_id, view, from_seq, limit, &all));
  out->clear();
  *next_seq = from_seq;
  for (auto& e : all) {
    if (e.seq >= *next_seq) *next_seq = e.seq + 1;
    if (groups.admits(e.type)) out->push_back(std::move(e));
  }
  return status::ok();
}

status runtime::read_raw(const std::string& thread_id, uint64_t from_seq, size_t limit,
                         const group_filter& groups, std::vector<raw_event>* out, uint64_t* next_seq) {
  SKEIN_TRY(impl_->check_open());
  std::string owner;
  SKEIN_TRY(impl_->route(thread_id, &owner));
  if (!owner.empty())
    return impl_->cluster->call(owner, [&](std::vector<raw_event>& v, uint64_t next) {
      *out = std::move(v);
      *next_seq = next;
    }, raw_atom::value, thread_id, from_seq, static_cast<uint64_t>(limit), groups.mask);
  SKEIN_TRY(impl_->log->read_events_raw(thread_id, from_seq, limit, out));
  *next_seq = from_seq;
  if (!out->empty()) *next_seq = std::max(from_seq, out->back().seq + 1);
  if (!groups.all())
    std::erase_if(*out, [&](const raw_event& e) { return !groups.admits(e.type); });
  return status::ok();
}

status runtime::subscribe(const std::string& thread_id, uint64_t from_seq, const group_filter& groups,
                          event_sink sink, uint64_t* id) {
  if (groups.all()) return subscribe(thread_id, from_seq, std::move(sink), id);
  if (sink.on_event)
    sink.on_event = [groups, fn = std::move(sink.on_event)](const event& e) {
      if (groups.admits(e.type)) fn(e);
    };
  if (sink.on_event_json)
    sink.on_event_json = [groups, fn = std::move(sink.on_event_json)](uint64_t seq, event_type type,
                                                                      const std::string& json) {
      if (groups.admits(type)) fn(seq, type, json);
    };
  if (!groups.admits(event_type::assistant_text)) sink.on_delta = nullptr;
  return subscribe(thread_id, from_seq, std::move(sink), id);
}

status runtime::subscribe(const std::string& thread_id, uint64_t from_seq, event_sink sink, uint64_t* id) {
  SKEIN_TRY(impl_->check_open());
  std::shared_ptr<sink_gate> gate = gate_sink(&sink);  // closed by unsubscribe()
  caf::actor actor;
  std::string owner;
  SKEIN_TRY(impl_->route(thread_id, &owner));
  if (!owner.empty()) {
    SKEIN_TRY(validate_id(thread_id, "thread id"));
    SKEIN_TRY(impl_->cluster->subscribe(owner, thread_id, from_seq, std::move(sink), impl_->host_failures, &actor));
  } else {
    actor = spawn_sink(*impl_->sys, std::move(sink), impl_->host_failures);
    uint64_t next = 0;
    status s = impl_->ask_thread(thread_id, &next, subscribe_atom::value, from_seq, caf::actor_cast<event_sink_actor>(actor));
    if (!s) {
      caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
      return s;
    }
  }
  uint64_t sub = impl_->next_sub.fetch_add(1);
  {
    std::lock_guard<std::mutex> lock{impl_->subs_mu};
    impl_->subs[sub] = {actor, std::move(gate)};
  }
  if (id != nullptr) *id = sub;
  return status::ok();
}

status runtime::unsubscribe(uint64_t id) {
  impl::subscription sub;
  {
    std::lock_guard<std::mutex> lock{impl_->subs_mu};
    auto it = impl_->subs.find(id);
    if (it == impl_->subs.end()) return status::not_found("subscription " + std::to_string(id));
    sub = std::move(it->second);
    impl_->subs.erase(it);
  }
  // The exit alone is asynchronous: the sink actor could be inside a callback,
  // or have events queued, after this returns — and the host frees what its
  // callbacks use once it does. The gate waits for a callback under way and
  // lets none after it. Outside subs_mu: a callback may (un)subscribe.
  sub.gate->close();
  caf::anon_send_exit(sub.actor, caf::exit_reason::user_shutdown);
  return status::ok();
}

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
  return result;
}

}  // namespace skein
