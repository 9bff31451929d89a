// replicated_batch: the bytes of one message of a partition's replicated log,
// the row changes a leader's journal group made to the partition's threads.
//
// Format (version 1), all integers LEB128 varints:
//   'R' 1  count  { op family keylen key [vallen value] }*count
// op 0 puts `value` at `key` in column family `family`, op 1 erases the key
// (no value), op 2 erases the keys from `key` up to `value` (exclusive).
// It is a stored format: followers and rebuilt replicas read what an older
// node wrote, so a change is a new version byte, never an edit of this one.
// decode_replicated refuses (corruption, naming the offset) anything but a
// whole, well-formed message: a bad one is never half applied.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "persistence/log_types.hpp"
#include "runtime/model/status.hpp"

namespace skein {

inline constexpr size_t replicated_rows_max = 1 << 20;

void encode_replicated(const std::vector<replicated_row>& rows, std::string* out);
status decode_replicated(std::string_view bytes, std::vector<replicated_row>* out);

}  // namespace skein
