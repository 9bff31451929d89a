// DROP AT MERGE: a stand-in for result.cpp (print_result, write_result_json), which
// the branch porting every workload to result.hpp brings. It exists only so that
// the sequential and read workloads print and write their figures on this branch;
// the real printer replaces it whole.
#include <cmath>
#include <string>
#include <variant>
#include <vector>

#include "bench/report_format.hpp"
#include "bench/result.hpp"

namespace skein::bench {
namespace {

std::string format(const cell& c, const column& col) {
  if (std::holds_alternative<std::monostate>(c)) return "-";
  if (const auto* text = std::get_if<std::string>(&c)) return *text;
  double v = std::get<double>(c);
  if (!std::isfinite(v)) return "-";
  if (!col.commas || std::fabs(v) >= 1e18) return detail::fixed(v, col.decimals);
  std::string s = detail::fixed(std::fabs(v), col.decimals);
  size_t point = s.find('.');
  std::string whole = s.substr(0, point);
  std::string out = detail::with_commas(std::stoull(whole));
  if (point != std::string::npos) out += s.substr(point);
  return v < 0 ? "-" + out : out;
}

void print_table(const table& t, std::FILE* out) {
  std::fprintf(out, "%s\n\n", t.title.c_str());
  std::vector<std::vector<std::string>> rows;
  auto& header = rows.emplace_back();
  size_t names = 0;
  for (const auto& col : t.columns) header.push_back(col.unit.empty() ? col.name : col.name + " " + col.unit);
  for (const auto& row : t.rows) {
    auto& line = rows.emplace_back();
    for (size_t c = 0; c < row.size() && c < t.columns.size(); ++c) line.push_back(format(row[c], t.columns[c]));
  }
  if (!t.rows.empty())
    while (names < t.rows[0].size() && std::holds_alternative<std::string>(t.rows[0][names])) ++names;
  detail::print_table(rows, out, names);
  if (!t.notes.empty()) std::fprintf(out, "\n");
  for (const auto& n : t.notes) std::fprintf(out, "%s\n", n.c_str());
}

void write_cell(const cell& c, json_writer& w) {
  if (const auto* v = std::get_if<double>(&c); v != nullptr && std::isfinite(*v)) return w.number(*v);
  if (const auto* text = std::get_if<std::string>(&c)) return w.string(*text);
  w.null();
}

}  // namespace

void print_result(const result& r, std::FILE* out) {
  for (size_t i = 0; i < r.tables.size(); ++i) {
    if (i > 0) std::fprintf(out, "\n");
    print_table(r.tables[i], out);
  }
  if (!r.targets.empty()) std::fprintf(out, "\ntargets:\n");
  for (const auto& t : r.targets) {
    std::fprintf(out, "  %s: %s %s (target %s %s): %s\n", t.name.c_str(), detail::fixed(t.value, 2).c_str(),
                 t.unit.c_str(), t.direction == better::higher ? ">=" : "<=", detail::fixed(t.goal, 2).c_str(),
                 t.met() ? "met" : "MISSED");
  }
}

void write_result_json(const result& r, json_writer& w) {
  w.begin_object();
  w.key("tables");
  w.begin_array();
  for (const auto& t : r.tables) {
    w.begin_object();
    w.field("title", t.title);
    w.key("columns");
    w.begin_array();
    for (const auto& c : t.columns) {
      w.begin_object();
      w.field("name", c.name);
      w.field("unit", c.unit);
      w.end_object();
    }
    w.end_array();
    w.key("rows");
    w.begin_array();
    for (const auto& row : t.rows) {
      w.begin_array();
      for (const auto& c : row) write_cell(c, w);
      w.end_array();
    }
    w.end_array();
    w.key("notes");
    w.begin_array();
    for (const auto& n : t.notes) w.string(n);
    w.end_array();
    w.end_object();
  }
  w.end_array();
  w.key("targets");
  w.begin_array();
  for (const auto& t : r.targets) {
    w.begin_object();
    w.field("name", t.name);
    w.field_number("value", std::isfinite(t.value) ? t.value : 0);
    w.field_number("goal", t.goal);
    w.field("unit", t.unit);
    w.field("better", t.direction == better::higher ? "higher" : "lower");
    w.field("against", t.against);
    w.field_bool("met", t.met());
    w.end_object();
  }
  w.end_array();
  // Charts are left out here: nothing on this branch draws them from the JSON.
  w.end_object();
}

}  // namespace skein::bench
