// stable_hash: hashes whose values are part of skein's stored formats (which
// node owns a thread, which partition holds it), so they never change between
// platforms or releases, as std::hash may. FNV-1a over the bytes, then
// MurmurHash3's 64-bit finalizer, which spreads every input bit over the output.
#pragma once

#include <cstdint>
#include <string_view>

namespace skein {

// FNV-1a, unmixed: cheap, stable, but its low bits are poor alone.
inline uint64_t fnv1a(std::string_view bytes) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

// MurmurHash3's finalizer.
inline uint64_t mix64(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdull;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ull;
  k ^= k >> 33;
  return k;
}

inline uint64_t stable_hash(std::string_view bytes) { return mix64(fnv1a(bytes)); }

}  // namespace skein
