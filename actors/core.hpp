// core: the actors one runtime needs — journal, timers, directory (with its agent
// actors) — started over an open event log after recovery repaired it.
#pragma once

#include <caf/actor.hpp>
#include <memory>
#include <string>
#include <vector>

#include "actors/effects/effects.hpp"
#include "actors/journal.hpp"
#include "actors/messages.hpp"
#include "actors/timers.hpp"
#include "persistence/recovery.hpp"

namespace skein {

struct core_config {
  core_options options;
  registry reg;
  journal_options journal;
  effects_config effects;
  // Close interrupted runs and replay waiting inputs at start (recovery.hpp).
  // A replicated cluster's node does it per partition, when it takes the lead.
  bool recover = true;
};

struct core {
  journal_actor journal;
  directory_actor directory;
  std::unique_ptr<actor_timer_service> timers;  // destroy after the actor system
  std::vector<caf::actor> effects;  // one per effect kind, fed by the journal
  std::vector<std::string> repaired;  // threads recovery closed as interrupted
  std::vector<quarantined_thread> quarantined;  // threads recovery could not read

  core() = default;
  core(const core&) = delete;
  core& operator=(const core&) = delete;
  core(core&&) = default;
  core& operator=(core&&) = default;
};

// `log` is borrowed and must outlive the actors (close them, then destroy the
// actor system, then the log).
status start_core(caf::actor_system& sys, event_log& log, core_config config, core* out);

}  // namespace skein
