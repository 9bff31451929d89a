// scheduler: the actor that owns every schedule's state and fires what is due
// (DESIGN §4, issue 10). One per runtime; the only writer of the schedules
// column family (through the journal, one writer).
//
// Protocol (requests):
//   (create_atom, schedule)          -> schedule   validated, agent and bound thread checked, stored
//   (pause_atom, schedule id)        -> schedule
//   (resume_atom, schedule id)       -> schedule   next fire computed from now: missed while paused are skipped
//   (delete_atom, schedule id)       -> caf::unit  idempotent; removes the history too
//   (fire_due_atom)                  -> uint64_t   fires what is due at the wall clock now and answers,
//        once every firing it started is durable, with how many delivered their input (outcome fired)
//   (release_atom, schedule id)      -> bool       a cluster handoff: after any write of it in flight,
//        the schedule leaves memory and never fires here again (its rows stay until erased); false:
//        not held here
//   (load_atom, schedule id)         -> bool       a cluster handoff: the schedule just adopted into the
//        log is read and armed; false: not stored here
// Reads (get, list, history, preview) go to the event log directly: the actor
// updates its memory only after a write is durable, so the log is never behind.
//
// Exactly once: a firing for due time T writes the schedule's new state and its
// history row in the batch that creates the trigger thread (with the input in
// its inbox) or that takes the input into the bound thread (its inbox entry or
// its run's first tick). A crash before that batch fires again after the open
// (late: the missed policy decides); after it, never again. At most one write of
// a schedule is in flight at a time: a pause or delete that arrives during a
// firing waits for it, so a firing never resurrects what they removed.
//
// Wakes at the earliest due time of a schedule not in flight (a timer of
// actors/timers.hpp, re-armed after every change), sleeping at most
// `wake_period` (the wall clock may jump while the timer counts steady time). A
// wake fires every due time that is due: a schedule's next due time, when it is
// still due as its firing ends, fires at once (pass_firings_max per wake, the
// rest in the next wake at once). Only a due time later than the grace — a stop,
// a stall — is missed. With wake_period 0 only fire_due_atom fires (tests, under
// their clock), with the same rule.
#pragma once

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>
#include <caf/actor.hpp>
#include <caf/fwd.hpp>
#include <chrono>
#include <cstdint>
#include <functional>

#include "actors/directory.hpp"
#include "actors/journal.hpp"
#include "actors/wire.hpp"
#include "persistence/event_log.hpp"
#include "runtime/model/engine.hpp"

namespace skein {

using pause_atom = caf::atom_constant<caf::atom("pause")>;
using resume_atom = caf::atom_constant<caf::atom("resume")>;
using fire_due_atom = caf::atom_constant<caf::atom("firedue")>;
using release_atom = caf::atom_constant<caf::atom("release")>;
using load_atom = caf::atom_constant<caf::atom("schedload")>;

// Due times further in the past than this count as missed (default of runtime_options::schedule_grace_ms).
inline constexpr int64_t schedule_grace_ms_default = 60000;
// The longest the scheduler sleeps between wakes (it wakes at due times).
inline constexpr std::chrono::milliseconds schedule_wake_period_default{1000};

struct scheduler_config {
  event_log* log = nullptr;  // borrowed: must outlive the actor
  journal_actor journal;
  directory_actor directory;
  std::function<int64_t()> wall_clock;  // the runtime's injectable clock
  int64_t grace_ms = schedule_grace_ms_default;
  std::chrono::milliseconds wake_period = schedule_wake_period_default;  // 0: no timer, fire_due_atom only
  timer_service* timers = nullptr;  // borrowed; needed when wake_period > 0
  // A cluster node's trigger threads get ids it owns (core_options::owns_id).
  std::function<bool(std::string_view)> owns_id;
  // Schedules left out of the load at open: ones this node is handing to
  // another (a cluster handoff's marks). Empty: none.
  std::function<bool(std::string_view)> skip;
};

// Loads every schedule (one scan) and spawns the actor. A row that does not
// decode fails the open as corruption, naming its key.
status spawn_scheduler(caf::actor_system& sys, scheduler_config config, caf::actor* out);

}  // namespace skein

