// skein::runtime as a cluster node (runtime_options::cluster): the local side
// of the calls the edge serves, agents written through the coordinator,
// listings gathered from every node, and the members' view. The forwarding of
// each thread call sits in that call (runtime.cpp): one test of remote_owner().
#include <algorithm>
#include <map>

#include "persistence/keys.hpp"
#include "runtime/model/ids.hpp"
#include "runtime/runtime_impl.hpp"

namespace skein {

bool runtime::impl::stored_here(std::string_view id) const {
  manifest m;
  return log->read_manifest(id, &m).is_ok();
}

// During a change (cluster_handoff.cpp) a thread is where its active owner
// has it, or already with its target owner. The active owner serves what it
// still has and has not marked, forwards what it no longer has to the target
// owner, and refuses what it is handing over; the target owner serves what it
// has and asks the active owner for the rest — unless the call came from
// another node (serving_edge), which ends at most three hops. Anyone else
// asks the active owner.
status runtime::impl::route(std::string_view id, std::string* node) const {
  node->clear();
  if (!cluster) return status::ok();
  auto v = cluster->view();
  const std::string& self = cluster->self();
  std::string_view key = cluster_key(id);
  std::string a;
  SKEIN_TRY(owner_of(key, &a));
  const std::string& t = v->changing() ? v->target_ring.owner_id(key) : a;
  if (t == a) {
    if (a != self) *node = a;
    return status::ok();
  }
  if (a == self) {
    bool here = stored_here(id);
    if (marked(id) && here)
      return status::unavailable("thread " + std::string{id} + " is moving to node " + t + ": retry shortly");
    if (!here) *node = t;
    return status::ok();
  }
  if (t == self) {
    if (!stored_here(id) && !cluster_link::serving_edge()) *node = a;
    return status::ok();
  }
  *node = a;
  return status::ok();
}

status runtime::impl::route_claim(const std::string& key, std::string* node) const {
  node->clear();
  if (!cluster) return status::ok();
  auto v = cluster->view();
  std::string a;
  SKEIN_TRY(owner_of(key, &a));
  if (v->changing() && v->target_ring.owner_id(key) != a)
    return status::unavailable("claim " + key + " moves to node " + v->target_ring.owner_id(key) +
                               " in the rebalance under way: retry once it is done");
  if (a != cluster->self()) *node = a;
  return status::ok();
}

status runtime::impl::route_creation(const thread_options& o, std::string* node) const {
  node->clear();
  if (!cluster) return status::ok();
  if (!o.parent_thread_id.empty()) return route(o.parent_thread_id, node);  // a child lives with its parent
  std::string key = creation_key(o);
  if (!key.empty()) return route_claim(key, node);
  // Any node may create it, with an id it owns (id_filter): one leaving the
  // cluster hands it to the first member staying.
  auto v = cluster->view();
  if (v->changing() && !v->in_target(cluster->self())) *node = v->target.front().id;
  return status::ok();
}

status runtime::impl::usage_local(const usage_query& q, usage_report* out) {
  SKEIN_TRY(check_open());
  if (!replicated) return log->query_usage(q, out);
  // Each thread's rows once: by its partition's leader.
  return log->query_usage(q, out, [this](std::string_view id) { return replicated->serves_thread(id); });
}

status runtime::impl::search_local(const std::string& agent, const std::string& query, size_t k,
                                   std::vector<memory_hit>* out) {
  SKEIN_TRY(check_open());
  SKEIN_TRY(memory->search_wait(agent, query, k, out));
  if (!replicated) return status::ok();
  // Each thread's hits once: by its partition's leader.
  std::erase_if(*out, [this](const memory_hit& h) { return !replicated->serves_thread(h.thread_id); });
  return status::ok();
}

status runtime::impl::usage_cluster(const usage_query& q, usage_report* out) {
  auto local = [&](usage_report* r) { return usage_local(q, r); };
  if (replicated) SKEIN_TRY(replicated->check_led());
  if (!q.thread_id.empty()) {  // one thread's rows live with it
    std::string owner;
    SKEIN_TRY(route(q.thread_id, &owner));
    if (owner.empty()) return local(out);
    return cluster->call(owner, [&](usage_report& r) { *out = std::move(r); }, usage_atom::value, q);
  }
  std::vector<usage_report> reports;
  SKEIN_TRY(cluster_gather(*cluster, &reports, local, usage_atom::value, q));
  std::map<std::string, usage_totals> groups;
  *out = {};
  for (auto& r : reports) {
    out->rows += r.rows;
    out->unreadable += r.unreadable;
    for (auto& g : r.groups) {
      usage_totals& t = groups[g.key];
      t.key = g.key;
      t.usage += g.usage;
      t.cost_usd += g.cost_usd;
      t.runs += g.runs;
      t.duration_ms += g.duration_ms;
    }
  }
  for (auto& [key, t] : groups) out->groups.push_back(std::move(t));
  if (out->groups.empty() && q.group_by == usage_query::group::none) out->groups.push_back({});
  return status::ok();
}

status runtime::impl::search_cluster(const std::string& agent, const std::string& query, size_t k,
                                     std::vector<memory_hit>* out) {
  // This node first: it checks the agent, the query and k before any node is asked.
  std::vector<memory_hit> mine;
  SKEIN_TRY(search_local(agent, query, k, &mine));
  if (replicated) SKEIN_TRY(replicated->check_led());
  std::vector<std::vector<memory_hit>> found;
  auto local = [&](std::vector<memory_hit>* hits) {
    *hits = std::move(mine);
    return status::ok();
  };
  SKEIN_TRY(cluster_gather(*cluster, &found, local, search_atom::value, agent, query, uint64_t{k}));
  out->clear();
  for (auto& hits : found)
    for (auto& h : hits) out->push_back(std::move(h));
  std::sort(out->begin(), out->end(), [](const memory_hit& a, const memory_hit& b) {
    if (a.score != b.score) return a.score > b.score;
    return a.thread_id != b.thread_id ? a.thread_id < b.thread_id : a.seq < b.seq;
  });
  if (out->size() > k) out->resize(k);
  return status::ok();
}

status runtime::impl::put_agent_local(agent_config config, agent_config* out) {
  agent_config created;
  SKEIN_TRY(ask(actors.directory, &created, caf::put_atom::value, std::move(config)));
  if (out != nullptr) *out = std::move(created);
  return status::ok();
}

status runtime::impl::sync_agents(const std::string& agent_id) {
  if (replicated && !agent_id.empty()) {  // the cluster's bucket has every agent
    std::string json;
    SKEIN_TRY(replicated->get_agent(agent_id, &json));
    if (json.empty()) return status::not_found("agent " + agent_id + " does not exist");
    return put_bucket_agent(json);
  }
  if (!cluster || replicated || cluster->self() == cluster->coordinator()) return status::ok();
  std::vector<agent_config> all;
  SKEIN_TRY(cluster->call(cluster->coordinator(), [&](std::vector<agent_config>& v) { all = std::move(v); },
                          agent_atom::value));
  for (auto& a : all) SKEIN_TRY(put_agent_local(std::move(a), nullptr));
  return status::ok();
}

namespace {

// A listed thread's place in its index: what a listing's cursor encodes (hex).
std::string listing_suffix(const thread_query& q, const manifest& m) {
  return q.index == thread_query::by::updated ? keys::updated_value(m.updated_at_ms) + "/" + m.id : m.id;
}

}  // namespace

status runtime::impl::list_local(const thread_query& q, thread_page* out) {
  SKEIN_TRY(check_open());
  if (!replicated) return log->list_threads(q, out);
  // A replicated node stores the partitions it follows too: it lists those it
  // leads, so that every thread is listed once, by its leader.
  out->threads.clear();
  out->unreadable.clear();
  out->next_cursor.clear();
  thread_query next = q;
  for (;;) {
    thread_page page;
    SKEIN_TRY(log->list_threads(next, &page));
    for (auto& m : page.threads) {
      if (!replicated->serves_thread(m.id)) continue;
      out->threads.push_back(std::move(m));
      if (out->threads.size() == q.limit) {
        out->next_cursor = detail::hex_encode(listing_suffix(q, out->threads.back()));
        return status::ok();
      }
    }
    for (auto& u : page.unreadable) out->unreadable.push_back(std::move(u));
    if (page.next_cursor.empty()) return status::ok();
    next.cursor = std::move(page.next_cursor);
  }
}

status runtime::impl::counts(uint64_t* threads, uint64_t* active) {
  log_usage u;
  SKEIN_TRY(check_open());
  SKEIN_TRY(log->usage(core_opts.wall_clock(), &u));
  directory_stats d;
  SKEIN_TRY(ask(actors.directory, &d, caf::get_atom::value, stats_atom::value));
  *threads = u.threads;
  *active = d.active;
  return status::ok();
}

edge_hooks runtime::impl::hooks() {
  edge_hooks h;
  h.put_agent_local = [this](agent_config c, agent_config* out) { return put_agent_local(std::move(c), out); };
  h.list_local = [this](const thread_query& q, thread_page* out) { return list_local(q, out); };
  h.counts = [this](uint64_t* t, uint64_t* a) { return counts(t, a); };
  h.usage_local = [this](const usage_query& q, usage_report* out) { return usage_local(q, out); };
  h.list_schedules_local = [this](const std::string& after, size_t limit, std::vector<schedule>* out,
                                   std::string* next) { return list_schedules_local(after, limit, out, next); };
  h.search_local = [this](std::string agent, std::string query, size_t k, std::vector<memory_hit>* out) {
    return search_local(agent, query, k, out);
  };
  h.start_pass = [this](const std::string& target) { return start_pass(target); };
  h.pass_state = [this] {
    std::lock_guard lock{pass_mu};
    return pass;
  };
  h.adopt = [this](std::string id, uint32_t part, uint32_t parts, std::vector<log_row> rows, bool* adopted) {
    return adopt(std::move(id), part, parts, std::move(rows), adopted);
  };
  h.put_claims = [this](std::vector<log_row> claims) { return put_claims(std::move(claims)); };
  h.adopt_schedule = [this](std::string id, std::vector<log_row> rows, bool* adopted) {
    return adopt_schedule(std::move(id), std::move(rows), adopted);
  };
  h.adopt_work = [this](std::string agent, std::vector<log_row> rows) { return adopt_work(agent, std::move(rows)); };
  h.graph_local = [this](uint8_t lens, const std::string& node, size_t limit, const work_graph_filter& filter,
                         std::vector<work_triple>* out) {
    SKEIN_TRY(check_open());
    return graph_local(lens, node, limit, filter, out);
  };
  h.graph_stats_local = [this](const std::string& project, work_graph_stats* out, work_graph_shared* shared) -> status {
    SKEIN_TRY(check_open());
    if (!work) return status::io_error("the runtime is closed");
    return work->graph_stats(out, project, shared);
  };
  h.commit = [this](const std::string& target) { return commit_membership(target); };
  return h;
}

status runtime::create_agent(agent_config config, agent_config* out) {
  cluster_link* c = impl_->cluster.get();
  if (c == nullptr) return impl_->put_agent_local(std::move(config), out);
  if (impl_->replicated) return impl_->put_agent_cluster(std::move(config), out);
  if (c->self() != c->coordinator()) {
    // The coordinator decides (same config: no-op; another: conflict) and writes to every node.
    agent_config decided;
    SKEIN_TRY(c->call(c->coordinator(), [&](agent_config& a) { decided = std::move(a); }, caf::put_atom::value,
                      std::move(config)));
    return impl_->put_agent_local(std::move(decided), out);
  }
  agent_config created;
  SKEIN_TRY(impl_->put_agent_local(std::move(config), &created));
  // To every other member; one that is down fetches it when it comes back (sync_agents).
  for (const auto& m : c->view()->everyone())
    if (m.id != c->self()) c->call(m.id, [](agent_config&) {}, caf::put_atom::value, created).ignore();
  if (out != nullptr) *out = std::move(created);
  return status::ok();
}

status runtime::list_threads(const thread_query& query, thread_page* out) {
  SKEIN_TRY(impl_->check_open());
  cluster_link* c = impl_->cluster.get();
  if (c == nullptr) return impl_->log->list_threads(query, out);
  // Scatter-gather: every node's first page after the cursor, merged in index
  // order; the page is the first `limit` of the merge, and its cursor (the index
  // suffix of its last thread) is valid on every node.
  if (impl_->replicated) SKEIN_TRY(impl_->replicated->check_led());  // whole or refused
  std::vector<thread_page> pages;
  SKEIN_TRY(cluster_gather(*c, &pages, [&](thread_page* page) { return impl_->list_local(query, page); }, list_atom::value,
                   query));
  const bool newest_first = query.index == thread_query::by::updated;
  auto suffix = [&](const manifest& m) { return listing_suffix(query, m); };
  std::vector<std::pair<std::string, manifest>> merged;
  bool more = false;
  out->threads.clear();
  out->unreadable.clear();
  out->next_cursor.clear();
  for (auto& page : pages) {
    more = more || !page.next_cursor.empty();
    for (auto& m : page.threads) merged.emplace_back(suffix(m), std::move(m));
    for (auto& u : page.unreadable) out->unreadable.push_back(std::move(u));
  }
  std::sort(merged.begin(), merged.end(), [&](const auto& a, const auto& b) {
    return newest_first ? a.first > b.first : a.first < b.first;
  });
  // A thread handed over between two nodes' pages (a rebalance) shows once.
  merged.erase(std::unique(merged.begin(), merged.end(),
                           [](const auto& a, const auto& b) { return a.second.id == b.second.id; }),
               merged.end());
  if (merged.size() > query.limit) {
    merged.resize(query.limit);
    more = true;
  }
  if (more && !merged.empty()) out->next_cursor = detail::hex_encode(merged.back().first);
  for (auto& [key, m] : merged) out->threads.push_back(std::move(m));
  return status::ok();
}

status runtime::cluster_members(std::vector<cluster_member_state>* out) {
  SKEIN_TRY(impl_->check_open());
  if (impl_->cluster) return impl_->cluster->members(impl_->hooks(), out);
  cluster_member_state me;
  me.self = true;
  me.state = "self";
  SKEIN_TRY(impl_->counts(&me.threads, &me.active));
  out->assign(1, std::move(me));
  return status::ok();
}

}  // namespace skein
