// Splits a fuzz input into typed values: our own small reader, so the targets
// also build with g++ (the replay tests) where clang's FuzzedDataProvider is not
// installed. Reading past the end yields zeros and empty strings, never fails.
// Strings are taken from the front, fixed-width values from the back, so that a
// mutation of one rarely shifts the other.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace skein::fuzz {

class input {
 public:
  input(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  uint64_t u64() {
    uint64_t v = 0;
    for (int i = 0; i < 8 && size_ > 0; ++i) v = (v << 8) | data_[--size_];
    return v;
  }
  uint8_t byte() { return size_ > 0 ? data_[--size_] : 0; }
  bool boolean() { return byte() & 1; }
  // In [0, n); n > 0.
  size_t below(size_t n) { return static_cast<size_t>(n <= 256 ? byte() % n : u64() % n); }
  template <class T, size_t N>
  T pick(T (&values)[N]) {
    return values[below(N)];
  }

  // Up to `max_bytes` from the front, ended early by a backslash not followed by
  // another one (libFuzzer's own convention, which mutations handle well).
  std::string string(size_t max_bytes) {
    std::string out;
    while (size_ > 0 && out.size() < max_bytes) {
      char c = static_cast<char>(*data_++);
      --size_;
      if (c == '\\' && size_ > 0) {
        c = static_cast<char>(*data_++);
        --size_;
        if (c != '\\') break;
      }
      out.push_back(c);
    }
    return out;
  }
  std::string rest() {
    std::string out{reinterpret_cast<const char*>(data_), size_};
    size_ = 0;
    return out;
  }

 private:
  const uint8_t* data_;
  size_t size_;
};

}  // namespace skein::fuzz
