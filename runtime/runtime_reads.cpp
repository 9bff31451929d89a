// skein::runtime's reads: a thread's history in a view, its raw rows, its live
// events (a subscription: a sink actor here, or a relay from the owner node),
// and memory search over an agent's messages.
#include <caf/all.hpp>
#include <mutex>

#include "actors/caller.hpp"
#include "actors/error.hpp"
#include "actors/messages.hpp"
#include "actors/published_event.hpp"
#include "actors/thread_actor.hpp"
#include "runtime/host_sink.hpp"
#include "runtime/model/conversation.hpp"
#include "runtime/model/ids.hpp"
#include "runtime/runtime.hpp"
#include "runtime/runtime_impl.hpp"

namespace skein {

status runtime::memory_search(const std::string& agent_id, const std::string& query, size_t k,
                              std::vector<memory_hit>* out) {
  SKEIN_TRY(impl_->check_open());
  if (impl_->cluster) return impl_->search_cluster(agent_id, query, k, out);
  return impl_->memory->search_wait(agent_id, query, k, out);
}

memory_index& runtime::memory() { return impl_->memory->index(); }

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

}  // namespace skein
