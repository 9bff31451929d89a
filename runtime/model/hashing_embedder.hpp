// The built-in "hashing" embedder: deterministic feature hashing of word unigrams
// and bigrams into `dims` (384 by default) dimensions, L2-normalized. Lexical — no
// model, no network, always available — so similar wording scores high and
// paraphrase does not. Config: {"dims": 16..4096}.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "runtime/model/embedder.hpp"

namespace skein {

inline constexpr size_t hashing_dims_default = 384;

status make_hashing_embedder(std::string_view config_json, timer_service& timers,
                             std::shared_ptr<embedder>* out);

// The vector the hashing embedder gives `text` (synchronously), `dims` floats.
std::vector<float> hash_embed(std::string_view text, size_t dims = hashing_dims_default);

}  // namespace skein
