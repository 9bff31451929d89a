#include "runtime/model/memory_index.hpp"

#include <algorithm>
#include <cstdlib>
#include <new>
#include <sys/mman.h>
#include <mutex>
#include <queue>

namespace skein {
namespace {

// Independent accumulators: the vectorizer may then use SIMD lanes without
// reordering any one float sum (which it must not do without -ffast-math).
constexpr size_t dot_lanes = 16;
// A chunk holds chunk_rows rows column by column: dimension d of rows
// [0, chunk_rows) is one contiguous run of floats. A search keeps the chunk's
// scores in L1 (16 KiB) and adds one column per non-zero query dimension.
constexpr size_t chunk_rows = 4096;
constexpr size_t chunk_align_bytes = 2 << 20;  // a huge page

inline float dot_lanes_inline(const float* a, const float* b, size_t n) {
  float acc[dot_lanes] = {};
  size_t i = 0;
  for (; i + dot_lanes <= n; i += dot_lanes)
    for (size_t j = 0; j < dot_lanes; ++j) acc[j] += a[i + j] * b[i + j];
  float s = 0;
  for (; i < n; ++i) s += a[i] * b[i];
  for (size_t j = 0; j < dot_lanes; ++j) s += acc[j];
  return s;
}

// scores[r] += weight * column[r]. Each score is its own sum, so this vectorizes
// without reassociating anything; the scan is then bound by memory bandwidth.
// AVX2+FMA (x86-64-v3) halves its instructions where the CPU has it, chosen at
// load time (ifunc), so the build stays portable. Not under TSan: the ifunc
// resolver runs while the dynamic loader relocates, before TSan's runtime is up,
// and its instrumented prologue crashes the process.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
__attribute__((target_clones("arch=x86-64-v3", "default")))
#endif
void add_column(const float* __restrict column, float weight, size_t rows, float* __restrict scores) {
  for (size_t r = 0; r < rows; ++r) scores[r] += weight * column[r];
}

}  // namespace

float memory_dot(const float* a, const float* b, size_t n) { return dot_lanes_inline(a, b, n); }

// Rows live in chunks of chunk_rows, each one aligned allocation: growth never
// copies the matrix (a vector doubling 1.5 GiB would need 3 GiB for a moment),
// and on Linux each chunk asks for transparent huge pages — first-touch page
// faults were most of the cost of a rebuild.
class float_chunk {
 public:
  explicit float_chunk(size_t floats) {
    bytes_ = (floats * sizeof(float) + chunk_align_bytes - 1) / chunk_align_bytes * chunk_align_bytes;
    data_ = static_cast<float*>(std::aligned_alloc(chunk_align_bytes, bytes_));
    if (data_ == nullptr) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
    ::madvise(data_, bytes_, MADV_HUGEPAGE);  // advisory: a refusal changes nothing
#endif
  }
  ~float_chunk() { std::free(data_); }
  float_chunk(const float_chunk&) = delete;
  float_chunk& operator=(const float_chunk&) = delete;
  float* data() const { return data_; }
  size_t bytes() const { return bytes_; }

 private:
  float* data_;
  size_t bytes_;
};

struct memory_index::agent_rows {
  size_t dims = 0;
  std::vector<std::unique_ptr<float_chunk>> chunks;  // rows x dims, row-major, chunk_rows a chunk
  std::vector<uint32_t> thread_of;  // per row: index into threads
  std::vector<uint64_t> seq;        // per row
  std::vector<uint8_t> assistant;   // per row: 1 assistant, 0 user
  std::vector<std::string> threads;  // thread ids; "" for a freed slot
  std::vector<uint64_t> thread_seq_max;  // per thread: the highest seq added
  std::unordered_map<std::string, uint32_t> thread_slot;
  std::vector<uint32_t> free_slots;

  // Column d of the chunk holding row r, and r's place in it.
  float* column(size_t r, size_t d) const { return chunks[r / chunk_rows]->data() + d * chunk_rows; }
  float& at(size_t r, size_t d) const { return column(r, d)[r % chunk_rows]; }

  void write_row(size_t r, const std::vector<float>& v) {
    for (size_t d = 0; d < dims; ++d) at(r, d) = v[d];
  }

  void copy_row(size_t from, size_t to) {
    for (size_t d = 0; d < dims; ++d) at(to, d) = at(from, d);
  }

  size_t rows() const { return seq.size(); }

  uint32_t slot_of(std::string_view thread) {
    auto it = thread_slot.find(std::string{thread});
    if (it != thread_slot.end()) return it->second;
    uint32_t s;
    if (!free_slots.empty()) {
      s = free_slots.back();
      free_slots.pop_back();
      threads[s] = std::string{thread};
      thread_seq_max[s] = 0;
    } else {
      s = static_cast<uint32_t>(threads.size());
      threads.emplace_back(thread);
      thread_seq_max.push_back(0);
    }
    thread_slot.emplace(std::string{thread}, s);
    return s;
  }

  void set_row(size_t r, const std::vector<float>& v, bool is_assistant) {
    write_row(r, v);
    assistant[r] = is_assistant ? 1 : 0;
  }

  void add(uint32_t slot, uint64_t s, const embedding_record& r) {
    // The live feed brings rows in seq order; only an older seq can be a repeat.
    if (s <= thread_seq_max[slot]) {
      for (size_t i = 0; i < rows(); ++i)
        if (thread_of[i] == slot && seq[i] == s) return set_row(i, r.vector, r.assistant);
    }
    thread_seq_max[slot] = std::max(thread_seq_max[slot], s);
    if (rows() == chunks.size() * chunk_rows) chunks.push_back(std::make_unique<float_chunk>(chunk_rows * dims));
    write_row(rows(), r.vector);
    thread_of.push_back(slot);
    seq.push_back(s);
    assistant.push_back(r.assistant ? 1 : 0);
  }

  // Swap-remove: the last row moves into each hole, so the matrix stays dense.
  void remove(uint32_t slot) {
    size_t i = 0;
    while (i < rows()) {
      if (thread_of[i] != slot) {
        ++i;
        continue;
      }
      size_t last = rows() - 1;
      if (i != last) {
        copy_row(last, i);
        thread_of[i] = thread_of[last];
        seq[i] = seq[last];
        assistant[i] = assistant[last];
      }
      if (last == (chunks.size() - 1) * chunk_rows) chunks.pop_back();  // its only row left
      thread_of.pop_back();
      seq.pop_back();
      assistant.pop_back();
    }
    thread_slot.erase(threads[slot]);
    threads[slot].clear();
    free_slots.push_back(slot);
  }
};

memory_index::memory_index() = default;
memory_index::~memory_index() = default;

status memory_index::add(std::string_view thread_id, uint64_t seq, const embedding_record& r) {
  if (r.vector.empty()) return status::invalid_input("memory_index: an empty vector").with_field("vector");
  std::unique_lock lock{mu_};
  auto [it, fresh] = agents_.try_emplace(r.agent_id, nullptr);
  if (fresh) {
    it->second = std::make_unique<agent_rows>();
    it->second->dims = r.vector.size();
  }
  agent_rows& a = *it->second;
  if (r.vector.size() != a.dims)
    return status::invalid_input("memory_index: a vector of " + std::to_string(r.vector.size()) +
                                 " dims for agent " + r.agent_id + ", whose vectors have " +
                                 std::to_string(a.dims))
        .with_field("vector");
  // A thread belongs to one agent for life; an entry naming another agent would
  // only come from a corrupt row, which then stays where it was found.
  auto [owner, added] = thread_agent_.try_emplace(std::string{thread_id}, r.agent_id);
  if (!added && owner->second != r.agent_id)
    return status::invalid_input("memory_index: thread " + std::string{thread_id} + " belongs to agent " +
                                 owner->second + ", not " + r.agent_id)
        .with_field("agent_id");
  a.add(a.slot_of(thread_id), seq, r);
  return status::ok();
}

void memory_index::remove_thread(std::string_view thread_id) {
  std::unique_lock lock{mu_};
  auto owner = thread_agent_.find(std::string{thread_id});
  if (owner == thread_agent_.end()) return;
  auto it = agents_.find(owner->second);
  if (it != agents_.end()) {
    auto slot = it->second->thread_slot.find(std::string{thread_id});
    if (slot != it->second->thread_slot.end()) it->second->remove(slot->second);
  }
  thread_agent_.erase(owner);
}

status memory_index::search(std::string_view agent_id, std::span<const float> query, size_t k,
                            std::vector<memory_match>* out) const {
  out->clear();
  std::shared_lock lock{mu_};
  auto it = agents_.find(agent_id);
  if (it == agents_.end() || k == 0) return status::ok();
  const agent_rows& a = *it->second;
  if (query.size() != a.dims)
    return status::invalid_input("memory search: a query of " + std::to_string(query.size()) +
                                 " dims against vectors of " + std::to_string(a.dims))
        .with_field("query");
  // Only the query's non-zero dimensions cost a read: a hashing embedder's
  // query of a few words touches a few columns of the matrix, a dense one all.
  std::vector<std::pair<size_t, float>> terms;
  for (size_t d = 0; d < a.dims; ++d)
    if (query[d] != 0) terms.emplace_back(d, query[d]);
  // Min-heap of the best k so far: its top is the score to beat.
  using scored = std::pair<float, size_t>;
  std::priority_queue<scored, std::vector<scored>, std::greater<>> best;
  alignas(64) float scores[chunk_rows];
  size_t n = a.rows();
  for (size_t base = 0; base < n; base += chunk_rows) {
    size_t count = std::min(chunk_rows, n - base);
    std::fill_n(scores, count, 0.0f);
    for (const auto& [d, w] : terms) add_column(a.column(base, d), w, count, scores);
    for (size_t i = 0; i < count; ++i) {
      if (best.size() < k) best.emplace(scores[i], base + i);
      else if (scores[i] > best.top().first) {
        best.pop();
        best.emplace(scores[i], base + i);
      }
    }
  }
  out->resize(best.size());
  for (size_t i = best.size(); i-- > 0;) {
    auto [score, row] = best.top();
    best.pop();
    memory_match& m = (*out)[i];
    m.thread_id = a.threads[a.thread_of[row]];
    m.seq = a.seq[row];
    m.assistant = a.assistant[row] != 0;
    m.score = score;
  }
  return status::ok();
}

size_t memory_index::rows(std::string_view agent_id) const {
  std::shared_lock lock{mu_};
  auto it = agents_.find(agent_id);
  return it == agents_.end() ? 0 : it->second->rows();
}

size_t memory_index::dimensions(std::string_view agent_id) const {
  std::shared_lock lock{mu_};
  auto it = agents_.find(agent_id);
  return it == agents_.end() ? 0 : it->second->dims;
}

memory_index_stats memory_index::stats() const {
  std::shared_lock lock{mu_};
  memory_index_stats s;
  s.agents = agents_.size();
  for (const auto& [id, a] : agents_) {
    s.rows += a->rows();
    for (const auto& c : a->chunks) s.bytes += c->bytes();
    s.bytes += a->seq.capacity() * sizeof(uint64_t) +
               a->thread_of.capacity() * sizeof(uint32_t) + a->assistant.capacity();
  }
  return s;
}

}  // namespace skein
