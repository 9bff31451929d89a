// One stored embedding: the vector of one message event, with what memory search
// needs to find it without reading the thread (its agent, the message's role).
//
// embeddings column family (keys.cpp): key := thread-id 0x00 be64(seq)
//   value := u8 format (1) | u8 role (0 user, 1 assistant) | u8 agent-id length | agent-id
//            | u16 dims (little-endian) | dims x float32 (little-endian, IEEE 754)
// A value that does not parse exactly (a short or long buffer, a bad format or
// role, dims 0 or past embedding_dims_max) is refused by decode_embedding.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/model/status.hpp"

namespace skein {

inline constexpr size_t embedding_dims_max = 8192;

struct embedding_record {
  std::string agent_id;
  bool assistant = false;  // the message's role: assistant, else user
  std::vector<float> vector;
};

status encode_embedding(const embedding_record& r, std::string* out);
status decode_embedding(std::string_view value, embedding_record* out);

}  // namespace skein
