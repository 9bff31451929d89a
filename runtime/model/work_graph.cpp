#include "runtime/model/work_graph.hpp"

#include <algorithm>
#include <set>

namespace skein {
namespace {

bool is_thread_node(const std::string& n) { return n.starts_with("thread:"); }

work_counts top(const std::map<std::string, uint64_t>& counts, size_t n) {
  work_counts all(counts.begin(), counts.end());
  // Most first, then by name: the same order on every node and run.
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  if (all.size() > n) all.resize(n);
  return all;
}

work_counts shared_only(const std::map<std::string, uint64_t>& counts) {
  work_counts out;
  for (const auto& [n, c] : counts)
    if (!is_thread_node(n)) out.emplace_back(n, c);
  return out;
}

std::map<std::string, uint64_t> thread_only(const std::map<std::string, uint64_t>& counts) {
  std::map<std::string, uint64_t> out;
  for (const auto& [n, c] : counts)
    if (is_thread_node(n)) out.emplace(n, c);
  return out;
}

}  // namespace

void work_graph_tally::add(const work_triple& t) {
  ++triples_;
  ++by_predicate_[t.predicate];
  ++subjects_[t.subject];
  ++objects_[t.object];
  ++agents_["agent:" + t.agent_id];
  for (const auto* n : {&t.subject, &t.object})
    if (is_thread_node(*n)) thread_nodes_[*n] = 1;
}

void work_graph_tally::merge(const work_graph_stats& part, const work_graph_shared& shared) {
  triples_ += part.triples;
  merged_thread_nodes_ += shared.thread_nodes;
  for (const auto& [p, c] : part.by_predicate) by_predicate_[p] += c;
  // A thread: node is counted on one node only: its part's figure is the whole.
  for (const auto& [n, c] : shared.subjects) subjects_[n] += c;
  for (const auto& [n, c] : shared.thread_subjects) subjects_[n] += c;
  for (const auto& [n, c] : shared.objects) objects_[n] += c;
  for (const auto& [n, c] : shared.thread_objects) objects_[n] += c;
  for (const auto& [a, c] : shared.agents) agents_[a] += c;
}

work_graph_stats work_graph_tally::stats() const {
  work_graph_stats st;
  st.triples = triples_;
  std::set<std::string> others;
  for (const auto* m : {&subjects_, &objects_})
    for (const auto& [n, c] : *m)
      if (!is_thread_node(n)) others.insert(n);
  st.nodes = thread_nodes_.size() + merged_thread_nodes_ + others.size();
  st.by_predicate.assign(by_predicate_.begin(), by_predicate_.end());
  st.top_subjects = top(subjects_, work_graph_top_max);
  st.top_objects = top(objects_, work_graph_top_max);
  std::map<std::string, uint64_t> issues;
  for (const auto* m : {&subjects_, &objects_})
    for (const auto& [n, c] : *m)
      if (n.starts_with("issue:")) issues[n] += c;
  st.top_issues = top(issues, work_graph_top_issues_max);
  st.top_agents = top(agents_, work_graph_top_max);
  return st;
}

work_graph_shared work_graph_tally::shared() const {
  work_graph_shared s;
  s.subjects = shared_only(subjects_);
  s.objects = shared_only(objects_);
  s.agents.assign(agents_.begin(), agents_.end());
  s.thread_subjects = top(thread_only(subjects_), work_graph_top_max);
  s.thread_objects = top(thread_only(objects_), work_graph_top_max);
  s.thread_nodes = thread_nodes_.size();
  return s;
}

}  // namespace skein
