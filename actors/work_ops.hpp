// The values of the work-item messages (actors/work_messages.hpp), plain: the
// runtime's work service builds them without any actor header.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "persistence/event_log.hpp"
#include "runtime/model/manifest.hpp"
#include "runtime/model/run.hpp"
#include "runtime/model/work.hpp"

namespace skein {

// The side rows a work tick carries, computed once the manifest after the tick
// and the seq of its signal are known (the item's row, the triples naming it).
using work_rows_fn = std::function<std::vector<side_row>(const manifest& after, uint64_t signal_seq)>;

struct work_birth {
  std::string thread_id;   // minted by the work service, led by its agent's work home key
  thread_options options;  // agent_id, title (the text, cut), tags
  work_item item;          // the fields, times by the runtime's clock
  std::string signal_data; // the work.created signal's data (a JSON object)
  work_rows_fn rows;
};

enum class work_op_kind : uint8_t { touch, resolve, relate, dormant, archive };

struct work_op {
  work_op_kind kind = work_op_kind::touch;
  int64_t at_ms = 0;            // the runtime's clock
  std::string note;             // resolve: the resolution note
  std::string session_id;       // resolve: the resolving session ("" none)
  std::string issue_id;         // relate: the external issue
  int64_t dormant_since_ms = 0; // dormant: the moment the clock made it dormant
  work_rows_fn rows;
};

}  // namespace skein
