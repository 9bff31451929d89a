// encryption: what encryption at rest costs. The skein rows of `append` (sync and
// flush; memory mode has no files) and the runs of `runs`, first plain, then
// encrypted under a random master key (persistence/encryption.hpp), in this
// process and on the same disk: the plain run is the baseline of the ratio.
#include <random>

#include "bench/workloads.hpp"

namespace skein::bench {

status run_encryption(const bench_options& options, result* out) {
  std::random_device rd;
  std::array<uint8_t, key_bytes> bytes{};
  for (auto& b : bytes) b = static_cast<uint8_t>(rd());
  auto key = std::make_shared<const master_key>(bytes);
  table& t = add_table(out,
                       "encryption at rest: the same workload plain and encrypted (AES-256-CTR, RocksDB's "
                       "encrypted env), in this process",
                       {col("workload"), col("unit"), col("plain"), col("encrypted"), col("encrypted/plain", "", 2)});
  using measure = std::function<status(std::shared_ptr<const master_key>, measured_row*)>;
  auto add_row = [&](std::string what, std::string unit, const measure& m) {
    measured_row plain, encrypted;
    SKEIN_TRY(m(nullptr, &plain));
    SKEIN_TRY(m(key, &encrypted));
    t.rows.push_back({text(std::move(what)), text(std::move(unit)), num(plain.per_s()), num(encrypted.per_s()),
                      num(plain.per_s() > 0 ? encrypted.per_s() / plain.per_s() : 0)});
    return status::ok();
  };
  for (durability mode : {durability::sync, durability::flush}) {
    SKEIN_TRY(add_row("append " + std::string{to_string(mode)}, "events/s", [&](auto k, measured_row* row) {
      return measure_append_skein(options, mode, k, row);
    }));
  }
  SKEIN_TRY(add_row("runs sync", "runs/s", [&](auto k, measured_row* row) {
    return measure_runs(options, durability::sync, k, row);
  }));
  return status::ok();
}

}  // namespace skein::bench
