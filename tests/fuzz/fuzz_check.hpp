// Shared by the fuzz targets: an invariant check that aborts with a message, so
// libFuzzer records the input as a crash (asserts vanish under NDEBUG; this does
// not).
#pragma once

#include <cstdio>
#include <cstdlib>

#define SKEIN_FUZZ_CHECK(cond, why)                                                  \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      std::fprintf(stderr, "fuzz invariant failed: %s (%s) at %s:%d\n", why, #cond, \
                   __FILE__, __LINE__);                                              \
      std::abort();                                                                  \
    }                                                                                \
  } while (0)
