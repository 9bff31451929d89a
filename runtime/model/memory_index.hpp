// memory_index: the in-memory side of episodic memory — every embedded message of
// every agent, searched by brute force (DESIGN §4, effects; issue 9 point 3).
//
// Per agent, one float32 matrix (one row per message, the agent's dims fixed by
// its first row) in chunks of 4096 rows that grow without copying; inside a
// chunk the matrix is stored column by column. Parallel arrays hold (thread,
// seq, role). A search walks the chunks, adds query[d] x column d to the chunk's
// 4096 scores for each non-zero query dimension d (vectors are L2-normalized, so
// the dot product is the cosine) and keeps the top k. A dense query reads the
// whole matrix (1M rows x 384 dims = ~1.45 GiB: ~150 ms at ~10 GB/s); a query
// from the hashing embedder has a handful of non-zero dimensions and reads only
// those columns, a few percent of it.
//
// The index is derived state: the embeddings column family is the truth; the
// runtime rebuilds the index from it at open and feeds it as rows are written.
// Thread-safe: searches share a lock, add and remove_thread take it alone.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "runtime/model/embedding.hpp"
#include "runtime/model/status.hpp"

namespace skein {

struct memory_match {
  std::string thread_id;
  uint64_t seq = 0;
  bool assistant = false;  // the message's role: assistant, else user
  float score = 0;         // dot product with the query, in [-1, 1]
};

struct memory_index_stats {
  size_t agents = 0;
  size_t rows = 0;
  size_t bytes = 0;  // floats and row metadata held
};

class memory_index {
 public:
  memory_index();
  ~memory_index();
  memory_index(const memory_index&) = delete;
  memory_index& operator=(const memory_index&) = delete;

  // Adds the vector of message `seq` of `thread` under r.agent_id. The same
  // (thread, seq) again replaces its row (the live feed and the rebuild at open
  // may both bring it). invalid_input: an empty vector, or dims other than the
  // agent's (naming both).
  status add(std::string_view thread_id, uint64_t seq, const embedding_record& r);
  // Drops every row of the thread, in whatever agent. O(rows of its agent).
  void remove_thread(std::string_view thread_id);
  // The k rows of `agent_id` with the highest dot product with `query`, best
  // first (equal scores in no set order). An agent with no rows gives none;
  // invalid_input: a query of other dims than the agent's rows.
  status search(std::string_view agent_id, std::span<const float> query, size_t k,
                std::vector<memory_match>* out) const;

  size_t rows(std::string_view agent_id) const;
  size_t dimensions(std::string_view agent_id) const;  // 0: no rows yet
  memory_index_stats stats() const;

 private:
  struct agent_rows;
  mutable std::shared_mutex mu_;  // guards agents_ and thread_agent_
  std::map<std::string, std::unique_ptr<agent_rows>, std::less<>> agents_;
  // Which agent holds each thread's rows, so remove_thread touches one matrix.
  std::unordered_map<std::string, std::string> thread_agent_;
};

// The dot product of two vectors of n floats, written for the vectorizer
// (independent lanes, so no float reassociation is needed). Exposed for the bench.
float memory_dot(const float* a, const float* b, size_t n);

}  // namespace skein
