// The cluster edge's interface: what one node may ask another's edge actor
// (runtime/cluster/cluster_link.hpp), and the values that cross with it. Every call
// site is checked against edge_actor when compiled; each node publishes its
// edge with this interface, and a link to a node whose edge speaks another
// (another skein version) is refused when it is made. Every type here has an
// `inspect` overload (actors/wire.hpp, below) and is registered by name on both
// ends (register_wire_types). Callbacks and shared pointers never cross: a
// remote subscription is a relay to a sink actor on the subscriber's node.
//
// Request -> reply; `id` is a thread id:
//   (create_atom, thread_options)            -> (manifest, bool created)  task/dm/child creations
//   (get_atom, id)                           -> manifest
//   (submit_atom, id, run_input)             -> std::string run id
//   (send_atom, id, run_input)               -> run_result (when the run has ended)
//   (cancel_atom, id)                        -> bool
//   (read_atom, id, uint8 view, uint64 from, uint64 limit)     -> std::vector<event>
//   (raw_atom, id, uint64 from, uint64 limit, uint8 groups)    -> (std::vector<raw_event>, uint64 next)
//   (subscribe_atom, id, uint64 from, actor sink) -> uint64; then to sink:
//        (event_atom, id, uint64 seq, uint8 type, std::string json)
//        (delta_atom, id, std::string run id, std::string delta)
//        (caf::close_atom, id, std::string reason)
//      the worker watches the sink and unsubscribes when it goes (or its node does)
//   (delete_atom, id) -> bool · (fork_atom, id, uint64 at) -> manifest
//   (title_atom, id, std::string) -> manifest · (reconcile_atom, id) -> bool
//   (diagnose_atom, id) -> diagnosis · (import_atom, manifest, std::vector<event>) -> manifest
//   (usage_atom, usage_query) -> usage_report      this node's usage rows alone
//   (search_atom, agent, std::string query, uint64 k) -> std::vector<memory_hit>   this node's memory alone
//   schedules, each on the node its id routes to (runtime_cluster.cpp, route_schedule):
//   (schedule_atom, create_atom, schedule) -> schedule · (schedule_atom, get_atom, id) -> schedule
//   (schedule_atom, pause_atom | resume_atom, id) -> schedule · (schedule_atom, delete_atom, id) -> bool
//   (schedule_atom, schedule_history_atom, id, uint64 before, uint64 limit) -> (std::vector<schedule_firing>, uint64 next)
//   (schedule_atom, schedule_preview_atom, id, uint64 n) -> std::vector<int64_t>
//   (schedule_atom, list_atom, std::string after, uint64 limit) -> (std::vector<schedule>, std::string next)  its own
//   (compact_atom, id, compact_wire) -> compact_result
//   work items by thread id, on the item's node (its rows and the work index
//   that holds it live there; calls by agent stay on the node asked):
//   (item_atom, get_atom | touch_atom, id) -> work_entry · (item_atom, relate_atom, id, issue id) -> work_entry
//   (item_atom, item_resolve_atom, work_resolve with thread_id) -> work_entry
//   work by agent, on the agent's work home (the node owning work_key(agent);
//   runtime_work.cpp, route_work): every item of an agent, its sessions and
//   suggestions live there, so that dedup and listings see them all:
//   (work_atom, create_atom, work_create) -> work_create_result
//   (work_atom, list_atom, work_list_query) -> work_list_page
//   (work_atom, item_resolve_atom, work_resolve by text) -> work_entry
//   (work_atom, work_sweep_atom, work_sweep_options) -> work_sweep_result   agent "": this node's items alone
//   (work_atom, suggest_atom, agent, bool all) -> std::vector<work_suggestion>
//   (work_atom, promote_atom, suggestion id, project) -> work_create_result   project "": the suggestion's
//   (work_atom, dismiss_atom, suggestion id) -> work_suggestion
//   (work_atom, session_start_atom, work_session_start) -> work_session_started
//   (work_atom, session_close_atom, work_session_close) -> work_session_closed
//   the knowledge graph lives with the items whose transitions wrote it; each
//   lens gathers every node's (this node's own alone):
//   (work_atom, graph_atom, uint8 lens, std::string node, uint64 limit, work_graph_filter) -> std::vector<work_triple>
//        lens 0: connected to node, 1: produced by agent `node`, 2: into node (a provenance hop)
//   (work_atom, graph_stats_atom, project) -> (work_graph_stats, work_graph_shared)   this node's part (work_graph.hpp)
//   (member_atom, id, std::string agent, std::string trigger, bool add) -> manifest   house members
//   (task_atom, task id) -> manifest · (list_atom, thread_query) -> thread_page (its own threads)
//   (caf::put_atom, agent_config) -> agent_config · (agent_atom) -> std::vector<agent_config>
//   (count_atom) -> (uint64 threads stored, uint64 thread actors active)
// Membership change (cluster_handoff.cpp); `members` is a cluster file's text:
//   (members_atom) -> (std::string active, std::string target)   target "": no change
//   (rebalance_atom, std::string target) -> bool   starts this node's handoff pass
//   (progress_atom) -> cluster_rebalance_state      of this node's pass
//   (adopt_atom, id, uint32 part, uint32 parts, std::vector<log_row>) -> bool adopted
//        a thread's rows in parts; the last part writes them all in one batch
//   (claim_atom, std::vector<log_row>) -> bool      claims handed over
//   (schedule_atom, adopt_atom, schedule id, std::vector<log_row>) -> bool adopted
//        a schedule's definition and history, written in one batch, then armed
//   (work_atom, adopt_atom, agent, std::vector<log_row>) -> bool
//        part of an agent's sessions and suggestions, once its items moved
//   (membership_commit_atom, std::string target) -> bool   the target becomes the active members
#pragma once

#include <caf/atom.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "actors/messages.hpp"
#include "actors/scheduler.hpp"
#include "actors/work_messages.hpp"
#include "persistence/event_log.hpp"
#include "runtime/memory_service.hpp"
#include "runtime/model/cluster.hpp"
#include "runtime/model/work_api.hpp"
#include "runtime/model/work_graph.hpp"
#include "runtime/runtime.hpp"

namespace skein {

using read_atom = caf::atom_constant<caf::atom("read")>;
using raw_atom = caf::atom_constant<caf::atom("readraw")>;
using diagnose_atom = caf::atom_constant<caf::atom("diagnose")>;
using task_atom = caf::atom_constant<caf::atom("task")>;
using list_atom = caf::atom_constant<caf::atom("list")>;
using count_atom = caf::atom_constant<caf::atom("counts")>;
using members_atom = caf::atom_constant<caf::atom("members")>;
using rebalance_atom = caf::atom_constant<caf::atom("rebalance")>;
using progress_atom = caf::atom_constant<caf::atom("progress")>;
using adopt_atom = caf::atom_constant<caf::atom("adopt")>;
using claim_atom = caf::atom_constant<caf::atom("claim")>;
using membership_commit_atom = caf::atom_constant<caf::atom("mcommit")>;
using usage_atom = caf::atom_constant<caf::atom("usage")>;
using search_atom = caf::atom_constant<caf::atom("msearch")>;
using schedule_atom = caf::atom_constant<caf::atom("schedule")>;
using schedule_history_atom = caf::atom_constant<caf::atom("shistory")>;
using schedule_preview_atom = caf::atom_constant<caf::atom("spreview")>;
using item_atom = caf::atom_constant<caf::atom("item")>;
using touch_atom = caf::atom_constant<caf::atom("touch")>;
using relate_atom = caf::atom_constant<caf::atom("relate")>;
using item_resolve_atom = caf::atom_constant<caf::atom("iresolve")>;
using work_sweep_atom = caf::atom_constant<caf::atom("wsweep")>;
using suggest_atom = caf::atom_constant<caf::atom("wsuggest")>;
using promote_atom = caf::atom_constant<caf::atom("wpromote")>;
using dismiss_atom = caf::atom_constant<caf::atom("wdismiss")>;
using session_start_atom = caf::atom_constant<caf::atom("wsstart")>;
using session_close_atom = caf::atom_constant<caf::atom("wsclose")>;
using graph_atom = caf::atom_constant<caf::atom("wgraph")>;
using graph_stats_atom = caf::atom_constant<caf::atom("wgstats")>;

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, log_row& x) {
  return f(caf::meta::type_name("skein.log_row"), x.family, x.key, x.value);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, cluster_rebalance_state& x) {
  return f(caf::meta::type_name("skein.rebalance_state"), x.phase, x.moved, x.events, x.claims, x.schedules,
           x.remaining, x.error);
}

// compact_options on the wire: CAF 0.17 has no std::optional, so "unset" is
// a flag beside each value.
struct compact_wire {
  std::vector<std::string> stages;
  bool has_keep_turns = false;
  uint32_t keep_turns = 0;
  bool has_tool_result_bytes_max = false;
  uint64_t tool_result_bytes_max = 0;
  static compact_wire from(const compact_options& o);
  compact_options options() const;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, compact_wire& x) {
  return f(caf::meta::type_name("skein.compact_options"), x.stages, x.has_keep_turns, x.keep_turns,
           x.has_tool_result_bytes_max, x.tool_result_bytes_max);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, usage_query& x) {
  return f(caf::meta::type_name("skein.usage_query"), x.agent_id, x.thread_id, x.since_ms, x.until_ms,
           checked(x.group_by, usage_query::group::day));
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, usage_totals& x) {
  return f(caf::meta::type_name("skein.usage_totals"), x.key, x.usage, x.cost_usd, x.runs, x.duration_ms);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, usage_report& x) {
  return f(caf::meta::type_name("skein.usage_report"), x.groups, x.rows, x.unreadable);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, memory_hit& x) {
  return f(caf::meta::type_name("skein.memory_hit"), x.thread_id, x.seq, x.role, x.score, x.snippet);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, diagnosis& x) {
  return f(caf::meta::type_name("skein.diagnosis"), x.thread_id, checked(x.status, thread_status::cancelled),
           x.stage, x.last_seq, x.heartbeat_age_ms, x.last_run_id, x.last_outcome, x.last_error,
           x.quarantined, x.quarantine_key, x.quarantine_reason);
}
static_assert(sizeof(diagnosis) == 256, "diagnosis changed: update edge_protocol.hpp");

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, work_vitality& x) {
  return f(caf::meta::type_name("skein.work_vitality"), x.vitality, x.recency, x.frequency,
           checked(x.stage, work_stage::resolved), x.dormant_since_ms);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, work_entry& x) {
  return f(caf::meta::type_name("skein.work_entry"), x.thread, x.vitality);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, work_resolve& x) {
  return f(caf::meta::type_name("skein.work_resolve"), x.agent_id, x.thread_id, x.text_match, x.note, x.session_id,
           x.project);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, work_create& x) {
  return f(caf::meta::type_name("skein.work_create"), x.agent_id, x.text, x.session_id, x.relates_to, x.tags,
           x.project, x.linear_issue);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, work_create_result& x) {
  return f(caf::meta::type_name("skein.work_create_result"), x.thread, x.deduplicated, x.matched_by, x.similarity);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, work_list_query& x) {
  return f(caf::meta::type_name("skein.work_list_query"), x.agent_id, checked(x.stages, work_stage::resolved),
           x.project_state, wire_detail::size64{x.limit}, x.cursor, x.project,
           x.totals);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, work_list_page& x) {
  return f(caf::meta::type_name("skein.work_list_page"), x.items, x.next_cursor, x.total_open,
           x.total_resolved);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, work_sweep_options& x) {
  return f(caf::meta::type_name("skein.work_sweep_options"), x.agent_id, x.auto_archive, x.project);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, work_sweep_result& x) {
  return f(caf::meta::type_name("skein.work_sweep_result"), x.examined, x.dormant, x.archived);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, work_suggestion& x) {
  return f(caf::meta::type_name("skein.work_suggestion"), x.id, x.agent_id, x.text,
           checked(x.status, suggestion_status::suppressed), x.sessions, x.dismissals, x.promoted_thread,
           x.created_at_ms, x.updated_at_ms, x.project);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, work_session_start& x) {
  return f(caf::meta::type_name("skein.work_session_start"), x.agent_id, x.session_id, x.auto_archive,
           x.project);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, work_session_started& x) {
  return f(caf::meta::type_name("skein.work_session_started"), x.session_id, x.items, x.project_state, x.suggestions,
           x.sweep, x.project);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, work_session_close& x) {
  return f(caf::meta::type_name("skein.work_session_close"), x.agent_id, x.session_id, x.summary, x.open_items,
           x.topics, x.project);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, work_session_closed& x) {
  return f(caf::meta::type_name("skein.work_session_closed"), x.items, x.suggestions);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, work_triple& x) {
  return f(caf::meta::type_name("skein.work_triple"), x.subject, x.predicate, x.object, x.agent_id, x.thread_id,
           x.seq, x.at_ms, x.project);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, work_graph_stats& x) {
  return f(caf::meta::type_name("skein.work_graph_stats"), x.triples, x.nodes, x.by_predicate, x.top_subjects,
           x.top_objects, x.top_issues, x.top_agents);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, work_graph_filter& x) {
  return f(caf::meta::type_name("skein.work_graph_filter"), x.predicate, x.project);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, work_graph_shared& x) {
  return f(caf::meta::type_name("skein.work_graph_shared"), x.subjects, x.objects, x.agents, x.thread_subjects,
           x.thread_objects, x.thread_nodes);
}

static_assert(sizeof(work_vitality) == 40, "work_vitality changed: update edge_protocol.hpp");
static_assert(sizeof(work_entry) == sizeof(manifest) + sizeof(work_vitality), "work_entry changed: update edge_protocol.hpp");
static_assert(sizeof(work_resolve) == 6 * sizeof(std::string), "work_resolve changed: update edge_protocol.hpp");

using edge_actor = caf::typed_actor<
    caf::replies_to<create_atom, thread_options>::with<manifest, bool>,
    caf::replies_to<caf::get_atom, std::string>::with<manifest>,
    caf::replies_to<submit_atom, std::string, run_input>::with<std::string>,
    caf::replies_to<send_atom, std::string, run_input>::with<run_result>,
    caf::replies_to<cancel_atom, std::string>::with<bool>,
    caf::replies_to<read_atom, std::string, uint8_t, uint64_t, uint64_t>::with<std::vector<event>>,
    caf::replies_to<raw_atom, std::string, uint64_t, uint64_t, uint8_t>::with<std::vector<raw_event>, uint64_t>,
    caf::replies_to<subscribe_atom, std::string, uint64_t, caf::actor>::with<uint64_t>,
    caf::replies_to<delete_atom, std::string>::with<bool>,
    caf::replies_to<fork_atom, std::string, uint64_t>::with<manifest>,
    caf::replies_to<title_atom, std::string, std::string>::with<manifest>,
    caf::replies_to<reconcile_atom, std::string>::with<bool>,
    caf::replies_to<diagnose_atom, std::string>::with<diagnosis>,
    caf::replies_to<usage_atom, usage_query>::with<usage_report>,
    caf::replies_to<search_atom, std::string, std::string, uint64_t>::with<std::vector<memory_hit>>,
    caf::replies_to<schedule_atom, create_atom, schedule>::with<schedule>,
    caf::replies_to<schedule_atom, caf::get_atom, std::string>::with<schedule>,
    caf::replies_to<schedule_atom, pause_atom, std::string>::with<schedule>,
    caf::replies_to<schedule_atom, resume_atom, std::string>::with<schedule>,
    caf::replies_to<schedule_atom, delete_atom, std::string>::with<bool>,
    caf::replies_to<schedule_atom, schedule_history_atom, std::string, uint64_t, uint64_t>::with<
        std::vector<schedule_firing>, uint64_t>,
    caf::replies_to<schedule_atom, schedule_preview_atom, std::string, uint64_t>::with<std::vector<int64_t>>,
    caf::replies_to<schedule_atom, list_atom, std::string, uint64_t>::with<std::vector<schedule>, std::string>,
    caf::replies_to<compact_atom, std::string, compact_wire>::with<compact_result>,
    caf::replies_to<item_atom, caf::get_atom, std::string>::with<work_entry>,
    caf::replies_to<item_atom, touch_atom, std::string>::with<work_entry>,
    caf::replies_to<item_atom, relate_atom, std::string, std::string>::with<work_entry>,
    caf::replies_to<item_atom, item_resolve_atom, work_resolve>::with<work_entry>,
    caf::replies_to<work_atom, create_atom, work_create>::with<work_create_result>,
    caf::replies_to<work_atom, list_atom, work_list_query>::with<work_list_page>,
    caf::replies_to<work_atom, item_resolve_atom, work_resolve>::with<work_entry>,
    caf::replies_to<work_atom, work_sweep_atom, work_sweep_options>::with<work_sweep_result>,
    caf::replies_to<work_atom, suggest_atom, std::string, bool>::with<std::vector<work_suggestion>>,
    caf::replies_to<work_atom, promote_atom, std::string, std::string>::with<work_create_result>,
    caf::replies_to<work_atom, dismiss_atom, std::string>::with<work_suggestion>,
    caf::replies_to<work_atom, session_start_atom, work_session_start>::with<work_session_started>,
    caf::replies_to<work_atom, session_close_atom, work_session_close>::with<work_session_closed>,
    caf::replies_to<work_atom, graph_atom, uint8_t, std::string, uint64_t, work_graph_filter>::with<
        std::vector<work_triple>>,
    caf::replies_to<work_atom, graph_stats_atom, std::string>::with<work_graph_stats, work_graph_shared>,
    caf::replies_to<member_atom, std::string, std::string, std::string, bool>::with<manifest>,
    caf::replies_to<import_atom, manifest, std::vector<event>>::with<manifest>,
    caf::replies_to<task_atom, std::string>::with<manifest>,
    caf::replies_to<list_atom, thread_query>::with<thread_page>,
    caf::replies_to<caf::put_atom, agent_config>::with<agent_config>,
    caf::replies_to<agent_atom>::with<std::vector<agent_config>>,
    caf::replies_to<count_atom>::with<uint64_t, uint64_t>,
    caf::replies_to<members_atom>::with<std::string, std::string>,
    caf::replies_to<rebalance_atom, std::string>::with<bool>,
    caf::replies_to<progress_atom>::with<cluster_rebalance_state>,
    caf::replies_to<adopt_atom, std::string, uint32_t, uint32_t, std::vector<log_row>>::with<bool>,
    caf::replies_to<claim_atom, std::vector<log_row>>::with<bool>,
    caf::replies_to<schedule_atom, adopt_atom, std::string, std::vector<log_row>>::with<bool>,
    caf::replies_to<work_atom, adopt_atom, std::string, std::vector<log_row>>::with<bool>,
    caf::replies_to<membership_commit_atom, std::string>::with<bool>>;

}  // namespace skein
