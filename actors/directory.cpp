#include "actors/directory.hpp"

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <limits>
#include <list>
#include <map>
#include <malloc.h>
#include <set>
#include <unordered_map>
#include <vector>

#include "actors/agent_actor.hpp"
#include "actors/error.hpp"
#include "actors/journal.hpp"
#include "actors/reader_pool.hpp"
#include "actors/work_messages.hpp"
#include "persistence/event_log.hpp"
#include "runtime/model/engine_policy.hpp"
#include "runtime/model/ids.hpp"

namespace skein {
namespace {

struct thread_entry {
  thread_actor actor;
  std::list<std::string>::iterator lru;  // position in lru_, front = most recent
};

struct agent_entry {
  agent_spec_ptr spec;
  agent_actor actor;
};

class directory_impl : public directory_actor::base {
 public:
  directory_impl(caf::actor_config& cfg, directory_config config)
      : directory_actor::base(cfg), config_(std::move(config)) {}

  const char* name() const override { return "skein.directory"; }

  // ctx_ holds a strong handle to this actor and agents_/threads_ hold actors that
  // hold ctx_: a cycle that would keep every one of them alive after exit.
  void on_exit() override {
    agents_.clear();
    threads_.clear();
    by_address_.clear();
    if (readers_) readers_->stop();
    ctx_.reset();
  }

  behavior_type make_behavior() override {
    auto ctx = std::make_shared<thread_context>();
    ctx->log = config_.log;
    ctx->journal = config_.journal;
    ctx->directory = directory_actor{this};
    ctx->options = config_.options;
    ctx->ledger = std::make_shared<budget_ledger>(config_.log);
    readers_ = std::make_shared<reader_pool>(
        home_system(), reader_options{config_.options.reader_threads, config_.options.reads_queued_max,
                                      config_.options.detached_readers});
    ctx->readers = readers_;
    ctx_ = ctx;
    for (const auto& a : config_.agents) load_agent(a);
    config_.agents.clear();
    set_down_handler([this](caf::down_msg& msg) { forget(msg.source); });
    return {
        [this](resolve_atom, std::string& id) -> caf::result<thread_actor> { return resolve(id); },
        [this](passivate_atom, std::string& id, thread_actor& who) { passivated(id, who); },
        [this](caf::put_atom, agent_config& a) -> caf::result<agent_config> { return create_agent(std::move(a)); },
        [this](agent_atom, std::string& id) -> caf::result<agent_config> {
          auto it = agents_.find(id);
          if (it == agents_.end()) return to_error(status::not_found("agent " + id + " does not exist"));
          return it->second.spec->config;
        },
        [this](agent_atom, std::string& id, caf::get_atom) -> caf::result<agent_spec_ptr> {
          auto it = agents_.find(id);
          if (it == agents_.end()) return to_error(status::not_found("agent " + id + " does not exist"));
          return it->second.spec;
        },
        [this](agent_atom) {
          std::vector<agent_config> out;
          for (const auto& [id, a] : agents_) out.push_back(a.spec->config);
          return out;
        },
        [this](create_atom, thread_options& o) -> caf::result<manifest> {
          auto it = agents_.find(o.agent_id);
          if (it == agents_.end())
            return to_error(status::not_found("agent " + o.agent_id + " does not exist").with_field("agent_id"));
          delegate(it->second.actor, create_atom::value, std::move(o));
          return caf::delegated<manifest>{};
        },
        [this](work_atom, work_birth& b) -> caf::result<manifest> {
          auto it = agents_.find(b.options.agent_id);
          if (it == agents_.end())
            return to_error(status::not_found("agent " + b.options.agent_id + " does not exist"));
          delegate(it->second.actor, work_atom::value, std::move(b));
          return caf::delegated<manifest>{};
        },
        [this](fire_atom, trigger_firing& f) -> caf::result<manifest> {
          auto it = agents_.find(f.options.agent_id);
          if (it == agents_.end())
            return to_error(status::not_found("agent " + f.options.agent_id + " does not exist"));
          delegate(it->second.actor, fire_atom::value, std::move(f));
          return caf::delegated<manifest>{};
        },
        [this](delegate_atom, delegation_child& c) -> caf::result<manifest> {
          auto it = agents_.find(c.agent_id);
          if (it == agents_.end())
            return to_error(status::not_found("agent " + c.agent_id + " does not exist"));
          delegate(it->second.actor, delegate_atom::value, std::move(c));
          return caf::delegated<manifest>{};
        },
        [this](fork_atom, std::string& source, uint64_t at_seq) -> caf::result<manifest> {
          manifest m;
          if (status s = config_.log->read_manifest(source, &m); !s) return to_error(s);
          auto it = agents_.find(m.agent_id);
          if (it == agents_.end())
            return to_error(status::not_found("agent " + m.agent_id + " does not exist"));
          delegate(it->second.actor, fork_atom::value, std::move(source), at_seq);
          return caf::delegated<manifest>{};
        },
        [this](import_atom, manifest& m, std::vector<event>& events) -> caf::result<manifest> {
          auto it = agents_.find(m.agent_id);
          if (it == agents_.end())
            return to_error(status::not_found("agent " + m.agent_id + " does not exist"));
          delegate(it->second.actor, import_atom::value, std::move(m), std::move(events));
          return caf::delegated<manifest>{};
        },
        [this](import_atom, std::vector<tick>& threads) -> caf::result<std::vector<manifest>> {
          // One agent writes them all, so that one journal request holds the whole import.
          if (threads.empty()) return std::vector<manifest>{};
          const std::string& agent = threads.front().manifest.agent_id;
          for (size_t i = 1; i < threads.size(); ++i)
            if (threads[i].manifest.agent_id != agent)
              return to_error(status::invalid_input("thread " + std::to_string(i + 1) + " of " +
                                                    std::to_string(threads.size()) + ": manifest.agent_id: " +
                                                    threads[i].manifest.agent_id + " differs from " + agent +
                                                    "; one import writes the threads of one agent"));
          auto it = agents_.find(agent);
          if (it == agents_.end()) return to_error(status::not_found("agent " + agent + " does not exist"));
          delegate(it->second.actor, import_atom::value, std::move(threads));
          return caf::delegated<std::vector<manifest>>{};
        },
        [this](delete_atom, std::string& id) -> caf::result<void> { return erase(id); },
        [this](freeze_atom, std::string& id, bool on) -> caf::result<bool> { return freeze(id, on); },
        [this](stop_atom, thread_filter& f) { stop_selected(f); },
        [this](retire_atom, std::string& id, int64_t before_ms) -> caf::result<bool> { return retire(id, before_ms); },
        [this](caf::get_atom, stats_atom) { return stats(); },
        [this](caf::close_atom) -> caf::result<void> { return close(); },
    };
  }

 private:
  void load_agent(const agent_config& a) {
    agent_spec_ptr spec;
    if (status s = build_agent_spec(a, config_.reg, *config_.timers, &spec); !s)
      spec = unavailable_agent_spec(a, s.message());
    agents_[a.id] = agent_entry{spec, spawn_agent_actor(home_system(), spec, ctx_)};
  }

  // The agent's spec with the thread's engine_config patch (manifest.config)
  // merged onto its engine config: an engine of the thread's own. A patch the
  // factory refuses makes every run of the thread fail, saying why.
  agent_spec_ptr thread_spec(const agent_spec& agent, const std::string& patch, const std::string& thread) {
    agent_config config = agent.config;
    std::string merged;
    status s = check_thread_engine_patch(config.engine, patch);
    if (s) s = merge_patch(config.engine_config, patch, &merged);
    agent_spec_ptr spec;
    if (s) {
      config.engine_config = merged;
      s = build_agent_spec(config, config_.reg, *config_.timers, &spec);
    }
    if (!s) return unavailable_agent_spec(agent.config, "thread " + thread + " engine_config: " + s.message());
    return spec;
  }

  // Another node leads these threads now: their actors go at once (a run in
  // flight there could not write anyway, its partition's writes refused here),
  // as for a handoff: waiters hear "moved: ask again", subscribers an end
  // with reason "moved" (they resume through any node).
  void stop_selected(const thread_filter& f) {
    std::vector<std::string> ids;
    for (const auto& [id, e] : threads_)
      if (f.fn(id)) ids.push_back(id);
    for (const auto& id : ids) {
      auto it = threads_.find(id);
      thread_actor a = it->second.actor;
      demonitor(a.address());
      remove(it);
      request(a, caf::infinite, stop_atom::value, false, std::string{"moved"}).then([] {}, [](caf::error&) {});
    }
  }

  caf::result<thread_actor> resolve(const std::string& id) {
    if (closing_) return to_error(status::overloaded("the runtime is closing"));
    if (config_.options.serves && !config_.options.serves(id))
      return to_error(status::unavailable("thread " + id +
                                          ": this node does not lead its partition now (it moved): retry"));
    if (auto it = threads_.find(id); it != threads_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second.lru);
      return it->second.actor;
    }
    if (deleting_.count(id)) return to_error(status::not_found("thread " + id + " is being deleted"));
    if (frozen_.count(id)) return to_error(status::unavailable("thread " + id + " is moving to another node: retry shortly"));
    // The manifest is read here, not on the reader pool: measured, the round
    // trip to a reader made serial cold activations slower (skein-bench scale)
    // and concurrent ones no faster, a manifest being one point read.
    manifest m;
    if (status s = config_.log->read_manifest(id, &m); !s) return to_error(s);
    auto started = start_thread(id, std::move(m));
    if (!started) return std::move(started.error());
    return *started;
  }

  caf::expected<thread_actor> start_thread(const std::string& id, manifest m) {
    auto agent = agents_.find(m.agent_id);
    if (agent == agents_.end())
      return to_error(status::not_found("agent " + m.agent_id + " of thread " + id + " does not exist"));
    agent_spec_ptr spec = agent->second.spec;
    if (std::string patch = thread_engine_patch(m.config); !patch.empty()) spec = thread_spec(*spec, patch, m.id);
    auto actor = spawn_thread_actor(home_system(), ctx_, std::move(m), std::move(spec));
    monitor(actor);
    lru_.push_front(id);
    threads_[id] = thread_entry{actor, lru_.begin()};
    by_address_[actor.address()] = id;
    ++activations_;
    shed();
    return actor;
  }

  // Past the cap, asks the least recently used thread actors to passivate; busy
  // ones decline and are asked again when their turn comes round.
  void shed() {
    size_t over = threads_.size() > config_.options.active_threads_max
                      ? threads_.size() - config_.options.active_threads_max
                      : 0;
    for (size_t i = 0; i < over && lru_.size() > 1; ++i) {
      auto& victim = threads_[lru_.back()];
      send(victim.actor, passivate_atom::value);
      lru_.splice(lru_.begin(), lru_, victim.lru);
    }
  }

  void passivated(const std::string& id, const thread_actor& who) {
    auto it = threads_.find(id);
    if (it == threads_.end() || it->second.actor != who) return;
    demonitor(who.address());
    remove(it);
    ++passivations_;
    // glibc keeps the memory of freed actors: after a wave of passivations, hand
    // it back so that idle threads cost their manifest on disk, not RSS.
    if (++passivations_since_trim_ >= trim_after_passivations) {
      malloc_trim(0);
      passivations_since_trim_ = 0;
    }
  }

  void forget(const caf::actor_addr& who) {
    auto it = by_address_.find(who);
    if (it == by_address_.end()) return;
    auto entry = threads_.find(it->second);
    if (entry != threads_.end()) remove(entry);
    else by_address_.erase(it);
  }

  void remove(std::unordered_map<std::string, thread_entry>::iterator it) {
    by_address_.erase(it->second.actor.address());
    lru_.erase(it->second.lru);
    threads_.erase(it);
  }

  caf::result<agent_config> create_agent(agent_config a) {
    if (a.created_at_ms == 0) a.created_at_ms = now_ms();
    if (status s = validate_agent(a); !s) return to_error(s);
    std::string config;  // compared and stored minified, as the log keeps it
    if (status s = normalize_json(a.engine_config.empty() ? "{}" : a.engine_config, "agent.engine_config", &config); !s)
      return to_error(s);
    a.engine_config = std::move(config);
    if (auto it = agents_.find(a.id); it != agents_.end()) return judge(std::move(a), it->second.spec->config);
    // A creation of the same id under way: this one is judged against it once it is stored.
    if (auto c = creating_.find(a.id); c != creating_.end()) {
      auto promise = make_response_promise<agent_config>();
      c->second.push_back({std::move(a), promise});
      return promise;
    }
    agent_spec_ptr spec;
    if (status s = build_agent_spec(a, config_.reg, *config_.timers, &spec); !s) return to_error(s);
    creating_[a.id];
    auto promise = make_response_promise<agent_config>();
    request(config_.journal, caf::infinite, caf::put_atom::value, a)
        .then(
            [this, a, spec, promise]() mutable {
              auto waiting = take_creating(a.id);
              agents_[a.id] = agent_entry{spec, spawn_agent_actor(home_system(), spec, ctx_)};
              promise.deliver(a);
              for (auto& w : waiting) deliver(w.promise, judge(std::move(w.config), a));
            },
            [this, id = a.id, promise](caf::error& e) mutable {
              auto waiting = take_creating(id);
              promise.deliver(e);
              for (auto& w : waiting) w.promise.deliver(e);
            });
    return promise;
  }

  // A creation of an agent that exists: the same again is idempotent (its
  // creation time aside), another configuration a conflict.
  static caf::expected<agent_config> judge(agent_config want, const agent_config& existing) {
    want.created_at_ms = existing.created_at_ms;
    if (want == existing) return existing;
    return to_error(status::conflict("agent " + want.id + " exists with another configuration"));
  }

  static void deliver(caf::response_promise& promise, caf::expected<agent_config> result) {
    if (result) promise.deliver(std::move(*result));
    else promise.deliver(result.error());
  }

  struct waiting_creation {
    agent_config config;
    caf::response_promise promise;
  };

  std::vector<waiting_creation> take_creating(const std::string& id) {
    auto it = creating_.find(id);
    if (it == creating_.end()) return {};
    auto waiting = std::move(it->second);
    creating_.erase(it);
    return waiting;
  }

  caf::result<void> erase(const std::string& id) {
    if (status s = validate_id(id, "thread id"); !s) return to_error(s);
    if (deleting_.count(id)) return to_error(status::conflict("thread " + id + " is being deleted"));
    auto promise = make_response_promise();
    erase_then(id, [promise](const caf::error& e) mutable {
      if (e) promise.deliver(e);
      else promise.deliver(caf::unit);
    });
    return promise;
  }

  // Stops the thread's actor (if active) and erases its log; then `done`.
  void erase_then(const std::string& id, std::function<void(const caf::error&)> done) {
    deleting_.insert(id);
    auto erase_log = [this, id, done]() mutable {
      request(config_.journal, caf::infinite, erase_atom::value, id)
          .then(
              [this, id, done]() mutable {
                deleting_.erase(id);
                frozen_.erase(id);
                done(caf::error{});
              },
              [this, id, done](caf::error& e) mutable {
                deleting_.erase(id);
                done(e);
              });
    };
    auto it = threads_.find(id);
    if (it == threads_.end()) {
      erase_log();
      return;
    }
    thread_actor actor = it->second.actor;
    demonitor(actor.address());
    remove(it);
    // The actor finishes a commit in flight before it answers: nothing lands after the erase.
    request(actor, caf::infinite, stop_atom::value, false)
        .then([erase_log]() mutable { erase_log(); },
              [erase_log](caf::error&) mutable { erase_log(); });
  }

  // A cluster handoff's freeze (runtime/cluster/cluster_handoff.cpp): like retire,
  // the thread decides atomically with its runs whether it is idle; then its
  // actor stops and nothing activates it again until it is erased or unfrozen.
  caf::result<bool> freeze(const std::string& id, bool on) {
    if (status s = validate_id(id, "thread id"); !s) return to_error(s);
    if (!on) {
      frozen_.erase(id);
      return true;
    }
    if (deleting_.count(id) || closing_) return false;
    if (!frozen_.insert(id).second) return true;
    auto it = threads_.find(id);
    if (it == threads_.end()) {
      manifest m;
      status s = config_.log->read_manifest(id, &m);
      if (!s || m.status == thread_status::running) {
        frozen_.erase(id);
        if (!s) return to_error(s);
        return false;
      }
      return true;
    }
    thread_actor actor = it->second.actor;
    auto promise = make_response_promise<bool>();
    request(actor, caf::infinite, retire_atom::value, std::numeric_limits<int64_t>::max(), true)
        .then(
            [this, id, actor, promise](bool idle) mutable {
              auto now = threads_.find(id);
              if (!idle || now == threads_.end() || now->second.actor != actor) {
                // Busy, or passivated meanwhile (not frozen then: try again).
                frozen_.erase(id);
                promise.deliver(false);
                return;
              }
              demonitor(actor.address());
              remove(now);
              request(actor, caf::infinite, stop_atom::value, false, std::string{"moved"})
                  .then([promise]() mutable { promise.deliver(true); },
                        [promise](caf::error&) mutable { promise.deliver(true); });
            },
            [this, id, promise](caf::error& e) mutable {
              frozen_.erase(id);
              promise.deliver(e);
            });
    return promise;
  }

  // Retention's erase: only a thread that is idle and untouched since before
  // `before_ms`. An active thread decides itself (retire_atom), atomically with
  // its runs, and refuses inputs from then on; an inactive one has no writer, so
  // its stored manifest is current. true: erased; false: not due or busy.
  caf::result<bool> retire(const std::string& id, int64_t before_ms) {
    if (status s = validate_id(id, "thread id"); !s) return to_error(s);
    if (deleting_.count(id) || closing_) return false;
    auto promise = make_response_promise<bool>();
    auto finish = [promise](const caf::error& e) mutable {
      if (e) promise.deliver(e);
      else promise.deliver(true);
    };
    auto it = threads_.find(id);
    if (it == threads_.end()) {
      manifest m;
      status s = config_.log->read_manifest(id, &m);
      if (s.code() == errc::not_found) return false;
      if (!s) return to_error(s);
      if (m.status == thread_status::running || m.updated_at_ms >= before_ms) return false;
      erase_then(id, finish);
      return promise;
    }
    thread_actor actor = it->second.actor;
    request(actor, caf::infinite, retire_atom::value, before_ms)
        .then(
            [this, id, actor, promise, finish](bool retired) mutable {
              auto now = threads_.find(id);
              // Passivated meanwhile, or activated again: left for the next sweep.
              if (!retired || (now != threads_.end() && now->second.actor != actor) || deleting_.count(id)) {
                promise.deliver(false);
                return;
              }
              erase_then(id, finish);
            },
            [promise](caf::error& e) mutable { promise.deliver(e); });
    return promise;
  }

  // Stops every thread actor gracefully (runs end as cancelled, commits land),
  // then the agent actors; answers when all thread actors are gone.
  caf::result<void> close() {
    closing_ = true;
    auto promise = make_response_promise();
    auto left = std::make_shared<size_t>(threads_.size());
    auto finish = [this, promise]() mutable {
      for (auto& [id, a] : agents_) send_exit(a.actor, caf::exit_reason::user_shutdown);
      promise.deliver(caf::unit);
    };
    if (*left == 0) {
      finish();
      return promise;
    }
    std::vector<thread_actor> actors;
    for (auto& [id, e] : threads_) actors.push_back(e.actor);
    for (auto& a : actors) {
      demonitor(a.address());
      request(a, caf::infinite, stop_atom::value, true)
          .then([left, finish]() mutable { if (--*left == 0) finish(); },
                [left, finish](caf::error&) mutable { if (--*left == 0) finish(); });
    }
    threads_.clear();
    by_address_.clear();
    lru_.clear();
    return promise;
  }

  directory_stats stats() const {
    directory_stats s;
    s.active = threads_.size();
    s.activations = activations_;
    s.passivations = passivations_;
    s.agents = agents_.size();
    return s;
  }

  directory_config config_;
  std::shared_ptr<const thread_context> ctx_;
  std::shared_ptr<reader_pool> readers_;
  std::unordered_map<std::string, thread_entry> threads_;
  std::unordered_map<caf::actor_addr, std::string> by_address_;
  std::list<std::string> lru_;
  std::map<std::string, agent_entry> agents_;
  std::map<std::string, std::vector<waiting_creation>> creating_;  // creations under way, and those waiting on each
  std::set<std::string> deleting_;
  std::set<std::string> frozen_;  // handed (or being handed) to another node: never activated
  bool closing_ = false;
  uint64_t activations_ = 0;
  uint64_t passivations_ = 0;
  uint64_t passivations_since_trim_ = 0;
  static constexpr uint64_t trim_after_passivations = 16384;
};

}  // namespace

directory_actor spawn_directory(caf::actor_system& sys, directory_config config) {
  return sys.spawn<directory_impl>(std::move(config));
}

}  // namespace skein
