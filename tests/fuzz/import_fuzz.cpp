// Fuzz target: one import format (SKEIN_FUZZ_IMPORT_FORMAT names it; the build
// makes one target per format, each with its own corpus). Whatever imports must
// export, and the export must import back equal (import_export.hpp promises it).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "tools/io/import_export.hpp"
#include "tests/fuzz/fuzz_check.hpp"

#ifndef SKEIN_FUZZ_IMPORT_FORMAT
#error "SKEIN_FUZZ_IMPORT_FORMAT must name the import format"
#endif

namespace {

void check_thread(const skein::imported_thread& t) {
  SKEIN_FUZZ_CHECK(t.manifest.last_seq == t.events.size(), "last_seq counts the events");
  for (size_t i = 0; i < t.events.size(); ++i)
    SKEIN_FUZZ_CHECK(t.events[i].seq == i + 1, "seqs run 1..n");
  std::string exported;
  SKEIN_FUZZ_CHECK(skein::export_thread(t.manifest, t.events, &exported).is_ok(), "an imported thread exports");
  skein::import_result back;
  SKEIN_FUZZ_CHECK(skein::parse_import(exported, skein::import_format::skein, "", &back).is_ok(),
                   "an export imports");
  SKEIN_FUZZ_CHECK(back.threads.size() == 1, "an export holds one thread");
  SKEIN_FUZZ_CHECK(!back.torn_last_line, "an export has no torn line");
  SKEIN_FUZZ_CHECK(back.threads[0].manifest == t.manifest, "the manifest round-trips equal");
  SKEIN_FUZZ_CHECK(back.threads[0].events == t.events, "the events round-trip equal");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto format = skein::parse_import_format(SKEIN_FUZZ_IMPORT_FORMAT);
  SKEIN_FUZZ_CHECK(format.has_value(), "the target names a known format");
  std::string_view body{reinterpret_cast<const char*>(data), size};
  skein::import_result r;
  if (!skein::parse_import(body, *format, "fuzz-agent", &r).is_ok()) {
    SKEIN_FUZZ_CHECK(r.threads.empty(), "a failed import leaves its output untouched");
    return 0;
  }
  if (*format != skein::import_format::auto_detect)
    SKEIN_FUZZ_CHECK(r.format == *format, "the format used is the one asked for");
  for (const auto& t : r.threads) check_thread(t);
  return 0;
}
