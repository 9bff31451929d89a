#include "runtime/cluster/cluster_link.hpp"

#include <caf/actor_pool.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/io/middleman.hpp>
#include <caf/io/middleman_actor.hpp>
#include <caf/openssl/manager.hpp>
#include <caf/openssl/publish.hpp>
#include <caf/send.hpp>
#include <condition_variable>
#include <future>
#include <map>
#include <mutex>
#include <set>

#include "runtime/host_sink.hpp"
#include "runtime/model/ids.hpp"

namespace skein {
namespace {

using steady = std::chrono::steady_clock;

// Why a call to `node` failed: the owner's own refusal as it is; anything of
// CAF's (no answer, a lost link, a wrong reply) is the node being unavailable.
status remote_failure(const std::string& node, const caf::error& e, std::chrono::milliseconds timeout) {
  if (e.category() == error_category) return to_status(e);
  if (e.category() == caf::atom("system") && static_cast<caf::sec>(e.code()) == caf::sec::request_timeout)
    return status::unavailable("node " + node + " did not answer within " + std::to_string(timeout.count()) + " ms");
  return status::unavailable("node " + node + ": " + to_status(e).message());
}

using ping_atom = caf::atom_constant<caf::atom("ping")>;
using resend_atom = caf::atom_constant<caf::atom("resend")>;

// Waits for one forwarded run: the owner's answer, the owner's link dropping,
// or the owner no longer answering: every `every` it is asked for its counts,
// and an unanswered ask ends the wait (a stopped process keeps its link up and
// would otherwise hold the caller forever; a long run on a live owner does not
// end it). The send itself is asked again at growing intervals (every, 2x, 4x,
// … up to resend_max): a request CAF lost with a link it closed (two nodes
// dialing each other at once) would otherwise never be answered. The input
// carries an idempotency key (the client's, or one minted here), so a repeat
// joins the first run or returns its result: never a second run.
constexpr int resend_doublings_max = 4;

caf::behavior send_forwarder(caf::event_based_actor* self, edge_actor edge, std::string node, std::string thread,
                             run_input in, std::chrono::milliseconds every, std::function<void(status, run_result)> done) {
  if (in.idempotency_key.empty()) in.idempotency_key = "fwd-" + new_run_id().substr(4);
  auto finished = std::make_shared<bool>(false);
  auto finish = [self, finished, done](status s, run_result r) {
    if (*finished) return;
    *finished = true;
    done(std::move(s), std::move(r));
    self->quit();
  };
  self->monitor(edge);
  self->set_down_handler([=](caf::down_msg&) {
    finish(status::unavailable("node " + node + " went away during the run on thread " + thread +
                               ": its outcome is in the thread's log once the node is back"),
           {});
  });
  auto ask = [=] {
    self->request(edge, caf::infinite, send_atom::value, thread, in)
        .then([=](run_result& r) { finish(status::ok(), std::move(r)); },
              [=](caf::error& e) { finish(remote_failure(node, e, std::chrono::milliseconds{0}), {}); });
  };
  ask();
  self->delayed_send(self, every, ping_atom::value);
  self->delayed_send(self, every, resend_atom::value, 0);
  return {
      [=](resend_atom, int doublings) {
        if (*finished) return;
        ask();
        int next = std::min(doublings + 1, resend_doublings_max);
        self->delayed_send(self, every * (1 << next), resend_atom::value, next);
      },
      [=](ping_atom) {
        if (*finished) return;
        self->request(edge, every, count_atom::value)
            .then([=](uint64_t, uint64_t) { self->delayed_send(self, every, ping_atom::value); },
                  [=](caf::error& e) {
                    if (e.category() == error_category) {  // it answered, with a refusal: alive
                      self->delayed_send(self, every, ping_atom::value);
                      return;
                    }
                    finish(status::unavailable("node " + node + " stopped answering during the run on thread " +
                                               thread + " (nothing within " + std::to_string(every.count()) +
                                               " ms): its outcome is in the thread's log once the node answers"),
                           {});
                  });
      },
      [](caf::ok_atom) {}};
}

}  // namespace

std::string creation_key(const thread_options& o) {
  if (!o.task_id.empty()) return task_key(o.task_id);
  if (o.dm) return dm_key(o.agent_id);
  if (!o.parent_thread_id.empty()) return std::string{cluster_key(o.parent_thread_id)};
  return {};
}

void register_wire_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<event>("skein.event");
  cfg.add_message_type<std::vector<event>>("skein.events");
  cfg.add_message_type<raw_event>("skein.raw_event");
  cfg.add_message_type<std::vector<raw_event>>("skein.raw_events");
  cfg.add_message_type<manifest>("skein.manifest");
  cfg.add_message_type<run_input>("skein.run_input");
  cfg.add_message_type<run_result>("skein.run_result");
  cfg.add_message_type<thread_options>("skein.thread_options");
  cfg.add_message_type<agent_config>("skein.agent_config");
  cfg.add_message_type<std::vector<agent_config>>("skein.agent_configs");
  cfg.add_message_type<thread_query>("skein.thread_query");
  cfg.add_message_type<thread_page>("skein.thread_page");
  cfg.add_message_type<diagnosis>("skein.diagnosis");
  cfg.add_message_type<log_row>("skein.log_row");
  cfg.add_message_type<std::vector<log_row>>("skein.log_rows");
  cfg.add_message_type<cluster_rebalance_state>("skein.rebalance_state");
  cfg.add_message_type<usage_query>("skein.usage_query");
  cfg.add_message_type<usage_report>("skein.usage_report");
  cfg.add_message_type<memory_hit>("skein.memory_hit");
  cfg.add_message_type<std::vector<memory_hit>>("skein.memory_hits");
  cfg.add_message_type<schedule>("skein.schedule");
  cfg.add_message_type<std::vector<schedule>>("skein.schedules");
  cfg.add_message_type<schedule_firing>("skein.schedule_firing");
  cfg.add_message_type<std::vector<schedule_firing>>("skein.schedule_firings");
  cfg.add_message_type<std::vector<int64_t>>("skein.int64s");
  cfg.add_message_type<compact_wire>("skein.compact_options");
  cfg.add_message_type<compact_result>("skein.compact_result");
  cfg.add_message_type<work_entry>("skein.work_entry");
  cfg.add_message_type<work_resolve>("skein.work_resolve");
  cfg.add_message_type<work_create>("skein.work_create");
  cfg.add_message_type<work_create_result>("skein.work_create_result");
  cfg.add_message_type<work_list_query>("skein.work_list_query");
  cfg.add_message_type<work_list_page>("skein.work_list_page");
  cfg.add_message_type<work_sweep_options>("skein.work_sweep_options");
  cfg.add_message_type<work_sweep_result>("skein.work_sweep_result");
  cfg.add_message_type<work_suggestion>("skein.work_suggestion");
  cfg.add_message_type<std::vector<work_suggestion>>("skein.work_suggestions");
  cfg.add_message_type<work_session_start>("skein.work_session_start");
  cfg.add_message_type<work_session_started>("skein.work_session_started");
  cfg.add_message_type<work_session_close>("skein.work_session_close");
  cfg.add_message_type<work_session_closed>("skein.work_session_closed");
  cfg.add_message_type<std::vector<work_triple>>("skein.work_triples");
  cfg.add_message_type<work_graph_stats>("skein.work_graph_stats");
  cfg.add_message_type<work_graph_filter>("skein.work_graph_filter");
  cfg.add_message_type<work_graph_shared>("skein.work_graph_shared");
}

compact_wire compact_wire::from(const compact_options& o) {
  compact_wire w;
  w.stages = o.stages;
  w.has_keep_turns = o.keep_turns.has_value();
  w.keep_turns = o.keep_turns.value_or(0);
  w.has_tool_result_bytes_max = o.tool_result_bytes_max.has_value();
  w.tool_result_bytes_max = o.tool_result_bytes_max.value_or(0);
  return w;
}

compact_options compact_wire::options() const {
  compact_options o;
  o.stages = stages;
  if (has_keep_turns) o.keep_turns = keep_turns;
  if (has_tool_result_bytes_max) o.tool_result_bytes_max = tool_result_bytes_max;
  return o;
}

void prepare_cluster_config(caf::actor_system_config& cfg, const cluster_tls& tls) {
  register_wire_types(cfg);
  cfg.load<caf::io::middleman>();
  if (!tls.enabled()) return;
  cfg.load<caf::openssl::manager>();
  cfg.openssl_certificate = tls.certificate;
  cfg.openssl_key = tls.key;
  cfg.openssl_cafile = tls.ca;
}

// Links to the other members. Shared with the functors attached to their
// proxies, which may run after the cluster_link is gone.
struct cluster_link::peers {
  struct entry {
    std::string host;
    uint16_t port = 0;
    edge_actor edge;          // null: not connected
    bool connecting = false;  // one connection attempt at a time
    bool tried = false;
    steady::time_point retry_at{};
    uint64_t backoff_ms = 0;
    std::string last_error;
    uint64_t forwarded = 0;
  };
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::string, entry> members;  // guarded by mu
  // forget_failures() calls so far (guarded by mu): a connection attempt that
  // began before the last one leaves no backoff when it fails.
  uint64_t forgotten = 0;

  void lost(const std::string& node, const caf::actor_addr& dead) {
    std::lock_guard lock{mu};
    auto& p = members.at(node);
    if (!p.edge || p.edge.address() != dead) return;
    p.edge = nullptr;
    p.last_error = "link lost";
  }
};

struct cluster_link::views {
  mutable std::mutex mu;
  std::shared_ptr<const cluster_view> now;  // guarded by mu
  std::function<std::string(std::string_view)> placement;  // guarded by mu
  std::shared_ptr<const cluster_view> get() const {
    std::lock_guard lock{mu};
    return now;
  }
};

namespace {
rendezvous ring_of(const std::vector<cluster_member>& members) {
  std::vector<std::string> ids;
  for (const auto& m : members) ids.push_back(m.id);
  return members.empty() ? rendezvous{} : rendezvous{std::move(ids)};
}
}  // namespace

bool cluster_view::in_target(std::string_view node) const {
  return std::any_of(target.begin(), target.end(), [&](const cluster_member& m) { return m.id == node; });
}

std::vector<cluster_member> cluster_view::everyone() const {
  std::vector<cluster_member> out = active;
  for (const auto& m : target)
    if (std::none_of(out.begin(), out.end(), [&](const cluster_member& o) { return o.id == m.id; })) out.push_back(m);
  return out;
}

cluster_link::cluster_link(caf::actor_system& sys, cluster_options options)
    : sys_(sys), options_(std::move(options)), views_(std::make_shared<views>()),
      timeout_(options_.request_timeout_ms), interface_(sys.message_types<edge_actor>()),
      peers_(std::make_shared<peers>()) {
  if (options_.replication.enabled())  // the others come from the members bucket
    set_view({{options_.node_id, options_.replication.host, options_.replication.port}}, {}, {});
  else
    set_view(options_.members, {}, {});
}

void cluster_link::set_placement(std::function<std::string(std::string_view)> placement) {
  std::lock_guard lock{views_->mu};
  views_->placement = std::move(placement);
  auto v = std::make_shared<cluster_view>(*views_->now);
  v->placement = views_->placement;
  views_->now = std::move(v);
}

std::shared_ptr<const cluster_view> cluster_link::view() const { return views_->get(); }

void cluster_link::set_view(std::vector<cluster_member> active, std::vector<cluster_member> target,
                            std::vector<cluster_member> previous) {
  auto v = std::make_shared<cluster_view>();
  v->active = std::move(active);
  v->target = std::move(target);
  v->previous = std::move(previous);
  v->active_ring = ring_of(v->active);
  v->target_ring = ring_of(v->target);
  v->previous_ring = ring_of(v->previous);
  {
    std::lock_guard lock{peers_->mu};
    for (const auto& m : v->everyone()) {
      auto& e = peers_->members[m.id];
      if (e.host != m.host || e.port != m.port) {  // new, or moved: a link to the old address is no use
        e = {};
        e.host = m.host;
        e.port = m.port;
      }
    }
  }
  std::lock_guard lock{views_->mu};
  v->placement = views_->placement;
  views_->now = std::move(v);
}

std::function<bool(std::string_view)> cluster_link::id_filter() const {
  return [views = views_, self = self()](std::string_view id) {
    auto v = views->get();
    std::string_view key = cluster_key(id);
    if (v->changing() && v->in_target(self)) return v->target_ring.owner_id(key) == self;
    return v->owner(key) == self;
  };
}

bool cluster_link::link_down(const std::string& node) const {
  std::lock_guard lock{peers_->mu};
  auto it = peers_->members.find(node);
  return it != peers_->members.end() && !it->second.edge && !it->second.last_error.empty();
}

void cluster_link::forget_failure(const std::string& node) {
  std::lock_guard lock{peers_->mu};
  auto it = peers_->members.find(node);
  if (it == peers_->members.end() || it->second.edge) return;
  it->second.tried = false;
  it->second.retry_at = {};
  it->second.backoff_ms = 0;
  it->second.last_error.clear();
}

void cluster_link::forget_failures() {
  std::lock_guard lock{peers_->mu};
  ++peers_->forgotten;
  for (auto& [id, p] : peers_->members) {
    if (p.edge) continue;
    p.tried = false;
    p.retry_at = {};
    p.backoff_ms = 0;
    p.last_error.clear();
  }
}

cluster_link::~cluster_link() { stop(); }

status cluster_link::start(runtime& rt, edge_hooks hooks) {
  for (size_t i = 0; i < options_.edge_workers; ++i) {
    std::promise<caf::actor> made;
    auto handle = made.get_future();
    worker_threads_.emplace_back([this, &rt, hooks, made = std::move(made)]() mutable {
      {
        caf::scoped_actor self{sys_, true};  // hidden: no actor the system waits for
        made.set_value(caf::actor_cast<caf::actor>(self.ptr()));
        edge_worker(self.ptr(), &rt, this, hooks);
      }
      release_logger();  // as a caller does (actors/caller.hpp)
    });
    workers_.push_back(handle.get());
  }
  auto ws = workers_;
  size_t next = 0;
  edge_ = caf::actor_pool::make(sys_.dummy_execution_unit(), ws.size(),
                                [ws, next]() mutable { return ws[next++ % ws.size()]; },
                                caf::actor_pool::round_robin());
  const peers::entry me = [&] {
    std::lock_guard lock{peers_->mu};
    return peers_->members.at(options_.node_id);
  }();
  // Published with its interface (edge_protocol.hpp), which a connecting node
  // compares with its own. The workers are blocking actors (CAF 0.17 has no
  // typed ones): each answers exactly edge_actor's calls (cluster_edge.cpp).
  auto typed = caf::actor_cast<edge_actor>(edge_);
  auto port = tls() ? caf::openssl::publish(typed, me.port, me.host.c_str(), true)
                    : sys_.middleman().publish(typed, me.port, me.host.c_str(), true);
  if (!port) {
    stop();
    return status::io_error("cluster: cannot listen on " + me.host + ":" + std::to_string(me.port) + ": " +
                            sys_.render(port.error()))
        .with_field("cluster");
  }
  port_ = *port;
  if (me.port == 0) {  // any free port was asked: peers learn the bound one
    auto v = view();
    std::vector<cluster_member> active = v->active;
    for (auto& m : active)
      if (m.id == options_.node_id) m.port = port_;
    set_view(std::move(active), v->target, v->previous);
  }
  return status::ok();
}

void cluster_link::stop() {
  if (edge_) {
    sys_.middleman().unpublish(edge_, port_);
    caf::anon_send_exit(edge_, caf::exit_reason::user_shutdown);
    edge_ = nullptr;
  }
  for (auto& w : workers_) caf::anon_send(w, stop_atom::value);
  // Each finishes the call it runs (bounded: runtime calls, or calls to other
  // nodes under the request timeout) before the runtime closes under it.
  for (auto& t : worker_threads_) t.join();
  worker_threads_.clear();
  workers_.clear();
  std::lock_guard lock{peers_->mu};
  for (auto& [id, p] : peers_->members) p.edge = nullptr;
}

status cluster_link::peer(const std::string& node, edge_actor* out) {
  std::unique_lock lock{peers_->mu};
  auto found = peers_->members.find(node);
  if (found == peers_->members.end()) return status::unavailable("node " + node + " is not a member");
  auto& p = found->second;
  auto deadline = steady::now() + timeout_;
  auto down = [&] {
    return status::unavailable("node " + node + " at " + p.host + ":" + std::to_string(p.port) + " is down (" +
                               p.last_error + ")");
  };
  while (!p.edge && p.connecting)
    if (peers_->cv.wait_until(lock, deadline) == std::cv_status::timeout)
      return status::unavailable("node " + node + ": still connecting after " + std::to_string(timeout_.count()) + " ms");
  if (p.edge) {
    ++p.forwarded;
    *out = p.edge;
    return status::ok();
  }
  if (steady::now() < p.retry_at) return down();
  p.connecting = true;
  p.tried = true;
  const uint64_t forgotten = peers_->forgotten;
  std::string host = p.host;
  uint16_t port = p.port;
  lock.unlock();
  // The middleman's connect, asked with the request timeout: its blocking
  // remote_actor() waits forever on a peer that accepts TCP but never answers
  // the handshake (a stopped process). A late answer goes nowhere.
  // Under TLS the OpenSSL module's middleman actor makes the link (the
  // handshake checks the peer's certificate against the cluster CA).
  // The edge there must speak this node's interface (edge_protocol.hpp): its
  // published signatures are compared with ours, so a node of another skein
  // version gets no link rather than messages it would misread.
  edge_actor edge;
  caf::error failed;
  std::string refused;
  {
    caller self{sys_};
    auto mm = tls() ? sys_.openssl_manager().actor_handle() : sys_.middleman().actor_handle();
    self->request(mm, timeout_, caf::connect_atom::value, host, port)
        .receive(
            [&](caf::node_id&, caf::strong_actor_ptr& ptr, std::set<std::string>& ifs) {
              if (!ptr) {
                failed = caf::make_error(caf::sec::no_actor_published_at_port);
              } else if (ifs != interface_) {
                failed = caf::make_error(caf::sec::unexpected_actor_messaging_interface);
                refused = "refused: its edge speaks another interface than this node's (" +
                          std::to_string(ifs.size()) + " calls, this node " + std::to_string(interface_.size()) +
                          "): another skein version?";
              } else {
                edge = caf::actor_cast<edge_actor>(ptr);
              }
            },
            [&](caf::error& e) { failed = std::move(e); });
  }
  lock.lock();
  p.connecting = false;
  peers_->cv.notify_all();
  if (failed) {
    p.last_error = !refused.empty()                      ? refused
                   : failed == caf::sec::request_timeout ? "no handshake within " + std::to_string(timeout_.count()) + " ms"
                                                         : sys_.render(failed);
    if (forgotten == peers_->forgotten) {  // else the failures were forgotten meanwhile: the next call tries
      p.backoff_ms = p.backoff_ms == 0 ? options_.reconnect_min_ms
                                       : std::min(p.backoff_ms * 2, options_.reconnect_max_ms);
      p.retry_at = steady::now() + std::chrono::milliseconds(p.backoff_ms);
    }
    return down();
  }
  p.edge = edge;
  p.backoff_ms = 0;
  p.last_error.clear();
  ++p.forwarded;
  *out = p.edge;
  // Outside the lock: CAF runs the functor at once, on this thread, when the
  // proxy is already dead (a link that dropped right after it was made), and
  // lost() takes the lock (it was a self-deadlock, seen under load).
  lock.unlock();
  std::weak_ptr<peers> weak = peers_;
  edge->attach_functor([weak, node, addr = edge.address()] {
    if (auto s = weak.lock()) s->lost(node, addr);
  });
  return status::ok();
}

status cluster_link::failure(const std::string& node, const caf::error& e) {
  return remote_failure(node, e, timeout_);
}

void cluster_link::send(const std::string& node, const std::string& thread, run_input input,
                        std::function<void(status, run_result)> done) {
  edge_actor edge;
  if (status s = peer(node, &edge); !s) return done(std::move(s), {});
  sys_.spawn(send_forwarder, edge, node, thread, std::move(input), timeout_, std::move(done));
}

status cluster_link::subscribe(const std::string& node, const std::string& thread, uint64_t from_seq,
                               event_sink sink, std::shared_ptr<std::atomic<uint64_t>> failures,
                               caf::actor* sink_actor) {
  edge_actor edge;
  SKEIN_TRY(peer(node, &edge));
  // The sink watches the owner's edge: the link dropping ends the subscription.
  caf::actor actor = spawn_sink(sys_, std::move(sink), std::move(failures), caf::actor_cast<caf::actor>(edge));
  uint64_t remote_id = 0;
  status s = call(node, [&](uint64_t id) { remote_id = id; }, subscribe_atom::value, thread, from_seq, actor);
  if (!s) {
    caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
    return s;
  }
  *sink_actor = actor;
  return status::ok();
}

status cluster_link::members(const edge_hooks& local, std::vector<cluster_member_state>* out) {
  out->clear();
  auto v = view();
  auto in = [](const std::vector<cluster_member>& list, const std::string& id) {
    return std::any_of(list.begin(), list.end(), [&](const cluster_member& m) { return m.id == id; });
  };
  for (const auto& m : v->everyone()) {
    cluster_member_state st;
    st.id = m.id;
    if (v->changing() && !in(v->active, m.id)) st.role = "joining";
    else if (v->changing() && !in(v->target, m.id)) st.role = "leaving";
    st.address = (m.host.find(':') != std::string::npos ? "[" + m.host + "]" : m.host) + ":" + std::to_string(m.port);
    if (m.id == self()) {
      st.self = true;
      st.state = "self";
      SKEIN_TRY(local.counts(&st.threads, &st.active));
      out->push_back(std::move(st));
      continue;
    }
    status s = call(m.id, [&](uint64_t threads, uint64_t active) {
      st.threads = threads;
      st.active = active;
    }, count_atom::value);
    {
      std::lock_guard lock{peers_->mu};
      const auto& p = peers_->members.at(m.id);
      st.forwarded = p.forwarded;
      if (s) st.state = "up";
      else {
        st.state = "down";
        st.last_error = s.message();
      }
    }
    out->push_back(std::move(st));
  }
  return status::ok();
}

}  // namespace skein
