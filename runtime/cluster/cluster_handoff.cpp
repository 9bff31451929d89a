// A cluster's membership change: the target members, each node's pass that
// hands its threads (and claims) to their new owners, and the commit.
//
// A node keeps its active members in its own database (node rows); the cluster
// file it opens or reloads (SIGHUP) with becomes the target when it differs.
// Threads stay with their active owner until a rebalance moves them; new
// threads go straight to their target owner (cluster_link::id_filter). Where a
// thread is during the change, route() (runtime_cluster.cpp) finds out.
//
// One thread's handoff, on its old owner:
//   1. mark it (node row "node/handoff/<id>" -> new owner), durable before any
//      row leaves: from now on this node never serves it, not after a crash either;
//   2. freeze it in the directory: only if idle (the thread actor decides, as for
//      retention), then its actor stops and nothing activates it again;
//   3. read every row of it (one snapshot), send them in parts; the new owner
//      writes them in one batch (event_log::adopt_thread) and serves it from then on;
//   4. erase it here, its claims kept. The mark stays until the commit: calls
//      are forwarded.
// An agent's work moves in the same pass when its work home key changes owner
// (runtime_work.cpp): the key is marked before any thread moves, its items
// move as threads (their work rows and triples with them), then its sessions
// and suggestions.
// Schedules move in the same pass: those whose key changes owner are marked and
// released by the scheduler (they never fire here again, not after a restart)
// before any thread moves, and handed over (definition and history, written in
// one batch and armed there) once every thread has: a bound schedule fires
// into its thread on the new node. Until then their firings wait (late ones
// follow the schedule's missed policy).
// A busy thread is unmarked and tried again in a later round; a failed send
// leaves it marked and frozen (unavailable) until the rebalance is rerun, whose
// adopt finds it already there or writes it. Never two writers: the old owner
// stops (1, 2) before the new one has a row (3). The operator's rebalance, which
// drives every node's pass and the commit, is in cluster_rebalance.cpp.
#include <algorithm>
#include <caf/send.hpp>
#include <chrono>
#include <set>

#include "actors/directory.hpp"
#include "actors/journal.hpp"
#include "persistence/keys.hpp"
#include "runtime/runtime_impl.hpp"

namespace skein {
namespace {

const std::string active_row = "node/cluster/active";
const std::string previous_row = "node/cluster/previous";
const std::string mark_prefix = "node/handoff/";
// Rows of threads being handed here, buffered until their last part, at most
// (all senders together): a peer that never sends the last part cannot make
// this node hold more.
constexpr size_t adopt_buffer_bytes_max = size_t{1} << 30;
constexpr auto poll = std::chrono::milliseconds(20);

bool same_members(const std::vector<cluster_member>& a, const std::vector<cluster_member>& b) {
  return format_cluster(a) == format_cluster(b);
}

status parse_stored(const std::string& text, const std::string& row, std::vector<cluster_member>* out) {
  if (status s = parse_cluster(text, out); !s) return status::corruption("node row " + row + ": " + s.message());
  return status::ok();
}

bool has_member(const std::vector<cluster_member>& list, const std::string& id) {
  return std::any_of(list.begin(), list.end(), [&](const cluster_member& m) { return m.id == id; });
}

}  // namespace

std::vector<std::vector<log_row>> handoff_parts(std::vector<log_row> rows) {
  std::vector<std::vector<log_row>> parts;
  size_t bytes = 0;
  for (auto& r : rows) {
    size_t n = r.key.size() + r.value.size();
    if (parts.empty() || (bytes + n > handoff_part_bytes_max && !parts.back().empty())) {
      parts.emplace_back();
      bytes = 0;
    }
    bytes += n;
    parts.back().push_back(std::move(r));
  }
  return parts;
}

status runtime::impl::mark(const std::string& id, const std::string& to) {
  if (marked(id)) return status::ok();
  SKEIN_TRY(log->write_node_rows({{mark_prefix + id, to}}, {}));
  std::lock_guard lock{marks_mu};
  marks[id] = to;
  return status::ok();
}

bool runtime::impl::marked(std::string_view id) const {
  std::lock_guard lock{marks_mu};
  return marks.find(id) != marks.end();
}

status runtime::impl::load_membership() {
  std::vector<std::pair<std::string, std::string>> rows;
  SKEIN_TRY(log->read_node_rows("node/", &rows));
  std::vector<cluster_member> active, previous;
  for (const auto& [key, value] : rows) {
    if (key == active_row) SKEIN_TRY(parse_stored(value, key, &active));
    else if (key == previous_row) SKEIN_TRY(parse_stored(value, key, &previous));
    else if (key.starts_with(mark_prefix)) marks[key.substr(mark_prefix.size())] = value;
  }
  const auto& file = options.cluster.members;
  membership_stored = !active.empty();
  if (active.empty()) {
    // The first open of this database. A node joining a running cluster
    // learns its active members from a member (after the link starts:
    // learn_membership); until then, and for a new cluster, the file.
    cluster->set_view(file, {}, {});
    return status::ok();
  }
  if (!has_member(active, cluster->self()) && !has_member(file, cluster->self()))
    return status::invalid_input("node id: " + cluster->self() + " is neither an active member nor in the cluster file")
        .with_field("node_id");
  cluster->set_view(active, same_members(active, file) ? std::vector<cluster_member>{} : file, previous);
  return status::ok();
}

status runtime::impl::learn_membership() {
  if (membership_stored) return status::ok();
  const auto& file = options.cluster.members;
  std::vector<cluster_member> active;
  log_usage u;
  SKEIN_TRY(log->usage(core_opts.wall_clock(), &u));
  if (u.threads == 0) {
    for (const auto& m : file) {
      if (m.id == cluster->self()) continue;
      std::string text;
      status s = cluster->call(m.id, [&](std::string& a, std::string&) { text = std::move(a); }, members_atom::value);
      std::vector<cluster_member> theirs;
      if (s && parse_cluster(text, &theirs).is_ok()) {
        active = std::move(theirs);
        break;
      }
    }
    cluster->forget_failures();  // a member down at this open is no reason to wait a backoff later
  }
  if (active.empty()) active = file;
  SKEIN_TRY(persist_members(active, {}, {}));
  membership_stored = true;
  cluster->set_view(active, same_members(active, file) ? std::vector<cluster_member>{} : file, {});
  return status::ok();
}

status runtime::impl::persist_members(const std::vector<cluster_member>& active,
                                      const std::vector<cluster_member>& previous,
                                      std::vector<std::string> marks_done) {
  std::vector<std::pair<std::string, std::string>> puts{{active_row, format_cluster(active)}};
  std::vector<std::string> deletes;
  for (const auto& id : marks_done) deletes.push_back(mark_prefix + id);
  if (previous.empty()) deletes.push_back(previous_row);
  else puts.emplace_back(previous_row, format_cluster(previous));
  return log->write_node_rows(puts, deletes);
}

status runtime::impl::start_pass(const std::string& target) {
  auto v = cluster->view();
  if (!v->changing() || format_cluster(v->target) != target)
    return status::conflict("node " + cluster->self() + " has " +
                            (v->changing() ? "another target" : "no target (its file names its active members)") +
                            ": update its cluster file and send it SIGHUP");
  std::lock_guard lock{pass_mu};
  if (pass.phase == "moving") return status::ok();
  if (pass_thread.joinable()) pass_thread.join();
  cluster->forget_failures();  // the coordinator just reached every node: no stale backoff
  pass = {};
  pass.phase = "moving";
  pass_thread = std::thread([this, target] { run_pass(target); });
  return status::ok();
}

void runtime::impl::run_pass(std::string target) {
  auto fail = [&](const status& s) {
    std::lock_guard lock{pass_mu};
    pass.phase = "failed";
    pass.error = s.message();
  };
  auto v = cluster->view();
  const std::string self = cluster->self();
  const auto patience = std::chrono::milliseconds(std::max<uint64_t>(options.cluster.request_timeout_ms, 1000) * 4);
  auto busy_since = std::chrono::steady_clock::time_point{};
  // The schedules whose key changes owner (a bound one's key is its thread's)
  // stop firing here before any thread moves, and move once the threads have:
  // a bound schedule's new node fires into its thread there.
  std::vector<std::pair<std::string, std::string>> moving_schedules;  // id, new owner
  if (status s = release_schedules(*v, &moving_schedules); !s) return fail(s);
  // Likewise the agents whose work home moves: their keys marked before their
  // items move (as threads), their sessions and suggestions once they have.
  std::vector<std::pair<std::string, std::string>> moving_work;  // agent, new home
  if (status s = release_work(*v, &moving_work); !s) return fail(s);
  for (;;) {
    if (pass_stop) return fail(status::unavailable("node " + self + " is closing"));
    if (format_cluster(cluster->view()->target) != target)
      return fail(status::conflict("node " + self + "'s target changed during the pass"));
    // Every thread stored here whose target owner is another node. Rounds
    // repeat until one finds none (a thread listed twice, or gone, is skipped).
    std::vector<std::pair<std::string, std::string>> to_move;  // thread, new owner
    std::set<std::string> listed;  // a thread updated during the listing may show twice
    thread_query q;
    q.index = thread_query::by::updated;
    q.limit = thread_query::limit_max;
    q.archived_filter = thread_query::archived::include;
    for (;;) {
      thread_page page;
      if (status s = log->list_threads(q, &page); !s) return fail(s);
      if (!page.unreadable.empty())
        return fail(status::corruption("node " + self + ": a thread record cannot be read (" +
                                       page.unreadable.front().key + ": " + page.unreadable.front().reason +
                                       "), so it cannot move: repair or delete it, then rerun the rebalance"));
      for (const auto& m : page.threads) {
        const std::string& to = v->target_ring.owner_id(cluster_key(m.id));
        if (to != self && listed.insert(m.id).second) to_move.emplace_back(m.id, to);
      }
      if (page.next_cursor.empty()) break;
      q.cursor = page.next_cursor;
    }
    {
      std::lock_guard lock{pass_mu};
      pass.remaining = to_move.size();
    }
    if (to_move.empty()) break;
    size_t busy = 0;
    for (const auto& [id, to] : to_move) {
      if (pass_stop) return fail(status::unavailable("node " + self + " is closing"));
      handoff_outcome outcome = handoff_outcome::gone;
      uint64_t events = 0;
      if (status s = handoff(id, to, &outcome, &events); !s) return fail(s);
      std::lock_guard lock{pass_mu};
      if (outcome == handoff_outcome::busy) {
        ++busy;
        continue;
      }
      if (outcome == handoff_outcome::moved) {
        ++pass.moved;
        pass.events += events;
      }
      if (pass.remaining > 0) --pass.remaining;
    }
    if (busy == 0) continue;
    auto now = std::chrono::steady_clock::now();
    if (busy_since == std::chrono::steady_clock::time_point{}) busy_since = now;
    if (now - busy_since > patience)
      return fail(status::unavailable("node " + self + ": " + std::to_string(busy) + " threads kept running for " +
                                      std::to_string(patience.count()) + " ms: rerun the rebalance once they are idle"));
    std::this_thread::sleep_for(poll);  // busy threads: their runs end in their own time
  }
  uint64_t schedules = 0;
  status handed = hand_schedules(moving_schedules, &schedules);
  {
    std::lock_guard lock{pass_mu};
    pass.schedules = schedules;
  }
  if (!handed) return fail(handed);
  uint64_t agents = 0;
  if (status s = hand_work(moving_work, &agents); !s) return fail(s);
  uint64_t claims = 0;
  if (status s = hand_claims(*v, &claims); !s) return fail(s);
  std::lock_guard lock{pass_mu};
  pass.claims = claims;
  pass.remaining = 0;
  pass.phase = "moved";
}

status runtime::impl::handoff(const std::string& id, const std::string& to, handoff_outcome* out,
                              uint64_t* events) {
  *out = handoff_outcome::gone;
  *events = 0;
  manifest m;
  status read = log->read_manifest(id, &m);
  if (read.code() == errc::not_found) return status::ok();
  SKEIN_TRY(read);
  const bool was_marked = marked(id);
  SKEIN_TRY(mark(id, to));
  auto unmark = [&]() -> status {
    bool thawed = false;
    SKEIN_TRY(ask(actors.directory, &thawed, freeze_atom::value, id, false));
    *out = handoff_outcome::busy;
    if (was_marked) return status::ok();
    SKEIN_TRY(log->write_node_rows({}, {mark_prefix + id}));
    std::lock_guard lock{marks_mu};
    marks.erase(id);
    return status::ok();
  };
  bool frozen = false;
  SKEIN_TRY(ask(actors.directory, &frozen, freeze_atom::value, id, true));
  if (!frozen) return unmark();
  std::vector<log_row> rows;
  status got = log->thread_rows(id, &rows);
  if (got.code() == errc::not_found) return status::ok();
  SKEIN_TRY(got);
  // Inputs accepted but not yet run: the thread is not idle after all.
  if (std::any_of(rows.begin(), rows.end(), [](const log_row& r) { return r.family == log_row_inbox_family; }))
    return unmark();
  // In parts (never none: a thread has its threads row); the last one makes the
  // new owner write them all.
  std::vector<std::vector<log_row>> parts = handoff_parts(std::move(rows));
  const auto count = static_cast<uint32_t>(parts.size());
  for (uint32_t i = 0; i < count; ++i)
    SKEIN_TRY(cluster->call(to, [](bool) {}, adopt_atom::value, id, i, count, std::move(parts[i])));
  // Erased here with its claims kept (they follow their own keys: hand_claims).
  // Frozen, the thread has no actor; on the journal's thread no commit comes between.
  SKEIN_TRY(journal_run(*sys, actors.journal, [&id](event_log& l) { return l.erase_thread(id, true); }));
  // Its effects' pending work goes with it (the new owner's effects take it up).
  for (const auto& fx : actors.effects)
    caf::anon_send(fx, committed_atom::value, std::vector<committed_tick>{{id, {}, 0, core_opts.wall_clock(), true}});
  bool thawed = false;
  SKEIN_TRY(ask(actors.directory, &thawed, freeze_atom::value, id, false));  // gone: resolving it finds nothing
  memory->index().remove_thread(id);
  if (work) work->forget(id);
  *out = handoff_outcome::moved;
  *events = m.last_seq;
  return status::ok();
}

status runtime::impl::hand_claims(const cluster_view& v, uint64_t* moved) {
  std::vector<log_row> claims;
  SKEIN_TRY(log->claim_rows(&claims));
  std::map<std::string, std::vector<log_row>> by_node;
  for (auto& c : claims) {
    // "c/task/<id>" is owned as "task/<id>" (task_key), "c/dm/<agent>" as "dm/<agent>".
    const std::string& to = v.target_ring.owner_id(std::string_view{c.key}.substr(2));
    if (to != cluster->self()) by_node[to].push_back(std::move(c));
  }
  for (auto& [node, rows] : by_node) {
    std::vector<std::string> keys;
    for (const auto& r : rows) keys.push_back(r.key);
    SKEIN_TRY(cluster->call(node, [](bool) {}, claim_atom::value, std::move(rows)));
    SKEIN_TRY(journal_run(*sys, actors.journal, [keys](event_log& l) { return l.erase_claims(keys); }));
    *moved += keys.size();
  }
  return status::ok();
}

status runtime::impl::adopt(std::string id, uint32_t part, uint32_t parts, std::vector<log_row> rows,
                            bool* adopted) {
  *adopted = false;
  if (parts == 0 || part >= parts)
    return status::invalid_input("handoff of thread " + id + ": part " + std::to_string(part) + " of " +
                                 std::to_string(parts)).with_field("part");
  std::vector<log_row> all;
  {
    std::lock_guard lock{adopt_mu};
    auto& buffered = adopting[id];
    auto drop = [&] {  // `buffered` is gone after this
      adopting_bytes -= buffered.bytes;
      adopting.erase(id);
    };
    if (part == 0) {  // a handoff (started over)
      adopting_bytes -= buffered.bytes;
      buffered = {};
    }
    if (part != buffered.next) {
      const uint32_t due = buffered.next;
      drop();
      return status::invalid_input("handoff of thread " + id + ": part " + std::to_string(part) + " where part " +
                                   std::to_string(due) + " was due")
          .with_field("part");
    }
    size_t bytes = 0;
    for (const auto& r : rows) bytes += r.key.size() + r.value.size();
    if (adopting_bytes + bytes > adopt_buffer_bytes_max) {
      drop();
      return status::overloaded("handoff of thread " + id + ": more than adopt_buffer_bytes_max (" +
                                std::to_string(adopt_buffer_bytes_max) + ") buffered for handoffs to node " +
                                cluster->self())
          .with_limit("adopt_buffer_bytes_max");
    }
    adopting_bytes += bytes;
    buffered.bytes += bytes;
    ++buffered.next;
    for (auto& r : rows) buffered.rows.push_back(std::move(r));
    if (part + 1 < parts) return status::ok();
    all = std::move(buffered.rows);
    drop();
  }
  SKEIN_TRY(journal_run(*sys, actors.journal, [&](event_log& l) { return l.adopt_thread(id, all, adopted); }));
  if (!*adopted) return status::ok();
  // The effects take it up from the cursors that came with its rows (titles,
  // embeddings, compaction the old owner had not done yet), as their catch-up
  // at open would: told like a commit of it.
  manifest m;
  if (log->read_manifest(id, &m).is_ok()) {
    for (const auto& fx : actors.effects)
      caf::anon_send(fx, committed_atom::value,
                     std::vector<committed_tick>{{id, m.agent_id, m.last_seq, core_opts.wall_clock(), false}});
    // A work item joins its agent's index here (dedup, listings).
    if (m.work && work) work->adopt_item(m.agent_id, id);
  }
  // Its messages are searchable here at once (the old owner dropped them from
  // its index): the embeddings rows just written, as the rebuild at open reads them.
  for (const auto& r : all) {
    std::string_view thread;
    uint64_t seq = 0;
    embedding_record e;
    if (r.family == log_row_embeddings_family && keys::parse_event_key(r.key, &thread, &seq) &&
        decode_embedding(r.value, &e).is_ok())
      memory->index().add(thread, seq, e).ignore();  // a row the index cannot hold is left out, as at open
  }
  return status::ok();
}

status runtime::impl::put_claims(std::vector<log_row> claims) {
  return journal_run(*sys, actors.journal, [&](event_log& l) { return l.put_claims(claims); });
}

status runtime::impl::commit_membership(const std::string& target) {
  auto v = cluster->view();
  std::vector<cluster_member> members;
  SKEIN_TRY(parse_cluster(target, &members));
  if (!v->changing()) {
    if (same_members(v->active, members)) return status::ok();  // committed already
    return status::conflict("node " + cluster->self() + " has no such target: update its cluster file and send it SIGHUP");
  }
  if (format_cluster(v->target) != target)
    return status::conflict("node " + cluster->self() + " has another target: its cluster file differs");
  std::lock_guard pass_lock{pass_mu};
  if (pass.phase == "moving") return status::conflict("node " + cluster->self() + " is still handing threads over");
  std::vector<std::string> moved;
  {
    std::lock_guard lock{marks_mu};
    for (const auto& [id, to] : marks) moved.push_back(id);
  }
  SKEIN_TRY(persist_members(members, v->active, std::move(moved)));
  {
    std::lock_guard lock{marks_mu};
    marks.clear();
  }
  cluster->set_view(members, {}, v->active);
  pass.phase = "committed";
  return status::ok();
}

void runtime::impl::stop_handoffs() {
  pass_stop = true;
  std::thread pass_t, coord_t;
  {
    std::lock_guard lock{pass_mu};
    pass_t = std::move(pass_thread);
  }
  {
    std::lock_guard lock{coord_mu};
    coord_t = std::move(coord_thread);
  }
  if (pass_t.joinable()) pass_t.join();
  if (coord_t.joinable()) coord_t.join();
}

status runtime::reload_cluster(std::vector<cluster_member> members) {
  SKEIN_TRY(impl_->check_open());
  cluster_link* c = impl_->cluster.get();
  if (c == nullptr) return status::invalid_input("reload_cluster: this runtime is not a cluster node");
  auto v = c->view();
  cluster_options o = c->options();
  o.members = members;
  // A node may be left out of the new file: it is leaving, and hands all its threads over.
  if (!has_member(members, c->self()) && !members.empty()) o.node_id = members.front().id;
  SKEIN_TRY(check_cluster(o));
  std::lock_guard lock{impl_->pass_mu};
  if (impl_->pass.phase == "moving")
    return status::conflict("a rebalance pass is under way on node " + c->self() + ": reload once it is done");
  if (!(v->changing() && same_members(v->target, members)) && !same_members(v->active, members)) {
    std::lock_guard marks{impl_->marks_mu};
    if (!impl_->marks.empty())
      return status::conflict(std::to_string(impl_->marks.size()) +
                              " threads were handed over under the current target: finish the rebalance "
                              "(skein cluster rebalance) before the cluster file changes again");
  }
  if (same_members(v->active, members)) {
    std::lock_guard marks{impl_->marks_mu};
    if (!impl_->marks.empty())
      return status::conflict("threads were handed over under the current target: finish the rebalance first");
    c->set_view(v->active, {}, v->previous);
  } else {
    c->set_view(v->active, std::move(members), v->previous);
  }
  return status::ok();
}

}  // namespace skein
