// partition_manager.hpp: rounds of placement, leases, catch-ups and followers.
#include "runtime/replication/partition_manager.hpp"

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include "runtime/replication/lease.hpp"
#include "runtime/replication/partition_follower.hpp"
#include "runtime/replication/placement.hpp"

namespace skein::replication {

struct partition_manager::impl {
  impl(jetstream& j, event_log& l, journal_replicator& r, const message_sealer* s, member_registry& m,
       partition_options o, partition_hooks h)
      : js(j), log(l), rep(r), sealer(s), members(m), options(std::move(o)), hooks(std::move(h)),
        keeper(j, options.lease_bucket, options.node_id, options.lease_ttl), slots(options.partitions),
        views(options.partitions) {
    for (uint32_t p = 0; p < options.partitions; ++p) views[p].partition = p;
  }

  // What the rounds keep of one partition (the rounds' thread only).
  struct slot {
    lease held;  // this node's lease while it leads
    lease_keeper::clock::time_point renewed;  // when its last renewal (or take) that succeeded began
    bool leading = false;
    std::unique_ptr<partition_follower> follower;
    uint64_t follow_seen = 0;                        // its applied sequence when last looked at
    lease_keeper::clock::time_point follow_since;    // since when it has not moved
  };

  void run();
  void round();
  void step(uint32_t p, const std::vector<std::string>& alive);
  // Makes this node the partition's server once it holds `l` (read or taken
  // from `taken` on); false if a step failed.
  bool establish(uint32_t p, const lease& l, lease_keeper::clock::time_point taken);
  void step_down(uint32_t p, bool release);
  // With this node's writer open: a barrier appended, fenced at the end the
  // writer knows (refused, and the writer dropped, if another wrote after
  // it), the subject applied through it, and the partition resumed in the log.
  status apply_through_barrier(uint32_t p);
  // Partitions this node leads whose last append's outcome is unknown (the
  // log holds them): each is caught up from its subject and resumed.
  void settle();
  // Whether the partition's follower has stood still, behind the subject's
  // end, for the longer of lease_ttl and 2 s (then it is started again).
  bool stalled(uint32_t p);
  void fail(uint32_t p, const status& s);
  void publish_view(uint32_t p, const std::vector<std::string>& replicas);

  jetstream& js;
  event_log& log;
  journal_replicator& rep;
  const message_sealer* sealer;
  member_registry& members;
  const partition_options options;
  const partition_hooks hooks;
  lease_keeper keeper;
  std::vector<slot> slots;
  std::unique_ptr<subscription> lease_watch;

  mutable std::mutex mu;  // guards what follows
  std::condition_variable wake;
  bool stopping = false, poked = false;
  std::vector<partition_view> views;
  std::map<uint32_t, lease> leases;  // the leases bucket as watched
  partition_counters counts;
  status error;
  std::thread thread;
};

status partition_manager::start(jetstream& js, event_log& log, journal_replicator& rep, const message_sealer* sealer,
                                member_registry& members, partition_options options, partition_hooks hooks,
                                std::unique_ptr<partition_manager>* out) {
  if (options.partitions == 0) return status::invalid_input("partitions must be at least 1").with_field("partitions");
  if (options.replicas == 0) return status::invalid_input("replicas must be at least 1").with_field("replicas");
  SKEIN_TRY(js.ensure_bucket({options.lease_bucket, options.bucket_replicas, 1}));
  auto p = std::make_shared<impl>(js, log, rep, sealer, members, std::move(options), std::move(hooks));
  impl* raw = p.get();
  SKEIN_TRY(js.kv_watch(
      raw->options.lease_bucket, ">",
      [raw](const kv_entry& e) {
        if (!e.key.starts_with("p.")) return;
        uint32_t part = 0;
        try {
          part = static_cast<uint32_t>(std::stoul(e.key.substr(2)));
        } catch (...) {
          return;
        }
        lease l;
        if (e.deleted || !lease_keeper::decode(e.value, &l)) l = {};
        l.revision = e.revision;
        std::lock_guard<std::mutex> lock{raw->mu};
        raw->leases[part] = l;
        if (part < raw->views.size()) {
          raw->views[part].leader = l.holder;
          raw->views[part].epoch = l.epoch;
        }
      },
      &p->lease_watch));
  p->thread = std::thread([raw] { raw->run(); });
  out->reset(new partition_manager(std::move(p)));
  return status::ok();
}

partition_manager::~partition_manager() { stop(false); }

void partition_manager::stop(bool release) {
  {
    std::lock_guard<std::mutex> lock{impl_->mu};
    if (impl_->stopping && !impl_->thread.joinable()) return;
    impl_->stopping = true;
  }
  impl_->wake.notify_all();
  if (impl_->thread.joinable()) impl_->thread.join();
  impl_->lease_watch.reset();
  for (uint32_t p = 0; p < impl_->options.partitions; ++p) {
    if (impl_->slots[p].leading) impl_->step_down(p, release);
    impl_->slots[p].follower.reset();
  }
}

void partition_manager::poke() {
  {
    std::lock_guard<std::mutex> lock{impl_->mu};
    impl_->poked = true;
  }
  impl_->wake.notify_all();
}

std::vector<partition_view> partition_manager::view() const {
  std::lock_guard<std::mutex> lock{impl_->mu};
  return impl_->views;
}

std::string partition_manager::holder(uint32_t partition) const {
  std::lock_guard<std::mutex> lock{impl_->mu};
  return partition < impl_->views.size() ? impl_->views[partition].leader : std::string{};
}

partition_counters partition_manager::counters() const {
  std::lock_guard<std::mutex> lock{impl_->mu};
  return impl_->counts;
}

status partition_manager::last_error() const {
  std::lock_guard<std::mutex> lock{impl_->mu};
  return impl_->error;
}

void partition_manager::impl::run() {
  const auto interval = std::max(options.lease_ttl / 3, std::chrono::milliseconds(1));
  for (;;) {
    round();
    std::unique_lock<std::mutex> lock{mu};
    wake.wait_for(lock, interval, [&] { return stopping || poked; });
    if (stopping) return;
    poked = false;
  }
}

void partition_manager::impl::round() {
  std::vector<std::string> alive;  // the members placement places partitions on
  for (const auto& m : members.alive())
    if (!hooks.draining || !hooks.draining(m)) alive.push_back(m.id);
  settle();
  for (uint32_t p = 0; p < options.partitions; ++p) {
    {
      std::lock_guard<std::mutex> lock{mu};
      if (stopping) return;
    }
    step(p, alive);
  }
  std::lock_guard<std::mutex> lock{mu};
  ++counts.rounds;
}

void partition_manager::impl::step(uint32_t p, const std::vector<std::string>& alive) {
  const std::vector<std::string> replicas = replicas_of(p, alive, options.replicas);
  const bool should_lead = !replicas.empty() && replicas.front() == options.node_id;
  const bool replica = std::find(replicas.begin(), replicas.end(), options.node_id) != replicas.end();
  slot& s = slots[p];

  if (s.leading) {
    const auto began = lease_keeper::clock::now();
    status renewed = keeper.renew(p, &s.held);
    if (renewed) s.renewed = began;
    // Deposed: the lease was taken, or the writer was fenced off by another's
    // append, or no renewal got through for a lease's ttl (another may hold
    // it by now: this node stops serving before its writes are fenced off).
    if (renewed.code() == errc::conflict || !rep.leads(p) ||
        (!renewed && lease_keeper::clock::now() - s.renewed >= options.lease_ttl)) {
      if (!renewed) fail(p, renewed);
      step_down(p, false);
      std::lock_guard<std::mutex> lock{mu};
      ++counts.deposed;
    } else if (!renewed) {
      fail(p, renewed);  // still the writer until its ttl runs out or it is fenced; renewed next round
    } else if (!should_lead) {
      step_down(p, true);
      std::lock_guard<std::mutex> lock{mu};
      ++counts.released;
    }
  }
  if (!s.leading && should_lead) {
    lease l;
    const auto now = lease_keeper::clock::now();
    if (status t = keeper.try_take(p, now, &l); !t) {
      fail(p, t);
    } else if (keeper.holds(l) && establish(p, l, now)) {
      std::lock_guard<std::mutex> lock{mu};
      ++counts.took;
    }
  }
  if (!s.leading && replica && s.follower && !s.follower->stopped() && stalled(p)) s.follower.reset();
  if (!s.leading && replica && (!s.follower || s.follower->stopped())) {
    if (s.follower && s.follower->stopped()) fail(p, s.follower->error());
    s.follower.reset();
    s.follow_since = lease_keeper::clock::now();
    std::unique_ptr<partition_follower> f;
    if (status st = partition_follower::start(js, log, sealer, options.stream, rep.subject_of(p), p, &f); !st)
      fail(p, st);
    else
      s.follower = std::move(f);
  }
  if (!replica && !s.leading) s.follower.reset();
  publish_view(p, replicas);
}

void partition_manager::impl::settle() {
  if (log.unsettled_count() == 0) return;
  std::vector<uint32_t> held;
  status st = hooks.on_writer([&held](event_log& w) {
    held = w.unsettled_partitions();
    return status::ok();
  });
  if (!st) return fail(held.empty() ? 0 : held.front(), st);
  for (uint32_t p : held) {
    if (p >= slots.size() || !slots[p].leading) continue;  // settled when it is led again (establish)
    // An append here may have landed: applied through a barrier after it
    // (this node's own message included, if it did), then the writer goes on.
    if (status a = apply_through_barrier(p); !a) fail(p, a);
  }
}

bool partition_manager::impl::stalled(uint32_t p) {
  slot& s = slots[p];
  const auto now = lease_keeper::clock::now();
  const uint64_t applied = s.follower->applied();
  if (applied != s.follow_seen) {
    s.follow_seen = applied;
    s.follow_since = now;
    return false;
  }
  if (now - s.follow_since < std::max<std::chrono::milliseconds>(options.lease_ttl, std::chrono::seconds(2)))
    return false;
  // Still for a while: behind the subject's end, it is stuck (its consumer
  // lost in a server's restart or a stream leader's change, say).
  s.follow_since = now;
  stream_message last;
  if (status st = js.last_on_subject(options.stream, rep.subject_of(p), &last); !st) {
    if (st.code() != errc::not_found) fail(p, st);
    return false;
  }
  if (last.seq <= applied) return false;
  std::lock_guard<std::mutex> lock{mu};
  ++counts.restarts;
  return true;
}

status partition_manager::impl::apply_through_barrier(uint32_t p) {
  uint64_t barrier = 0;
  SKEIN_TRY(rep.barrier(p, &barrier));
  SKEIN_TRY(catch_up(js, log, sealer, options.stream, rep.subject_of(p), p, options.catch_up_limit, barrier));
  return hooks.on_writer([p](event_log& w) {
    w.resume_partition(p);
    return status::ok();
  });
}

bool partition_manager::impl::establish(uint32_t p, const lease& l, lease_keeper::clock::time_point taken) {
  slot& s = slots[p];
  s.follower.reset();  // the catch-up applies from here on
  // The writer first, at the subject's end as read; then a barrier appended
  // there, fenced: stored only if nothing came after what was read (a read
  // may be a lagging replica's), else this try ends and the next round starts
  // again; then everything applied through the barrier.
  status st = rep.lead(p, l.epoch);
  if (st) st = apply_through_barrier(p);
  if (!st) {
    rep.step_down(p);
    fail(p, st);
    return false;
  }
  s.held = l;
  s.renewed = taken;
  s.leading = true;
  if (hooks.led) hooks.led(p);
  return true;
}

void partition_manager::impl::step_down(uint32_t p, bool release) {
  slot& s = slots[p];
  rep.step_down(p);
  s.leading = false;
  {
    // Seen as not leading before the lease is free for another to take.
    std::lock_guard<std::mutex> lock{mu};
    views[p].leading = false;
  }
  if (hooks.lost) hooks.lost(p);
  if (release) {
    if (status r = keeper.release(p, s.held); !r) fail(p, r);
  }
  s.held = {};
}

void partition_manager::impl::fail(uint32_t p, const status& s) {
  std::lock_guard<std::mutex> lock{mu};
  ++counts.errors;
  error = status{s.code(), "partition " + std::to_string(p) + ": " + s.message()};
}

void partition_manager::impl::publish_view(uint32_t p, const std::vector<std::string>& replicas) {
  uint64_t applied = 0;
  log.replicated_seq(p, &applied).ignore();  // a view: 0 when unreadable
  std::lock_guard<std::mutex> lock{mu};
  auto& v = views[p];
  v.replicas = replicas;
  v.applied = applied;
  v.leading = slots[p].leading;
  v.following = slots[p].follower != nullptr && !slots[p].follower->stopped();
}

}  // namespace skein::replication
