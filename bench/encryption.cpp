// encryption: what encryption at rest costs. The skein rows of `append` (sync and
// flush; memory mode has no files) and the runs of `runs`, first plain, then
// encrypted under a random master key (persistence/encryption.hpp), in this
// process and on the same disk: the plain run is the baseline of the ratio.
#include <cstdio>
#include <random>

#include "bench/report.hpp"
#include "bench/report_format.hpp"
#include "bench/workloads.hpp"

namespace skein::bench {
namespace {

std::shared_ptr<const master_key> random_key() {
  std::random_device rd;
  std::array<uint8_t, key_bytes> bytes{};
  for (auto& b : bytes) b = static_cast<uint8_t>(rd());
  return std::make_shared<master_key>(bytes);
}

struct pair_row {
  std::string what;
  std::string unit;
  double plain = 0;
  double encrypted = 0;
  double ratio() const { return plain > 0 ? encrypted / plain : 0; }
};

}  // namespace

status run_encryption(const bench_options& options, std::string* json) {
  auto key = random_key();
  std::vector<pair_row> rows;
  for (durability mode : {durability::sync, durability::flush}) {
    append_row plain, encrypted;
    SKEIN_TRY(measure_append_skein(options, mode, nullptr, &plain));
    SKEIN_TRY(measure_append_skein(options, mode, key, &encrypted));
    rows.push_back({"append " + std::string{to_string(mode)}, "events/s", plain.events_per_s(),
                    encrypted.events_per_s()});
  }
  runs_figures plain, encrypted;
  SKEIN_TRY(measure_runs(options, nullptr, &plain));
  SKEIN_TRY(measure_runs(options, key, &encrypted));
  rows.push_back({"runs sync", "runs/s", plain.runs_per_s(), encrypted.runs_per_s()});

  std::vector<std::vector<std::string>> table = {{"workload", "unit", "plain", "encrypted", "encrypted/plain"}};
  for (const auto& r : rows)
    table.push_back({r.what, r.unit, detail::with_commas(static_cast<uint64_t>(r.plain)),
                     detail::with_commas(static_cast<uint64_t>(r.encrypted)), detail::fixed(r.ratio(), 2)});
  std::printf("\nencryption at rest: the same workload plain and encrypted (AES-256-CTR, RocksDB's "
              "encrypted env), in this process\n");
  detail::print_table(table, stdout);
  std::fflush(stdout);

  json_writer w{json};
  w.begin_object();
  for (const auto& r : rows) {
    w.key(detail::json_name(r.what));
    w.begin_object();
    w.field("unit", r.unit);
    detail::write_number(w, "plain", r.plain);
    detail::write_number(w, "encrypted", r.encrypted);
    detail::write_number(w, "ratio", r.ratio());
    w.end_object();
  }
  w.end_object();
  return status::ok();
}

}  // namespace skein::bench
