// The work-item messages (runtime/model/work.hpp): an item's birth, through the
// directory to its agent actor, and its transitions, to its thread actor.
//   directory / agent actor:
//     (work_atom, work_birth)  -> manifest   (a new thread carrying manifest.work;
//        its first event the work.created signal, the birth's rows in the same tick)
//   thread actor:
//     (work_atom, work_op)     -> manifest   (the transition's signal, the new work
//        fields and the op's rows in one tick; a refusal writes nothing: invalid_input
//        for a thread that is no item, conflict for a terminal item)
// Local to one node: the values carry callbacks (CAF_ALLOW_UNSAFE_MESSAGE_TYPE).
#pragma once

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>

#include "actors/work_ops.hpp"

namespace skein {

using work_atom = caf::atom_constant<caf::atom("work")>;

}  // namespace skein

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(skein::work_birth)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(skein::work_op)
