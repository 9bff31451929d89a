// plot: the PNG charts of skein-bench --plot DIR.
//
// Workloads hand their series to a plot_sink while they run — throughput bars,
// latency samples, RSS sampled over time — and once every workload is done
// write_plots() renders each chart with gnuplot, run as a subprocess over a
// script and data files it leaves in DIR beside the PNGs (to re-render or
// inspect). Workloads get the sink through bench_options::plot, null without
// --plot: feeding it is then skipped and costs nothing.
//
// Thread-safe: a plot_sink may be fed from any thread (an rss_recorder feeds it
// from its own); write_plots() must not race the feeding.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/model/status.hpp"

namespace skein::bench {

struct rss_sample {
  double seconds = 0;  // since the recording started
  uint64_t bytes = 0;
};

// A phase boundary on an RSS chart, drawn as a labelled vertical line.
struct rss_mark {
  double seconds = 0;
  std::string label;
};

class plot_sink {
 public:
  // One bar of `workload`'s throughput chart: `label` (system and mode) reached
  // `value` in `unit` ("events/s"). A chart takes the unit of its first bar.
  void throughput(const std::string& workload, const std::string& label, double value,
                  const std::string& unit);
  // One curve of `workload`'s latency CDF: the samples, in nanoseconds (copied).
  void latency(const std::string& workload, const std::string& series,
               const std::vector<int64_t>& ns);
  // `workload`'s RSS over time; a second call for the same workload replaces the first.
  void rss(const std::string& workload, std::vector<rss_sample> samples,
           std::vector<rss_mark> marks);

  struct bar {
    std::string label;
    double value = 0;
  };
  struct bar_chart {
    std::string workload, unit;
    std::vector<bar> bars;
  };
  struct curve {
    std::string series;
    std::vector<int64_t> ns;  // sorted
  };
  struct cdf_chart {
    std::string workload;
    std::vector<curve> curves;
  };
  struct rss_chart {
    std::string workload;
    std::vector<rss_sample> samples;
    std::vector<rss_mark> marks;
  };

  // Copies of what was fed, each in the order its workload first fed it.
  std::vector<bar_chart> bar_charts() const;
  std::vector<cdf_chart> cdf_charts() const;
  std::vector<rss_chart> rss_charts() const;

 private:
  mutable std::mutex mu_;  // guards the three vectors
  std::vector<bar_chart> bars_;
  std::vector<cdf_chart> cdfs_;
  std::vector<rss_chart> rss_;
};

// Samples the process's RSS every `period` on its own thread, from construction
// until finish() (or destruction), and then hands the series with its marks to
// `sink`. With a null sink it starts no thread and does nothing.
class rss_recorder {
 public:
  rss_recorder(plot_sink* sink, std::string workload,
               std::chrono::milliseconds period = std::chrono::milliseconds(50));
  ~rss_recorder();
  rss_recorder(const rss_recorder&) = delete;
  rss_recorder& operator=(const rss_recorder&) = delete;

  // Marks the present moment as the start of phase `label`.
  void mark(std::string label);
  // Stops sampling and hands the series over; idempotent.
  void finish();

 private:
  void loop();
  void sample();  // with mu_ held

  plot_sink* sink_;  // borrowed; outlives the recorder
  std::string workload_;
  std::chrono::milliseconds period_;
  std::chrono::steady_clock::time_point start_;
  std::mutex mu_;  // guards everything below
  std::condition_variable cv_;
  bool stopping_ = false;
  std::vector<rss_sample> samples_;
  std::vector<rss_mark> marks_;
  std::thread thread_;
};

// ok when `gnuplot` runs from PATH, else an error saying so and how to get it.
status check_gnuplot();

// Renders every chart of `sink` into `dir` (created if missing): throughput-<w>.png,
// latency-<w>.png and rss-<w>.png, each with its .gp script and .dat files;
// gnuplot's own messages go to dir/gnuplot.log. `scale` (--scale) goes into the
// titles. `written` receives the PNG paths.
status write_plots(const plot_sink& sink, const std::string& dir, double scale,
                   std::vector<std::string>* written);

}  // namespace skein::bench
