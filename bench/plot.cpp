// Each chart is one gnuplot script (<chart>.gp) over one tab-separated data file
// (<chart>.dat), rendered by gnuplot run in the plot directory: the scripts name
// their files relatively, so the directory can be moved and re-rendered.
//   bars      := (label TAB value TAB value-as-text TAB rgb) per line
//   cdf       := per series, (ms TAB fraction) lines; two blank lines between series (gnuplot's `index`)
//   over_time := (seconds TAB value) per line
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <simdjson.h>

#include "bench/plot.hpp"
#include "bench/result.hpp"

extern char** environ;

namespace skein::bench {
namespace {

constexpr double gnuplot_timeout_s = 300;  // one chart; far more than any takes

// A gnuplot string in double quotes, where \n is a line break (titles use it); a
// double quote in a label must not end the string.
std::string gp(std::string_view s) {
  std::string out = "\"";
  for (char c : s) out.push_back(c == '"' ? '\'' : c);
  return out + "\"";
}

// A chart of the JSON document (result.hpp's chart, its type as text); false when malformed.
bool read_chart(simdjson::dom::element e, std::string* type, chart* c) {
  std::string_view sv;
  std::pair<const char*, std::string*> fields[] = {{"type", type}, {"name", &c->name}, {"title", &c->title},
                                                   {"unit", &c->unit}};
  for (auto [key, out] : fields) {
    if (e[key].get(sv) != simdjson::SUCCESS) return false;
    *out = std::string{sv};
  }
  auto numbers = [](simdjson::dom::array a, std::vector<double>* out) {
    for (auto v : a) {
      double d = 0;
      if (v.get(d) == simdjson::SUCCESS) out->push_back(d);
    }
  };
  simdjson::dom::array a;
  if (e["labels"].get(a) == simdjson::SUCCESS)
    for (auto l : a)
      if (l.get(sv) == simdjson::SUCCESS) c->labels.emplace_back(sv);
  if (e["values"].get(a) == simdjson::SUCCESS) numbers(a, &c->values);
  if (e["series"].get(a) == simdjson::SUCCESS)
    for (auto s : a) {
      simdjson::dom::array points;
      if (s.get(points) == simdjson::SUCCESS) numbers(points, &c->series.emplace_back());
    }
  if (e["marks"].get(a) == simdjson::SUCCESS)
    for (auto m : a) {
      double at = 0;
      if (m["at"].get(at) == simdjson::SUCCESS && m["label"].get(sv) == simdjson::SUCCESS)
        c->marks.emplace_back(at, std::string{sv});
    }
  return true;
}

// Appends the chart's data and the script's lines after its title; false when it has nothing to draw.
bool chart_script(const std::string& type, const chart& c, std::string* data, std::string* script) {
  std::string dat = gp(c.name + ".dat");
  if (type == "bars" && !c.values.empty()) {
    size_t label_max = 0;
    for (size_t i = 0; i < c.labels.size() && i < c.values.size(); ++i) {
      int rgb = c.labels[i].starts_with("skein") ? 0x3a6fb0 : 0xd9822b;  // skein's bars apart from the others
      *data += c.labels[i] + "\t" + fixed(c.values[i], 3) + "\t" + with_commas(c.values[i]) + "\t" +
               std::to_string(rgb) + "\n";
      label_max = std::max(label_max, c.labels[i].size());
    }
    *script += "set ylabel " + gp(c.unit) + "\nset yrange [0:*]\nset offsets 0.5, 0.5, 0, 0\n" +
               "set format y '%.0f'\nset grid ytics\nunset key\nset style fill solid 0.85 border -1\n" +
               "set boxwidth 0.6\n";
    // Labels side by side collide past about 100 characters across the chart.
    if (label_max * c.labels.size() > 100) *script += "set xtics rotate by -25\n";
    *script += "plot " + dat + " using 0:2:4:xtic(1) with boxes lc rgb variable, " +
               "'' using 0:2:3 with labels offset 0,0.8\n";
  } else if (type == "cdf" && !c.series.empty()) {
    std::string plots;
    double low = 0, high = 0;
    for (size_t k = 0; k < c.series.size(); ++k) {
      const auto& us = c.series[k];
      size_t n = us.size();
      if (n == 0) continue;
      low = k == 0 ? us.front() : std::min(low, us.front());
      high = std::max(high, us.back());
      for (size_t i = 0; i < n; ++i)
        *data += fixed(std::max(us[i], 1e-3) / 1000, 6) + "\t" + fixed(double(i + 1) / double(n), 6) + "\n";
      *data += "\n\n";
      auto ms_at = [&](double q) {  // nearest rank, as the tables' quantiles are taken
        return us[std::clamp<size_t>(static_cast<size_t>(std::ceil(q * double(n))), 1, n) - 1] / 1000;
      };
      std::string title = (k < c.labels.size() ? c.labels[k] : "") + ", p50 " + fixed(ms_at(0.5), 3) + " ms, p99 " +
                          fixed(ms_at(0.99), 3) + " ms";
      plots += (plots.empty() ? "" : ", ") + dat + " index " + std::to_string(k) + " using 1:2 with steps lw 2 title " +
               gp(title);
    }
    // A log axis spreads latencies over decades; within one decade (a slow engine's
    // runs all near its latency) it would squeeze them into a line.
    if (high >= 10 * std::max(low, 1e-3)) *script += "set xlabel 'latency (ms, log scale)'\nset logscale x\n";
    else *script += "set xlabel 'latency (ms)'\n";
    *script += "set ylabel 'fraction of operations at or below the latency'\nset yrange [0:1.02]\n"
               "set ytics 0.1\nset grid xtics ytics mxtics\nset key below Left reverse\nplot " + plots + "\n";
  } else if (type == "over_time" && !c.series.empty()) {
    const auto& points = c.series.front();
    for (size_t i = 0; i + 1 < points.size(); i += 2)
      *data += fixed(points[i], 3) + "\t" + fixed(points[i + 1], 2) + "\n";
    *script += "set xlabel 'time since the measurement started (s)'\nset ylabel " + gp(c.unit) +
               "\nset yrange [0:*]\nset grid\nset key below Left reverse\n";
    // The marks are numbered dashed lines, named in the key (text at the lines
    // would collide when phases are short).
    std::string keys;
    for (size_t i = 0; i < c.marks.size(); ++i) {
      std::string n = std::to_string(i + 1), x = fixed(c.marks[i].first, 3);
      *script += "set arrow " + n + " from first " + x + ", graph 0 to first " + x +
                 ", graph 1 nohead dt 2 lc rgb 'gray40'\nset label " + n + " '" + n + "' at first " + x +
                 ", graph 1 offset 0,0.7 center font ',9' tc rgb 'gray30'\n";
      keys += ", keyentry with lines dt 2 lc rgb 'gray40' title " +
              gp(n + ": " + c.marks[i].second + " (at " + fixed(c.marks[i].first, 1) + " s)");
    }
    *script += "plot " + dat + " using 1:2 with lines lw 2 lc rgb '#3a6fb0' title " +
               gp(c.labels.empty() ? "" : c.labels.front()) + keys + "\n";
  } else {
    return false;
  }
  return true;
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
    if (output->size() < (1 << 20)) output->append(buf, static_cast<size_t>(n));
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
  std::filesystem::path root = ec ? std::filesystem::path{} : std::filesystem::absolute(dir, ec);
  if (ec) return status::io_error("--plot " + dir + ": " + ec.message());
  std::filesystem::remove(root / "gnuplot.log", ec);  // this run's messages only
  simdjson::dom::parser parser;
  simdjson::dom::object workloads;
  if (parser.parse(simdjson::padded_string{json})["workloads"].get(workloads) != simdjson::SUCCESS)
    return status::corruption("--plot: the report has no workloads object");
  for (auto [workload, figures] : workloads) {
    simdjson::dom::array charts;
    if (figures["charts"].get(charts) != simdjson::SUCCESS) continue;
    for (auto e : charts) {
      std::string type;
      chart c;
      if (!read_chart(e, &type, &c))
        return status::corruption("--plot: a chart of " + std::string{workload} + " is malformed");
      for (char& ch : c.name)  // chart names become file names
        if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-') ch = '_';
      std::string data, script = "set terminal pngcairo noenhanced size 1100,720 font 'sans,11'\nset output " +
                                 gp(c.name + ".png") + "\nset datafile separator '\\t'\nset title " +
                                 gp(c.title + "\\nskein-bench --scale " + fixed(scale, 2)) + "\n";
      if (!chart_script(type, c, &data, &script)) continue;
      std::string stem = (root / c.name).string(), output;
      SKEIN_TRY(write_file(stem + ".dat", data, "--plot"));
      SKEIN_TRY(write_file(stem + ".gp", script, "--plot"));
      std::string error = run_child("gnuplot", {"gnuplot", c.name + ".gp"}, root.string(), gnuplot_timeout_s, &output);
      std::ofstream{root / "gnuplot.log", std::ios::app} << output;
      if (!error.empty())  // gnuplot's last words say which line failed
        return status::io_error("--plot: " + error + " on " + stem + ".gp: " +
                                output.substr(output.size() - std::min<size_t>(output.size(), 400)));
      written->push_back(stem + ".png");
    }
  }
  return status::ok();
}

}  // namespace skein::bench
