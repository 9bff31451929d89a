// A message sealer (persistence/sealed_message.hpp) for the replication tests:
// its master key is 32 bytes of `fill`, so two fills are two namespaces' keys.
#pragma once

#include <array>
#include <catch2/catch.hpp>
#include <cstdint>

#include "persistence/sealed_message.hpp"

namespace skein::test {

inline message_sealer sealer_for(uint8_t fill) {
  std::array<uint8_t, key_bytes> bytes{};
  bytes.fill(fill);
  message_sealer s;
  REQUIRE(message_sealer::make(master_key{bytes}, &s).is_ok());
  return s;
}

}  // namespace skein::test
