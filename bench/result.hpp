// result: what every skein-bench workload returns — tables of rows with typed
// columns, the targets it is read against, and the series its charts draw. One
// printer and one JSON writer render every workload; the charts are drawn from the
// JSON. A workload builds its result on the main thread after measuring.
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

// `unit` is printed in the header and written beside the column in the JSON;
// `commas` groups the integer part by thousands ("41,230").
struct column {
  std::string name;
  std::string unit;
  int decimals = 0;
  bool commas = true;
};

struct table {
  std::string title;
  std::vector<column> columns;          // text columns first (left-aligned), figures after
  std::vector<std::vector<cell>> rows;  // each row has columns.size() cells
  std::vector<std::string> notes;       // printed under the table
};

enum class better { higher, lower };

// One goal of the issue: "append sync events/s >= 100k". `against` names the
// baseline of a ratio ("RocksDB put-unsynced"); empty for an absolute figure.
struct target {
  std::string name;
  double value = 0;  // what this run reached
  double goal = 0;
  std::string unit;
  better direction = better::higher;
  std::string against;
  bool skipped = false;  // its baseline was not measured: neither met nor missed

  bool met() const {
    return !skipped && (direction == better::higher ? value >= goal : value <= goal);
  }
};

// bars: one label and value per bar. cdf: one series per label, sorted ascending
// (microseconds). over_time: one series of (seconds, value) pairs flattened
// [s0, v0, s1, v1, ...], with vertical marks (seconds, label).
struct chart {
  enum class kind { bars, cdf, over_time };
  kind type = kind::bars;
  std::string name;  // file stem: "throughput-runs"
  std::string title;
  std::string unit;  // y axis (bars, over_time) or x axis (cdf: "us")
  std::vector<std::string> labels;
  std::vector<double> values;
  std::vector<std::vector<double>> series;
  std::vector<std::pair<double, std::string>> marks;
};

struct result {
  std::string workload;
  std::vector<table> tables;
  std::vector<target> targets;
  std::vector<chart> charts;  // filled only when bench_options::plot is set
};

// A figure; not finite (a ratio over nothing) is an empty cell.
cell num(double v);
inline cell text(std::string s) { return cell{std::move(s)}; }
inline column col(std::string name, std::string unit = "", int decimals = 0, bool commas = true) {
  return column{std::move(name), std::move(unit), decimals, commas};
}
// The table returned is valid until the next add_table (the tables are a vector).
table& add_table(result* r, std::string title, std::vector<column> columns);
void add_target(result* r, std::string name, double value, double goal, std::string unit,
                better direction = better::higher, std::string against = "");
// A target whose figure could not be measured (an optional baseline was skipped).
void add_skipped_target(result* r, std::string name, double goal, std::string unit,
                        std::string against);

// A bar of the chart `name` (created with `title` and `unit` by its first bar).
void add_bar(result* r, const std::string& name, const std::string& title, const std::string& unit,
             std::string label, double value);
// Latency samples (nanoseconds, any order) on the CDF chart `name`: sorted, in
// microseconds, thinned to at most 2,000 evenly ranked points; the label gets the count.
void add_cdf(result* r, const std::string& name, const std::string& title, std::string label,
             std::vector<int64_t> ns);

// "41,230": `v` with `decimals` after the point and the integer part grouped.
std::string with_commas(double v, int decimals = 0);
std::string fixed(double v, int decimals);

// Every table, then the targets with "met"/"MISSED".
void print_result(const result& r, std::FILE* out);
// {"tables":[{"title","columns":[{"name","unit"}],"rows","notes"}], "targets":[{"name","value",
// "goal","unit","better","against","skipped","met"}], "charts":[...]} as the workload's value.
void write_result_json(const result& r, json_writer& w);

}  // namespace skein::bench
