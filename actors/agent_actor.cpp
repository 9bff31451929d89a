#include "actors/agent_actor.hpp"
#include "runtime/model/compaction.hpp"
#include "runtime/model/engine_policy.hpp"

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/error.hpp"
#include "actors/journal.hpp"
#include "actors/work_messages.hpp"
#include "persistence/event_log.hpp"
#include "runtime/model/ids.hpp"

namespace skein {
namespace {

// Stands in for an engine an agent names but this runtime does not have: every
// run of the agent fails, loudly, instead of the runtime refusing to open.
class unavailable_engine final : public engine {
 public:
  explicit unavailable_engine(std::string why) : why_(std::move(why)) {}
  std::unique_ptr<call_handle> start(engine_request, engine_callbacks cb) override {
    cb.on_done(engine_reply{status::invalid_input(why_), false, {}});
    return nullptr;
  }

 private:
  std::string why_;
};

manifest new_manifest(const std::string& id, const agent_spec& agent, const thread_options& o, int64_t now) {
  manifest m;
  m.id = id;
  m.agent_id = agent.config.id;
  m.title = o.title;
  m.name = o.name;
  m.tags = o.tags;
  m.task_id = o.task_id;
  if (!o.parent_thread_id.empty()) {
    m.parent = parent_kind::thread;
    m.parent_id = o.parent_thread_id;
  } else if (o.dm) {
    m.parent = parent_kind::agent;
    m.parent_id = agent.config.id;
    m.members = {{agent.config.id, member_trigger::always}};  // a DM seeds its agent
  } else if (!o.task_id.empty()) {
    m.parent = parent_kind::task;
    m.parent_id = o.task_id;
  } else {
    m.members = o.members;
  }
  // Per-thread overrides (manifest.config): the mid-run policy, the engine patch.
  std::string config = "{";
  if (o.policy) config += std::string(R"("mid_run":")") + std::string{to_string(*o.policy)} + "\"";
  if (!o.engine_config.empty() && o.engine_config != "{}") {
    std::string patch;  // kept as given, nulls too: a null removes the agent's setting
    if (normalize_json(o.engine_config, "engine_config", &patch).is_ok()) {  // validated by the caller
      if (config.size() > 1) config += ',';
      config += "\"engine_config\":" + patch;
    }
  }
  if (config.size() > 1) m.config = config + "}";
  m.created_at_ms = m.updated_at_ms = now;  // the runtime's wall clock: retention ages threads by it
  return m;
}

// Checks that `at_seq` closes every run it contains; the fork's log must not
// start inside a run.
status check_fork_point(const std::vector<event>& events, uint64_t at_seq) {
  std::string open_run;
  uint64_t open_at = 0;
  for (const auto& e : events) {
    if (e.type != event_type::signal) continue;
    if (e.name == "thread.start") {
      open_run = e.run_id;
      open_at = e.seq;
    } else if (e.name == "thread.stop") {
      open_run.clear();
    }
  }
  if (!open_run.empty())
    return status::invalid_input("at_seq: " + std::to_string(at_seq) + " falls inside run " + open_run +
                                 " (started at seq " + std::to_string(open_at) +
                                 "); fork at a run boundary");
  return status::ok();
}

class agent_impl : public agent_actor::base {
 public:
  agent_impl(caf::actor_config& cfg, agent_spec_ptr spec, std::shared_ptr<const thread_context> ctx)
      : agent_actor::base(cfg), spec_(std::move(spec)), ctx_(std::move(ctx)) {}

  const char* name() const override { return "skein.agent"; }

  int64_t wall_now() const { return ctx_->options.wall_clock ? ctx_->options.wall_clock() : now_ms(); }

  behavior_type make_behavior() override {
    return {
        [this](create_atom, thread_options& o) -> caf::result<manifest> { return create(std::move(o)); },
        [this](fork_atom, std::string& source, uint64_t at_seq) -> caf::result<manifest> {
          return fork(source, at_seq);
        },
        [this](import_atom, manifest& m, std::vector<event>& events) -> caf::result<manifest> {
          return import(std::move(m), std::move(events));
        },
        [this](import_atom, std::vector<tick>& threads) -> caf::result<std::vector<manifest>> {
          return import_all(std::move(threads));
        },
        [this](fire_atom, trigger_firing& f) -> caf::result<manifest> { return fire(std::move(f)); },
        [this](work_atom, work_birth& b) -> caf::result<manifest> { return create_item(std::move(b)); },
        [this](delegate_atom, delegation_child& c) -> caf::result<manifest> { return spawn_child(std::move(c)); },
    };
  }

 private:
  caf::result<manifest> create(thread_options o) {
    if (o.agent_id.empty()) o.agent_id = spec_->config.id;
    if (status s = validate_thread_options(o); !s) return to_error(s);
    if (o.agent_id != spec_->config.id)
      return to_error(status::invalid_input("agent_id: thread options name agent " + o.agent_id +
                                            ", not " + spec_->config.id));
    if (status s = check_thread_engine_patch(spec_->config.engine, o.engine_config); !s) return to_error(s);
    auto promise = make_response_promise<manifest>();
    if (o.parent_thread_id.empty()) {
      write(new_manifest(mint_thread_id(ctx_->options, now_ms()), *spec_, o, wall_now()), {}, promise);
      return promise;
    }
    // A child's id is minted by its parent, the single writer of the parent's counter.
    request(ctx_->directory, caf::infinite, resolve_atom::value, o.parent_thread_id)
        .then(
            [this, o, promise](thread_actor& parent) mutable {
              request(parent, caf::infinite, mint_child_atom::value)
                  .then([this, o, promise](std::string& id) mutable { write(new_manifest(id, *spec_, o, wall_now()), {}, promise); },
                        [promise](caf::error& e) mutable { promise.deliver(e); });
            },
            [promise](caf::error& e) mutable { promise.deliver(e); });
    return promise;
  }

  // A work item's creation tick: the thread with manifest.work, the work.created
  // signal as its first event, and the item's rows (work row, created_thread).
  caf::result<manifest> create_item(work_birth b) {
    if (b.options.agent_id.empty()) b.options.agent_id = spec_->config.id;
    if (status s = validate_thread_options(b.options); !s) return to_error(s);
    if (status s = validate_id(b.thread_id, "thread id"); !s) return to_error(s);
    int64_t now = wall_now();
    manifest m = new_manifest(std::move(b.thread_id), *spec_, b.options, now);
    m.work = std::move(b.item);
    event e = make_signal("work.created", std::move(b.signal_data));
    e.seq = 1;
    e.ts_ms = now;
    tick t;
    t.thread_id = m.id;
    t.create = true;
    t.events.push_back(std::move(e));
    t.manifest = m;
    if (b.rows) t.side_rows = b.rows(m, 1);
    auto promise = make_response_promise<manifest>();
    commit(std::move(t), promise);
    return promise;
  }

  // The creation tick holds the input (inbox order 1) and the schedule's rows:
  // the firing and its thread are durable together or not at all.
  caf::result<manifest> fire(trigger_firing f) {
    f.options.agent_id = spec_->config.id;
    if (status s = validate_thread_options(f.options); !s) return to_error(s);
    if (status s = check_thread_engine_patch(spec_->config.engine, f.options.engine_config); !s) return to_error(s);
    if (status s = validate_id(f.thread_id, "thread id"); !s) return to_error(s);
    manifest m = new_manifest(f.thread_id, *spec_, f.options, wall_now());
    m.parent = parent_kind::schedule;
    m.parent_id = f.schedule_id;
    return create_with_input(std::move(m), std::move(f.input), std::move(f.rows));
  }

  // As fire: the child and its question are durable together or not at all.
  caf::result<manifest> spawn_child(delegation_child c) {
    if (status s = validate_id(c.thread_id, "thread id"); !s) return to_error(s);
    if (status s = validate_input(c.input); !s) return to_error(s);
    thread_options o;
    o.agent_id = spec_->config.id;
    o.parent_thread_id = c.parent_id;
    manifest m = new_manifest(c.thread_id, *spec_, o, wall_now());
    m.depth = c.depth;
    return create_with_input(std::move(m), std::move(c.input), {});
  }

  // One tick: the new thread `m` with `input` first in its inbox, and `rows`.
  // The caller wakes the thread (as open does) once this answers.
  caf::result<manifest> create_with_input(manifest m, run_input input, std::vector<schedule_row> rows) {
    tick t;
    t.thread_id = m.id;
    t.create = true;
    t.manifest = m;
    t.inbox_put.emplace_back(1, std::move(input));
    t.side_rows = std::move(rows);
    auto promise = make_response_promise<manifest>();
    commit(std::move(t), promise);
    return promise;
  }

  caf::result<manifest> fork(const std::string& source, uint64_t at_seq) {
    manifest src;
    if (status s = ctx_->log->read_manifest(source, &src); !s) return to_error(s);
    if (at_seq == 0 || at_seq > src.last_seq)
      return to_error(status::invalid_input("at_seq: must be between 1 and " + std::to_string(src.last_seq)));
    std::vector<event> events;
    if (status s = ctx_->log->read_events(source, 1, at_seq, &events); !s) return to_error(s);
    if (status s = check_fork_point(events, at_seq); !s) return to_error(s);
    thread_options o;
    o.agent_id = spec_->config.id;
    o.title = src.title;
    o.name = src.name;
    o.tags = src.tags;
    manifest m = new_manifest(mint_thread_id(ctx_->options, now_ms()), *spec_, o, wall_now());
    m.config = src.config;
    for (const auto& e : events) {
      if (e.type != event_type::result) continue;
      m.usage += e.usage;
      m.cost_usd += e.cost_usd;
    }
    auto promise = make_response_promise<manifest>();
    write(std::move(m), std::move(events), promise);
    return promise;
  }

  // What every imported manifest gets, whatever its source said.
  status check_import(manifest& m) const {
    if (m.agent_id != spec_->config.id)
      return status::invalid_input("manifest.agent_id: " + m.agent_id + " is not " + spec_->config.id);
    if (m.status == thread_status::running) {  // nothing drives an imported run
      m.status = thread_status::failed;
      m.last_outcome = run_outcome::failed;
    }
    if (m.created_at_ms == 0) m.created_at_ms = now_ms();
    if (m.updated_at_ms == 0) m.updated_at_ms = m.created_at_ms;
    m.children_count = 0;
    return status::ok();
  }

  caf::result<manifest> import(manifest m, std::vector<event> events) {
    if (status s = check_import(m); !s) return to_error(s);
    auto promise = make_response_promise<manifest>();
    write(std::move(m), std::move(events), promise);
    return promise;
  }

  // One journal request for all of them: a refusal of any writes none.
  caf::result<std::vector<manifest>> import_all(std::vector<tick> threads) {
    for (size_t i = 0; i < threads.size(); ++i) {
      tick& t = threads[i];
      if (status s = check_import(t.manifest); !s)
        return to_error(status(s.code(), "thread " + std::to_string(i + 1) + " of " +
                                             std::to_string(threads.size()) + ": " + s.message()));
      t.thread_id = t.manifest.id;
      t.create = true;
      t.bulk = true;
      t.manifest.compaction_seq = latest_compaction_seq(t.events);  // whatever the source said
    }
    auto promise = make_response_promise<std::vector<manifest>>();
    std::vector<manifest> out;
    out.reserve(threads.size());
    for (const auto& t : threads) out.push_back(t.manifest);
    request(ctx_->journal, caf::infinite, commit_all_atom::value, std::move(threads))
        .then(
            [out = std::move(out), promise](std::vector<uint64_t>& seqs) mutable {
              for (size_t i = 0; i < out.size() && i < seqs.size(); ++i) out[i].last_seq = seqs[i];
              promise.deliver(std::move(out));
            },
            [promise](caf::error& e) mutable { promise.deliver(e); });
    return promise;
  }

  void write(manifest m, std::vector<event> events, caf::typed_response_promise<manifest> promise) {
    tick t;
    t.thread_id = m.id;
    t.create = true;
    t.bulk = !events.empty();
    t.events = std::move(events);
    // Forks and imports: the working view starts at the copy's latest compaction.
    m.compaction_seq = latest_compaction_seq(t.events);
    t.manifest = std::move(m);
    commit(std::move(t), promise);
  }

  // Commits a creation tick; answers its manifest with the log's last seq.
  void commit(tick t, caf::typed_response_promise<manifest> promise) {
    manifest m = t.manifest;
    request(ctx_->journal, caf::infinite, commit_atom::value, std::move(t))
        .then(
            [m = std::move(m), promise](uint64_t last_seq) mutable {
              m.last_seq = last_seq;
              promise.deliver(m);
            },
            [promise](caf::error& e) mutable { promise.deliver(e); });
  }

  agent_spec_ptr spec_;
  std::shared_ptr<const thread_context> ctx_;
};

}  // namespace

tool_spec ask_agent_spec(const agent_config& config) {
  std::string agents;
  for (const auto& a : config.delegation.agents) agents += (agents.empty() ? "" : ", ") + a;
  tool_spec s;
  s.name = std::string{ask_agent_tool_name};
  s.description = "Ask another agent a question; its answer is this call's result. Agents you may ask: " + agents;
  s.schema_json =
      R"({"type":"object","properties":{"agent":{"type":"string","description":"the id of the agent to ask"},)"
      R"("question":{"type":"string","description":"what to ask it"}},"required":["agent","question"],)"
      R"("additionalProperties":false})";
  return s;
}

std::shared_ptr<tool> agent_spec::find_tool(std::string_view name) const {
  for (const auto& t : tools)
    if (t->spec().name == name) return t;
  return nullptr;
}

status build_agent_spec(const agent_config& config, const registry& reg, timer_service& timers,
                        agent_spec_ptr* out) {
  SKEIN_TRY(validate_agent(config));
  auto spec = std::make_shared<agent_spec>();
  spec->config = config;
  for (const auto& name : config.tools) {
    if (name == ask_agent_tool_name)
      return status::invalid_input("agent.tools: 'ask_agent' is built in (agent.delegation), not a registered tool");
    auto it = reg.tools.find(name);
    if (it == reg.tools.end())
      return status::invalid_input("agent.tools: no tool named '" + name + "' is registered");
    spec->tools.push_back(it->second);
    spec->tool_specs.push_back(it->second->spec());
  }
  if (!config.delegation.agents.empty()) spec->tool_specs.push_back(ask_agent_spec(config));
  auto factory = reg.engines.find(config.engine);
  if (factory == reg.engines.end())
    return status::invalid_input("agent.engine: no engine named '" + config.engine + "' is registered");
  status s;
  try {  // host code: an engine factory that throws refuses the agent, nothing more
    s = factory->second(config.engine_config, timers, &spec->engine);
  } catch (const std::exception& e) {
    std::string what = e.what();
    if (what.size() > 200) what.resize(200);
    s = status::invalid_input("the engine factory threw: " + what);
  } catch (...) {
    s = status::invalid_input("the engine factory threw a non-standard exception");
  }
  if (!s) return status::invalid_input("agent.engine_config: " + s.message());
  if (!spec->engine) return status::invalid_input("agent.engine_config: the engine factory built no engine");
  if (!config.effects.embedder.empty()) {
    auto ef = reg.embedders.find(config.effects.embedder);
    if (ef == reg.embedders.end())
      return status::invalid_input("agent.effects.embedder: no embedder named '" + config.effects.embedder +
                                   "' is registered");
    try {  // host code, as above
      s = ef->second(config.effects.embedder_config, timers, &spec->embedder);
    } catch (const std::exception& e) {
      std::string what = e.what();
      if (what.size() > 200) what.resize(200);
      s = status::invalid_input("the embedder factory threw: " + what);
    } catch (...) {
      s = status::invalid_input("the embedder factory threw a non-standard exception");
    }
    if (!s) return status::invalid_input("agent.effects.embedder_config: " + s.message());
    if (!spec->embedder)
      return status::invalid_input("agent.effects.embedder_config: the embedder factory built no embedder");
  }
  *out = std::move(spec);
  return status::ok();
}

// For agents loaded from the log whose engine or tools are gone from this runtime.
agent_spec_ptr unavailable_agent_spec(const agent_config& config, const std::string& why) {
  auto spec = std::make_shared<agent_spec>();
  spec->config = config;
  spec->engine = std::make_shared<unavailable_engine>("agent " + config.id + " cannot run: " + why);
  return spec;
}

agent_actor spawn_agent_actor(caf::actor_system& sys, agent_spec_ptr spec,
                              std::shared_ptr<const thread_context> ctx) {
  return sys.spawn<agent_impl>(std::move(spec), std::move(ctx));
}

}  // namespace skein
