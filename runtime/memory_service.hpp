// memory_service: episodic memory for one runtime (issue 9, point 3). It owns the
// memory index — rebuilt from the embeddings column family at open, fed live by
// the embeddings effect (index().add / remove_thread) — and answers memory
// searches: embed the query with the agent's embedder, search the agent's rows,
// read each hit's message from the log for its snippet.
//
// Owned by the runtime through a shared_ptr that the built-in memory_search tool
// also holds; close() cuts it off from the log (searches then fail with io_error),
// so an embedder answering late never reads a closed log. Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "persistence/event_log.hpp"
#include "runtime/model/embedder.hpp"
#include "runtime/model/memory_index.hpp"
#include "runtime/model/tool.hpp"

namespace skein {

inline constexpr size_t memory_search_k_max = 100;         // hits one search may ask for
inline constexpr size_t memory_query_bytes_max = 8192;     // query text
inline constexpr size_t memory_snippet_bytes_max = 240;    // snippet, cut on a UTF-8 boundary
inline constexpr uint64_t memory_search_timeout_ms = 60000;  // a blocking search's wait for the embedder

struct memory_hit {
  std::string thread_id;
  uint64_t seq = 0;
  std::string role;  // "user" or "assistant"
  float score = 0;   // cosine similarity with the query
  std::string snippet;  // the message's text, at most memory_snippet_bytes_max bytes (+ "…")
};

// What the rebuild at open found and what it cost.
struct memory_rebuild_stats {
  uint64_t rows = 0;
  uint64_t skipped = 0;  // rows whose key or value did not decode, or did not fit the index
  double ms = 0;
};

// {"hits":[{"thread_id":..,"seq":..,"role":..,"score":..,"snippet":..}, ...]}
std::string memory_hits_json(const std::vector<memory_hit>& hits);

// Always made by std::make_shared: a search in flight keeps it alive.
class memory_service : public std::enable_shared_from_this<memory_service> {
 public:
  // `log` is borrowed until close(); so are the timers given to start_searches().
  memory_service(event_log& log, std::map<std::string, embedder_factory> embedders);
  memory_service(const memory_service&) = delete;
  memory_service& operator=(const memory_service&) = delete;

  // Fills the index from the embeddings column family. Bad rows are counted, not
  // fatal. Runs before the actor system starts: its idle workers poll for work
  // and would take the cores the scan needs.
  status rebuild();
  // The timers embedders are built with; searches before it fail with io_error.
  void start_searches(timer_service& timers);
  const memory_rebuild_stats& rebuilt() const { return rebuilt_; }
  memory_index& index() { return index_; }

  // Searches `agent_id`'s memory; `done` is called once, on any thread.
  void search(std::string agent_id, std::string query, size_t k,
              std::function<void(status, std::vector<memory_hit>)> done);
  // search() for the calling thread, waiting at most memory_search_timeout_ms.
  status search_wait(std::string agent_id, std::string query, size_t k, std::vector<memory_hit>* out);
  // The agent owning a thread (its manifest), for the tool.
  status agent_of_thread(const std::string& thread_id, std::string* agent_id);

  // After it every search fails with io_error. Idempotent.
  void close();

  // The embedder the agent names (built once, cached); invalid_input naming
  // agent.effects.embedder when it names none or an unknown one.
  status embedder_for(const std::string& agent_id, std::shared_ptr<embedder>* out);

 private:
  status hits_for(const std::vector<memory_match>& matches, size_t k, std::vector<memory_hit>* out);

  memory_index index_;
  memory_rebuild_stats rebuilt_;
  std::map<std::string, embedder_factory> factories_;
  std::shared_mutex life_mu_;  // guards log_ and timers_ (null after close)
  event_log* log_;
  timer_service* timers_;
  std::mutex cache_mu_;  // guards embedders_
  std::map<std::string, std::shared_ptr<embedder>> embedders_;  // by agent id (agent configs never change)
};

// The built-in memory_search tool: {"query": string, "k": int (default 5)} over
// the calling thread's agent; answers memory_hits_json.
std::shared_ptr<tool> make_memory_search_tool(std::shared_ptr<memory_service> memory);

}  // namespace skein
