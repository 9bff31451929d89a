// work_service: work items, their knowledge graph, sessions and suggestions
// (runtime/model/work.hpp, work_api.hpp), owned by the runtime.
//
// It keeps, per agent, an index of the open items (thread id, normalized text,
// work fields, embedding) with the embeddings in one contiguous float matrix, so
// that dedup is one brute-force cosine scan. The index is rebuilt from the work
// column family at open (never the threads column family) and updated after each
// durable transition. Writes go through the actors (hooks): an item's birth
// through its agent actor, a transition through its thread actor, session and
// suggestion rows through the journal.
//
// Thread-safe: any method from any thread. Each agent's index has its own lock,
// held across dedup and creation, so concurrent creates of one text give one
// item; the agent map has a lock of its own (taken first, briefly).
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "actors/work_ops.hpp"
#include "persistence/event_log.hpp"
#include "runtime/model/embedder.hpp"
#include "runtime/model/work_api.hpp"
#include "runtime/model/work_graph.hpp"

namespace skein {

struct work_session_row;  // persistence/work_rows.hpp

struct work_hooks {
  // The item's birth (its agent actor): the new manifest.
  std::function<status(work_birth, manifest*)> create;
  // A transition (the thread actor): the manifest after it.
  std::function<status(const std::string& thread_id, work_op, manifest*)> transition;
  // Rows alone (a journal tick with no thread): sessions, suggestions.
  std::function<status(std::vector<side_row>)> write_rows;
  // The agent's embedder ("hashing" where it names none); an error: text only.
  std::function<status(const std::string& agent_id, std::shared_ptr<embedder>*)> embedder_of;
  std::function<int64_t()> clock;
};

// Host threads a sweep sends its transitions from: the journal groups their commits.
inline constexpr size_t work_sweep_hosts = 16;

class work_service {
 public:
  // `log` is borrowed: it must outlive the service.
  work_service(event_log& log, work_hooks hooks);
  ~work_service();
  work_service(const work_service&) = delete;
  work_service& operator=(const work_service&) = delete;

  // Fills the per-agent indexes from the work column family. Rows that do not
  // decode are skipped and counted (derived state).
  status rebuild(size_t* skipped = nullptr);
  // Sweeps every `interval_ms` on a thread of its own until stop(); 0: never.
  void start_sweeps(uint64_t interval_ms, bool auto_archive);
  void stop();
  // A thread erased (delete, retention, handed to another node): it leaves the index.
  void forget(const std::string& thread_id);
  // An item adopted from another node (its rows written here): its row, if
  // open, joins the agent's index. A row that does not decode is left out, as
  // at rebuild.
  void adopt_item(const std::string& agent_id, const std::string& thread_id);

  status create_item(const work_create& in, work_create_result* out);
  status touch_item(const std::string& thread_id, work_entry* out);
  status resolve_item(const work_resolve& in, work_entry* out);
  status relate_item(const std::string& thread_id, const std::string& issue_id, work_entry* out);
  status get_item(const std::string& thread_id, work_entry* out);
  status list_items(const work_list_query& query, work_list_page* out);
  status sweep_items(const work_sweep_options& options, work_sweep_result* out);

  // Each lens keeps the triples `filter` matches; `limit` counts those.
  status graph_connected_to(const std::string& node, size_t limit, std::vector<work_triple>* out,
                            const work_graph_filter& filter = {});
  status graph_produced_by(const std::string& agent_id, size_t limit, std::vector<work_triple>* out,
                           const work_graph_filter& filter = {});
  // One hop of provenance: triples whose object is `node`, at most `limit`.
  using graph_hop = std::function<status(const std::string& node, size_t limit, std::vector<work_triple>* out)>;
  // `read_hop`: how each hop is read (a cluster gathers every node's, filtered); default: here.
  status graph_provenance(const std::string& node, size_t depth, size_t limit, std::vector<work_triple>* out,
                          const work_graph_filter& filter = {}, const graph_hop& read_hop = {});
  status graph_into(const std::string& node, size_t limit, std::vector<work_triple>* out,
                    const work_graph_filter& filter = {});
  // Over the triples of `project` ("": every project). `shared`, if given: this
  // node's part of a cluster's merged stats (work_graph.hpp).
  status graph_stats(work_graph_stats* out, const std::string& project = "", work_graph_shared* shared = nullptr);

  status list_suggestions(const std::string& agent_id, bool all, std::vector<work_suggestion>* out);
  // `project` "": the suggestion's own.
  status promote_suggestion(const std::string& suggestion_id, const std::string& project, work_create_result* out);
  status dismiss_suggestion(const std::string& suggestion_id, work_suggestion* out);
  status session_start(const work_session_start& in, work_session_started* out);
  status session_close(const work_session_close& in, work_session_closed* out);

 private:
  struct open_item {
    std::string thread_id;
    std::string normalized;
    work_item item;
    bool has_vector = false;
  };
  // One agent's open items. `mu` guards every field.
  struct agent_index {
    std::mutex mu;
    size_t dims = 0;                 // of the matrix; 0 until the first vector
    std::vector<float> matrix;       // items.size() rows of dims (zeros where no vector)
    std::vector<open_item> items;
    std::unordered_map<std::string, size_t> at;  // thread id -> row
  };

  agent_index& index_of(const std::string& agent_id);
  // Embeds with a bounded wait; an empty vector when the embedder failed.
  std::vector<std::vector<float>> embed(const std::string& agent_id, std::vector<std::string> texts);
  // Under ix.mu.
  void put_open(agent_index& ix, const std::string& thread_id, const work_item& w, const std::vector<float>& vec);
  void drop_open(agent_index& ix, const std::string& thread_id);
  const float* vector_of(const agent_index& ix, size_t row) const;
  // The best open item of `project_state` kind and `project` matching text or vector, under ix.mu.
  bool find_duplicate(const agent_index& ix, const std::string& normalized, bool project_state,
                      const std::string& project, const std::vector<float>& vec, size_t* row, std::string* by,
                      double* similarity) const;

  status transition(const std::string& thread_id, work_op op, std::vector<work_triple> triples, work_entry* out);
  // Under ix.mu: the op with its rows (the item's row with its vector, the
  // triples); *vec receives the vector. apply_after: the index after a transition.
  work_op prepare_op(const agent_index& ix, const std::string& agent_id, const std::string& thread_id, work_op op,
                     std::vector<work_triple> triples, std::vector<float>* vec);
  void apply_after(agent_index& ix, const manifest& after, const std::vector<float>& vec);
  // Under ix.mu: the transition through the thread actor, then the index.
  status transition_locked(agent_index& ix, const std::string& agent_id, const std::string& thread_id, work_op op,
                           std::vector<work_triple> triples, work_entry* out);
  status create_locked(agent_index& ix, const work_create& in, const std::vector<float>& vec,
                       work_create_result* out);
  status read_entry(const std::string& thread_id, work_entry* out);
  status find_suggestion(const std::string& suggestion_id, work_suggestion* out);
  status scan_triples(const std::string& prefix, size_t limit, std::vector<work_triple>* out,
                      const work_graph_filter& filter);
  status compute_suggestions(const work_session_row& session, std::vector<work_suggestion>* changed);

  event_log& log_;
  work_hooks hooks_;
  std::mutex agents_mu_;  // guards agents_ (the map, not the indexes)
  std::map<std::string, std::unique_ptr<agent_index>> agents_;

  std::mutex sweep_mu_;  // guards stopping_
  std::condition_variable sweep_cv_;
  bool stopping_ = false;
  std::thread sweeper_;
};

}  // namespace skein
