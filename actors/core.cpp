#include "actors/core.hpp"

#include <caf/actor_system.hpp>

#include "actors/directory.hpp"
#include "actors/timers.hpp"
#include "persistence/recovery.hpp"

namespace skein {

status start_core(caf::actor_system& sys, event_log& log, core_config config, core* out) {
  SKEIN_TRY(repair_interrupted(log, &out->repaired, &out->quarantined));
  directory_config dc;
  SKEIN_TRY(log.list_agents(&dc.agents));
  out->journal = spawn_journal(sys, log, config.journal);
  out->timers = make_actor_timers(sys);
  dc.log = &log;
  dc.journal = out->journal;
  dc.options = config.options;
  dc.reg = std::move(config.reg);
  dc.timers = out->timers.get();
  out->directory = spawn_directory(sys, std::move(dc));
  return status::ok();
}

}  // namespace skein
