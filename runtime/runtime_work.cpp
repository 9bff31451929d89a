// The runtime's work-item calls (runtime.hpp): each checks that the runtime is
// open and hands over to the work service (work_service.hpp).
//
// In a cluster an agent's work has a home: the node owning its work home key
// (work_home_key, a hash of the agent id). Its items' thread ids lead with
// that key (work_item_id), so cluster_key() routes every item of the agent to
// the home and a membership change moves them together; its sessions and
// suggestions are stored there too. So a call by agent (create and its dedup,
// list, resolve by text, sweep, sessions, suggestions) goes to the home, a
// call by item id to the item's node (the same one), and the knowledge-graph
// lenses, which cross agents, gather every node's triples. A membership
// change moves an agent's work with its items (release_work, hand_work).
#include <algorithm>
#include <tuple>

#include "runtime/model/cluster.hpp"
#include "runtime/model/ids.hpp"
#include "runtime/runtime.hpp"
#include "runtime/runtime_impl.hpp"
#include "runtime/work/work_service.hpp"

namespace skein {
namespace {

// What a node takes in one message of an agent's work rows.
constexpr size_t work_adopt_bytes_max = 64 << 20;

// Merged triples in one order whichever node holds them: `first` (a lens's
// node) as subject before as object, then by subject, predicate, object.
void order_triples(std::vector<work_triple>* all, const std::string& first, size_t limit) {
  std::sort(all->begin(), all->end(), [&](const work_triple& a, const work_triple& b) {
    return std::forward_as_tuple(a.subject != first, a.subject, a.predicate, a.object, a.thread_id, a.seq) <
           std::forward_as_tuple(b.subject != first, b.subject, b.predicate, b.object, b.thread_id, b.seq);
  });
  if (all->size() > limit) all->resize(limit);
}

}  // namespace

status runtime::impl::route_work(const std::string& key, std::string* node) const {
  node->clear();
  if (!cluster) return status::ok();
  auto v = cluster->view();
  const std::string& self = cluster->self();
  std::string a;
  SKEIN_TRY(owner_of(key, &a));
  const std::string& t = v->changing() ? v->target_ring.owner_id(key) : a;
  if (t != a && a == self) {
    if (!marked(key)) return status::ok();  // not released yet: served here
    bool handed = false;
    {
      std::lock_guard lock{marks_mu};
      handed = work_handed.count(key) > 0;
    }
    if (!handed) return status::unavailable("the work under key " + key + " is moving to node " + t + ": retry shortly");
    *node = t;  // the target serves what a forwarded call asks (serving_edge)
    return status::ok();
  }
  if (t != a && t == self) {
    if (!cluster_link::serving_edge()) *node = a;  // the active owner knows whether it was handed
    return status::ok();
  }
  if (a != self) *node = a;
  if (!node->empty() && cluster_link::serving_edge())
    return status::unavailable("node " + self + " is not the work home of key " + key + " (by its member list, " +
                               *node + " is): the nodes' cluster files differ");
  return status::ok();
}

std::shared_mutex& runtime::impl::gate_of(const std::string& key) {
  std::lock_guard lock{work_gates_mu};
  auto& slot = work_gates[key];
  if (!slot) slot = std::make_unique<std::shared_mutex>();
  return *slot;
}

status runtime::impl::work_node(const std::string& key, std::string* node, work_gate* gate) {
  node->clear();
  SKEIN_TRY(check_open());
  if (!cluster || key.empty()) return status::ok();
  *gate = work_gate{gate_of(key)};  // before the route: a mark made after it waits for this call
  SKEIN_TRY(route_work(key, node));
  if (!node->empty()) gate->unlock();  // forwarded: nothing here to hold
  return status::ok();
}

status runtime::impl::agent_work_node(const std::string& agent_id, std::string* node, work_gate* gate) {
  node->clear();
  SKEIN_TRY(check_open());
  if (!cluster) return status::ok();
  SKEIN_TRY(validate_id(agent_id, "agent_id"));
  return work_node(work_home_key(agent_id), node, gate);
}

status runtime::impl::item_node(const std::string& thread_id, std::string* node) const {
  node->clear();
  SKEIN_TRY(check_open());
  if (!cluster) return status::ok();
  SKEIN_TRY(validate_id(thread_id, "thread id"));
  return route(thread_id, node);
}

status runtime::impl::release_work(const cluster_view& v, std::vector<std::pair<std::string, std::string>>* moving) {
  moving->clear();
  std::vector<std::string> agents;
  SKEIN_TRY(log->work_agents(&agents));
  for (const auto& agent : agents) {
    std::string key = work_home_key(agent);
    const std::string& to = v.target_ring.owner_id(key);
    if (to == cluster->self()) continue;
    // Marked durably first: from now on calls for the agent's work answer
    // "moving" here until it is handed, then go to its new home. Then the
    // calls in flight end (their rows are written) before anything moves.
    SKEIN_TRY(mark(key, to));
    std::unique_lock drained{gate_of(key)};
    moving->emplace_back(agent, to);
  }
  return status::ok();
}

status runtime::impl::hand_work(const std::vector<std::pair<std::string, std::string>>& moving, uint64_t* moved) {
  for (const auto& [agent_id, to] : moving) {
    const std::string& agent = agent_id;  // a lambda below takes it (clang: no structured binding captures)
    if (pass_stop) return status::unavailable("node " + cluster->self() + " is closing");
    std::vector<log_row> rows;
    SKEIN_TRY(log->agent_work_rows(agent, &rows));
    // Each part is written as it comes (the rows are the agent's own, and no
    // call writes them there before the handoff ends); erased here after the last.
    for (auto& part : handoff_parts(std::move(rows)))
      SKEIN_TRY(cluster->call(to, [](bool) {}, work_atom::value, adopt_atom::value, agent, std::move(part)));
    SKEIN_TRY(journal_run(*sys, actors.journal, [&agent](event_log& l) { return l.erase_agent_work(agent); }));
    std::lock_guard lock{marks_mu};
    work_handed.insert(work_home_key(agent));
    ++*moved;
  }
  return status::ok();
}

status runtime::impl::adopt_work(const std::string& agent_id, std::vector<log_row> rows) {
  size_t bytes = 0;
  for (const auto& r : rows) bytes += r.key.size() + r.value.size();
  if (bytes > work_adopt_bytes_max)
    return status::invalid_input("handoff of agent " + agent_id + "'s work: " + std::to_string(bytes) +
                                 " bytes in one part, more than work_adopt_bytes_max (" +
                                 std::to_string(work_adopt_bytes_max) + ")")
        .with_field("rows")
        .with_limit("work_adopt_bytes_max");
  return journal_run(*sys, actors.journal, [&](event_log& l) { return l.adopt_agent_work(agent_id, rows); });
}

#define SKEIN_WORK(call)                                                      \
  do {                                                                        \
    work_service* w = works();                                                \
    if (w == nullptr) return status::io_error("the runtime is closed");       \
    return w->call;                                                           \
  } while (false)

// A call by agent: on its work home (the key's gate held while it runs here).
#define SKEIN_WORK_OF(agent, call, ...)                                \
  do {                                                                 \
    std::string node;                                                  \
    runtime::impl::work_gate gate;                                     \
    SKEIN_TRY(impl_->agent_work_node(agent, &node, &gate));            \
    if (!node.empty()) return impl_->ask_work(node, out, __VA_ARGS__); \
    SKEIN_WORK(call);                                                  \
  } while (false)

status runtime::create_item(const work_create& in, work_create_result* out) {
  SKEIN_WORK_OF(in.agent_id, create_item(in, out), create_atom::value, in);
}
status runtime::touch_item(const std::string& thread_id, work_entry* out) {
  std::string node;
  SKEIN_TRY(impl_->item_node(thread_id, &node));
  if (!node.empty()) return impl_->ask_item(node, out, touch_atom::value, thread_id);
  SKEIN_WORK(touch_item(thread_id, out));
}
status runtime::resolve_item(const work_resolve& in, work_entry* out) {
  if (in.thread_id.empty()) SKEIN_WORK_OF(in.agent_id, resolve_item(in, out), item_resolve_atom::value, in);
  std::string node;
  SKEIN_TRY(impl_->item_node(in.thread_id, &node));
  if (!node.empty()) return impl_->ask_item(node, out, item_resolve_atom::value, in);
  SKEIN_WORK(resolve_item(in, out));
}
status runtime::relate_item(const std::string& thread_id, const std::string& issue_id, work_entry* out) {
  std::string node;
  SKEIN_TRY(impl_->item_node(thread_id, &node));
  if (!node.empty()) return impl_->ask_item(node, out, relate_atom::value, thread_id, issue_id);
  SKEIN_WORK(relate_item(thread_id, issue_id, out));
}
status runtime::get_item(const std::string& thread_id, work_entry* out) {
  std::string node;
  SKEIN_TRY(impl_->item_node(thread_id, &node));
  if (!node.empty()) return impl_->ask_item(node, out, caf::get_atom::value, thread_id);
  SKEIN_WORK(get_item(thread_id, out));
}
status runtime::list_items(const work_list_query& query, work_list_page* out) {
  SKEIN_WORK_OF(query.agent_id, list_items(query, out), list_atom::value, query);
}
status runtime::sweep_items(const work_sweep_options& options, work_sweep_result* out) {
  if (!options.agent_id.empty()) SKEIN_WORK_OF(options.agent_id, sweep_items(options, out), work_sweep_atom::value, options);
  SKEIN_TRY(impl_->check_open());
  if (!impl_->cluster || cluster_link::serving_edge()) SKEIN_WORK(sweep_items(options, out));
  // Every agent: each node sweeps the items it holds.
  std::vector<work_sweep_result> each;
  SKEIN_TRY(cluster_gather(*impl_->cluster, &each, [&](work_sweep_result* r) {
    work_service* w = works();
    return w == nullptr ? status::io_error("the runtime is closed") : w->sweep_items(options, r);
  }, work_atom::value, work_sweep_atom::value, options));
  *out = {};
  for (auto& r : each) {
    out->examined += r.examined;
    for (auto& id : r.dormant) out->dormant.push_back(std::move(id));
    for (auto& id : r.archived) out->archived.push_back(std::move(id));
  }
  return status::ok();
}

// The graph lenses: every node's triples (a lens's local part answers the
// edge's call, graph_local), merged in one order.
status runtime::impl::graph_local(uint8_t lens, const std::string& node, size_t limit, const work_graph_filter& filter,
                                  std::vector<work_triple>* out) {
  if (!work) return status::io_error("the runtime is closed");
  switch (lens) {
    case 0: return work->graph_connected_to(node, limit, out, filter);
    case 1: return work->graph_produced_by(node, limit, out, filter);
    case 2: return work->graph_into(node, limit, out, filter);
    default: return status::invalid_input("lens: " + std::to_string(lens) + " is no graph lens (0..2)").with_field("lens");
  }
}

status runtime::impl::graph_cluster(uint8_t lens, const std::string& node, size_t limit,
                                    const work_graph_filter& filter, std::vector<work_triple>* out) {
  SKEIN_TRY(check_open());
  if (!cluster || cluster_link::serving_edge()) return graph_local(lens, node, limit, filter, out);
  std::vector<std::vector<work_triple>> each;
  SKEIN_TRY(cluster_gather(
      *cluster, &each, [&](std::vector<work_triple>* r) { return graph_local(lens, node, limit, filter, r); },
      work_atom::value, graph_atom::value, lens, node, uint64_t{limit}, filter));
  out->clear();
  for (auto& part : each)
    for (auto& t : part) out->push_back(std::move(t));
  order_triples(out, lens == 0 ? node : std::string{}, limit);
  return status::ok();
}

status runtime::graph_connected_to(const std::string& node, size_t limit, std::vector<work_triple>* out,
                                   const work_graph_filter& filter) {
  return impl_->graph_cluster(0, node, limit, filter, out);
}
status runtime::graph_produced_by(const std::string& agent_id, size_t limit, std::vector<work_triple>* out,
                                  const work_graph_filter& filter) {
  return impl_->graph_cluster(1, agent_id, limit, filter, out);
}
status runtime::graph_provenance(const std::string& node, size_t depth, size_t limit, std::vector<work_triple>* out,
                                 const work_graph_filter& filter) {
  SKEIN_TRY(impl_->check_open());
  work_service::graph_hop hop;  // each hop over every node
  if (impl_->cluster)
    hop = [this, &filter](const std::string& n, size_t l, std::vector<work_triple>* in) {
      return impl_->graph_cluster(2, n, l, filter, in);
    };
  SKEIN_WORK(graph_provenance(node, depth, limit, out, filter, hop));
}
status runtime::graph_stats(work_graph_stats* out, const std::string& project) {
  SKEIN_TRY(impl_->check_open());
  if (!impl_->cluster || cluster_link::serving_edge()) SKEIN_WORK(graph_stats(out, project));
  // Every node's part, merged (work_graph.hpp: exact counts and tops).
  work_graph_tally tally;
  for (const auto& m : impl_->cluster->view()->everyone()) {
    work_graph_stats st;
    work_graph_shared part;
    if (m.id == impl_->cluster->self()) {
      work_service* w = works();
      if (w == nullptr) return status::io_error("the runtime is closed");
      SKEIN_TRY(w->graph_stats(&st, project, &part));
    } else {
      SKEIN_TRY(impl_->cluster->call(m.id, [&](work_graph_stats& s, work_graph_shared& p) {
        st = std::move(s);
        part = std::move(p);
      }, work_atom::value, graph_stats_atom::value, project));
    }
    tally.merge(st, part);
  }
  *out = tally.stats();
  return status::ok();
}
status runtime::list_suggestions(const std::string& agent_id, bool all, std::vector<work_suggestion>* out) {
  SKEIN_WORK_OF(agent_id, list_suggestions(agent_id, all, out), suggest_atom::value, agent_id, all);
}

// A suggestion's id leads with its agent's work home key (work_suggestion_id);
// one minted before that is looked for here.
#define SKEIN_SUGGESTION(id, call, ...)                                             \
  do {                                                                              \
    std::string node;                                                               \
    runtime::impl::work_gate gate;                                                  \
    SKEIN_TRY(impl_->work_node(std::string{work_home_key_of(id)}, &node, &gate));   \
    if (!node.empty()) return impl_->ask_work(node, out, __VA_ARGS__);              \
    SKEIN_WORK(call);                                                               \
  } while (false)

status runtime::promote_suggestion(const std::string& suggestion_id, work_create_result* out,
                                   const std::string& project) {
  SKEIN_SUGGESTION(suggestion_id, promote_suggestion(suggestion_id, project, out), promote_atom::value, suggestion_id,
                   project);
}
status runtime::dismiss_suggestion(const std::string& suggestion_id, work_suggestion* out) {
  SKEIN_SUGGESTION(suggestion_id, dismiss_suggestion(suggestion_id, out), dismiss_atom::value, suggestion_id);
}
status runtime::session_start(const work_session_start& in, work_session_started* out) {
  SKEIN_WORK_OF(in.agent_id, session_start(in, out), session_start_atom::value, in);
}
status runtime::session_close(const work_session_close& in, work_session_closed* out) {
  SKEIN_WORK_OF(in.agent_id, session_close(in, out), session_close_atom::value, in);
}

#undef SKEIN_SUGGESTION
#undef SKEIN_WORK_OF
#undef SKEIN_WORK

}  // namespace skein
