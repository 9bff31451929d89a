// work_graph: the knowledge graph's counts (work_graph_stats) from its triples,
// on one node or merged over a cluster's. A thread: node's triples all live on
// its thread's node; other nodes (agent:, session:, issue:) may be named on
// several, so a node's part carries their full counts and only its top thread:
// nodes, which is enough for exact tops once merged.
// A plain value; not thread-safe.
#pragma once

#include <map>
#include <string>

#include "runtime/model/work_api.hpp"

namespace skein {

// What one node contributes to a cluster's stats, beside its own stats.
struct work_graph_shared {
  work_counts subjects;         // every node other than thread: ones, full counts
  work_counts objects;
  work_counts agents;           // every agent, full counts
  work_counts thread_subjects;  // its top work_graph_top_max thread: nodes
  work_counts thread_objects;
  uint64_t thread_nodes = 0;    // its distinct thread: nodes
};

class work_graph_tally {
 public:
  void add(const work_triple& t);
  // Another node's part (the cluster's merge).
  void merge(const work_graph_stats& part, const work_graph_shared& shared);
  work_graph_stats stats() const;
  work_graph_shared shared() const;

 private:
  uint64_t triples_ = 0;
  uint64_t merged_thread_nodes_ = 0;  // thread: nodes of merged parts (not in the maps)
  std::map<std::string, uint64_t> by_predicate_;
  std::map<std::string, uint64_t> subjects_;
  std::map<std::string, uint64_t> objects_;
  std::map<std::string, uint64_t> agents_;
  std::map<std::string, uint64_t> thread_nodes_;  // distinct thread: nodes added here (value unused)
};

}  // namespace skein
