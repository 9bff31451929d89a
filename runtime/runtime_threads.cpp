// skein::runtime's agents and threads: agents as the directory knows them; a
// thread's creation (one, or many sharing the journal's writes), its house
// members, the task and DM threads a claim finds, reading, titling, forking,
// importing and deleting it. Each goes to the owner node when another node
// owns the thread (runtime::impl::route, runtime_cluster.cpp).
#include <caf/all.hpp>
#include <unordered_map>

#include "actors/caller.hpp"
#include "actors/error.hpp"
#include "actors/messages.hpp"
#include "runtime/model/ids.hpp"
#include "runtime/model/text.hpp"
#include "runtime/runtime.hpp"
#include "runtime/runtime_impl.hpp"
#include "runtime/work/work_service.hpp"

namespace skein {

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
  if (c == nullptr || (!impl_->replicated && c->self() == c->coordinator())) return here(std::move(options));
  // An agent this node missed (it was down when the agent was written) is
  // fetched from the coordinator, and the creation tried once more.
  status s = here(options);
  if (s.code() != errc::not_found) return s;
  // Not known here is no answer while the coordinator cannot be asked.
  status synced = impl_->sync_agents(options.agent_id);
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

}  // namespace skein
