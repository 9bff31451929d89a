// The inbound side of a node's cluster link: the edge's workers, which run
// other nodes' calls through the local runtime (protocol: cluster_link.hpp).
#include <caf/blocking_actor.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/make_message.hpp>
#include <caf/others.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>
#include <map>

#include "actors/scheduler.hpp"
#include "runtime/cluster/cluster_link.hpp"
#include "runtime/model/ids.hpp"

namespace skein {
namespace {

using done_atom = caf::atom_constant<caf::atom("done")>;

// On an edge worker's thread: calls it runs came from another node.
thread_local bool t_serving_edge = false;

struct worker_state {
  std::map<caf::actor_addr, uint64_t> subs;  // a remote sink -> its subscription here
  std::map<uint64_t, caf::response_promise> sends;
  uint64_t next_send = 1;
};

}  // namespace

bool cluster_link::serving_edge() { return t_serving_edge; }

// One of the edge's workers: a blocking actor on a thread of its own (the
// edge's, cluster_link::start) that runs calls from other nodes through the
// local runtime, until stop_atom (or the pool's exit). Not a CAF detached actor:
// ~actor_system waits for a detached actor's object to be destroyed, and a reply
// it sent to a node that was closing can stay referenced by the middleman until
// after that wait — the system's close then never ended. cluster_link::stop()
// joins the thread before the runtime closes, so `rt` and the hooks outlive it.
void edge_worker(caf::blocking_actor* self, runtime* rt, cluster_link* link, edge_hooks hooks) {
  t_serving_edge = true;
  const std::string node = link->self();
  // Another node's bytes are trusted no more than a client's: ids are checked,
  // and a thread this node does not own is refused, never served.
  // A call is taken when this node owns the thread by its active members, or
  // will by the target ones (a change under way: route() finds where it is
  // now), or did before the last change (a node that has not committed it yet
  // still sends here: route() forwards it to the owner, one hop).
  auto own = [link, node](const std::string& id) -> status {
    SKEIN_TRY(validate_id(id, "thread id"));
    auto v = link->view();
    std::string_view key = cluster_key(id);
    const std::string& owner = v->owner(key);
    if (owner == node || (v->changing() && v->target_ring.owner_id(key) == node) ||
        (!v->previous.empty() && v->previous_ring.owner_id(key) == node))
      return status::ok();
    return status::unavailable("node " + node + " does not own thread " + id + " (by its member list, " + owner +
                               " does): the nodes' cluster files differ");
  };
  // The owner of a claim or a parent's family now: the target's while a change
  // is under way (creations go straight to their new home).
  auto decides = [link](const std::string& key) {
    auto v = link->view();
    return v->changing() ? v->target_ring.owner_id(key) : v->owner(key);
  };
  worker_state st;
  bool running = true;
  // Stopping (the node closes): runs forwarded here get an answer, not silence.
  auto finish = [&] {
    for (auto& [k, rp] : st.sends)
      rp.deliver(to_error(status::unavailable("node " + node + " is closing: the run's outcome is in its log")));
    st.sends.clear();
    running = false;
  };
  self->receive_while(running)(
      [&](stop_atom) { finish(); },
      [&](caf::exit_msg&) { finish(); },
      [&](caf::down_msg& m) {
        auto it = st.subs.find(m.source);
        if (it == st.subs.end()) return;
        rt->unsubscribe(it->second).ignore();
        st.subs.erase(it);
      },
      [&](create_atom, thread_options& o) -> caf::result<manifest, bool> {
        std::string key = creation_key(o);
        if (!key.empty() && !o.parent_thread_id.empty()) {
          if (status s = own(o.parent_thread_id); !s) return to_error(s);
        } else if (!key.empty() && decides(key) != node) {
          return to_error(status::unavailable("node " + node + " does not own " + key + ": the nodes' cluster files differ"));
        }
        manifest m;
        bool created = false;
        if (status s = rt->create_thread(std::move(o), &m, &created); !s) return to_error(s);
        return {std::move(m), created};
      },
      [&](caf::get_atom, std::string& id) -> caf::result<manifest> {
        manifest m;
        if (status s = own(id); !s) return to_error(s);
        if (status s = rt->get_thread(id, &m); !s) return to_error(s);
        return m;
      },
      [&](submit_atom, std::string& id, run_input& in) -> caf::result<std::string> {
        std::string run;
        if (status s = own(id); !s) return to_error(s);
        if (status s = rt->submit(id, std::move(in), &run); !s) return to_error(s);
        return run;
      },
      [&](send_atom, std::string& id, run_input& in) -> caf::result<run_result> {
        if (status s = own(id); !s) return to_error(s);
        auto rp = self->make_response_promise();
        uint64_t k = st.next_send++;
        st.sends.emplace(k, rp);
        if (link->options().lose_send && link->options().lose_send(id)) return rp;  // test hook: never answered
        auto me = caf::actor_cast<caf::actor>(self);
        rt->send(id, std::move(in)).on_done([me, k](const status& s, const run_result& r) {
          caf::anon_send(me, done_atom::value, k, r, to_error(s));
        });
        return rp;
      },
      [&](done_atom, uint64_t k, run_result& r, caf::error& e) {
        auto it = st.sends.find(k);
        if (it == st.sends.end()) return;
        if (e) it->second.deliver(std::move(e));
        else it->second.deliver(std::move(r));
        st.sends.erase(it);
      },
      [&](cancel_atom, std::string& id) -> caf::result<bool> {
        bool was = false;
        if (status s = own(id); !s) return to_error(s);
        if (status s = rt->cancel(id, &was); !s) return to_error(s);
        return was;
      },
      [&](read_atom, std::string& id, uint8_t view, uint64_t from, uint64_t limit) -> caf::result<std::vector<event>> {
        std::vector<event> out;
        if (status s = own(id); !s) return to_error(s);
        if (view > static_cast<uint8_t>(history_view::complete))
          return to_error(status::invalid_input("view: out of range").with_field("view"));
        if (status s = rt->read(id, static_cast<history_view>(view), from, limit, &out); !s) return to_error(s);
        return out;
      },
      [&](raw_atom, std::string& id, uint64_t from, uint64_t limit, uint8_t mask)
          -> caf::result<std::vector<raw_event>, uint64_t> {
        std::vector<raw_event> out;
        uint64_t next = 0;
        if (status s = own(id); !s) return to_error(s);
        group_filter groups;
        groups.mask = mask & groups.mask;
        if (status s = rt->read_raw(id, from, limit, groups, &out, &next); !s) return to_error(s);
        return {std::move(out), next};
      },
      [&](subscribe_atom, std::string& id, uint64_t from, caf::actor& sink) -> caf::result<uint64_t> {
        if (status s = own(id); !s) return to_error(s);
        if (!sink) return to_error(status::invalid_input("subscribe: no sink"));
        event_sink es;
        es.on_event_json = [sink, id](uint64_t seq, event_type type, const std::string& json) {
          caf::anon_send(sink, event_atom::value, id, seq, static_cast<uint8_t>(type), json);
        };
        es.on_delta = [sink, id](const std::string& run, const std::string& delta) {
          caf::anon_send(sink, delta_atom::value, id, run, delta);
        };
        es.on_end = [sink, id](const std::string& reason) { caf::anon_send(sink, caf::close_atom::value, id, reason); };
        uint64_t sub = 0;
        if (status s = rt->subscribe(id, from, std::move(es), &sub); !s) return to_error(s);
        self->monitor(sink);
        st.subs[sink.address()] = sub;
        return sub;
      },
      [&](delete_atom, std::string& id) -> caf::result<bool> {
        if (status s = own(id); !s) return to_error(s);
        if (status s = rt->delete_thread(id); !s) return to_error(s);
        return true;
      },
      [&](fork_atom, std::string& id, uint64_t at) -> caf::result<manifest> {
        manifest m;
        if (status s = own(id); !s) return to_error(s);
        if (status s = rt->fork(id, at, &m); !s) return to_error(s);
        return m;
      },
      [&](title_atom, std::string& id, std::string& title) -> caf::result<manifest> {
        manifest m;
        if (status s = own(id); !s) return to_error(s);
        if (status s = rt->set_title(id, title, &m); !s) return to_error(s);
        return m;
      },
      [&](reconcile_atom, std::string& id) -> caf::result<bool> {
        bool done = false;
        if (status s = own(id); !s) return to_error(s);
        if (status s = rt->reconcile(id, &done); !s) return to_error(s);
        return done;
      },
      [&](diagnose_atom, std::string& id) -> caf::result<diagnosis> {
        diagnosis d;
        if (status s = own(id); !s) return to_error(s);
        if (status s = rt->diagnose(id, &d); !s) return to_error(s);
        return d;
      },
      [&](usage_atom, usage_query& q) -> caf::result<usage_report> {
        usage_report out;
        if (status s = hooks.usage_local(q, &out); !s) return to_error(s);
        return out;
      },
      [&](search_atom, std::string& agent, std::string& query, uint64_t k) -> caf::result<std::vector<memory_hit>> {
        std::vector<memory_hit> out;
        if (status s = hooks.search_local(std::move(agent), std::move(query), static_cast<size_t>(k), &out); !s)
          return to_error(s);
        return out;
      },
      // Schedules: runtime's calls, which refuse one this node does not own
      // when it comes from another node (route_schedule).
      [&](schedule_atom, create_atom, schedule& s) -> caf::result<schedule> {
        schedule out;
        if (s.id.empty()) return to_error(status::invalid_input("schedule.id: a forwarded schedule has its id"));
        if (status st = rt->create_schedule(std::move(s), &out); !st) return to_error(st);
        return out;
      },
      [&](schedule_atom, caf::get_atom, std::string& id) -> caf::result<schedule> {
        schedule out;
        if (status st = rt->get_schedule(id, &out); !st) return to_error(st);
        return out;
      },
      [&](schedule_atom, pause_atom, std::string& id) -> caf::result<schedule> {
        schedule out;
        if (status st = rt->pause_schedule(id, &out); !st) return to_error(st);
        return out;
      },
      [&](schedule_atom, resume_atom, std::string& id) -> caf::result<schedule> {
        schedule out;
        if (status st = rt->resume_schedule(id, &out); !st) return to_error(st);
        return out;
      },
      [&](schedule_atom, delete_atom, std::string& id) -> caf::result<bool> {
        if (status st = rt->delete_schedule(id); !st) return to_error(st);
        return true;
      },
      [&](schedule_atom, schedule_history_atom, std::string& id, uint64_t before, uint64_t limit)
          -> caf::result<std::vector<schedule_firing>, uint64_t> {
        std::vector<schedule_firing> out;
        uint64_t next = 0;
        if (status st = rt->schedule_history(id, before, static_cast<size_t>(limit), &out, &next); !st)
          return to_error(st);
        return {std::move(out), next};
      },
      [&](schedule_atom, schedule_preview_atom, std::string& id, uint64_t n) -> caf::result<std::vector<int64_t>> {
        std::vector<int64_t> out;
        if (status st = rt->preview_schedule(id, static_cast<size_t>(n), &out); !st) return to_error(st);
        return out;
      },
      [&](schedule_atom, list_atom, std::string& after, uint64_t limit)
          -> caf::result<std::vector<schedule>, std::string> {
        std::vector<schedule> out;
        std::string next;
        if (status st = hooks.list_schedules_local(after, static_cast<size_t>(limit), &out, &next); !st)
          return to_error(st);
        return {std::move(out), next};
      },
      [&](compact_atom, std::string& id, compact_wire& w) -> caf::result<compact_result> {
        compact_result out;
        if (status s = own(id); !s) return to_error(s);
        if (status s = rt->compact(id, w.options(), &out); !s) return to_error(s);
        return out;
      },
      [&](member_atom, std::string& id, std::string& agent, std::string& trigger, bool add) -> caf::result<manifest> {
        manifest m;
        if (status s = own(id); !s) return to_error(s);
        status s;
        if (add) {
          house_member hm;
          hm.agent_id = agent;
          auto t = parse_member_trigger(trigger);
          if (!t) return to_error(status::invalid_input("trigger: not a member trigger: " + trigger).with_field("trigger"));
          hm.trigger = *t;
          s = rt->add_member(id, hm, &m);
        } else {
          s = rt->remove_member(id, agent, &m);
        }
        if (!s) return to_error(s);
        return m;
      },
      [&](import_atom, manifest& m, std::vector<event>& events) -> caf::result<manifest> {
        manifest out;
        if (status s = own(m.id); !s) return to_error(s);
        if (status s = rt->import_thread(std::move(m), std::move(events), &out); !s) return to_error(s);
        return out;
      },
      [&](task_atom, std::string& task) -> caf::result<manifest> {
        manifest m;
        if (decides(task_key(task)) != node && link->view()->owner(task_key(task)) != node)
          return to_error(status::unavailable("node " + node + " does not own task " + task));
        if (status s = rt->find_task_thread(task, &m); !s) return to_error(s);
        return m;
      },
      [&](list_atom, thread_query& q) -> caf::result<thread_page> {
        thread_page page;
        if (status s = hooks.list_local(q, &page); !s) return to_error(s);
        return page;
      },
      [&](caf::put_atom, agent_config& a) -> caf::result<agent_config> {
        agent_config out;
        // The coordinator decides and fans out; any other node stores what it is told.
        status s = node == link->coordinator() ? rt->create_agent(std::move(a), &out)
                                              : hooks.put_agent_local(std::move(a), &out);
        if (!s) return to_error(s);
        return out;
      },
      [&](agent_atom) -> caf::result<std::vector<agent_config>> {
        std::vector<agent_config> out;
        if (status s = rt->list_agents(&out); !s) return to_error(s);
        return out;
      },
      [&](count_atom) -> caf::result<uint64_t, uint64_t> {
        uint64_t threads = 0, active = 0;
        if (status s = hooks.counts(&threads, &active); !s) return to_error(s);
        return {threads, active};
      },
      [&](members_atom) -> caf::result<std::string, std::string> {
        auto v = link->view();
        return {format_cluster(v->active), format_cluster(v->target)};
      },
      [&](rebalance_atom, std::string& target) -> caf::result<bool> {
        if (status s = hooks.start_pass(target); !s) return to_error(s);
        return true;
      },
      [&](progress_atom) -> caf::result<cluster_rebalance_state> { return hooks.pass_state(); },
      [&](adopt_atom, std::string& id, uint32_t part, uint32_t parts, std::vector<log_row>& rows) -> caf::result<bool> {
        if (status s = validate_id(id, "thread id"); !s) return to_error(s);
        auto v = link->view();
        if (!v->changing() || v->target_ring.owner_id(cluster_key(id)) != node)
          return to_error(status::unavailable("node " + node + " is not the new owner of thread " + id +
                                              " (by its member list): the nodes' cluster files differ"));
        bool adopted = false;
        if (status s = hooks.adopt(std::move(id), part, parts, std::move(rows), &adopted); !s) return to_error(s);
        return adopted;
      },
      [&](item_atom, caf::get_atom, std::string& id) -> caf::result<work_entry> {
        work_entry e;
        if (status s = own(id); !s) return to_error(s);
        if (status s = rt->get_item(id, &e); !s) return to_error(s);
        return e;
      },
      [&](item_atom, touch_atom, std::string& id) -> caf::result<work_entry> {
        work_entry e;
        if (status s = own(id); !s) return to_error(s);
        if (status s = rt->touch_item(id, &e); !s) return to_error(s);
        return e;
      },
      [&](item_atom, relate_atom, std::string& id, std::string& issue) -> caf::result<work_entry> {
        work_entry e;
        if (status s = own(id); !s) return to_error(s);
        if (status s = rt->relate_item(id, issue, &e); !s) return to_error(s);
        return e;
      },
      [&](item_atom, item_resolve_atom, work_resolve& in) -> caf::result<work_entry> {
        work_entry e;
        if (in.thread_id.empty())  // by text: the agent's items on the node asked, never forwarded
          return to_error(status::invalid_input("thread_id: a forwarded resolve names its item").with_field("thread_id"));
        if (status s = own(in.thread_id); !s) return to_error(s);
        if (status s = rt->resolve_item(in, &e); !s) return to_error(s);
        return e;
      },
      // By agent: the runtime's call routes it (its work home is this node, or
      // the call is refused as another's: the nodes' cluster files differ).
      [&](work_atom, create_atom, work_create& in) -> caf::result<work_create_result> {
        work_create_result r;
        if (status s = rt->create_item(in, &r); !s) return to_error(s);
        return r;
      },
      [&](work_atom, list_atom, work_list_query& q) -> caf::result<work_list_page> {
        work_list_page r;
        if (status s = rt->list_items(q, &r); !s) return to_error(s);
        return r;
      },
      [&](work_atom, item_resolve_atom, work_resolve& in) -> caf::result<work_entry> {
        work_entry e;
        if (!in.thread_id.empty())  // by id: item_atom's, on the item's node
          return to_error(status::invalid_input("thread_id: a resolve by agent names no item").with_field("thread_id"));
        if (status s = rt->resolve_item(in, &e); !s) return to_error(s);
        return e;
      },
      [&](work_atom, work_sweep_atom, work_sweep_options& o) -> caf::result<work_sweep_result> {
        work_sweep_result r;
        if (status s = rt->sweep_items(o, &r); !s) return to_error(s);  // agent "": this node's items
        return r;
      },
      [&](work_atom, suggest_atom, std::string& agent, bool all) -> caf::result<std::vector<work_suggestion>> {
        std::vector<work_suggestion> r;
        if (status s = rt->list_suggestions(agent, all, &r); !s) return to_error(s);
        return r;
      },
      [&](work_atom, promote_atom, std::string& id, std::string& project) -> caf::result<work_create_result> {
        work_create_result r;
        if (status s = rt->promote_suggestion(id, &r, project); !s) return to_error(s);
        return r;
      },
      [&](work_atom, dismiss_atom, std::string& id) -> caf::result<work_suggestion> {
        work_suggestion r;
        if (status s = rt->dismiss_suggestion(id, &r); !s) return to_error(s);
        return r;
      },
      [&](work_atom, session_start_atom, work_session_start& in) -> caf::result<work_session_started> {
        work_session_started r;
        if (status s = rt->session_start(in, &r); !s) return to_error(s);
        return r;
      },
      [&](work_atom, session_close_atom, work_session_close& in) -> caf::result<work_session_closed> {
        work_session_closed r;
        if (status s = rt->session_close(in, &r); !s) return to_error(s);
        return r;
      },
      [&](work_atom, graph_atom, uint8_t lens, std::string& n, uint64_t limit,
          work_graph_filter& filter) -> caf::result<std::vector<work_triple>> {
        std::vector<work_triple> r;
        if (status s = hooks.graph_local(lens, n, static_cast<size_t>(std::min<uint64_t>(limit, SIZE_MAX)), filter, &r);
            !s)
          return to_error(s);
        return r;
      },
      [&](work_atom, graph_stats_atom, std::string& project) -> caf::result<work_graph_stats, work_graph_shared> {
        work_graph_stats st;
        work_graph_shared shared;
        if (status s = hooks.graph_stats_local(project, &st, &shared); !s) return to_error(s);
        return {std::move(st), std::move(shared)};
      },
      [&](work_atom, adopt_atom, std::string& agent, std::vector<log_row>& rows) -> caf::result<bool> {
        if (status s = validate_id(agent, "agent_id"); !s) return to_error(s);
        auto v = link->view();
        if (!v->changing() || v->target_ring.owner_id(work_home_key(agent)) != node)
          return to_error(status::unavailable("node " + node + " is not the new work home of agent " + agent +
                                              " (by its member list): the nodes' cluster files differ"));
        if (status s = hooks.adopt_work(std::move(agent), std::move(rows)); !s) return to_error(s);
        return true;
      },
      [&](schedule_atom, adopt_atom, std::string& id, std::vector<log_row>& rows) -> caf::result<bool> {
        if (status s = validate_id(id, "schedule id"); !s) return to_error(s);
        auto v = link->view();
        if (!v->changing() || v->target_ring.owner_id(cluster_key(id)) != node)
          return to_error(status::unavailable("node " + node + " is not the new owner of schedule " + id +
                                              " (by its member list): the nodes' cluster files differ"));
        if (rows.size() > schedule_history_max + 1)
          return to_error(status::invalid_input("handoff of schedule " + id + ": " + std::to_string(rows.size()) +
                                                " rows, past its definition and schedule_history_max (" +
                                                std::to_string(schedule_history_max) + ") firings")
                              .with_field("rows")
                              .with_limit("schedule_history_max"));
        bool adopted = false;
        if (status s = hooks.adopt_schedule(std::move(id), std::move(rows), &adopted); !s) return to_error(s);
        return adopted;
      },
      [&](claim_atom, std::vector<log_row>& claims) -> caf::result<bool> {
        if (status s = hooks.put_claims(std::move(claims)); !s) return to_error(s);
        return true;
      },
      [&](membership_commit_atom, std::string& target) -> caf::result<bool> {
        if (status s = hooks.commit(target); !s) return to_error(s);
        return true;
      },
      // Anything else: refused, not left in the mailbox (a blocking receive skips
      // what it does not match).
      caf::others >> [&](caf::message_view&) -> caf::result<caf::message> {
        return to_error(status::invalid_input("edge: not a message of the edge protocol"));
      });
}

}  // namespace skein
