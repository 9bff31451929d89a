#include "actors/core.hpp"

#include <caf/actor_system.hpp>
#include <caf/send.hpp>

#include "actors/directory.hpp"
#include "actors/messages.hpp"
#include "actors/timers.hpp"
#include "persistence/recovery.hpp"
#include "runtime/model/ids.hpp"

namespace skein {

std::string mint_thread_id(const core_options& options, int64_t now_ms) {
  // With n members about n tries: the hash spreads ids evenly over members.
  constexpr int tries_max = 1 << 16;
  std::string id = new_thread_id(now_ms);
  for (int i = 1; i < tries_max && options.owns_id && !options.owns_id(id); ++i) id = new_thread_id(now_ms);
  return id;
}

status start_core(caf::actor_system& sys, event_log& log, core_config config, core* out) {
  if (config.recover) SKEIN_TRY(repair_interrupted(log, &out->repaired, &out->quarantined));
  directory_config dc;
  SKEIN_TRY(log.list_agents(&dc.agents));
  if (!config.journal.wall_clock) config.journal.wall_clock = config.options.wall_clock;
  out->journal = spawn_journal(sys, log, config.journal);
  out->timers = make_actor_timers(sys);
  dc.log = &log;
  dc.journal = out->journal;
  dc.options = config.options;
  dc.reg = std::move(config.reg);
  dc.timers = out->timers.get();
  out->directory = spawn_directory(sys, std::move(dc));
  // Effects start from the journal's feed (and their cursors), never from a run.
  effects_config& ec = config.effects;
  if (!ec.wall_clock) ec.wall_clock = config.options.wall_clock;
  if (ec.titles) out->effects.push_back(spawn_effect(sys, make_titles_effect(), log, out->journal, out->directory, ec));
  if (ec.embeddings)
    out->effects.push_back(spawn_effect(sys, make_embeddings_effect(ec), log, out->journal, out->directory, ec));
  if (ec.compaction)
    out->effects.push_back(spawn_effect(sys, make_compaction_effect(), log, out->journal, out->directory, ec));
  // Inputs accepted before a stop wait in their threads' inboxes: activating
  // those threads replays them (each thread actor loads its inbox).
  std::vector<std::string> waiting;
  if (config.recover) SKEIN_TRY(log.list_inbox_threads(&waiting));
  for (const auto& id : waiting) caf::anon_send(out->directory, resolve_atom::value, id);
  return status::ok();
}

}  // namespace skein
