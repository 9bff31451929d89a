// The one printer and the one JSON writer of every workload's result, and the
// builders workloads fill it with.
#include "bench/result.hpp"

#include <algorithm>
#include <cmath>

namespace skein::bench {
namespace {

constexpr size_t cdf_points_max = 2000;

const char* verdict(const target& t) { return t.skipped ? "skipped" : t.met() ? "met" : "MISSED"; }

std::string header(const column& c) {
  if (c.unit.empty() || c.name.ends_with(c.unit)) return c.name;
  return c.name + " " + c.unit;
}

std::string render(const cell& v, const column& c) {
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  if (const auto* d = std::get_if<double>(&v))
    return c.commas ? with_commas(*d, c.decimals) : fixed(*d, c.decimals);
  return "-";
}

// Text columns (a text cell in any row) are left-aligned, figures right-aligned.
void print_table(const table& t, std::FILE* out) {
  std::vector<std::vector<std::string>> lines{{}};
  std::vector<bool> left(t.columns.size(), false);
  for (const auto& c : t.columns) lines[0].push_back(header(c));
  for (const auto& row : t.rows) {
    auto& line = lines.emplace_back();
    for (size_t i = 0; i < t.columns.size(); ++i) {
      const cell& v = i < row.size() ? row[i] : cell{};
      if (std::holds_alternative<std::string>(v)) left[i] = true;
      line.push_back(render(v, t.columns[i]));
    }
  }
  std::vector<size_t> width(t.columns.size(), 0);
  for (const auto& line : lines)
    for (size_t i = 0; i < line.size(); ++i) width[i] = std::max(width[i], line[i].size());
  std::fprintf(out, "%s\n\n", t.title.c_str());
  for (const auto& line : lines) {
    std::string text;
    for (size_t i = 0; i < line.size(); ++i) {
      std::string pad(width[i] - line[i].size(), ' ');
      text += left[i] ? line[i] + pad : pad + line[i];
      if (i + 1 < line.size()) text += "  ";
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    std::fprintf(out, "%s\n", text.c_str());
  }
  if (!t.notes.empty()) std::fprintf(out, "\n");
  for (const auto& n : t.notes) std::fprintf(out, "%s\n", n.c_str());
}

void write_number(json_writer& w, double v) {
  if (std::isfinite(v)) w.number(v);
  else w.null();
}

chart& chart_named(result* r, chart::kind type, const std::string& name, const std::string& title,
                   const std::string& unit) {
  for (auto& c : r->charts)
    if (c.name == name) return c;
  chart& c = r->charts.emplace_back();
  c.type = type;
  c.name = name;
  c.title = title;
  c.unit = unit;
  return c;
}

const char* kind_name(chart::kind k) {
  return k == chart::kind::bars ? "bars" : k == chart::kind::cdf ? "cdf" : "over_time";
}

}  // namespace

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string with_commas(double v, int decimals) {
  std::string s = fixed(v, decimals);
  size_t begin = s[0] == '-' ? 1 : 0;
  size_t end = s.find('.');
  if (end == std::string::npos) end = s.size();
  for (size_t i = end; i > begin + 3; i -= 3) s.insert(i - 3, ",");
  return s;
}

cell num(double v) { return std::isfinite(v) ? cell{v} : cell{}; }

table& add_table(result* r, std::string title, std::vector<column> columns) {
  table& t = r->tables.emplace_back();
  t.title = std::move(title);
  t.columns = std::move(columns);
  return t;
}

void add_target(result* r, std::string name, double value, double goal, std::string unit,
                better direction, std::string against) {
  r->targets.push_back({std::move(name), std::isfinite(value) ? value : 0, goal, std::move(unit),
                        direction, std::move(against)});
}

void add_skipped_target(result* r, std::string name, double goal, std::string unit,
                        std::string against) {
  add_target(r, std::move(name), 0, goal, std::move(unit), better::higher, std::move(against));
  r->targets.back().skipped = true;
}

void add_bar(result* r, const std::string& name, const std::string& title, const std::string& unit,
             std::string label, double value) {
  chart& c = chart_named(r, chart::kind::bars, name, title, unit);
  c.labels.push_back(std::move(label));
  c.values.push_back(std::isfinite(value) ? value : 0);
}

void add_cdf(result* r, const std::string& name, const std::string& title, std::string label,
             std::vector<int64_t> ns) {
  if (ns.empty()) return;  // a CDF of nothing is no curve
  std::sort(ns.begin(), ns.end());
  chart& c = chart_named(r, chart::kind::cdf, name, title, "us");
  size_t n = ns.size(), points = std::min(n, cdf_points_max);
  std::vector<double> us;
  for (size_t p = 0; p < points; ++p)
    us.push_back(static_cast<double>(ns[points == 1 ? n - 1 : p * (n - 1) / (points - 1)]) / 1000);
  c.labels.push_back(std::move(label) + " (n " + with_commas(static_cast<double>(n)) + ")");
  c.series.push_back(std::move(us));
}

void print_result(const result& r, std::FILE* out) {
  for (size_t i = 0; i < r.tables.size(); ++i) {
    if (i > 0) std::fprintf(out, "\n");
    print_table(r.tables[i], out);
  }
  if (r.targets.empty()) return;
  table t{"targets", {col("target"), col("value", "", 2), col("goal", "", 2), col("unit"), col("verdict")}, {}, {}};
  for (const auto& g : r.targets) {
    std::string name = g.name;
    if (!g.against.empty() && g.name.find(g.against) == std::string::npos) name += " (vs " + g.against + ")";
    std::string goal = (g.direction == better::higher ? ">= " : "<= ") + with_commas(g.goal, g.goal == std::floor(g.goal) ? 0 : 2);
    t.rows.push_back({name, g.skipped ? cell{} : cell{g.value}, goal, g.unit, verdict(g)});
  }
  std::fprintf(out, "\n");
  print_table(t, out);
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
      for (const auto& v : row) {
        if (const auto* s = std::get_if<std::string>(&v)) w.string(*s);
        else if (const auto* d = std::get_if<double>(&v)) write_number(w, *d);
        else w.null();
      }
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
  for (const auto& g : r.targets) {
    w.begin_object();
    w.field("name", g.name);
    w.key("value");
    if (g.skipped) w.null();
    else write_number(w, g.value);
    w.key("goal");
    write_number(w, g.goal);
    w.field("unit", g.unit);
    w.field("better", g.direction == better::higher ? "higher" : "lower");
    w.field("against", g.against);
    w.field_bool("skipped", g.skipped);
    w.field_bool("met", g.met());
    w.end_object();
  }
  w.end_array();
  w.key("charts");
  w.begin_array();
  for (const auto& c : r.charts) {
    w.begin_object();
    w.field("type", kind_name(c.type));
    w.field("name", c.name);
    w.field("title", c.title);
    w.field("unit", c.unit);
    w.key("labels");
    w.begin_array();
    for (const auto& l : c.labels) w.string(l);
    w.end_array();
    w.key("values");
    w.begin_array();
    for (double v : c.values) write_number(w, v);
    w.end_array();
    w.key("series");
    w.begin_array();
    for (const auto& s : c.series) {
      w.begin_array();
      for (double v : s) write_number(w, v);
      w.end_array();
    }
    w.end_array();
    w.key("marks");
    w.begin_array();
    for (const auto& [at, label] : c.marks) {
      w.begin_object();
      w.key("at");
      write_number(w, at);
      w.field("label", label);
      w.end_object();
    }
    w.end_array();
    w.end_object();
  }
  w.end_array();
  w.end_object();
}

}  // namespace skein::bench
