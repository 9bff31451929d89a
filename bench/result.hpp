// result: what every skein-bench workload returns — tables of rows with named,
// typed columns, the targets it is read against, and the series its charts draw.
// One printer (print_result) and one JSON writer (write_result_json) render every
// workload; the charts are drawn from the JSON document, never from a workload's
// own structs. A workload builds its result on the main thread after measuring.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <variant>
#include <vector>

#include "runtime/model/json_writer.hpp"

namespace skein::bench {

// A cell: empty (printed "-", JSON null), a number, or text.
using cell = std::variant<std::monostate, double, std::string>;

// How a column's numbers print: `decimals` after the point; `commas` groups the
// integer part by thousands ("41,230"). The unit is printed in the header
// ("events/s") and written beside the column in the JSON.
struct column {
  std::string name;        // "system", "mode", "events/s", "p99"
  std::string unit;        // "", "events/s", "us", "ms", "MB", "x"
  int decimals = 0;
  bool commas = true;
};

struct table {
  std::string title;                    // "append: 256 threads x 200 one-event ticks"
  std::vector<column> columns;          // text columns first (left-aligned), figures after
  std::vector<std::vector<cell>> rows;  // each row has columns.size() cells
  std::vector<std::string> notes;       // printed under the table, one per line
};

// Which way a figure is good.
enum class better { higher, lower };

// One target of the issue-level goals: "append sync events/s >= 100k". Every
// target of the report is one of these, so the report can list them all with
// what was reached. `against` names the baseline of a ratio ("RocksDB
// put-unsynced", "kernl in-memory"); empty for an absolute figure.
struct target {
  std::string name;      // "append sync / RocksDB unsynced"
  double value = 0;      // what this run reached
  double goal = 0;       // the target
  std::string unit;      // "x", "events/s", "ms"
  better direction = better::higher;
  std::string against;
  bool skipped = false;  // its baseline was not measured: neither met nor missed

  bool met() const {
    return !skipped && (direction == better::higher ? value >= goal : value <= goal);
  }
};

// A chart drawn from the result (the JSON carries it; plot.cpp renders it).
struct chart {
  enum class kind { bars, cdf, over_time };
  kind type = kind::bars;
  std::string name;                 // file stem: "throughput-runs"
  std::string title;
  std::string unit;                 // y axis (bars, over_time) or x axis (cdf: "us")
  // bars: one label and one value per bar.
  std::vector<std::string> labels;
  std::vector<double> values;
  // cdf: one series per label, each sorted ascending (microseconds); over_time:
  // one series per label of (seconds, value) pairs flattened [s0, v0, s1, v1, ...].
  std::vector<std::vector<double>> series;
  // over_time only: vertical marks (seconds, label).
  std::vector<std::pair<double, std::string>> marks;
};

struct result {
  std::string workload;               // "append"
  std::vector<table> tables;
  std::vector<target> targets;
  std::vector<chart> charts;          // filled only when bench_options::plot is set
};

// --- Building a result ------------------------------------------------------------

// A figure; not finite (a ratio over nothing) is an empty cell.
cell num(double v);
inline cell text(std::string s) { return cell{std::move(s)}; }
inline column col(std::string name, std::string unit = "", int decimals = 0, bool commas = true) {
  return column{std::move(name), std::move(unit), decimals, commas};
}
// Appends a table and returns it, for its rows and notes; valid until the next
// add_table (the tables are a vector): fill one before adding the next.
table& add_table(result* r, std::string title, std::vector<column> columns);
void add_target(result* r, std::string name, double value, double goal, std::string unit,
                better direction = better::higher, std::string against = "");
// A target whose figure could not be measured (an optional baseline was skipped).
void add_skipped_target(result* r, std::string name, double goal, std::string unit,
                        std::string against);

// The charts, which a workload adds only when it is asked for them (--plot). A bar of
// the chart `name` (created with `title` and `unit` by its first bar).
void add_bar(result* r, const std::string& name, const std::string& title, const std::string& unit,
             std::string label, double value);
// A series of latency samples (nanoseconds, any order) on the CDF chart `name`:
// sorted, in microseconds, thinned to at most 2,000 evenly ranked points; the
// label gets the sample count.
void add_cdf(result* r, const std::string& name, const std::string& title, std::string label,
             std::vector<int64_t> ns);

// "41,230": `v` with `decimals` after the point and the integer part grouped.
std::string with_commas(double v, int decimals = 0);
std::string fixed(double v, int decimals);

// Prints every table, then the targets with "met"/"MISSED".
void print_result(const result& r, std::FILE* out);

// {"tables":[{"title":..,"columns":[{"name":..,"unit":..}],"rows":[[..]],"notes":[..]}],
//  "targets":[{"name":..,"value":..,"goal":..,"unit":..,"better":"higher","against":..,"met":true}],
//  "charts":[...]} as the value of the workload's key.
void write_result_json(const result& r, json_writer& w);

}  // namespace skein::bench
