// Schedules through the runtime (runtime/model/schedule.hpp; the scheduler
// actor fires them). In a cluster a schedule lives on the node its id routes to
// (route_schedule): a bound one's id starts with its thread's root id, so it
// lives and fires with the thread; every call goes to that node, and a listing
// merges every node's page. A membership change hands a schedule whose id
// changes owner to its new node (release_schedules, hand_schedules,
// adopt_schedule below; the pass is cluster_handoff.cpp's).
#include <algorithm>

#include "actors/scheduler.hpp"
#include "runtime/model/ids.hpp"
#include "runtime/runtime_impl.hpp"

namespace skein {

status runtime::impl::route_schedule(const std::string& id, std::string* node, bool creating) const {
  node->clear();
  if (!cluster) return status::ok();
  SKEIN_TRY(validate_id(id, "schedule id"));
  // A new schedule whose key moves in a change under way waits for its commit.
  if (creating) {
    SKEIN_TRY(route_claim(std::string{cluster_key(id)}, node));
  } else {
    // As route() does for threads: during a change a schedule is with its
    // active owner until its pass hands it over, then with its target owner;
    // one hop forwards a call that arrives on the other.
    auto v = cluster->view();
    const std::string& self = cluster->self();
    std::string_view key = cluster_key(id);
    std::string a;
    SKEIN_TRY(owner_of(key, &a));
    const std::string& t = v->changing() ? v->target_ring.owner_id(key) : a;
    if (t != a && (a == self || t == self)) {
      schedule stored;
      status read = log->read_schedule(id, &stored);
      if (read.code() != errc::not_found) SKEIN_TRY(read);
      const bool here = read.is_ok();
      if (a == self && here && marked(id))
        return status::unavailable("schedule " + id + " is moving to node " + t + ": retry shortly");
      if (a == self && !here) *node = t;
      if (t == self && !here && !cluster_link::serving_edge()) *node = a;
      return status::ok();
    }
    if (a != self) *node = a;
  }
  if (!node->empty() && cluster_link::serving_edge())
    return status::unavailable("node " + cluster->self() + " does not own schedule " + id + " (by its member list, " +
                               *node + " does): the nodes' cluster files differ");
  return status::ok();
}

status runtime::impl::cluster_schedule_id(schedule* s) const {
  if (!s->thread_id.empty()) {
    SKEIN_TRY(validate_id(s->thread_id, "schedule.thread_id").with_field("thread_id"));
    std::string root{cluster_key(s->thread_id)};
    if (s->id.empty()) {
      s->id = root + "." + new_schedule_id(core_opts.wall_clock());
    } else if (cluster_key(s->id) != root) {
      return status::invalid_input("schedule.id: in a cluster a schedule bound to a thread lives on the thread's "
                                   "node, so its id must start with the thread's root id and '.' (" + root +
                                   ".…): leave it empty to have one minted")
          .with_field("id");
    }
    return status::ok();
  }
  if (!s->id.empty()) return status::ok();
  // Unbound: an id this node owns now (its firings create threads here), when
  // one turns up in a few tries per member; else any id, made where it routes.
  auto v = cluster->view();
  const size_t tries = 16 * v->everyone().size();
  for (size_t i = 0; i < tries; ++i) {
    s->id = new_schedule_id(core_opts.wall_clock());
    std::string owner;
    if (route_claim(s->id, &owner).is_ok() && owner.empty()) return status::ok();
  }
  return status::ok();
}

status runtime::impl::list_schedules_local(const std::string& after_id, size_t limit, std::vector<schedule>* out,
                                           std::string* next) {
  SKEIN_TRY(check_open());
  return log->list_schedules(after_id, limit, out, next);
}

status runtime::create_schedule(schedule s, schedule* out) {
  schedule created;
  // In a cluster a schedule lives where its id routes: with its bound thread
  // (the id starts with the thread's root id), or, unbound, where it was made.
  if (impl_->cluster) {
    SKEIN_TRY(impl_->cluster_schedule_id(&s));
    std::string owner;
    SKEIN_TRY(impl_->route_schedule(s.id, &owner, true));
    if (!owner.empty()) {
      SKEIN_TRY(impl_->cluster->call(owner, [&](schedule& r) { created = std::move(r); }, schedule_atom::value,
                                     create_atom::value, s));
      if (out != nullptr) *out = std::move(created);
      return status::ok();
    }
  }
  SKEIN_TRY(impl_->ask(impl_->scheduler, &created, create_atom::value, std::move(s)));
  if (out != nullptr) *out = std::move(created);
  return status::ok();
}

status runtime::get_schedule(const std::string& id, schedule* out) {
  SKEIN_TRY(impl_->check_open());
  std::string owner;
  SKEIN_TRY(impl_->route_schedule(id, &owner));
  if (!owner.empty())
    return impl_->cluster->call(owner, [&](schedule& r) { *out = std::move(r); }, schedule_atom::value,
                                caf::get_atom::value, id);
  return impl_->log->read_schedule(id, out);
}

status runtime::pause_schedule(const std::string& id, schedule* out) { return impl_->set_paused(id, true, out); }

status runtime::resume_schedule(const std::string& id, schedule* out) { return impl_->set_paused(id, false, out); }

status runtime::impl::set_paused(const std::string& id, bool paused, schedule* out) {
  SKEIN_TRY(validate_id(id, "schedule id"));
  schedule s;
  std::string owner;
  SKEIN_TRY(route_schedule(id, &owner));
  if (!owner.empty()) {
    auto take = [&](schedule& r) { s = std::move(r); };
    SKEIN_TRY(paused ? cluster->call(owner, take, schedule_atom::value, pause_atom::value, id)
                     : cluster->call(owner, take, schedule_atom::value, resume_atom::value, id));
  } else {
    SKEIN_TRY(paused ? ask(scheduler, &s, pause_atom::value, id) : ask(scheduler, &s, resume_atom::value, id));
  }
  if (out != nullptr) *out = std::move(s);
  return status::ok();
}

status runtime::delete_schedule(const std::string& id) {
  SKEIN_TRY(validate_id(id, "schedule id"));
  std::string owner;
  SKEIN_TRY(impl_->route_schedule(id, &owner));
  if (!owner.empty())
    return impl_->cluster->call(owner, [](bool) {}, schedule_atom::value, delete_atom::value, id);
  return impl_->tell(impl_->scheduler, delete_atom::value, id);
}

status runtime::schedule_history(const std::string& id, uint64_t before_seq, size_t limit,
                                 std::vector<schedule_firing>* out, uint64_t* next) {
  SKEIN_TRY(impl_->check_open());
  std::string owner;
  SKEIN_TRY(impl_->route_schedule(id, &owner));
  if (!owner.empty())
    return impl_->cluster->call(owner,
                                [&](std::vector<schedule_firing>& v, uint64_t n) {
                                  *out = std::move(v);
                                  *next = n;
                                },
                                schedule_atom::value, schedule_history_atom::value, id, before_seq, uint64_t{limit});
  return impl_->log->schedule_history(id, before_seq, limit, out, next);
}

status runtime::preview_schedule(const std::string& id, size_t n, std::vector<int64_t>* out) {
  SKEIN_TRY(impl_->check_open());
  std::string owner;
  SKEIN_TRY(impl_->route_schedule(id, &owner));
  if (!owner.empty())
    return impl_->cluster->call(owner, [&](std::vector<int64_t>& v) { *out = std::move(v); }, schedule_atom::value,
                                schedule_preview_atom::value, id, uint64_t{n});
  schedule s;
  SKEIN_TRY(impl_->log->read_schedule(id, &s));
  return skein::schedule_preview(s, impl_->core_opts.wall_clock(), n, out);
}

status runtime::fire_due_schedules(size_t* fired) {
  uint64_t n = 0;
  SKEIN_TRY(impl_->ask(impl_->scheduler, &n, fire_due_atom::value));
  if (fired != nullptr) *fired = static_cast<size_t>(n);
  return status::ok();
}

status runtime::list_schedules(const std::string& after_id, size_t limit, std::vector<schedule>* out,
                               std::string* next) {
  cluster_link* c = impl_->cluster.get();
  if (c == nullptr) return impl_->list_schedules_local(after_id, limit, out, next);
  // Every node's first page after the cursor, merged by id: the page is the
  // first `limit` of the merge, and its last id the cursor for every node.
  std::vector<schedule> merged;
  bool more = false;
  for (const auto& m : c->view()->everyone()) {
    std::vector<schedule> page;
    std::string page_next;
    if (m.id == c->self()) SKEIN_TRY(impl_->list_schedules_local(after_id, limit, &page, &page_next));
    else
      SKEIN_TRY(c->call(m.id,
                        [&](std::vector<schedule>& v, std::string& n) {
                          page = std::move(v);
                          page_next = std::move(n);
                        },
                        schedule_atom::value, list_atom::value, after_id, uint64_t{limit}));
    more = more || !page_next.empty();
    for (auto& s : page) merged.push_back(std::move(s));
  }
  std::sort(merged.begin(), merged.end(), [](const schedule& a, const schedule& b) { return a.id < b.id; });
  merged.erase(std::unique(merged.begin(), merged.end(), [](const schedule& a, const schedule& b) { return a.id == b.id; }),
               merged.end());
  if (merged.size() > limit) {
    merged.resize(limit);
    more = true;
  }
  next->clear();
  if (more && !merged.empty()) *next = merged.back().id;
  *out = std::move(merged);
  return status::ok();
}

// --- a membership change (cluster_handoff.cpp runs the pass) ----------------

status runtime::impl::release_schedules(const cluster_view& v,
                                        std::vector<std::pair<std::string, std::string>>* moving) {
  moving->clear();
  const std::string& self = cluster->self();
  SKEIN_TRY(log->scan_schedules([&](schedule&& s) {
    const std::string& to = v.target_ring.owner_id(cluster_key(s.id));
    if (to != self) moving->emplace_back(s.id, to);
  }));
  for (const auto& [id, to] : *moving) {
    // Marked durably first: after a restart this node's scheduler leaves it
    // out (runtime::open), and calls for it are answered "moving" or forwarded.
    SKEIN_TRY(mark(id, to));
    bool held = false;  // after any write of it in flight: it never fires here again
    SKEIN_TRY(ask(scheduler, &held, release_atom::value, id));
  }
  return status::ok();
}

status runtime::impl::hand_schedules(const std::vector<std::pair<std::string, std::string>>& moving,
                                     uint64_t* moved) {
  for (const auto& [schedule_id, to] : moving) {
    const std::string& id = schedule_id;  // a lambda below takes it (clang: no structured binding captures)
    if (pass_stop) return status::unavailable("node " + cluster->self() + " is closing");
    std::vector<log_row> rows;
    status got = log->schedule_rows(id, &rows);
    if (got.code() == errc::not_found) continue;  // deleted meanwhile, or handed over by an earlier pass
    SKEIN_TRY(got);
    SKEIN_TRY(cluster->call(to, [](bool) {}, schedule_atom::value, adopt_atom::value, id, std::move(rows)));
    // The new owner has it (durable, armed): erased here; the mark stays until
    // the commit, so calls that still arrive here are forwarded.
    SKEIN_TRY(journal_run(*sys, actors.journal, [&id](event_log& l) { return l.erase_schedule(id); }));
    ++*moved;
  }
  return status::ok();
}

status runtime::impl::adopt_schedule(std::string id, std::vector<log_row> rows, bool* adopted) {
  *adopted = false;
  SKEIN_TRY(journal_run(*sys, actors.journal, [&](event_log& l) { return l.adopt_schedule(id, rows, adopted); }));
  bool armed = false;  // also when it was here already: a crash may have come between the write and this
  return ask(scheduler, &armed, load_atom::value, id);
}

}  // namespace skein
