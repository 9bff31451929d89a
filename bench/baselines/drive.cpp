#include "bench/baselines/drive.hpp"

#include <atomic>

#include "bench/workloads.hpp"
#include "runtime/model/json_codec.hpp"
#include "runtime/model/manifest.hpp"

namespace skein::bench {

// Host h takes the whole of its share (on_host_threads with one task per host).
status drive_rounds(size_t threads, size_t rounds, size_t hosts, progress& bar,
                    const round_fn& fn, drive_outcome* out) {
  std::vector<std::vector<int64_t>> ns(hosts);
  std::atomic<bool> failed{false};
  auto start = bench_clock::now();
  status s = on_host_threads(hosts, hosts, [&](size_t h) {
    for (size_t round = 0; round < rounds; ++round) {
      for (size_t i = h; i < threads && !failed.load(std::memory_order_relaxed); i += hosts) {
        auto sent = bench_clock::now();
        status called = fn(i, round);
        ns[h].push_back((bench_clock::now() - sent).count());
        bar.advance();
        if (!called) {
          failed = true;
          return called;
        }
      }
    }
    return status::ok();
  });
  out->seconds = seconds_since(start, bench_clock::now());
  SKEIN_TRY(s);
  for (auto& n : ns) out->latencies_ns.insert(out->latencies_ns.end(), n.begin(), n.end());
  return status::ok();
}

status check_opennova_thread(opennova_store& store, const std::string& id, uint64_t events) {
  std::string manifest_line;
  std::vector<std::string> lines;
  SKEIN_TRY(store.read_thread(id, &manifest_line, &lines));
  manifest m;
  SKEIN_TRY(decode_manifest(manifest_line, &m));
  if (m.id != id || m.last_seq != events || lines.size() != events)
    return status::corruption("thread " + id + ": manifest of " + m.id + " at last_seq " +
                              std::to_string(m.last_seq) + " over " +
                              std::to_string(lines.size()) + " event lines, expected " +
                              std::to_string(events));
  for (size_t k = 0; k < lines.size(); ++k) {
    event e;
    SKEIN_TRY(decode_event(lines[k], &e));
    if (e.seq != k + 1)
      return status::corruption("thread " + id + ": line " + std::to_string(k + 2) +
                                " holds seq " + std::to_string(e.seq));
  }
  return status::ok();
}

status check_lace_thread(lace_store& store, const std::string& id, uint64_t events) {
  lace_thread_counts c;
  SKEIN_TRY(store.read_thread(id, &c));
  // Distinct seqs from 1 to `events`, as many rows: exactly 1..events.
  uint64_t min_seq = events > 0 ? 1 : 0;
  if (c.events != events || c.distinct_seqs != events || c.min_seq != min_seq ||
      c.max_seq != events || c.last_seq != events)
    return status::corruption("thread " + id + ": " + std::to_string(c.events) + " event rows, " +
                              std::to_string(c.distinct_seqs) + " distinct seqs from " +
                              std::to_string(c.min_seq) + " to " + std::to_string(c.max_seq) +
                              ", threads.last_seq " + std::to_string(c.last_seq) +
                              "; expected seqs 1.." + std::to_string(events));
  return status::ok();
}

}  // namespace skein::bench
