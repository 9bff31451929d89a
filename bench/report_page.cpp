// The page of skein-bench --markdown (report_page.hpp).
#include "bench/report_page.hpp"

#include <cmath>
#include <cstdio>

namespace skein::bench {
namespace {

// What every run of make bench measures, and against what.
constexpr std::string_view method =
    "`make bench` runs every `skein-bench` workload at scale 1 and writes\n"
    "`bench/results/report.json` (figures, the machine, the build and the git revision),\n"
    "PNG charts (`--plot`) and this page (`--markdown docs/performance.md`). Every figure is\n"
    "read against a baseline run in the same process on the same workload: RocksDB written\n"
    "directly, **opennova-design** (a JSONL file per thread whose manifest line is rewritten,\n"
    "fdatasync per append), **lace-design** (SQLite in WAL mode, one transaction per event)\n"
    "and **kernl** 0.8.2 from npm (in memory, its mock model; skipped without node). Every\n"
    "workload prints its targets as lines of the report (met, MISSED or skipped) and writes\n"
    "them to the JSON. `make test` runs every workload at `--scale 0.05` as a smoke test of\n"
    "correctness. Reproduce with `make bench`, or one workload with\n"
    "`build/bench/skein-bench runs --plot DIR`.\n";

// A table cell as the console prints it ("41,230", "-"), with `|` escaped.
std::string cell_text(const column& c, const cell& v) {
  std::string s;
  if (const auto* t = std::get_if<std::string>(&v)) s = *t;
  else if (const auto* d = std::get_if<double>(&v)) s = c.commas ? with_commas(*d, c.decimals) : fixed(*d, c.decimals);
  else s = "-";
  std::string out;
  for (char ch : s) out += ch == '|' ? std::string{"\\|"} : std::string{ch};
  return out;
}

// Figures right-aligned, text columns (a text cell in any row) left-aligned.
void append_table(const table& t, std::string* out) {
  size_t n = t.columns.size();
  std::vector<bool> left(n, false);
  for (const auto& row : t.rows)
    for (size_t i = 0; i < n && i < row.size(); ++i)
      if (std::holds_alternative<std::string>(row[i])) left[i] = true;
  *out += "**" + t.title + "**\n\n|";
  for (const auto& c : t.columns)
    out->append(" ").append(c.unit.empty() || c.name.ends_with(c.unit) ? c.name : c.name + " " + c.unit).append(" |");
  *out += "\n|";
  for (size_t i = 0; i < n; ++i) *out += left[i] ? "---|" : "---:|";
  *out += "\n";
  for (const auto& row : t.rows) {
    *out += "|";
    for (size_t i = 0; i < n; ++i) out->append(" ").append(cell_text(t.columns[i], i < row.size() ? row[i] : cell{})).append(" |");
    *out += "\n";
  }
  for (const auto& note : t.notes) *out += "\n" + note + "\n";
  *out += "\n";
}

std::string figure(double v) { return with_commas(v, std::fabs(v) >= 100 || v == std::floor(v) ? 0 : 2); }

void append_targets(const std::vector<result>& results, std::string* out) {
  *out += "| workload | target | figure | goal | verdict |\n|---|---|---:|---:|---|\n";
  for (const auto& r : results)
    for (const auto& g : r.targets) {
      std::string name = g.name;
      if (!g.against.empty() && g.name.find(g.against) == std::string::npos) name += " (vs " + g.against + ")";
      std::string goal = (g.direction == better::higher ? "≥ " : "≤ ") + figure(g.goal) + " " + g.unit;
      std::string value = g.skipped ? "-" : figure(g.value) + " " + g.unit;
      *out += "| " + r.workload + " | " + name + " | " + value + " | " + goal + " | " +
              (g.skipped ? "skipped" : g.met() ? "met" : "MISSED") + " |\n";
    }
  *out += "\n";
}

}  // namespace

std::string kept_notes(std::string_view old_page) {
  size_t begin = old_page.find(notes_begin);
  if (begin == std::string_view::npos) return "";
  size_t end = old_page.find(notes_end, begin);
  if (end == std::string_view::npos) return "";
  return std::string{old_page.substr(begin, end + notes_end.size() - begin)};
}

std::string render_page(const run_info& run, const std::vector<result>& results,
                        const std::vector<std::string>& descriptions, std::string_view notes) {
  std::string out = "# Performance\n\n";
  out += "<!-- Written by `make bench` (skein-bench --markdown) from one run's figures; the next\n"
         "run writes it again. Only the notes section is kept: edit that one by hand. -->\n\n";
  out += method;
  out += "\n## The run\n\n";
  char gib[32];
  std::snprintf(gib, sizeof gib, "%.0f GiB", static_cast<double>(run.memory_bytes) / (1ull << 30));
  out += "`skein-bench` at revision " + run.revision + " (" + run.build_type + "), scale " + fixed(run.scale, 2) +
         "; " + std::to_string(run.cores) + " cores " + run.cpu + ", " +
         (run.memory_bytes ? std::string{gib} : std::string{"memory unknown"}) + ", disk " + run.disk_device + " (" +
         run.disk_kind + "), kernel " + run.kernel + ".\n\n";
  out += "## Targets\n\n";
  append_targets(results, &out);
  out += notes.empty() ? std::string{notes_begin} + "\n" + std::string{notes_end} : std::string{notes};
  out += "\n\n## Workloads\n";
  for (size_t i = 0; i < results.size(); ++i) {
    out += "\n### " + results[i].workload + "\n\n";
    if (i < descriptions.size()) out += descriptions[i] + ".\n\n";
    for (const auto& t : results[i].tables) append_table(t, &out);
  }
  while (out.ends_with("\n\n")) out.pop_back();
  return out;
}

}  // namespace skein::bench
