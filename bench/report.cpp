#include "bench/report.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <thread>

namespace skein::bench {
namespace {

std::string with_commas(uint64_t v) {
  std::string digits = std::to_string(v), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// Left-aligns the first two columns (names), right-aligns the figures.
void print_table(const std::vector<std::vector<std::string>>& rows, std::FILE* out) {
  std::vector<size_t> width;
  for (const auto& row : rows) {
    width.resize(std::max(width.size(), row.size()));
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      std::string pad(width[c] - row[c].size(), ' ');
      line += c < 2 ? row[c] + pad : pad + row[c];
      if (c + 1 < row.size()) line += "  ";
    }
    std::fprintf(out, "%s\n", line.c_str());
  }
}

const append_row* find_row(const append_figures& f, std::string_view system,
                           std::string_view mode) {
  for (const auto& r : f.rows) {
    if (r.system == system && r.mode == mode) return &r;
  }
  return nullptr;
}

double ratio(const append_row* a, const append_row* b) {
  if (a == nullptr || b == nullptr || b->events_per_s() <= 0) return 0;
  return a->events_per_s() / b->events_per_s();
}

const char* verdict(bool met) { return met ? "met" : "MISSED"; }

std::string read_first_line(const std::filesystem::path& p) {
  std::ifstream in{p};
  std::string line;
  std::getline(in, line);
  return line;
}

// The value of `key` in a "key : value" file such as /proc/meminfo or /proc/cpuinfo.
std::string proc_field(const char* file, std::string_view key) {
  std::ifstream in{file};
  std::string line;
  while (std::getline(in, line)) {
    if (!line.starts_with(key)) continue;
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    size_t begin = line.find_first_not_of(" \t", colon + 1);
    return begin == std::string::npos ? std::string{} : line.substr(begin);
  }
  return {};
}

// Finds the disk under `dir` through /sys/dev/block/MAJ:MIN; a partition's disk is
// its parent directory there. Anonymous devices (tmpfs, overlay) stay unknown.
void probe_disk(const std::string& dir, machine_info* m) {
  m->disk_device = "unknown";
  m->disk_kind = "unknown";
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || major(st.st_dev) == 0) return;
  std::error_code ec;
  auto node = std::filesystem::canonical(
      "/sys/dev/block/" + std::to_string(major(st.st_dev)) + ":" +
          std::to_string(minor(st.st_dev)),
      ec);
  if (ec) return;
  for (const auto& p : {node, node.parent_path()}) {
    std::string flag = read_first_line(p / "queue" / "rotational");
    if (flag.empty()) continue;
    m->disk_device = p.filename().string();
    m->disk_kind = flag == "1" ? "rotational" : "non-rotational";
    return;
  }
}

void write_machine(const machine_info& m, json_writer& w) {
  w.begin_object();
  w.field_uint("cores", m.cores);
  w.field_uint("memory_bytes", m.memory_bytes);
  w.field("cpu", m.cpu);
  w.field("disk_device", m.disk_device);
  w.field("disk_kind", m.disk_kind);
  w.field("kernel", m.kernel);
  w.field("build_type", m.build_type);
  w.field("git_revision", m.git_revision);
  w.end_object();
}

void write_number(json_writer& w, std::string_view key, double v) {
  w.key(key);
  w.number(std::isfinite(v) ? v : 0);
}

}  // namespace

double append_row::events_per_s() const {
  return seconds > 0 ? static_cast<double>(events) / seconds : 0;
}

double append_row::commits_per_write() const {
  return writes > 0 ? static_cast<double>(commits) / static_cast<double>(writes) : 0;
}

void print_append(const append_figures& f, std::FILE* out) {
  std::fprintf(out,
               "append: %zu threads x %zu ticks, one event per tick (%zu-byte message, "
               "%zu-byte stored value)\n\n",
               f.threads, f.ticks_per_thread, f.text_bytes, f.event_json_bytes);
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"system", "mode", "events", "events/s", "commits/write", "p50 ms", "p99 ms",
                  "failures"});
  for (const auto& r : f.rows) {
    rows.push_back({r.system, r.mode, with_commas(r.events),
                    with_commas(static_cast<uint64_t>(r.events_per_s())),
                    r.writes > 0 ? fixed(r.commits_per_write(), 1) : "-",
                    fixed(r.p50_us / 1000, 3), fixed(r.p99_us / 1000, 3),
                    with_commas(r.failures)});
  }
  print_table(rows, out);

  const append_row* skein_sync = find_row(f, "skein", "sync");
  if (skein_sync == nullptr) return;
  std::fprintf(out, "\n");
  for (const auto& r : f.rows) {
    if (r.system == "skein") continue;
    double x = ratio(skein_sync, &r);
    std::string line = "skein sync / " + r.system + " " + r.mode + ": " + fixed(x, 2) + "x";
    if (r.mode == "put-unsynced")
      line += "  (target >= " + fixed(append_ratio_target, 1) + ": " +
              verdict(x >= append_ratio_target) + ")";
    std::fprintf(out, "%s\n", line.c_str());
  }
  double rate = skein_sync->events_per_s();
  std::fprintf(out, "skein sync events/s: %s  (target >= %s: %s)\n",
               with_commas(static_cast<uint64_t>(rate)).c_str(),
               with_commas(static_cast<uint64_t>(append_events_per_s_target)).c_str(),
               verdict(rate >= append_events_per_s_target));
}

void write_append_json(const append_figures& f, json_writer& w) {
  w.begin_object();
  w.field_uint("threads", f.threads);
  w.field_uint("ticks_per_thread", f.ticks_per_thread);
  w.field_uint("text_bytes", f.text_bytes);
  w.field_uint("event_json_bytes", f.event_json_bytes);
  w.key("rows");
  w.begin_array();
  for (const auto& r : f.rows) {
    w.begin_object();
    w.field("system", r.system);
    w.field("mode", r.mode);
    w.field_uint("events", r.events);
    write_number(w, "seconds", r.seconds);
    write_number(w, "events_per_s", r.events_per_s());
    if (r.system == "skein") {
      w.field_uint("writes", r.writes);
      w.field_uint("commits", r.commits);
      write_number(w, "commits_per_write", r.commits_per_write());
      w.field_uint("group_max", r.group_max);
      w.field_uint("bytes", r.bytes);
    }
    write_number(w, "p50_us", r.p50_us);
    write_number(w, "p99_us", r.p99_us);
    w.field_uint("failures", r.failures);
    w.end_object();
  }
  w.end_array();

  const append_row* skein_sync = find_row(f, "skein", "sync");
  double vs_unsynced = ratio(skein_sync, find_row(f, "rocksdb", "put-unsynced"));
  double rate = skein_sync != nullptr ? skein_sync->events_per_s() : 0;
  w.key("targets");
  w.begin_object();
  write_number(w, "skein_sync_over_rocksdb_put_sync",
               ratio(skein_sync, find_row(f, "rocksdb", "put-sync")));
  write_number(w, "skein_sync_over_rocksdb_put_unsynced", vs_unsynced);
  write_number(w, "ratio_target", append_ratio_target);
  w.key("ratio_met");
  w.boolean(vs_unsynced >= append_ratio_target);
  write_number(w, "skein_sync_events_per_s", rate);
  write_number(w, "events_per_s_target", append_events_per_s_target);
  w.key("events_per_s_met");
  w.boolean(rate >= append_events_per_s_target);
  w.end_object();
  w.end_object();
}

machine_info probe_machine(const std::string& dir) {
  machine_info m;
  m.cores = std::thread::hardware_concurrency();
  std::string mem_kb = proc_field("/proc/meminfo", "MemTotal");  // "24684084 kB"
  m.memory_bytes = std::strtoull(mem_kb.c_str(), nullptr, 10) * 1024;
  m.cpu = proc_field("/proc/cpuinfo", "model name");
  if (m.cpu.empty()) m.cpu = "unknown";
  probe_disk(dir, &m);
  struct utsname u {};
  m.kernel = ::uname(&u) == 0 ? u.release : "unknown";
  m.build_type = SKEIN_BUILD_TYPE;
  m.git_revision = SKEIN_GIT_REVISION;
  if (m.build_type.empty()) m.build_type = "unknown";
  return m;
}

status write_report(const std::string& path, double scale, const machine_info& machine,
                    const std::vector<std::pair<std::string, std::string>>& workloads) {
  std::string text;
  json_writer w{&text};
  w.begin_object();
  w.field("tool", "skein-bench");
  write_number(w, "scale", scale);
  w.key("machine");
  write_machine(machine, w);
  w.key("workloads");
  w.begin_object();
  for (const auto& [name, figures] : workloads) {
    w.key(name);
    w.raw(figures);
  }
  w.end_object();
  w.end_object();
  text.push_back('\n');

  std::error_code ec;
  auto parent = std::filesystem::path{path}.parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  if (ec) return status::io_error("--json " + path + ": " + ec.message());
  std::ofstream out{path, std::ios::binary | std::ios::trunc};
  out << text;
  out.close();
  if (!out) return status::io_error("--json " + path + ": cannot write the file");
  return status::ok();
}

}  // namespace skein::bench
