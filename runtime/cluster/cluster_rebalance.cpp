// The operator's rebalance (skein cluster rebalance, POST /v1/cluster/rebalance):
// from one node, every member must name the same target; each node whose
// threads move starts its pass (cluster_handoff.cpp), the coordinator sums
// their progress until every pass is done, then every node commits the target
// as its active members. A node that stops answering fails the rebalance, which
// is rerun once the node is back.
#include <chrono>
#include <thread>

#include "runtime/runtime_impl.hpp"

namespace skein {
namespace {

constexpr auto poll = std::chrono::milliseconds(20);  // between progress asks

}  // namespace

status runtime::rebalance(cluster_rebalance_state* out) {
  SKEIN_TRY(impl_->check_open());
  cluster_link* c = impl_->cluster.get();
  if (c == nullptr) return status::invalid_input("rebalance: this runtime is not a cluster node");
  auto v = c->view();
  c->forget_failures();  // an operator's command: ask every node now, past any backoff
  const std::vector<cluster_member> target = v->changing() ? v->target : v->active;
  const std::string text = format_cluster(target);
  auto update = [&](auto&& f) {
    std::lock_guard lock{impl_->coord_mu};
    f(impl_->coord);
    *out = impl_->coord;
  };
  auto fail = [&](status s) {
    update([&](cluster_rebalance_state& st) {
      st.phase = "failed";
      st.error = s.message();
    });
    return s;
  };
  update([](cluster_rebalance_state& st) {
    st = {};
    st.phase = "moving";
  });
  // Every member, active or joining, must name the same target (or have committed it).
  std::vector<std::string> movers;
  for (const auto& m : v->everyone()) {
    std::string active, theirs;
    if (m.id == c->self()) {
      active = format_cluster(v->active);
      theirs = format_cluster(v->target);
    } else if (status s = c->call(m.id, [&](std::string& a, std::string& t) {
                 active = std::move(a);
                 theirs = std::move(t);
               }, members_atom::value); !s) {
      return fail(status::unavailable("rebalance: node " + m.id + " cannot be asked: " + s.message()));
    }
    if (theirs == text) movers.push_back(m.id);
    else if (!(theirs.empty() && active == text))
      return fail(status::conflict("rebalance: node " + m.id + "'s cluster file differs from node " + c->self() +
                                   "'s: give every node the same file and send it SIGHUP"));
  }
  auto each = [&](auto&& local, auto&& remote) -> status {
    for (const auto& id : movers) {
      if (id == c->self()) SKEIN_TRY(local());
      else SKEIN_TRY(remote(id));
    }
    return status::ok();
  };
  if (status s = each([&] { return impl_->start_pass(text); },
                      [&](const std::string& id) { return c->call(id, [](bool) {}, rebalance_atom::value, text); });
      !s)
    return fail(s);
  for (;;) {
    if (impl_->pass_stop) return fail(status::unavailable("rebalance: node " + c->self() + " is closing"));
    cluster_rebalance_state sum;
    bool done = true;
    for (const auto& id : movers) {
      cluster_rebalance_state st;
      if (id == c->self()) {
        std::lock_guard lock{impl_->pass_mu};
        st = impl_->pass;
      } else if (status s = c->call(id, [&](cluster_rebalance_state& r) { st = std::move(r); }, progress_atom::value);
                 !s) {
        return fail(status::unavailable("rebalance: node " + id + " stopped answering: " + s.message() +
                                        "; rerun the rebalance once it is back"));
      }
      if (st.phase == "failed") return fail(status::unavailable("rebalance: " + st.error));
      if (st.phase != "moved" && st.phase != "committed") done = false;
      sum.moved += st.moved;
      sum.events += st.events;
      sum.claims += st.claims;
      sum.schedules += st.schedules;
      sum.remaining += st.remaining;
    }
    update([&](cluster_rebalance_state& st) {
      st.moved = sum.moved;
      st.events = sum.events;
      st.claims = sum.claims;
      st.schedules = sum.schedules;
      st.remaining = sum.remaining;
    });
    if (done) break;
    std::this_thread::sleep_for(poll);  // the passes report progress; none pushes it
  }
  if (status s = each([&] { return impl_->commit_membership(text); },
                      [&](const std::string& id) {
                        return c->call(id, [](bool) {}, membership_commit_atom::value, text);
                      });
      !s)
    return fail(status(s.code(), "rebalance: every thread moved, but a node did not commit (" + s.message() +
                                     "): rerun the rebalance"));
  update([](cluster_rebalance_state& st) { st.phase = "committed"; });
  return status::ok();
}

status runtime::start_rebalance() {
  SKEIN_TRY(impl_->check_open());
  if (!impl_->cluster) return status::invalid_input("rebalance: this runtime is not a cluster node");
  std::lock_guard lock{impl_->coord_mu};
  if (impl_->coord.phase == "moving") return status::conflict("a rebalance is under way from this node");
  if (impl_->coord_thread.joinable()) impl_->coord_thread.join();
  impl_->coord = {};
  impl_->coord.phase = "moving";
  impl_->coord_thread = std::thread([this] {
    cluster_rebalance_state ignored;
    rebalance(&ignored).ignore();  // the outcome is in rebalance_state()
  });
  return status::ok();
}

status runtime::rebalance_state(cluster_rebalance_state* out) {
  SKEIN_TRY(impl_->check_open());
  std::lock_guard lock{impl_->coord_mu};
  *out = impl_->coord;
  return status::ok();
}

}  // namespace skein
