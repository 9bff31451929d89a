// effect_stats: what one effect actor reports (runtime_stats, /metrics). A plain
// value, in the model layer so that the public runtime header needs no actors.
#pragma once

#include <cstdint>
#include <string>

namespace skein {

struct effect_stats {
  std::string effect;
  uint64_t backlog = 0;      // threads with work pending (or failing)
  double lag_p50_s = 0;      // seconds from commit to done, over the last lag_window samples
  double lag_p99_s = 0;
  uint64_t done = 0;         // jobs written (output + cursor)
  uint64_t failed = 0;       // jobs that failed (each is retried)
  uint64_t retries = 0;      // retries scheduled
  uint64_t discarded = 0;    // titles: generated but not set (the thread had a title by then)
  std::string last_error;    // the latest failure, "" if none
};

}  // namespace skein
