// event_list: a sequence of events that copies in O(1) — the working
// conversation a thread keeps and every engine call borrows.
//
// Copies share storage: the elements live in an append-only store of chunks
// that double in size, so a copy is one shared_ptr and a count, and a thread's
// cost of calling its engine does not grow with the thread. Each list sees the
// first size() elements of its store; push_back writes the next slot in place
// when no other list has taken it (the newest copy of a lineage), and otherwise
// copies the list's own elements into a new store first. Elements are never
// changed once written, so copies on different threads read them freely.
//
// The first element may be pinned: kept apart from the store, so that it can be
// replaced or removed in O(1) (the system prompt in front of a conversation,
// which a house member replaces with its own).
//
// A value type. Distinct lists may be used from different threads at once, and
// one list may be read from many threads; a list being changed must not be
// read or changed by another thread at the same time (as std::vector).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <vector>

#include "runtime/model/event.hpp"

namespace skein {

class event_list {
 public:
  using value_type = event;
  using size_type = size_t;
  using difference_type = std::ptrdiff_t;
  using reference = const event&;
  using const_reference = const event&;

  class const_iterator {
   public:
    using iterator_category = std::random_access_iterator_tag;
    using value_type = event;
    using difference_type = std::ptrdiff_t;
    using pointer = const event*;
    using reference = const event&;

    const_iterator() = default;
    reference operator*() const { return (*list_)[index_]; }
    pointer operator->() const { return &(*list_)[index_]; }
    reference operator[](difference_type n) const { return (*list_)[index_ + n]; }
    const_iterator& operator++() { return ++index_, *this; }
    const_iterator operator++(int) { const_iterator old = *this; ++index_; return old; }
    const_iterator& operator--() { return --index_, *this; }
    const_iterator operator--(int) { const_iterator old = *this; --index_; return old; }
    const_iterator& operator+=(difference_type n) { return index_ += n, *this; }
    const_iterator& operator-=(difference_type n) { return index_ -= n, *this; }
    friend const_iterator operator+(const_iterator it, difference_type n) { return it += n; }
    friend const_iterator operator+(difference_type n, const_iterator it) { return it += n; }
    friend const_iterator operator-(const_iterator it, difference_type n) { return it -= n; }
    friend difference_type operator-(const const_iterator& a, const const_iterator& b) {
      return static_cast<difference_type>(a.index_) - static_cast<difference_type>(b.index_);
    }
    friend bool operator==(const const_iterator& a, const const_iterator& b) { return a.index_ == b.index_; }
    friend auto operator<=>(const const_iterator& a, const const_iterator& b) { return a.index_ <=> b.index_; }

   private:
    friend class event_list;
    const_iterator(const event_list* list, size_t index) : list_(list), index_(index) {}
    const event_list* list_ = nullptr;
    size_t index_ = 0;
  };
  using iterator = const_iterator;
  using const_reverse_iterator = std::reverse_iterator<const_iterator>;
  using reverse_iterator = const_reverse_iterator;

  event_list() = default;
  event_list(std::initializer_list<event> events);
  // Implicit, so that a vector can be given where a list is wanted.
  event_list(std::vector<event> events);  // NOLINT(google-explicit-constructor)

  size_t size() const { return (pinned_ ? 1 : 0) + size_; }
  bool empty() const { return size() == 0; }
  // i < size().
  const event& operator[](size_t i) const;
  const event& front() const { return (*this)[0]; }
  const event& back() const { return (*this)[size() - 1]; }
  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, size()}; }
  const_iterator cbegin() const { return begin(); }
  const_iterator cend() const { return end(); }
  const_reverse_iterator rbegin() const { return const_reverse_iterator{end()}; }
  const_reverse_iterator rend() const { return const_reverse_iterator{begin()}; }

  void push_back(event e);
  template <class It>
  void append(It first, It last) {
    for (; first != last; ++first) push_back(*first);
  }
  void clear();
  std::vector<event> to_vector() const;

  // The pinned first element, or null when the first element (if any) is not pinned.
  const event* pinned_front() const { return pinned_.get(); }
  // Makes `e` the first element: it replaces the pinned one, or goes in front.
  void pin_front(event e);
  // Removes the pinned first element, if there is one.
  void unpin_front() { pinned_.reset(); }
  // Removes every element but the pinned one.
  void clear_unpinned();

  // The bytes of every element's text and json payloads (the basis of the
  // engines' size estimates), in O(1).
  uint64_t payload_bytes() const;

  friend bool operator==(const event_list& a, const event_list& b);

 private:
  struct store;
  const event& stored(size_t i) const;

  std::shared_ptr<const event> pinned_;
  std::shared_ptr<store> store_;  // null while nothing was pushed
  size_t size_ = 0;               // elements of store_ this list holds (its first ones)
};

}  // namespace skein
