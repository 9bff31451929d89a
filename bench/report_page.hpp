// report_page: the benchmark's report as a page of the manual (docs/performance.md),
// written by `skein-bench --markdown FILE` (`make bench`) from one run's results.
//
// The page: what `make bench` measures and against what (fixed text), the run
// (revision, scale, machine), every target with its figure and verdict, then each
// workload's tables as the console prints them. One part is kept from the page
// the run replaces: the text between notes_begin and notes_end, written by hand,
// which says what the figures mean (what limits a missed target, ranges over
// several runs). Rendering is pure: the caller reads the old page and writes the new.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "bench/result.hpp"

namespace skein::bench {

// The machine and the build a run measured: report.json's "machine" object.
struct run_info {
  double scale = 1;
  unsigned cores = 0;
  uint64_t memory_bytes = 0;  // 0: unknown
  std::string cpu;
  std::string disk_device;
  std::string disk_kind;
  std::string kernel;
  std::string build_type;
  std::string revision;
};

inline constexpr std::string_view notes_begin = "<!-- notes: kept by make bench; written by hand -->";
inline constexpr std::string_view notes_end = "<!-- /notes -->";

// The hand-written part of `old_page`, markers included; "" when it has none.
std::string kept_notes(std::string_view old_page);

// The page for `results` (in the order run); `descriptions[i]` says what
// results[i]'s workload does. `notes` (kept_notes of the old page) goes after
// the targets; without it, an empty notes section is written for the next edit.
std::string render_page(const run_info& run, const std::vector<result>& results,
                        const std::vector<std::string>& descriptions, std::string_view notes);

}  // namespace skein::bench
