// member_registry.hpp: renewing this node's key, watching the others', and
// telling the owner when the live set changes.
#include "runtime/replication/member_registry.hpp"

#include <condition_variable>
#include <mutex>
#include <thread>

namespace skein::replication {

struct member_registry::impl {
  jetstream& js;
  registry_options opts;
  on_change_fn on_change;
  membership_view view;
  std::unique_ptr<subscription> watch;
  std::thread renewer;

  mutable std::mutex mu;  // guards view, last_ids, value, stopping
  std::condition_variable wake;
  std::vector<std::string> last_ids;
  std::string value;  // what this node registers (opts.value, then set_value())
  bool stopping = false;
  std::mutex notify_mu;  // one on_change at a time, outside mu

  impl(jetstream& j, registry_options o, on_change_fn fn)
      : js(j), opts(std::move(o)), on_change(std::move(fn)), view(opts.member_ttl), value(opts.value) {}

  // Calls on_change if the live set differs from the last one reported.
  void report(membership_view::clock::time_point now) {
    std::lock_guard<std::mutex> one{notify_mu};
    std::vector<member> alive;
    {
      std::lock_guard<std::mutex> lock{mu};
      std::vector<std::string> ids = view.alive_ids(now);
      if (ids == last_ids) return;
      last_ids = std::move(ids);
      alive = view.alive(now);
    }
    if (on_change) on_change(alive);
  }

  void seen(const kv_entry& e) {
    auto now = membership_view::clock::now();
    {
      std::lock_guard<std::mutex> lock{mu};
      view.observe(e.key, e.value, e.revision, e.deleted, now);
    }
    wake.notify_all();  // a new member's lapse may come before the renewer's next wake
    report(now);
  }

  void run() {
    using clock = membership_view::clock;
    const auto period = opts.member_ttl / 3;
    auto next_renewal = clock::now() + period;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock{mu};
        auto until = std::min(next_renewal, view.next_change(clock::now()));
        wake.wait_until(lock, until, [&] { return stopping; });
        if (stopping) return;
      }
      auto now = clock::now();
      if (now >= next_renewal) {
        // A failed renewal is tried again at the next period; peers judge by
        // member_ttl, which spans three periods.
        std::string v;
        {
          std::lock_guard<std::mutex> lock{mu};
          v = value;
        }
        js.kv_put(opts.bucket, opts.node_id, v, nullptr).ignore();
        next_renewal = now + period;
      }
      report(clock::now());
    }
  }
};

status member_registry::start(jetstream& js, registry_options opts, on_change_fn on_change,
                              std::unique_ptr<member_registry>* out) {
  if (opts.node_id.empty()) return status::invalid_input("member registry: no node id").with_field("node_id");
  if (opts.member_ttl < std::chrono::milliseconds(30))
    return status::invalid_input("member_ttl_ms: at least 30").with_field("member_ttl_ms");
  // Keys of nodes that failed leave the bucket after twice member_ttl (a live
  // key is put again every member_ttl / 3, so it never ages that far): a node
  // starting later sees a dead member at most once, for one member_ttl.
  SKEIN_TRY(js.ensure_bucket({opts.bucket, opts.replicas, 1, 2 * opts.member_ttl}));
  auto p = std::make_shared<impl>(js, std::move(opts), std::move(on_change));
  SKEIN_TRY(js.kv_put(p->opts.bucket, p->opts.node_id, p->opts.value, nullptr));
  SKEIN_TRY(js.kv_watch(p->opts.bucket, ">", [raw = p.get()](const kv_entry& e) { raw->seen(e); }, &p->watch));
  p->renewer = std::thread([raw = p.get()] { raw->run(); });
  out->reset(new member_registry(std::move(p)));
  return status::ok();
}

status member_registry::set_value(std::string value) {
  {
    std::lock_guard<std::mutex> lock{impl_->mu};
    impl_->value = value;
  }
  return impl_->js.kv_put(impl_->opts.bucket, impl_->opts.node_id, value, nullptr);
}

member_registry::~member_registry() { stop(true); }

void member_registry::stop(bool leave) {
  {
    std::lock_guard<std::mutex> lock{impl_->mu};
    if (impl_->stopping) return;
    impl_->stopping = true;
  }
  impl_->wake.notify_all();
  impl_->renewer.join();
  impl_->watch.reset();  // no watcher callback after this
  if (leave) impl_->js.kv_delete(impl_->opts.bucket, impl_->opts.node_id).ignore();
}

std::vector<member> member_registry::alive() const {
  std::lock_guard<std::mutex> lock{impl_->mu};
  return impl_->view.alive(membership_view::clock::now());
}

}  // namespace skein::replication
