// Each chart is one gnuplot script (<chart>.gp) over tab-separated data files
// (<chart>.dat), all in the plot directory, rendered by one gnuplot process run
// in that directory: the scripts name their files relatively, so the directory
// can be moved and re-rendered with `gnuplot <chart>.gp`.
//
// The charts are read from the JSON document of the run (result.hpp's chart):
//   bars      := (label TAB value TAB value-as-text TAB rgb) per line
//   cdf       := per series, (ms TAB fraction) lines; series are separated by
//                two blank lines (gnuplot's `index`)
//   over_time := (seconds TAB value) per line
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>
#include <csignal>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <simdjson.h>

#include "bench/plot.hpp"
#include "bench/result.hpp"

extern char** environ;

namespace skein::bench {
namespace {

constexpr const char* terminal = "set terminal pngcairo noenhanced size 1100,720 font 'sans,11'\n";
constexpr uint32_t skein_rgb = 0x3a6fb0;
constexpr uint32_t other_rgb = 0xd9822b;
constexpr double gnuplot_timeout_s = 300;  // one chart; far more than any takes
constexpr size_t child_output_bytes_max = 1 << 20;

// A gnuplot string in double quotes, where \n is a line break (titles use it); a
// double quote in a label must not end the string.
std::string gp_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) out.push_back(c == '"' ? '\'' : c);
  return out + "\"";
}

// Workload names become file names.
std::string file_safe(std::string_view s) {
  std::string out;
  for (char c : s) out.push_back(std::isalnum(static_cast<unsigned char>(c)) || c == '-' ? c : '_');
  return out;
}

std::string scale_note(double scale) { return "skein-bench --scale " + fixed(scale, 2); }

// --- the charts ----------------------------------------------------------------

// A chart as the JSON document holds it (result.hpp's chart).
struct chart_doc {
  std::string type, name, title, unit;
  std::vector<std::string> labels;
  std::vector<double> values;
  std::vector<std::vector<double>> series;
  std::vector<std::pair<double, std::string>> marks;
};

std::string title_line(const chart_doc& c, double scale) {
  return "set title " + gp_string(c.title + "\\n" + scale_note(scale)) + "\n";
}

// Bars in the order given; skein's in one colour, every other system's in another.
void bar_script(const chart_doc& c, double scale, std::string* data, std::string* script) {
  size_t label_max = 0;
  for (size_t i = 0; i < c.labels.size() && i < c.values.size(); ++i) {
    uint32_t rgb = c.labels[i].starts_with("skein") ? skein_rgb : other_rgb;
    *data += c.labels[i] + "\t" + fixed(c.values[i], 3) + "\t" + with_commas(c.values[i]) + "\t" +
             std::to_string(rgb) + "\n";
    label_max = std::max(label_max, c.labels[i].size());
  }
  *script += title_line(c, scale);
  *script += "set ylabel " + gp_string(c.unit) + "\nset yrange [0:*]\nset offsets 0.5, 0.5, 0, 0\n";
  *script += "set format y '%.0f'\nset grid ytics\nunset key\n";
  *script += "set style fill solid 0.85 border -1\nset boxwidth 0.6\n";
  // Labels side by side collide past about 100 characters across the chart.
  if (label_max * c.labels.size() > 100) *script += "set xtics rotate by -25\n";
  *script += "plot " + gp_string(c.name + ".dat") +
             " using 0:2:4:xtic(1) with boxes lc rgb variable, '' using 0:2:3 with labels offset 0,0.8\n";
}

// One data block per series: its evenly ranked points (microseconds, sorted),
// each the latency in ms and the fraction of samples at or below it.
void cdf_script(const chart_doc& c, double scale, std::string* data, std::string* script) {
  std::string plots;
  double low = 0, high = 0;
  for (size_t k = 0; k < c.series.size(); ++k) {
    const auto& us = c.series[k];
    if (us.empty()) continue;
    low = k == 0 ? us.front() : std::min(low, us.front());
    high = std::max(high, us.back());
    size_t n = us.size();
    for (size_t i = 0; i < n; ++i)
      *data += fixed(std::max(us[i], 1e-3) / 1000, 6) + "\t" +
               fixed(static_cast<double>(i + 1) / static_cast<double>(n), 6) + "\n";
    *data += "\n\n";
    auto at = [&](double q) {  // nearest rank, as the tables' quantiles are taken
      auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(n)));
      return us[std::clamp<size_t>(rank, 1, n) - 1] / 1000;
    };
    std::string title = (k < c.labels.size() ? c.labels[k] : "") + ", p50 " + fixed(at(0.5), 3) + " ms, p99 " +
                        fixed(at(0.99), 3) + " ms";
    plots += std::string(plots.empty() ? "" : ", ") + gp_string(c.name + ".dat") + " index " + std::to_string(k) +
             " using 1:2 with steps lw 2 title " + gp_string(title);
  }
  *script += title_line(c, scale);
  // A log axis spreads latencies over decades; within one decade (a slow engine's
  // runs all near its latency) it would squeeze them into a line.
  if (high >= 10 * std::max(low, 1e-3)) *script += "set xlabel 'latency (ms, log scale)'\nset logscale x\n";
  else *script += "set xlabel 'latency (ms)'\n";
  *script += "set ylabel 'fraction of operations at or below the latency'\nset yrange [0:1.02]\n";
  *script += "set ytics 0.1\nset grid xtics ytics mxtics\nset key below Left reverse\n";
  *script += "plot " + plots + "\n";
}

// The series is (seconds, value) pairs; the marks are numbered dashed lines, named
// in the key (text at the lines would collide when phases are short).
void over_time_script(const chart_doc& c, double scale, std::string* data, std::string* script) {
  const auto& points = c.series.front();
  for (size_t i = 0; i + 1 < points.size(); i += 2)
    *data += fixed(points[i], 3) + "\t" + fixed(points[i + 1], 2) + "\n";
  *script += title_line(c, scale);
  *script += "set xlabel 'time since the measurement started (s)'\n";
  *script += "set ylabel " + gp_string(c.unit) + "\nset yrange [0:*]\nset grid\nset key below Left reverse\n";
  std::string keys;
  for (size_t i = 0; i < c.marks.size(); ++i) {
    std::string n = std::to_string(i + 1), x = fixed(c.marks[i].first, 3);
    *script += "set arrow " + n + " from first " + x + ", graph 0 to first " + x +
               ", graph 1 nohead dt 2 lc rgb 'gray40'\n";
    *script += "set label " + n + " '" + n + "' at first " + x +
               ", graph 1 offset 0,0.7 center font ',9' tc rgb 'gray30'\n";
    keys += ", keyentry with lines dt 2 lc rgb 'gray40' title " +
            gp_string(n + ": " + c.marks[i].second + " (at " + fixed(c.marks[i].first, 1) + " s)");
  }
  *script += "plot " + gp_string(c.name + ".dat") + " using 1:2 with lines lw 2 lc rgb '#3a6fb0' title " +
             gp_string(c.labels.empty() ? "" : c.labels.front()) + keys + "\n";
}

// Reads one chart of the document; false when it is not one.
bool read_chart(simdjson::dom::element e, chart_doc* c) {
  std::string_view sv;
  auto str = [&](const char* key, std::string* out) {
    if (e[key].get_string().get(sv) != simdjson::SUCCESS) return false;
    *out = std::string{sv};
    return true;
  };
  if (!str("type", &c->type) || !str("name", &c->name) || !str("title", &c->title) || !str("unit", &c->unit))
    return false;
  simdjson::dom::array a;
  if (e["labels"].get_array().get(a) == simdjson::SUCCESS)
    for (auto l : a)
      if (l.get_string().get(sv) == simdjson::SUCCESS) c->labels.emplace_back(sv);
  auto numbers = [](simdjson::dom::array arr, std::vector<double>* out) {
    for (auto v : arr) {
      double d = 0;
      if (v.get_double().get(d) == simdjson::SUCCESS) out->push_back(d);
    }
  };
  if (e["values"].get_array().get(a) == simdjson::SUCCESS) numbers(a, &c->values);
  if (e["series"].get_array().get(a) == simdjson::SUCCESS)
    for (auto s : a) {
      simdjson::dom::array points;
      if (s.get_array().get(points) == simdjson::SUCCESS) numbers(points, &c->series.emplace_back());
    }
  if (e["marks"].get_array().get(a) == simdjson::SUCCESS)
    for (auto m : a) {
      double at = 0;
      if (m["at"].get_double().get(at) == simdjson::SUCCESS && m["label"].get_string().get(sv) == simdjson::SUCCESS)
        c->marks.emplace_back(at, std::string{sv});
    }
  return true;
}

// --- running gnuplot ---------------------------------------------------------------

// The last `n` lines of `text`, each on its own indented line.
std::string tail_lines(std::string_view text, size_t n) {
  std::string out;
  while (n-- > 0 && !text.empty()) {
    while (!text.empty() && text.back() == '\n') text.remove_suffix(1);
    size_t nl = text.rfind('\n');
    out.insert(0, "\n  " + std::string{nl == std::string_view::npos ? text : text.substr(nl + 1)});
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(0, nl);
  }
  return out;
}

status render(const std::filesystem::path& dir, const std::string& name, const std::string& data,
              const std::string& script, std::vector<std::string>* written) {
  SKEIN_TRY(write_file((dir / (name + ".dat")).string(), data, "--plot"));
  SKEIN_TRY(write_file((dir / (name + ".gp")).string(), script, "--plot"));
  std::string output;
  std::string error = run_child("gnuplot", {"gnuplot", name + ".gp"}, dir.string(), gnuplot_timeout_s, &output);
  std::ofstream{dir / "gnuplot.log", std::ios::app} << output;
  if (!error.empty())
    return status::io_error("--plot: " + error + " on " + (dir / (name + ".gp")).string() + ":" + tail_lines(output, 5));
  written->push_back((dir / (name + ".png")).string());
  return status::ok();
}

}  // namespace

status write_file(const std::string& path, const std::string& text, const std::string& option) {
  std::error_code ec;
  auto parent = std::filesystem::path{path}.parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  if (ec) return status::io_error(option + " " + path + ": " + ec.message());
  std::ofstream out{path, std::ios::binary | std::ios::trunc};
  out << text;
  out.close();
  if (!out) return status::io_error(option + " " + path + ": cannot write the file");
  return status::ok();
}

status check_gnuplot() {
  std::string output;
  std::string error = run_child("gnuplot", {"gnuplot", "--version"}, "", gnuplot_timeout_s, &output);
  if (!error.empty())
    return status::not_found("--plot needs gnuplot, which failed: " + error + " (Debian: apt-get install gnuplot-nox)");
  return status::ok();
}

std::string run_child(const std::string& name, const std::vector<std::string>& args, const std::string& dir,
                      double timeout_s, std::string* output) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return std::string{"pipe: "} + std::strerror(errno);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (!dir.empty()) posix_spawn_file_actions_addchdir_np(&actions, dir.c_str());
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  int rc = ::posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    return name + ": cannot run " + args[0] + ": " + std::strerror(rc);
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  bool timed_out = false;
  char buf[4096];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      ::kill(pid, SIGKILL);  // our own child, by its pid
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000))) <= 0) continue;
    ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (output->size() < child_output_bytes_max) output->append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int ws = 0;
  while (::waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) return name + " still running after " + std::to_string(static_cast<int>(timeout_s)) + " s: killed";
  if (!WIFEXITED(ws)) return name + " ended by a signal";
  if (WEXITSTATUS(ws) != 0) return name + " exited " + std::to_string(WEXITSTATUS(ws));
  return {};
}

status write_plots(std::string_view json, const std::string& dir, double scale,
                   std::vector<std::string>* written) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return status::io_error("--plot " + dir + ": " + ec.message());
  std::filesystem::path root = std::filesystem::absolute(dir, ec);
  if (ec) return status::io_error("--plot " + dir + ": " + ec.message());
  std::filesystem::remove(root / "gnuplot.log", ec);  // this run's messages only
  simdjson::dom::parser parser;
  simdjson::dom::object workloads;
  if (parser.parse(simdjson::padded_string{json})["workloads"].get_object().get(workloads) != simdjson::SUCCESS)
    return status::corruption("--plot: the report has no workloads object");
  for (auto [workload, figures] : workloads) {
    simdjson::dom::array charts;
    if (figures["charts"].get_array().get(charts) != simdjson::SUCCESS) continue;
    for (auto e : charts) {
      chart_doc c;
      if (!read_chart(e, &c))
        return status::corruption("--plot: a chart of " + std::string{workload} + " is malformed");
      c.name = file_safe(c.name);
      std::string data, script = terminal;
      script += "set output " + gp_string(c.name + ".png") + "\nset datafile separator '\\t'\n";
      if (c.type == "bars" && !c.values.empty()) bar_script(c, scale, &data, &script);
      else if (c.type == "cdf" && !c.series.empty()) cdf_script(c, scale, &data, &script);
      else if (c.type == "over_time" && !c.series.empty()) over_time_script(c, scale, &data, &script);
      else continue;
      SKEIN_TRY(render(root, c.name, data, script, written));
    }
  }
  return status::ok();
}

}  // namespace skein::bench
