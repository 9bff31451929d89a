// Each chart is one gnuplot script (<chart>.gp) over tab-separated data files
// (<chart>.dat), all in the plot directory, rendered by one gnuplot process run
// in that directory: the scripts name their files relatively, so the directory
// can be moved and re-rendered with `gnuplot <chart>.gp`.
//
//   throughput-<w>.dat := (label TAB value TAB value-as-text TAB rgb) per line
//   latency-<w>.dat    := per series, (ms TAB fraction) lines; series are
//                         separated by two blank lines (gnuplot's `index`)
//   rss-<w>.dat        := (seconds TAB MB) per line
#include "bench/plot.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "bench/workloads.hpp"

extern char** environ;

namespace skein::bench {
namespace {

// A CDF needs no more points than a PNG has pixels across.
constexpr size_t cdf_points_max = 1000;
constexpr const char* terminal = "set terminal pngcairo noenhanced size 1100,720 font 'sans,11'\n";
constexpr uint32_t skein_rgb = 0x3a6fb0;
constexpr uint32_t other_rgb = 0xd9822b;

template <typename Chart>
Chart& chart_for(std::vector<Chart>& charts, const std::string& workload) {
  for (auto& c : charts) {
    if (c.workload == workload) return c;
  }
  Chart& c = charts.emplace_back();
  c.workload = workload;
  return c;
}

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

std::string number(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string with_commas(double v) {
  std::string digits = number(std::max(0.0, v), 0), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

std::string scale_note(double scale) { return "skein-bench --scale " + number(scale, 2); }

status write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out{path, std::ios::binary | std::ios::trunc};
  out << text;
  out.close();
  if (!out) return status::io_error("--plot: cannot write " + path.string());
  return status::ok();
}

// --- the charts ----------------------------------------------------------------

// Bars in the order fed; skein's in one colour, every other system's in another.
void bar_script(const plot_sink::bar_chart& c, double scale, std::string* data,
                std::string* script) {
  std::string name = "throughput-" + file_safe(c.workload);
  for (const auto& b : c.bars) {
    uint32_t rgb = b.label.starts_with("skein") ? skein_rgb : other_rgb;
    *data += b.label + "\t" + number(b.value, 3) + "\t" + with_commas(b.value) + "\t" +
             std::to_string(rgb) + "\n";
  }
  *script += terminal;
  *script += "set output " + gp_string(name + ".png") + "\n";
  *script += "set title " + gp_string(c.workload + ": throughput (" + c.unit + ", higher is better)\\n" +
                                   scale_note(scale)) + "\n";
  *script += "set datafile separator '\\t'\n";
  *script += "set ylabel " + gp_string(c.unit) + "\nset yrange [0:*]\nset offsets 0.5, 0.5, 0, 0\n";
  *script += "set format y '%.0f'\nset grid ytics\nunset key\n";
  *script += "set style fill solid 0.85 border -1\nset boxwidth 0.6\n";
  size_t label_max = 0;
  for (const auto& b : c.bars) label_max = std::max(label_max, b.label.size());
  // Labels side by side collide past about 100 characters across the chart.
  if (label_max * c.bars.size() > 100) *script += "set xtics rotate by -25\n";
  *script += "plot " + gp_string(name + ".dat") +
             " using 0:2:4:xtic(1) with boxes lc rgb variable, '' using 0:2:3 with labels "
             "offset 0,0.8\n";
}

double ms_of(int64_t ns) { return std::max<double>(static_cast<double>(ns), 1.0) / 1e6; }

// One data block per series: up to cdf_points_max evenly ranked points of the
// sorted samples, each the latency and the fraction of samples at or below it.
void cdf_script(const plot_sink::cdf_chart& c, double scale, std::string* data,
                std::string* script) {
  std::string name = "latency-" + file_safe(c.workload);
  std::string plots;
  int64_t low = c.curves.front().ns.front(), high = c.curves.front().ns.back();
  for (size_t k = 0; k < c.curves.size(); ++k) {
    const auto& ns = c.curves[k].ns;
    low = std::min(low, ns.front());
    high = std::max(high, ns.back());
    size_t n = ns.size(), points = std::min(n, cdf_points_max);
    for (size_t p = 0; p < points; ++p) {
      size_t i = points == 1 ? n - 1 : p * (n - 1) / (points - 1);
      *data += number(ms_of(ns[i]), 6) + "\t" +
               number(static_cast<double>(i + 1) / static_cast<double>(n), 6) + "\n";
    }
    *data += "\n\n";
    // Nearest rank, as the tables' quantiles are taken.
    auto at = [&](double q) {
      auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(n)));
      return ms_of(ns[std::clamp<size_t>(rank, 1, n) - 1]);
    };
    std::string title = c.curves[k].series + " (n " + with_commas(static_cast<double>(n)) +
                        ", p50 " + number(at(0.5), 3) + " ms, p99 " + number(at(0.99), 3) + " ms)";
    plots += std::string(k == 0 ? "" : ", ") + gp_string(name + ".dat") + " index " +
             std::to_string(k) + " using 1:2 with steps lw 2 title " + gp_string(title);
  }
  *script += terminal;
  *script += "set output " + gp_string(name + ".png") + "\n";
  *script += "set title " + gp_string(c.workload + ": latency CDF\\n" + scale_note(scale)) + "\n";
  *script += "set datafile separator '\\t'\n";
  // A log axis spreads latencies over decades; within one decade (a slow engine's
  // runs all near its latency) it would squeeze them into a line.
  if (ms_of(high) >= 10 * ms_of(low)) *script += "set xlabel 'latency (ms, log scale)'\nset logscale x\n";
  else *script += "set xlabel 'latency (ms)'\n";
  *script += "set ylabel 'fraction of operations at or below the latency'\nset yrange [0:1.02]\n";
  *script += "set ytics 0.1\nset grid xtics ytics mxtics\nset key below Left reverse\n";
  *script += "plot " + plots + "\n";
}

void rss_script(const plot_sink::rss_chart& c, double scale, std::string* data,
                std::string* script) {
  std::string name = "rss-" + file_safe(c.workload);
  for (const auto& s : c.samples)
    *data += number(s.seconds, 3) + "\t" + number(static_cast<double>(s.bytes) / (1 << 20), 2) + "\n";
  *script += terminal;
  *script += "set output " + gp_string(name + ".png") + "\n";
  *script += "set title " + gp_string(c.workload + ": resident set size over time\\n" +
                                   scale_note(scale)) + "\n";
  *script += "set datafile separator '\\t'\n";
  *script += "set xlabel 'time since the measurement started (s)'\n";
  *script += "set ylabel 'RSS (MiB)'\nset yrange [0:*]\nset grid\nset key below Left reverse\n";
  // Phases: a numbered dashed line each, named in the key; text at the lines
  // would collide when phases are short.
  std::string keys;
  for (size_t i = 0; i < c.marks.size(); ++i) {
    std::string n = std::to_string(i + 1), x = number(c.marks[i].seconds, 3);
    *script += "set arrow " + n + " from first " + x + ", graph 0 to first " + x +
               ", graph 1 nohead dt 2 lc rgb 'gray40'\n";
    *script += "set label " + n + " '" + n + "' at first " + x +
               ", graph 1 offset 0,0.7 center font ',9' tc rgb 'gray30'\n";
    keys += ", keyentry with lines dt 2 lc rgb 'gray40' title " +
            gp_string(n + ": " + c.marks[i].label + " (at " + number(c.marks[i].seconds, 1) + " s)");
  }
  *script += "plot " + gp_string(name + ".dat") +
             " using 1:2 with lines lw 2 lc rgb '#3a6fb0' title 'VmRSS of the whole process, "
             "sampled every 50 ms'" + keys + "\n";
}

// --- running gnuplot ---------------------------------------------------------------

// Runs `argv` (argv[0] looked up in PATH) in `dir` (or here, if empty), its stdout
// to /dev/null and its stderr appended to `log` (or /dev/null); *exit_code gets its
// exit status, or -1 if it died of a signal.
status run_process(const std::vector<std::string>& argv, const std::string& dir,
                   const std::string& log, int* exit_code) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (!dir.empty()) posix_spawn_file_actions_addchdir_np(&actions, dir.c_str());
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  if (log.empty()) posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  else posix_spawn_file_actions_addopen(&actions, 2, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int err = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0) return status::not_found(argv[0] + ": " + std::strerror(err));
  int ws = 0;
  while (::waitpid(pid, &ws, 0) < 0) {
    if (errno != EINTR) return status::io_error("waitpid " + argv[0] + ": " + std::strerror(errno));
  }
  *exit_code = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
  return status::ok();
}

// The last lines gnuplot wrote, for the error that names the failed chart.
std::string log_tail(const std::filesystem::path& log) {
  std::ifstream in{log};
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::string out;
  for (size_t i = lines.size() > 5 ? lines.size() - 5 : 0; i < lines.size(); ++i)
    out += "\n  " + lines[i];
  return out;
}

status render(const std::filesystem::path& dir, const std::string& name, const std::string& data,
              const std::string& script, std::vector<std::string>* written) {
  SKEIN_TRY(write_file(dir / (name + ".dat"), data));
  SKEIN_TRY(write_file(dir / (name + ".gp"), script));
  int code = 0;
  auto log = dir / "gnuplot.log";
  SKEIN_TRY(run_process({"gnuplot", name + ".gp"}, dir.string(), log.string(), &code));
  if (code != 0)
    return status::io_error("--plot: gnuplot failed on " + (dir / (name + ".gp")).string() +
                            " (exit " + std::to_string(code) + "):" + log_tail(log));
  written->push_back((dir / (name + ".png")).string());
  return status::ok();
}

}  // namespace

void plot_sink::throughput(const std::string& workload, const std::string& label, double value,
                           const std::string& unit) {
  std::lock_guard<std::mutex> lock{mu_};
  bar_chart& c = chart_for(bars_, workload);
  if (c.unit.empty()) c.unit = unit;
  c.bars.push_back({label, std::isfinite(value) ? value : 0});
}

void plot_sink::latency(const std::string& workload, const std::string& series,
                        const std::vector<int64_t>& ns) {
  if (ns.empty()) return;  // a CDF of nothing is no curve
  std::vector<int64_t> sorted = ns;
  std::sort(sorted.begin(), sorted.end());
  std::lock_guard<std::mutex> lock{mu_};
  chart_for(cdfs_, workload).curves.push_back({series, std::move(sorted)});
}

void plot_sink::rss(const std::string& workload, std::vector<rss_sample> samples,
                    std::vector<rss_mark> marks) {
  std::lock_guard<std::mutex> lock{mu_};
  rss_chart& c = chart_for(rss_, workload);
  c.samples = std::move(samples);
  c.marks = std::move(marks);
}

std::vector<plot_sink::bar_chart> plot_sink::bar_charts() const {
  std::lock_guard<std::mutex> lock{mu_};
  return bars_;
}

std::vector<plot_sink::cdf_chart> plot_sink::cdf_charts() const {
  std::lock_guard<std::mutex> lock{mu_};
  return cdfs_;
}

std::vector<plot_sink::rss_chart> plot_sink::rss_charts() const {
  std::lock_guard<std::mutex> lock{mu_};
  return rss_;
}

rss_recorder::rss_recorder(plot_sink* sink, std::string workload, std::chrono::milliseconds period)
    : sink_(sink), workload_(std::move(workload)), period_(period),
      start_(std::chrono::steady_clock::now()) {
  if (sink_ == nullptr) return;
  std::lock_guard<std::mutex> lock{mu_};
  sample();
  thread_ = std::thread([this] { loop(); });
}

rss_recorder::~rss_recorder() { finish(); }

void rss_recorder::mark(std::string label) {
  if (sink_ == nullptr) return;
  std::lock_guard<std::mutex> lock{mu_};
  sample();  // the line then meets the curve where the phase begins
  marks_.push_back({samples_.back().seconds, std::move(label)});
}

void rss_recorder::finish() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock{mu_};
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
  std::lock_guard<std::mutex> lock{mu_};
  sample();
  sink_->rss(workload_, std::move(samples_), std::move(marks_));
}

void rss_recorder::loop() {
  std::unique_lock<std::mutex> lock{mu_};
  while (!cv_.wait_for(lock, period_, [this] { return stopping_; })) sample();
}

void rss_recorder::sample() {
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  samples_.push_back({s, rss_bytes()});
}

status check_gnuplot() {
  int code = 0;
  status s = run_process({"gnuplot", "--version"}, "", "", &code);
  if (!s || code != 0)
    return status::not_found(
        "--plot needs gnuplot, which " +
        std::string{s ? "exited " + std::to_string(code) + " on --version" : "is not on PATH"} +
        " (Debian: apt-get install gnuplot-nox)");
  return status::ok();
}

status write_plots(const plot_sink& sink, const std::string& dir, double scale,
                   std::vector<std::string>* written) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return status::io_error("--plot " + dir + ": " + ec.message());
  std::filesystem::path root = std::filesystem::absolute(dir, ec);
  if (ec) return status::io_error("--plot " + dir + ": " + ec.message());
  std::filesystem::remove(root / "gnuplot.log", ec);  // this run's messages only
  for (const auto& c : sink.bar_charts()) {
    std::string data, script;
    bar_script(c, scale, &data, &script);
    SKEIN_TRY(render(root, "throughput-" + file_safe(c.workload), data, script, written));
  }
  for (const auto& c : sink.cdf_charts()) {
    std::string data, script;
    cdf_script(c, scale, &data, &script);
    SKEIN_TRY(render(root, "latency-" + file_safe(c.workload), data, script, written));
  }
  for (const auto& c : sink.rss_charts()) {
    std::string data, script;
    rss_script(c, scale, &data, &script);
    SKEIN_TRY(render(root, "rss-" + file_safe(c.workload), data, script, written));
  }
  return status::ok();
}

}  // namespace skein::bench
