// plot: the PNG charts of skein-bench --plot DIR.
//
// Drawn from the JSON document of the run (the charts of every workload's result,
// result.hpp) once every workload is done: each chart is rendered with gnuplot,
// run as a subprocess over a script and data files it leaves in DIR beside the
// PNGs (to re-render or inspect).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "runtime/model/status.hpp"

namespace skein::bench {

// Writes `text` to the file `path` (creating its directory); errors name `option`.
status write_file(const std::string& path, const std::string& text, const std::string& option);

// Runs `args` (args[0] looked up in PATH) in `dir` (here when empty), its stdout and
// stderr on one pipe into *output (at most 1 MiB), until it ends or `timeout_s`
// passes (then kills it). "" when it exited 0, else what went wrong, named `name`.
// Blocking; any thread. Also runs the kernl baseline's Node script.
std::string run_child(const std::string& name, const std::vector<std::string>& args, const std::string& dir,
                      double timeout_s, std::string* output);

// ok when `gnuplot` runs from PATH, else an error saying so and how to get it.
status check_gnuplot();

// Renders every chart of every workload of the document `json` into `dir`
// (created if missing): <chart name>.png, each with its .gp script and .dat file;
// gnuplot's own messages go to dir/gnuplot.log. `scale` (--scale) goes into the
// titles. `written` receives the PNG paths.
status write_plots(std::string_view json, const std::string& dir, double scale,
                   std::vector<std::string>* written);

}  // namespace skein::bench
