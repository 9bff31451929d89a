// Bridges skein::status and caf::error. Exceptions never cross an actor boundary:
// handlers turn failures into caf::error in the "skein" category, whose code is
// the skein::errc value and whose context holds the message.
#pragma once

#include <caf/atom.hpp>
#include <caf/fwd.hpp>

#include "runtime/model/status.hpp"

namespace skein {

inline constexpr caf::atom_value error_category = caf::atom("skein");

caf::error to_error(const status& s);
// Any caf::error: a skein one keeps its code; CAF's own (timeouts, a dead actor)
// become overloaded or io_error with CAF's description.
status to_status(const caf::error& e);

// Registers skein's error category (and its renderer) with an actor system config.
void register_skein_types(caf::actor_system_config& cfg);

}  // namespace skein
