// embedder: text -> vector, for episodic memory (DESIGN §4, effects). Registered
// by name like engines; an agent names its embedder (agent_config::effects).
//
// Contract for implementers:
// - embed() returns at once; the work happens elsewhere (a thread, I/O), and
//   on_done is called exactly once, on any thread, and must not block.
// - every vector of one embedder has dimensions() floats, L2-normalized, so a dot
//   product is the cosine similarity.
// - an embedder object is shared by every thread of every agent naming it with
//   the same config: embed() must be thread-safe.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/model/status.hpp"

namespace skein {

class timer_service;

struct embed_reply {
  status result;                       // not ok: no vector came (vectors then empty)
  std::vector<std::vector<float>> vectors;  // one per text, in order
};

class embedder {
 public:
  virtual ~embedder() = default;
  virtual size_t dimensions() const = 0;
  // Embeds a batch of texts (at most batch_max() at once).
  virtual void embed(std::vector<std::string> texts, std::function<void(embed_reply)> on_done) = 0;
  virtual size_t batch_max() const { return 64; }
};

// Builds an embedder from its configuration (a JSON object). `timers` outlives it.
using embedder_factory =
    std::function<status(std::string_view config_json, timer_service& timers, std::shared_ptr<embedder>* out)>;

}  // namespace skein
