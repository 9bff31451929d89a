// plot: the PNG charts of skein-bench --plot DIR, drawn from the run's JSON once
// every workload is done. Each chart is rendered by gnuplot from a script and a
// data file left in DIR beside the PNG (to re-render or inspect).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "runtime/model/status.hpp"

namespace skein::bench {

// Writes `text` to `path` (creating its directory); errors name `option`.
status write_file(const std::string& path, const std::string& text, const std::string& option);

// Runs `args` (args[0] looked up in PATH) in `dir` (here when empty), its stdout and
// stderr into *output (at most 1 MiB), until it ends or `timeout_s` passes (then
// kills it). "" when it exited 0, else what went wrong, named `name`. Blocking.
std::string run_child(const std::string& name, const std::vector<std::string>& args, const std::string& dir,
                      double timeout_s, std::string* output);

// ok when `gnuplot` runs from PATH, else an error saying how to get it.
status check_gnuplot();

// Renders every chart of the document `json` into `dir` (created if missing):
// <chart>.png with its .gp and .dat; gnuplot's messages go to dir/gnuplot.log.
// `scale` goes into the titles; `written` receives the PNG paths.
status write_plots(std::string_view json, const std::string& dir, double scale,
                   std::vector<std::string>* written);

}  // namespace skein::bench
