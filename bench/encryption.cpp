// encryption: what encryption at rest costs. The skein rows of `append` (sync and
// flush; memory mode has no files) and the runs of `runs`, first plain, then
// encrypted under a random master key (persistence/encryption.hpp), in this
// process and on the same disk: the plain run is the baseline of the ratio.
#include <random>

#include "bench/workloads.hpp"

namespace skein::bench {
namespace {

std::shared_ptr<const master_key> random_key() {
  std::random_device rd;
  std::array<uint8_t, key_bytes> bytes{};
  for (auto& b : bytes) b = static_cast<uint8_t>(rd());
  return std::make_shared<master_key>(bytes);
}

}  // namespace

status run_encryption(const bench_options& options, result* out) {
  auto key = random_key();
  table& t = add_table(out,
                       "encryption at rest: the same workload plain and encrypted (AES-256-CTR, RocksDB's "
                       "encrypted env), in this process",
                       {col("workload"), col("unit"), col("plain"), col("encrypted"), col("encrypted/plain", "", 2)});
  auto row = [&](std::string what, std::string unit, double plain, double encrypted) {
    t.rows.push_back({text(std::move(what)), text(std::move(unit)), num(plain), num(encrypted),
                      num(plain > 0 ? encrypted / plain : 0)});
  };
  for (durability mode : {durability::sync, durability::flush}) {
    measured_row plain, encrypted;
    SKEIN_TRY(measure_append_skein(options, mode, nullptr, &plain));
    SKEIN_TRY(measure_append_skein(options, mode, key, &encrypted));
    row("append " + std::string{to_string(mode)}, "events/s", plain.per_s(), encrypted.per_s());
  }
  measured_row plain, encrypted;
  SKEIN_TRY(measure_runs(options, durability::sync, nullptr, &plain));
  SKEIN_TRY(measure_runs(options, durability::sync, key, &encrypted));
  row("runs sync", "runs/s", plain.per_s(), encrypted.per_s());
  return status::ok();
}

}  // namespace skein::bench
