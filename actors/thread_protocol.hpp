// The thread actor's interface (DESIGN §4): what any actor of a node may ask a
// thread actor. The actor (thread_actor.hpp) implements exactly these, and every
// request through a thread_actor handle is checked against them when compiled.
// Reached through the directory: (resolve_atom, thread id) -> thread_actor.
//
//   (send_atom, run_input)              -> run_result   when the run has ended
//   (submit_atom, run_input)            -> std::string  the run id, once the input is taken
//   (submit_atom, run_input, rows)      -> std::string  a schedule's firing: its rows in the
//        tick that takes the input
//   (cancel_atom)                       -> bool         a run was cancelled
//   (subscribe_atom, from_seq, sink)    -> uint64_t     the next seq; then to `sink`
//        (event_sink_actor) every durable event from from_seq on, live deltas, the end
//   (unsubscribe_atom, sink)
//   (get_atom)                          -> manifest
//   (mint_child_atom)                   -> std::string  the next child id
//   (reconcile_atom)                    -> bool         a stale run was closed as orphaned
//   (archive_atom, at_ms)               -> bool         archived; false: busy, nothing written
//   (retire_atom, before_ms)            -> bool         idle and untouched since before_ms: it
//        takes no more input, the directory erases it
//   (retire_atom, before_ms, true)      -> bool         the same for a cluster handoff (moving)
//   (compact_atom, compact_request)     -> compact_result  between runs: waits its turn
//   (title_atom, title, cursor)         -> bool         the titles effect: set if the thread had
//        none (true); the effect's cursor recorded in the same manifest-only tick either way
//   (title_atom, title)                 -> manifest     a user's title: replaces any
//   (member_atom, agent, trigger, add)  -> manifest     a house member added or removed
//   (work_atom, work_op)                -> manifest     a work item's transition (work_messages.hpp)
//   (dispatch_atom, data json)                          a dispatch.failed signal
//   (passivate_atom)                                    quit if idle (the directory's LRU)
//   (stop_atom, graceful[, reason])     -> void         stop; graceful: after the current run
//
// Local to one node: compact_request and work_op carry callbacks or shared
// state, and a thread actor is never published. What crosses nodes is the
// cluster edge's interface (runtime/cluster/edge_protocol.hpp).
#pragma once

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/messages.hpp"
#include "actors/published_event.hpp"
#include "actors/work_messages.hpp"

namespace skein {

// What a subscription's sink is sent (any actor that handles these; the
// runtime's host sinks, the cluster edge's relays, tests):
//   (event_atom, thread id, published_ptr)  a durable event, in seq order, once
//   (delta_atom, thread id, run id, text)   a live token delta: no seq, never stored
//   (caf::close_atom, thread id, reason)    the thread went away ("deleted", "moved")
using event_sink_actor = caf::typed_actor<caf::reacts_to<event_atom, std::string, published_ptr>,
                                          caf::reacts_to<delta_atom, std::string, std::string, std::string>,
                                          caf::reacts_to<caf::close_atom, std::string, std::string>>;

using thread_actor = caf::typed_actor<
    caf::replies_to<send_atom, run_input>::with<run_result>,
    caf::replies_to<submit_atom, run_input>::with<std::string>,
    caf::replies_to<submit_atom, run_input, std::vector<schedule_row>>::with<std::string>,
    caf::replies_to<cancel_atom>::with<bool>,
    caf::replies_to<subscribe_atom, uint64_t, event_sink_actor>::with<uint64_t>,
    caf::reacts_to<unsubscribe_atom, event_sink_actor>,
    caf::replies_to<caf::get_atom>::with<manifest>,
    caf::replies_to<mint_child_atom>::with<std::string>,
    caf::replies_to<reconcile_atom>::with<bool>,
    caf::replies_to<archive_atom, int64_t>::with<bool>,
    caf::replies_to<retire_atom, int64_t>::with<bool>,
    caf::replies_to<retire_atom, int64_t, bool>::with<bool>,
    caf::replies_to<compact_atom, compact_request>::with<compact_result>,
    caf::replies_to<title_atom, std::string, uint64_t>::with<bool>,
    caf::replies_to<title_atom, std::string>::with<manifest>,
    caf::replies_to<member_atom, std::string, std::string, bool>::with<manifest>,
    caf::replies_to<work_atom, work_op>::with<manifest>,
    caf::reacts_to<dispatch_atom, std::string>,
    caf::reacts_to<passivate_atom>,
    caf::reacts_to<stop_atom, bool>,
    caf::reacts_to<stop_atom, bool, std::string>>;

}  // namespace skein
