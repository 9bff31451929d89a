// The one printer and the one JSON writer of every workload's result, and the
// builders workloads fill it with.
#include "bench/result.hpp"

#include <algorithm>
#include <cmath>

namespace skein::bench {
namespace {

// Text columns (a text cell in any row) are left-aligned, figures right-aligned.
void print_table(const table& t, std::FILE* out) {
  size_t n = t.columns.size();
  std::vector<std::vector<std::string>> lines{{}};
  std::vector<bool> left(n, false);
  for (const auto& c : t.columns)
    lines[0].push_back(c.unit.empty() || c.name.ends_with(c.unit) ? c.name : c.name + " " + c.unit);
  for (const auto& row : t.rows) {
    auto& line = lines.emplace_back();
    for (size_t i = 0; i < n; ++i) {
      const column& c = t.columns[i];
      const cell& v = i < row.size() ? row[i] : cell{};
      if (const auto* s = std::get_if<std::string>(&v)) {
        left[i] = true;
        line.push_back(*s);
      } else if (const auto* d = std::get_if<double>(&v)) {
        line.push_back(c.commas ? with_commas(*d, c.decimals) : fixed(*d, c.decimals));
      } else {
        line.push_back("-");
      }
    }
  }
  std::vector<size_t> width(n, 0);
  for (const auto& line : lines)
    for (size_t i = 0; i < n; ++i) width[i] = std::max(width[i], line[i].size());
  std::fprintf(out, "%s\n\n", t.title.c_str());
  for (const auto& line : lines) {
    std::string text;
    for (size_t i = 0; i < n; ++i) {
      std::string pad(width[i] - line[i].size(), ' ');
      text += (left[i] ? line[i] + pad : pad + line[i]) + (i + 1 < n ? "  " : "");
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    std::fprintf(out, "%s\n", text.c_str());
  }
  if (!t.notes.empty()) std::fprintf(out, "\n");
  for (const auto& note : t.notes) std::fprintf(out, "%s\n", note.c_str());
}

chart& chart_named(result* r, chart::kind type, const std::string& name, const std::string& title,
                   const std::string& unit) {
  for (auto& c : r->charts)
    if (c.name == name) return c;
  return r->charts.emplace_back(chart{type, name, title, unit, {}, {}, {}, {}});
}

// `key` (none inside an array): [each(x) for every x of v].
template <class T, class F>
void write_array(json_writer& w, std::string_view key, const std::vector<T>& v, F each) {
  if (!key.empty()) w.key(key);
  w.begin_array();
  for (const auto& x : v) each(x);
  w.end_array();
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
  size_t end = std::min(s.find('.'), s.size());
  for (size_t i = end; i > begin + 3; i -= 3) s.insert(i - 3, ",");
  return s;
}

cell num(double v) { return std::isfinite(v) ? cell{v} : cell{}; }

table& add_table(result* r, std::string title, std::vector<column> columns) {
  return r->tables.emplace_back(table{std::move(title), std::move(columns), {}, {}});
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
  size_t n = ns.size(), points = std::min<size_t>(n, 2000);
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
    std::string goal = (g.direction == better::higher ? ">= " : "<= ") +
                       with_commas(g.goal, g.goal == std::floor(g.goal) ? 0 : 2);
    const char* verdict = g.skipped ? "skipped" : g.met() ? "met" : "MISSED";
    t.rows.push_back({name, g.skipped ? cell{} : cell{g.value}, goal, g.unit, verdict});
  }
  std::fprintf(out, "\n");
  print_table(t, out);
}

void write_result_json(const result& r, json_writer& w) {
  auto number = [&](double v) {
    if (std::isfinite(v)) w.number(v);
    else w.null();
  };
  auto numbers = [&](const std::vector<double>& v) { write_array(w, "", v, number); };
  auto strings = [&](std::string_view key, const std::vector<std::string>& v) {
    write_array(w, key, v, [&](const std::string& s) { w.string(s); });
  };
  w.begin_object();
  write_array(w, "tables", r.tables, [&](const table& t) {
    w.begin_object();
    w.field("title", t.title);
    write_array(w, "columns", t.columns, [&](const column& c) {
      w.begin_object();
      w.field("name", c.name);
      w.field("unit", c.unit);
      w.end_object();
    });
    write_array(w, "rows", t.rows, [&](const std::vector<cell>& row) {
      write_array(w, "", row, [&](const cell& v) {
        if (const auto* s = std::get_if<std::string>(&v)) w.string(*s);
        else if (const auto* d = std::get_if<double>(&v)) number(*d);
        else w.null();
      });
    });
    strings("notes", t.notes);
    w.end_object();
  });
  write_array(w, "targets", r.targets, [&](const target& g) {
    w.begin_object();
    w.field("name", g.name);
    w.key("value");
    number(g.skipped ? NAN : g.value);
    w.key("goal");
    number(g.goal);
    w.field("unit", g.unit);
    w.field("better", g.direction == better::higher ? "higher" : "lower");
    w.field("against", g.against);
    w.field_bool("skipped", g.skipped);
    w.field_bool("met", g.met());
    w.end_object();
  });
  write_array(w, "charts", r.charts, [&](const chart& c) {
    w.begin_object();
    w.field("type", c.type == chart::kind::bars ? "bars" : c.type == chart::kind::cdf ? "cdf" : "over_time");
    w.field("name", c.name);
    w.field("title", c.title);
    w.field("unit", c.unit);
    strings("labels", c.labels);
    w.key("values");
    numbers(c.values);
    write_array(w, "series", c.series, numbers);
    write_array(w, "marks", c.marks, [&](const std::pair<double, std::string>& m) {
      w.begin_object();
      w.key("at");
      number(m.first);
      w.field("label", m.second);
      w.end_object();
    });
    w.end_object();
  });
  w.end_object();
}

}  // namespace skein::bench
