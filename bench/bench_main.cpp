// skein-bench: runs benchmark workloads against the event log and the journal, end
// to end through skein::runtime, and through its HTTP server; prints a table per
// workload, with --json writes every figure to a file, with --plot draws charts,
// with --markdown writes the report as a page of the manual (report_page.hpp).
//
// Exit codes: 0 done, 1 a workload failed (a lost or failed write is a failure,
// not a figure), 64 bad usage.
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "bench/plot.hpp"
#include "bench/report_page.hpp"
#include "bench/workloads.hpp"

namespace skein::bench {
namespace {

constexpr double scale_max = 100;

struct workload {
  std::string_view name;
  std::string_view description;
  status (*run)(const bench_options&, result* out);
};

constexpr workload workloads[] = {
    {"append", "256 threads x 200 one-event ticks through the journal in each durability mode, vs RocksDB Puts",
     run_append},
    {"runs", "1,000 threads x 10 end-to-end runs through skein::runtime (scripted engine at 0 ms, durability sync)",
     run_runs},
    {"latency", "10,000 runs in flight at once against a 1 s scripted engine: runs/s and peak RSS", run_latency},
    {"scale", "100,000 threads: RSS per active and per passivated thread, cold activation of a 10,000-event thread",
     run_scale},
    {"http", "the runs of 'runs' as POSTs from 64 keep-alive clients to the in-process server, against the same "
             "runs embedded", run_http},
    {"fanout", "1,000 SSE subscribers on one thread (one poll() reader), 200 runs: events delivered per second",
     run_fanout},
    {"recovery", "runtime::open on 1,000,000 threads / 10,000,000 events, clean and with 1,000 interrupted runs "
                 "to repair", run_recovery},
    {"history", "one-event appends on threads with 10, 1,000 and 100,000 events of history, and their first run "
                "after activation", run_history},
    {"usage", "usage queries over 100,000 usage rows (10 agents x 1,000 threads x 10 runs): full scan, one agent, "
              "one thread", run_usage},
    {"compaction", "runtime::compact on 10,000-event threads (pure stages, scripted summary), and the first run "
                   "after activation on 100,000-event threads with and without a compaction", run_compaction},
    {"memory", "memory search over 100,000 and 1,000,000 384-dim vectors (hashing and random) vs a naive scan, "
               "and the index rebuild at open", run_memory},
    {"effects", "the runs of 'runs' (1 KB messages) with effects off and on (titles, embeddings, automatic "
                "compaction): runs/s, effect lag, drain", run_effects},
    {"schedules", "100,000 one-shot schedules due within one minute of test clock, each firing a new trigger "
                  "thread: firings/s, lag p99, RSS", run_schedules},
    {"delegation", "2,000 parent runs each asking one child agent through ask_agent (scripted engine at 0 ms, "
                   "durability sync): round trip p50/p99 and runs/s, beside plain runs", run_delegation},
    {"work", "work items: create_item with dedup against 10,000 and 100,000 open items (p50/p99 us), "
             "session_start with 10,000 items, the sweep over 1,000,000 items (items/s)", run_work},
    {"encryption", "the skein rows of 'append' (sync, flush) and the runs of 'runs', each plain and encrypted at "
                   "rest (AES-256-CTR): throughput of both and the ratio", run_encryption},
    {"namespaces", "1,000,000 threads over 100 namespaces (a database each): a page of one namespace's threads "
                   "and its cold open, against one shared database listing one agent", run_namespaces},
    {"sequential", "one thread x 2,000 runs one after another, embedded and over HTTP (scripted engine at 0 ms, "
                   "durability sync): the last 200 runs against the first 200", run_sequential},
    {"read", "the complete history of 10,000- and 100,000-event threads after a reopen (cold) and again (warm), "
             "embedded and over HTTP", run_read},
    {"cluster", "1, 2 and 3 nodes in this process, each with its HTTP server: runs/s with clients on every node "
                "(runs forwarded to their owner), a forwarded read against a local one, and the handoff when a "
                "fourth node joins (threads/s, events/s)", run_cluster},
};

// The disk under `dir` (its device, "rotational" or "non-rotational") through
// /sys/dev/block/MAJ:MIN, whose parent is a partition's disk. Anonymous devices
// (tmpfs, overlay) stay unknown.
std::pair<std::string, std::string> probe_disk(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || major(st.st_dev) == 0) return {"unknown", "unknown"};
  std::error_code ec;
  auto node = std::filesystem::canonical(
      "/sys/dev/block/" + std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev)), ec);
  for (const auto& p : {node, node.parent_path()}) {
    std::string flag;
    if (!ec) std::getline(std::ifstream{p / "queue" / "rotational"}, flag);
    if (!flag.empty()) return {p.filename().string(), flag == "1" ? "rotational" : "non-rotational"};
  }
  return {"unknown", "unknown"};
}

// The machine and the build of this run; the disk is the one under `dir`, which
// holds the databases.
run_info probe_run(double scale, const std::string& dir) {
  run_info run;
  run.scale = scale;
  auto [disk_device, disk_kind] = probe_disk(dir);
  std::string mem_kb = proc_field("/proc/meminfo", "MemTotal");  // "24684084 kB"
  struct utsname u {};
  run.cores = std::thread::hardware_concurrency();
  run.memory_bytes = std::strtoull(mem_kb.c_str(), nullptr, 10) * 1024;  // 0: unknown
  run.cpu = proc_field("/proc/cpuinfo", "model name");
  run.disk_device = disk_device;
  run.disk_kind = disk_kind;
  run.kernel = ::uname(&u) == 0 ? u.release : "unknown";
  run.build_type = std::string{SKEIN_BUILD_TYPE}.empty() ? "unknown" : SKEIN_BUILD_TYPE;
  run.revision = SKEIN_GIT_REVISION;
  return run;
}

// {"tool", "scale", "machine", "build", "revision", "workloads": {name: result}}.
std::string report_json(const run_info& run, const std::vector<result>& results) {
  std::string text;
  json_writer w{&text};
  w.begin_object();
  w.field("tool", "skein-bench");
  w.field_number("scale", run.scale);
  w.key("machine");
  w.begin_object();
  w.field_uint("cores", run.cores);
  w.field_uint("memory_bytes", run.memory_bytes);
  w.field("cpu", run.cpu);
  w.field("disk_device", run.disk_device);
  w.field("disk_kind", run.disk_kind);
  w.field("kernel", run.kernel);
  w.field("build_type", run.build_type);
  w.field("git_revision", run.revision);
  w.end_object();
  w.field("build", run.build_type);
  w.field("revision", run.revision);
  w.key("workloads");
  w.begin_object();
  for (const auto& r : results) {
    w.key(r.workload);
    write_result_json(r, w);
  }
  w.end_object();
  w.end_object();
  return text + "\n";
}

// The page of --markdown at `path`, keeping the notes of the page it replaces.
status write_page(const std::string& path, const run_info& run, const std::vector<result>& results,
                  const std::vector<const workload*>& chosen) {
  std::string old_page;
  if (std::ifstream in{path}; in) old_page.assign(std::istreambuf_iterator<char>{in}, {});
  std::vector<std::string> descriptions;
  for (const workload* w : chosen) descriptions.emplace_back(w->description);
  return write_file(path, render_page(run, results, descriptions, kept_notes(old_page)) + "\n", "--markdown");
}

struct command_line {
  std::vector<const workload*> chosen;  // in the order named, each once
  bench_options options;
  std::string json_path;
  std::string plot_dir;
  std::string markdown_path;
  bool help = false;
};

void print_usage() {
  std::printf("usage: skein-bench [workload...] [--scale F] [--dir DIR] [--json FILE] [--plot DIR] [--markdown FILE] [--quiet]\n\n"
              "Runs the named workloads, or all of them when none is named.\n\nworkloads:\n");
  for (const auto& w : workloads)
    std::printf("  %-10.*s %.*s\n", static_cast<int>(w.name.size()), w.name.data(),
                static_cast<int>(w.description.size()), w.description.data());
  std::printf("\noptions:\n"
              "  --scale F    multiply every size by F (default 1.0; 0 < F <= %g)\n"
              "  --dir DIR    create the databases under DIR, replacing earlier ones of the\n"
              "               same name, and keep them (default: a fresh directory under the\n"
              "               system temp dir, removed at the end)\n"
              "  --json FILE  also write every figure and the machine to FILE as JSON\n"
              "  --plot DIR   also draw charts (PNG) into DIR: throughput, latency CDFs, RSS over\n"
              "               time; needs gnuplot\n"
              "  --markdown FILE  also write the report as a page (docs/performance.md), keeping\n"
              "               the hand-written notes of the FILE it replaces\n"
              "  --quiet      no progress bar (there is none anyway when stderr is no terminal)\n"
              "  --help       print this and exit\n",
              scale_max);
}

// Returns "" on success, else what is wrong, naming the offending argument.
std::string parse(int argc, char** argv, command_line* out) {
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      out->help = true;
    } else if (arg == "--quiet") {
      out->options.quiet = true;
    } else if (arg == "--scale" || arg == "--dir" || arg == "--json" || arg == "--plot" || arg == "--markdown") {
      if (i + 1 >= argc) return std::string{arg} + " needs a value";
      const char* value = argv[++i];
      char* end = nullptr;
      double scale = std::strtod(value, &end);
      if (*value == '\0') return std::string{arg} + " needs a non-empty value";
      if (arg == "--dir") out->options.dir = value;
      else if (arg == "--json") out->json_path = value;
      else if (arg == "--plot") out->plot_dir = value;
      else if (arg == "--markdown") out->markdown_path = value;
      else if (*end != '\0' || !std::isfinite(scale) || scale <= 0 || scale > scale_max)
        return "--scale '" + std::string{value} + "': not a number in (0, " +
               std::to_string(static_cast<int>(scale_max)) + "]";
      else out->options.scale = scale;
    } else if (arg.starts_with("-")) {
      return "unknown option '" + std::string{arg} + "'";
    } else {
      auto named = [&](const workload& w) { return w.name == arg; };
      const workload* w = std::find_if(std::begin(workloads), std::end(workloads), named);
      if (w == std::end(workloads)) return "unknown workload '" + std::string{arg} + "'";
      if (std::find(out->chosen.begin(), out->chosen.end(), w) == out->chosen.end()) out->chosen.push_back(w);
    }
  }
  if (out->chosen.empty())
    for (const auto& w : workloads) out->chosen.push_back(&w);
  return {};
}

// Prepares --plot (it must fail before an hour of workloads, not after) and the
// databases' directory: the one the user named, kept; else one made under the
// system temp dir, removed with everything in it when the run ends (*owned).
status prepare(command_line* cl, bool* owned) {
  std::error_code ec;
  if (!cl->plot_dir.empty()) {
    SKEIN_TRY(check_gnuplot());
    std::filesystem::create_directories(cl->plot_dir, ec);
    if (ec) return status::io_error("--plot " + cl->plot_dir + ": " + ec.message());
  }
  bench_options* options = &cl->options;
  options->plot = !cl->plot_dir.empty();
  if (!options->dir.empty()) {
    std::filesystem::create_directories(options->dir, ec);
    return ec ? status::io_error("--dir " + options->dir + ": " + ec.message()) : status::ok();
  }
  auto base = std::filesystem::temp_directory_path(ec);
  if (ec) return status::io_error("no temp directory: " + ec.message());
  std::string pattern = (base / "skein-bench-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) return status::io_error("mkdtemp " + pattern + ": " + std::strerror(errno));
  options->dir = pattern;
  *owned = true;
  return status::ok();
}

status run(const command_line& cl) {
  const bench_options& options = cl.options;
  std::vector<result> results;
  for (const workload* w : cl.chosen) {
    if (!results.empty()) std::printf("\n");
    result& r = results.emplace_back();
    r.workload = std::string{w->name};
    if (status s = w->run(options, &r); !s) return status{s.code(), std::string{w->name} + ": " + s.to_string()};
    print_result(r, stdout);
    std::fflush(stdout);
  }
  if (cl.json_path.empty() && cl.plot_dir.empty() && cl.markdown_path.empty()) return status::ok();
  run_info run = probe_run(options.scale, options.dir);
  std::string json = report_json(run, results);
  if (!cl.json_path.empty()) SKEIN_TRY(write_file(cl.json_path, json, "--json"));
  if (!cl.markdown_path.empty()) SKEIN_TRY(write_page(cl.markdown_path, run, results, cl.chosen));
  if (cl.plot_dir.empty()) return status::ok();
  std::vector<std::string> written;
  SKEIN_TRY(write_plots(json, cl.plot_dir, options.scale, &written));
  std::printf("\nplots: %zu charts in %s\n", written.size(), cl.plot_dir.c_str());
  for (const auto& path : written) std::printf("  %s\n", std::filesystem::path{path}.filename().c_str());
  return status::ok();
}

}  // namespace
}  // namespace skein::bench

int main(int argc, char** argv) {
  using namespace skein::bench;
  command_line cl;
  if (std::string error = parse(argc, argv, &cl); !error.empty()) {
    std::fprintf(stderr, "skein-bench: %s (see --help)\n", error.c_str());
    return 64;
  }
  if (cl.help) {
    print_usage();
    return 0;
  }
  bool owned = false;
  skein::status s = prepare(&cl, &owned);
  if (s) s = run(cl);
  std::error_code ec;
  if (owned) std::filesystem::remove_all(cl.options.dir, ec);
  if (!s) {
    std::fprintf(stderr, "skein-bench: %s\n", s.message().c_str());
    return 1;
  }
  return 0;
}
