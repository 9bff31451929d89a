#include "runtime/model/event_list.hpp"

#include <array>
#include <atomic>
#include <bit>
#include <cassert>

namespace skein {
namespace {

// Chunk c holds first_chunk_events << c slots and starts at slot
// first_chunk_events * (2^c - 1): a store of n events has O(log n) chunks, and
// chunks_max of them hold more events than any memory does.
constexpr size_t first_chunk_events = 8;
static_assert(std::has_single_bit(first_chunk_events), "chunk_of() divides by shifting");
constexpr size_t chunks_max = 48;

size_t chunk_of(size_t i) { return static_cast<size_t>(std::bit_width(i / first_chunk_events + 1)) - 1; }
size_t chunk_start(size_t c) { return first_chunk_events * ((size_t{1} << c) - 1); }
size_t chunk_events(size_t c) { return first_chunk_events << c; }

uint64_t payload_of(const event& e) { return e.text.size() + e.json.size(); }

}  // namespace

// Slots [0, claimed) are written, each once, by the list that claimed it; a
// list reads only slots below its own size, all written before it had that
// size. So readers never meet a writer, and chunks never move.
struct event_list::store {
  struct slot {
    event e;
    uint64_t payload_through = 0;  // payload_of() summed over slots 0..this
  };

  std::atomic<size_t> claimed{0};
  // Entry c is set by the list that claims chunk c's first slot, before any
  // list can have a size that reaches into it.
  std::array<slot*, chunks_max> chunks{};

  store() = default;
  store(const store&) = delete;
  store& operator=(const store&) = delete;
  ~store() {
    size_t n = claimed.load(std::memory_order_acquire);
    for (size_t i = 0; i < n; ++i) std::destroy_at(&at(i));
    for (size_t c = 0; c < chunks_max && chunks[c] != nullptr; ++c)
      std::allocator<slot>{}.deallocate(chunks[c], chunk_events(c));
  }

  slot& at(size_t i) const {
    size_t c = chunk_of(i);
    assert(c < chunks_max);  // a store never holds 8 * 2^48 events
    return chunks[c][i - chunk_start(c)];
  }
};

event_list::event_list(std::initializer_list<event> events) {
  for (const auto& e : events) push_back(e);
}

event_list::event_list(std::vector<event> events) {
  for (auto& e : events) push_back(std::move(e));
}

const event& event_list::stored(size_t i) const {
  assert(i < size_);  // a list reads only the slots it holds
  return store_->at(i).e;
}

const event& event_list::operator[](size_t i) const {
  if (pinned_) return i == 0 ? *pinned_ : stored(i - 1);
  return stored(i);
}

void event_list::push_back(event e) {
  if (!store_) store_ = std::make_shared<store>();
  const size_t i = size_;
  if (store_->claimed.load(std::memory_order_acquire) != i) {
    // Another copy took slot i already: continue on a store of our own.
    std::vector<event> mine;
    mine.reserve(size_);
    for (size_t k = 0; k < size_; ++k) mine.push_back(stored(k));
    event_list fresh(std::move(mine));
    store_ = std::move(fresh.store_);
    assert(store_ == nullptr || store_->claimed.load() == size_);
    return push_back(std::move(e));
  }
  const size_t c = chunk_of(i);
  store::slot* chunk = nullptr;
  if (i == chunk_start(c)) chunk = std::allocator<store::slot>{}.allocate(chunk_events(c));  // may throw: nothing claimed yet
  size_t expected = i;
  if (!store_->claimed.compare_exchange_strong(expected, i + 1, std::memory_order_acq_rel)) {
    // A copy on another thread took slot i meanwhile.
    if (chunk != nullptr) std::allocator<store::slot>{}.deallocate(chunk, chunk_events(c));
    return push_back(std::move(e));
  }
  if (chunk != nullptr) store_->chunks[c] = chunk;
  uint64_t before = i == 0 ? 0 : store_->at(i - 1).payload_through;
  uint64_t bytes = payload_of(e);
  static_assert(std::is_nothrow_move_constructible_v<event>, "a claimed slot is always written");
  std::construct_at(&store_->at(i), store::slot{std::move(e), before + bytes});
  size_ = i + 1;
}

void event_list::clear() {
  pinned_.reset();
  clear_unpinned();
}

void event_list::clear_unpinned() {
  store_.reset();
  size_ = 0;
}

void event_list::pin_front(event e) { pinned_ = std::make_shared<const event>(std::move(e)); }

std::vector<event> event_list::to_vector() const { return std::vector<event>(begin(), end()); }

uint64_t event_list::payload_bytes() const {
  uint64_t total = pinned_ ? payload_of(*pinned_) : 0;
  if (size_ != 0) total += store_->at(size_ - 1).payload_through;
  return total;
}

bool operator==(const event_list& a, const event_list& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i])) return false;
  return true;
}

}  // namespace skein
