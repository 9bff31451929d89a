// retention: the effect that applies agents' retention policies
// (agent_config::retention): a thread whose updated_at is older than
// archive_after_days gets archived_at_ms in its manifest — written by its thread
// actor, the only writer of a manifest — and one older than delete_after_days is
// erased whole (the directory's delete path). 0 days: never.
//
// A blocking actor on its own OS thread: a sweep reads the u/ index and
// manifests (event_log::list_untouched: the threads old enough for the most
// eager policy, not every manifest) and asks the directory and thread actors one
// at a time, so it never holds up an actor. It sweeps every `interval` and on
// (sweep_atom) -> retention_report. A running thread is never archived or
// erased: it is skipped and the next sweep sees it again.
#pragma once

#include <caf/actor.hpp>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "actors/directory.hpp"
#include "actors/messages.hpp"

namespace skein {

using sweep_atom = caf::atom_constant<caf::atom("sweep")>;

struct retention_report {
  std::vector<std::string> archived;  // threads archived by this sweep
  std::vector<std::string> deleted;   // threads erased by this sweep
  std::vector<std::string> skipped;   // due, but running or busy: left for the next sweep
  uint64_t examined = 0;              // manifests read
  uint64_t unreadable = 0;            // manifests that did not decode, skipped
  std::string error;                  // the first failure, "" if none (the sweep goes on past it)
};

struct retention_config {
  const event_log* log = nullptr;  // borrowed: outlives the actor
  directory_actor directory;
  std::function<int64_t()> wall_clock;
  std::chrono::milliseconds interval{3600000};  // between periodic sweeps
};

caf::actor spawn_retention(caf::actor_system& sys, retention_config config);

}  // namespace skein

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(skein::retention_report)
