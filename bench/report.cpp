#include "bench/report.hpp"

#include <algorithm>
#include <cctype>
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

// Left-aligns the first `names` columns, right-aligns the figures.
void print_table(const std::vector<std::vector<std::string>>& rows, std::FILE* out,
                 size_t names = 2) {
  std::vector<size_t> width;
  for (const auto& row : rows) {
    width.resize(std::max(width.size(), row.size()));
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      std::string pad(width[c] - row[c].size(), ' ');
      line += c < names ? row[c] + pad : pad + row[c];
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

// The ratio of events/s skein sync must reach over `r`; 0: no target.
double append_target(const append_row& r) {
  if (r.system == "rocksdb" && r.mode == "put-unsynced") return append_ratio_target;
  if (r.system == "lace-design" && r.mode == "FULL") return append_over_lace_full_target;
  if (r.system == "opennova-design") return append_over_opennova_target;
  return 0;
}

// A JSON key from a row's name: "lace-design FULL" -> "lace_design_full".
std::string json_name(std::string text) {
  for (char& c : text) {
    c = c == '-' || c == ' ' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return text;
}

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
  for (const auto& r : f.rows) {
    if (!r.note.empty()) std::fprintf(out, "%s %s: %s\n", r.system.c_str(), r.mode.c_str(),
                                      r.note.c_str());
  }

  const append_row* skein_sync = find_row(f, "skein", "sync");
  if (skein_sync == nullptr) return;
  std::fprintf(out, "\n");
  for (const auto& r : f.rows) {
    if (r.system == "skein") continue;
    double x = ratio(skein_sync, &r);
    std::string line = "skein sync / " + r.system + " " + r.mode + ": " + fixed(x, 2) + "x";
    if (double target = append_target(r); target > 0)
      line += "  (target >= " + fixed(target, 1) + ": " + verdict(x >= target) + ")";
    std::fprintf(out, "%s\n", line.c_str());
  }
  double rate = skein_sync->events_per_s();
  std::fprintf(out, "skein sync events/s: %s  (target >= %s: %s)\n",
               with_commas(static_cast<uint64_t>(rate)).c_str(),
               with_commas(static_cast<uint64_t>(append_events_per_s_target)).c_str(),
               verdict(rate >= append_events_per_s_target));
}

namespace {

// skein sync over each design of bench/baselines/: figure, then target and met if any.
void write_baseline_ratios(const append_figures& f, const append_row* skein_sync,
                           json_writer& w) {
  for (const auto& r : f.rows) {
    if (r.host_threads == 0) continue;
    std::string name = json_name("skein_sync_over_" + r.system + "_" + r.mode);
    double x = ratio(skein_sync, &r), target = append_target(r);
    w.key(name);
    w.begin_object();
    write_number(w, "figure", x);
    if (target > 0) {
      write_number(w, "target", target);
      w.key("met");
      w.boolean(x >= target);
    }
    w.end_object();
  }
}

}  // namespace

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
    if (r.host_threads > 0) w.field_uint("host_threads", r.host_threads);
    if (!r.note.empty()) w.field("note", r.note);
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
  write_baseline_ratios(f, skein_sync, w);
  w.end_object();
  w.end_object();
}

namespace {

std::string ms(double us) { return fixed(us / 1000, 3); }

std::string mb(uint64_t bytes) { return fixed(static_cast<double>(bytes) / (1 << 20), 1); }

double per_thread(uint64_t after, uint64_t before, size_t threads) {
  if (threads == 0) return 0;
  return (static_cast<double>(after) - static_cast<double>(before)) / static_cast<double>(threads);
}

std::string at_least(double figure, double target) {
  return "(target >= " + with_commas(static_cast<uint64_t>(target)) + ": " +
         verdict(figure >= target) + ")";
}

std::string at_most(double figure, double target) {
  return "(target <= " + with_commas(static_cast<uint64_t>(target)) + ": " +
         verdict(figure <= target) + ")";
}

void write_target(json_writer& w, std::string_view name, double figure, double target,
                  bool met) {
  w.key(name);
  w.begin_object();
  write_number(w, "figure", figure);
  write_number(w, "target", target);
  w.key("met");
  w.boolean(met);
  w.end_object();
}

}  // namespace

double runs_figures::runs_per_s() const {
  return seconds > 0 ? static_cast<double>(runs) / seconds : 0;
}

namespace {

// The ratio of runs/s skein must reach over `r`; 0: no target.
double runs_target(const runs_baseline_row& r) {
  if (r.system == "opennova-design") return runs_over_opennova_target;
  if (r.system == "kernl") return runs_over_kernl_target;
  return 0;
}

// "lace-design FULL", "kernl in-memory": the system and the first word of its mode.
std::string runs_baseline_name(const runs_baseline_row& r) {
  return r.system + " " + r.mode.substr(0, r.mode.find(' '));
}

double runs_ratio(const runs_figures& f, const runs_baseline_row& r) {
  return r.runs_per_s() > 0 ? f.runs_per_s() / r.runs_per_s() : 0;
}

void print_runs_baselines(const runs_figures& f, std::FILE* out) {
  for (const auto& r : f.baselines) {
    if (r.skipped.empty())
      std::fprintf(out, "%s: %s\n", runs_baseline_name(r).c_str(), r.note.c_str());
    else
      std::fprintf(out, "%s: skipped: %s\n", r.system.c_str(), r.skipped.c_str());
  }
  std::fprintf(out, "\n");
  for (const auto& r : f.baselines) {
    std::string line = "skein / " + runs_baseline_name(r) + ": ";
    double target = runs_target(r);
    if (!r.skipped.empty()) line += "not measured (skipped)";
    else line += fixed(runs_ratio(f, r), 2) + "x";
    if (target > 0 && r.skipped.empty())
      line += "  (target >= " + fixed(target, 1) + ": " + verdict(runs_ratio(f, r) >= target) + ")";
    std::fprintf(out, "%s\n", line.c_str());
  }
}

void write_runs_baselines(const runs_figures& f, json_writer& w) {
  w.key("baselines");
  w.begin_array();
  for (const auto& r : f.baselines) {
    w.begin_object();
    w.field("system", r.system);
    w.field("mode", r.mode);
    if (!r.skipped.empty()) {
      w.field("skipped", r.skipped);
      w.end_object();
      continue;
    }
    w.field_uint("threads", r.threads);
    w.field_uint("host_threads", r.host_threads);
    w.field_uint("runs", r.runs);
    w.field_uint("events", r.events);
    write_number(w, "seconds", r.seconds);
    write_number(w, "runs_per_s", r.runs_per_s());
    write_number(w, "p50_us", r.p50_us);
    write_number(w, "p99_us", r.p99_us);
    w.field("note", r.note);
    w.end_object();
  }
  w.end_array();
}

// In "targets": skein over each baseline, and target and met if it has one; a
// skipped baseline has neither figure nor verdict, only why it was skipped.
void write_runs_ratios(const runs_figures& f, json_writer& w) {
  for (const auto& r : f.baselines) {
    double x = runs_ratio(f, r), target = runs_target(r);
    w.key(json_name("skein_over_" + runs_baseline_name(r)));
    w.begin_object();
    if (!r.skipped.empty()) w.field("skipped", r.skipped);
    else write_number(w, "figure", x);
    if (target > 0) write_number(w, "target", target);
    if (target > 0 && r.skipped.empty()) {
      w.key("met");
      w.boolean(x >= target);
    }
    w.end_object();
  }
}

}  // namespace

void print_runs(const runs_figures& f, std::FILE* out) {
  std::fprintf(out,
               "runs: %s threads x %zu runs through skein::runtime, scripted engine at 0 ms, "
               "durability sync;\n"
               "%zu host threads, %zu runs in flight per thread (one running, the rest queued)\n\n",
               with_commas(f.threads).c_str(), f.runs_per_thread, f.host_threads,
               f.window_per_thread);
  double per_write =
      f.writes > 0 ? static_cast<double>(f.commits) / static_cast<double>(f.writes) : 0;
  std::vector<std::vector<std::string>> rows = {
      {"system", "durability", "runs", "seconds", "runs/s", "p50 ms", "p99 ms", "commits/write",
       "failures"},
      {"skein", "sync", with_commas(f.runs), fixed(f.seconds, 2),
       with_commas(static_cast<uint64_t>(f.runs_per_s())), ms(f.p50_us), ms(f.p99_us),
       fixed(per_write, 1), with_commas(f.failures)}};
  for (const auto& r : f.baselines) {
    if (!r.skipped.empty()) continue;
    rows.push_back({r.system, r.mode, with_commas(r.runs), fixed(r.seconds, 2),
                    with_commas(static_cast<uint64_t>(r.runs_per_s())), ms(r.p50_us),
                    ms(r.p99_us), "-", "0"});
  }
  print_table(rows, out);
  std::fprintf(out,
               "\nlatency: send to completion, waited for in send order (a run that ended before "
               "an earlier one\n"
               "is recorded when that one ends)\n");
  print_runs_baselines(f, out);
  std::fprintf(out, "runs/s: %s  %s\n", with_commas(static_cast<uint64_t>(f.runs_per_s())).c_str(),
               at_least(f.runs_per_s(), runs_per_s_target).c_str());
}

void write_runs_json(const runs_figures& f, json_writer& w) {
  w.begin_object();
  w.field_uint("threads", f.threads);
  w.field_uint("runs_per_thread", f.runs_per_thread);
  w.field_uint("host_threads", f.host_threads);
  w.field_uint("window_per_thread", f.window_per_thread);
  w.field("durability", "sync");
  w.field_uint("engine_latency_ms", 0);
  w.field_uint("runs", f.runs);
  write_number(w, "seconds", f.seconds);
  write_number(w, "runs_per_s", f.runs_per_s());
  write_number(w, "p50_us", f.p50_us);
  write_number(w, "p99_us", f.p99_us);
  w.field_uint("commits", f.commits);
  w.field_uint("writes", f.writes);
  w.field_uint("failures", f.failures);
  write_runs_baselines(f, w);
  w.key("targets");
  w.begin_object();
  write_target(w, "runs_per_s", f.runs_per_s(), runs_per_s_target,
               f.runs_per_s() >= runs_per_s_target);
  write_runs_ratios(f, w);
  w.end_object();
  w.end_object();
}

double latency_figures::runs_per_s() const {
  return seconds > 0 ? static_cast<double>(completed) / seconds : 0;
}

void print_latency(const latency_figures& f, std::FILE* out) {
  std::fprintf(out,
               "latency: %s runs in flight at once (one per thread), scripted engine at %s ms, "
               "durability sync\n\n",
               with_commas(f.runs).c_str(), with_commas(f.engine_latency_ms).c_str());
  print_table({{"system", "durability", "runs", "seconds", "runs/s", "p50 ms", "p99 ms",
                "RSS at start MB", "peak RSS MB", "failures"},
               {"skein", "sync", with_commas(f.completed), fixed(f.seconds, 2),
                with_commas(static_cast<uint64_t>(f.runs_per_s())), ms(f.p50_us), ms(f.p99_us),
                mb(f.rss_start_bytes), mb(f.rss_peak_bytes), with_commas(f.failures)}},
              out);
  double peak_mb = static_cast<double>(f.rss_peak_bytes) / (1 << 20);
  std::fprintf(out,
               "\npeak RSS: the whole process, sampled every 50 ms (%s samples), from a start "
               "after malloc_trim(0)\n",
               with_commas(f.rss_samples).c_str());
  std::fprintf(out, "runs/s: %s  %s\n", with_commas(static_cast<uint64_t>(f.runs_per_s())).c_str(),
               at_least(f.runs_per_s(), latency_runs_per_s_target).c_str());
  std::fprintf(out, "peak RSS MB: %s  %s\n", fixed(peak_mb, 1).c_str(),
               at_most(peak_mb, latency_rss_mb_max).c_str());
}

void write_latency_json(const latency_figures& f, json_writer& w) {
  double peak_mb = static_cast<double>(f.rss_peak_bytes) / (1 << 20);
  w.begin_object();
  w.field_uint("runs", f.runs);
  w.field_uint("engine_latency_ms", f.engine_latency_ms);
  w.field("durability", "sync");
  w.field_uint("completed", f.completed);
  write_number(w, "seconds", f.seconds);
  write_number(w, "runs_per_s", f.runs_per_s());
  write_number(w, "p50_us", f.p50_us);
  write_number(w, "p99_us", f.p99_us);
  w.field_uint("rss_start_bytes", f.rss_start_bytes);
  w.field_uint("rss_peak_bytes", f.rss_peak_bytes);
  w.field_uint("rss_samples", f.rss_samples);
  w.field_uint("failures", f.failures);
  w.key("targets");
  w.begin_object();
  write_target(w, "runs_per_s", f.runs_per_s(), latency_runs_per_s_target,
               f.runs_per_s() >= latency_runs_per_s_target);
  write_target(w, "peak_rss_mb", peak_mb, latency_rss_mb_max, peak_mb <= latency_rss_mb_max);
  w.end_object();
  w.end_object();
}

double scale_figures::active_bytes_per_thread() const {
  return per_thread(rss_active_bytes, rss_created_bytes, threads);
}

double scale_figures::passivated_bytes_per_thread() const {
  return per_thread(rss_passivated_bytes, rss_baseline_bytes, threads);
}

double scale_figures::trimmed_bytes_per_thread() const {
  return per_thread(rss_trimmed_bytes, rss_baseline_bytes, threads);
}

namespace {

// A table cell: "<= 2,048 met".
std::string limit(double figure, double target) {
  return "<= " + with_commas(static_cast<uint64_t>(target)) + " " + verdict(figure <= target);
}

void print_scale_memory(const scale_figures& f, std::FILE* out) {
  double active = f.active_bytes_per_thread();
  double passivated = f.passivated_bytes_per_thread();
  double trimmed = f.trimmed_bytes_per_thread();
  print_table(
      {{"state", "RSS MB", "bytes/thread", "target"},
       {"baseline: runtime open, no thread (trimmed)", mb(f.rss_baseline_bytes), "", ""},
       {"threads created, none active", mb(f.rss_created_bytes), "", ""},
       {"every thread active", mb(f.rss_active_bytes), with_commas(static_cast<uint64_t>(active)),
        limit(active, scale_active_bytes_max)},
       {"every thread passivated", mb(f.rss_passivated_bytes),
        with_commas(static_cast<uint64_t>(std::max(0.0, passivated))),
        limit(passivated, scale_passivated_bytes_max)},
       {"  the same after malloc_trim(0)", mb(f.rss_trimmed_bytes),
        with_commas(static_cast<uint64_t>(std::max(0.0, trimmed))), ""}},
      out, 1);
  std::fprintf(out,
               "\nactive: RSS over 'threads created', per thread actor: the directory's entry, the "
               "actor, its idle timer\n"
               "and the RocksDB blocks its activation read.\n"
               "passivated: RSS over the baseline, per thread: RocksDB memtables and block cache "
               "count here, and so\n"
               "does heap that malloc keeps after the actors are gone (the malloc_trim row shows "
               "how much was free).\n");
}

void print_scale_cold(const scale_figures& f, std::FILE* out) {
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"cold threads", "history events", "samples", "cancel() p50 ms", "p99 ms",
                  "first run p50 ms", "p99 ms"});
  for (const auto& r : f.cold) {
    rows.push_back({r.threads, with_commas(r.history_events), with_commas(r.samples),
                    ms(r.cancel_p50_us), ms(r.cancel_p99_us), ms(r.run_p50_us), ms(r.run_p99_us)});
  }
  print_table(rows, out, 1);
  std::fprintf(out,
               "\ncancel() on a passive thread activates its actor from the manifest alone; the "
               "history is read\n"
               "by the thread's first run, which is why that run is timed too. RocksDB's caches "
               "are warm.\n");
}

}  // namespace

void print_scale(const scale_figures& f, std::FILE* out) {
  std::fprintf(out,
               "scale: %s threads, idle_passivate_ms %s (the targets are set for %s threads; "
               "--scale %g creates them)\n",
               with_commas(f.threads).c_str(), with_commas(f.idle_passivate_ms).c_str(),
               with_commas(f.threads_target).c_str(), f.scale_for_target);
  std::fprintf(out,
               "created in %s s, every thread touched with cancel() in %s s, all passivated %s s "
               "after the last touch\n\n",
               fixed(f.create_seconds, 1).c_str(), fixed(f.touch_seconds, 1).c_str(),
               fixed(f.passivate_seconds, 1).c_str());
  print_scale_memory(f, out);
  std::fprintf(out, "\n");
  print_scale_cold(f, out);
}

void write_scale_json(const scale_figures& f, json_writer& w) {
  w.begin_object();
  w.field_uint("threads", f.threads);
  w.field_uint("threads_target", f.threads_target);
  w.field_uint("idle_passivate_ms", f.idle_passivate_ms);
  write_number(w, "create_seconds", f.create_seconds);
  write_number(w, "touch_seconds", f.touch_seconds);
  write_number(w, "passivate_seconds", f.passivate_seconds);
  w.field_uint("rss_baseline_bytes", f.rss_baseline_bytes);
  w.field_uint("rss_created_bytes", f.rss_created_bytes);
  w.field_uint("rss_active_bytes", f.rss_active_bytes);
  w.field_uint("rss_passivated_bytes", f.rss_passivated_bytes);
  w.field_uint("rss_trimmed_bytes", f.rss_trimmed_bytes);
  write_number(w, "active_bytes_per_thread", f.active_bytes_per_thread());
  write_number(w, "passivated_bytes_per_thread", f.passivated_bytes_per_thread());
  write_number(w, "trimmed_bytes_per_thread", f.trimmed_bytes_per_thread());
  w.key("cold");
  w.begin_array();
  for (const auto& r : f.cold) {
    w.begin_object();
    w.field("threads", r.threads);
    w.field_uint("history_events", r.history_events);
    w.field_uint("samples", r.samples);
    write_number(w, "cancel_p50_us", r.cancel_p50_us);
    write_number(w, "cancel_p99_us", r.cancel_p99_us);
    write_number(w, "run_p50_us", r.run_p50_us);
    write_number(w, "run_p99_us", r.run_p99_us);
    w.end_object();
  }
  w.end_array();
  w.key("targets");
  w.begin_object();
  double active = f.active_bytes_per_thread();
  double passivated = f.passivated_bytes_per_thread();
  write_target(w, "active_bytes_per_thread", active, scale_active_bytes_max,
               active <= scale_active_bytes_max);
  write_target(w, "passivated_bytes_per_thread", passivated, scale_passivated_bytes_max,
               passivated <= scale_passivated_bytes_max);
  w.end_object();
  w.end_object();
}

double http_row::runs_per_s() const {
  return seconds > 0 ? static_cast<double>(runs) / seconds : 0;
}

double http_figures::http_over_embedded() const {
  double base = embedded.runs_per_s();
  return base > 0 ? http.runs_per_s() / base : 0;
}

void print_http(const http_figures& f, std::FILE* out) {
  std::fprintf(out,
               "http: %s threads x %zu runs, scripted engine at 0 ms, durability sync, each path on "
               "a fresh database;\n"
               "http: POST /v1/threads/{id}/entries {\"wait\":true} from %zu client threads (one "
               "keep-alive connection each)\n"
               "to the server in this process on 127.0.0.1 (%zu I/O threads); embedded: "
               "runtime::send().wait() from %zu host threads\n\n",
               with_commas(f.threads).c_str(), f.runs_per_thread, f.clients, f.io_threads,
               f.clients);
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"path", "runs", "seconds", "runs/s", "p50 ms", "p99 ms", "failures"});
  for (const http_row* r : {&f.http, &f.embedded}) {
    rows.push_back({r->path, with_commas(r->runs), fixed(r->seconds, 2),
                    with_commas(static_cast<uint64_t>(r->runs_per_s())), ms(r->p50_us),
                    ms(r->p99_us), with_commas(r->failures)});
  }
  print_table(rows, out, 1);
  std::fprintf(out,
               "\nlatency: http, request written to response read; embedded, send to completion. "
               "Each client has\n"
               "one run in flight, so both paths hold the same %zu runs at once.\n",
               f.clients);
  std::fprintf(out, "http / embedded runs/s: %s (the cost of the HTTP layer)\n",
               fixed(f.http_over_embedded(), 2).c_str());
}

void write_http_json(const http_figures& f, json_writer& w) {
  w.begin_object();
  w.field_uint("threads", f.threads);
  w.field_uint("runs_per_thread", f.runs_per_thread);
  w.field_uint("clients", f.clients);
  w.field_uint("io_threads", f.io_threads);
  w.field("durability", "sync");
  w.field_uint("engine_latency_ms", 0);
  for (const http_row* r : {&f.http, &f.embedded}) {
    w.key(r->path);
    w.begin_object();
    w.field_uint("runs", r->runs);
    write_number(w, "seconds", r->seconds);
    write_number(w, "runs_per_s", r->runs_per_s());
    write_number(w, "p50_us", r->p50_us);
    write_number(w, "p99_us", r->p99_us);
    w.field_uint("failures", r->failures);
    w.end_object();
  }
  write_number(w, "http_over_embedded", f.http_over_embedded());
  w.end_object();
}

double fanout_row::events_per_s() const {
  return seconds > 0 ? static_cast<double>(delivered) / seconds : 0;
}

namespace {

// "1 MiB", "64 KiB", "1,000 B": a limit as it would be written.
std::string binary_size(uint64_t bytes) {
  if (bytes > 0 && bytes % (1 << 20) == 0) return with_commas(bytes >> 20) + " MiB";
  if (bytes > 0 && bytes % (1 << 10) == 0) return with_commas(bytes >> 10) + " KiB";
  return with_commas(bytes) + " B";
}

std::string buffer_cell(const fanout_row& r) {
  return binary_size(r.stream_buffer_bytes_max) + (r.default_buffer ? " (default)" : " (raised)");
}

// Says whether the buffer had to be raised, and why, or that it did not.
void print_buffer_note(const fanout_figures& f, std::FILE* out) {
  const fanout_row& first = f.rows.front();
  if (f.rows.size() == 1) {
    std::fprintf(out,
                 "stream_buffer_bytes_max: the default %s disconnected no subscriber at this "
                 "load; not raised\n",
                 binary_size(first.stream_buffer_bytes_max).c_str());
    return;
  }
  std::fprintf(out,
               "stream_buffer_bytes_max: the default %s disconnected %s of %s subscribers at this "
               "load, so the\n"
               "second row raises it to %s\n",
               binary_size(first.stream_buffer_bytes_max).c_str(),
               with_commas(first.disconnected).c_str(), with_commas(f.subscribers).c_str(),
               binary_size(f.rows.back().stream_buffer_bytes_max).c_str());
}

}  // namespace

void print_fanout(const fanout_figures& f, std::FILE* out) {
  std::fprintf(out,
               "fanout: %s subscribers on one thread's event stream (GET "
               "/v1/threads/{id}/stream?from_seq=%s),\n"
               "%s runs from one producer (runtime::send().wait()), scripted engine at 0 ms, "
               "durability sync;\n"
               "server in this process on 127.0.0.1 (%zu I/O threads); subscribers: non-blocking "
               "sockets on one poll() thread\n",
               with_commas(f.subscribers).c_str(), with_commas(f.from_seq).c_str(),
               with_commas(f.runs).c_str(), f.io_threads);
  std::string nofile = with_commas(f.nofile_limit);
  if (f.nofile_limit != f.nofile_before) nofile += " (raised from " + with_commas(f.nofile_before) + ")";
  std::fprintf(out, "RLIMIT_NOFILE: %s\n\n", nofile.c_str());
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"stream_buffer_bytes_max", "events", "expected", "delivered", "MB",
                  "subscribe s", "produce s", "deliver s", "events/s", "disconnected"});
  for (const auto& r : f.rows) {
    rows.push_back({buffer_cell(r), with_commas(r.events), with_commas(r.expected),
                    with_commas(r.delivered), mb(r.bytes), fixed(r.subscribe_seconds, 2),
                    fixed(r.produce_seconds, 2), fixed(r.seconds, 2),
                    with_commas(static_cast<uint64_t>(r.events_per_s())),
                    with_commas(r.disconnected)});
  }
  print_table(rows, out, 1);
  std::fprintf(out,
               "\nevents: the thread's last_seq delta; expected: subscribers x events; delivered: "
               "frames with an id:\n"
               "line counted over all subscribers (deltas and keep-alives are not). produce: first "
               "send to the last\n"
               "run's end; deliver: first send to the last event at the last subscriber; events/s "
               "= delivered / deliver.\n"
               "disconnected: streams the server closed for falling behind (its slow_clients "
               "counter).\n");
  print_buffer_note(f, out);
}

void write_fanout_json(const fanout_figures& f, json_writer& w) {
  w.begin_object();
  w.field_uint("subscribers", f.subscribers);
  w.field_uint("runs", f.runs);
  w.field_uint("io_threads", f.io_threads);
  w.field("durability", "sync");
  w.field_uint("engine_latency_ms", 0);
  w.field_uint("from_seq", f.from_seq);
  w.field_uint("nofile_limit", f.nofile_limit);
  w.field_uint("nofile_before", f.nofile_before);
  w.key("rows");
  w.begin_array();
  for (const auto& r : f.rows) {
    w.begin_object();
    w.field_uint("stream_buffer_bytes_max", r.stream_buffer_bytes_max);
    w.key("default_buffer");
    w.boolean(r.default_buffer);
    w.field_uint("events", r.events);
    w.field_uint("expected", r.expected);
    w.field_uint("delivered", r.delivered);
    w.field_uint("bytes", r.bytes);
    w.field_uint("disconnected", r.disconnected);
    write_number(w, "subscribe_seconds", r.subscribe_seconds);
    write_number(w, "produce_seconds", r.produce_seconds);
    write_number(w, "seconds", r.seconds);
    write_number(w, "events_per_s", r.events_per_s());
    w.end_object();
  }
  w.end_array();
  w.key("buffer_raised");
  w.boolean(f.rows.size() > 1);
  w.end_object();
}

double recovery_figures::per_interrupted_ms() const {
  if (after_repair.interrupted == 0) return 0;
  return (after_repair.open_seconds - clean.open_seconds) * 1000 /
         static_cast<double>(after_repair.interrupted);
}

namespace {

const char* recovery_open_name(const recovery_figures& f, const recovery_open* o) {
  if (o == &f.first_open) return "first, after the build";
  return o == &f.clean ? "clean reopen" : "after interrupted runs";
}

}  // namespace

void print_recovery(const recovery_figures& f, std::FILE* out) {
  std::fprintf(out,
               "recovery: %s threads, %s events (%s MB on disk), durability sync\n"
               "built through the event log (durability flush) in %s s (%s writes) and %s "
               "interrupted runs written in %s s:\nneither is part of any figure\n\n",
               with_commas(f.threads).c_str(), with_commas(f.events).c_str(),
               mb(f.db_bytes).c_str(), fixed(f.build_seconds, 1).c_str(),
               with_commas(f.build_writes).c_str(),
               with_commas(f.after_repair.interrupted).c_str(),
               fixed(f.interrupt_seconds, 2).c_str());
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"open", "interrupted runs", "repaired", "WAL at open MB", "runtime::open ms",
                  "first run ms", "open + run ms"});
  for (const recovery_open* o : {&f.first_open, &f.clean, &f.after_repair}) {
    rows.push_back({recovery_open_name(f, o),
                    with_commas(o->interrupted), with_commas(o->repaired), mb(o->wal_bytes),
                    fixed(o->open_seconds * 1000, 1), fixed(o->first_run_seconds * 1000, 2),
                    fixed((o->open_seconds + o->first_run_seconds) * 1000, 1)});
  }
  print_table(rows, out, 1);
  std::fprintf(out,
               "\nruntime::open: RocksDB open (with the replay of the WAL it finds), recovery, "
               "agents, actors: then runs\n"
               "can be sent. first run: one run (scripted engine at 0 ms) on an existing passive "
               "thread right after\n"
               "the open, send to completion. The page cache holds the database (just written).\n"
               "The first open replays the WAL the build left, as a restart after a long run "
               "replays what was written\n"
               "since RocksDB last flushed its memtables; the clean reopen finds next to none. "
               "per interrupted run:\n"
               "(open after interrupted runs - clean reopen) / interrupted runs.\n"
               "repairs: every interrupted run was repaired, and %zu repaired threads checked "
               "event by event\n"
               "(tool_result error, thread.interrupted, thread.stop failed, status failed).\n",
               f.repair_sample);
  std::string at = f.events == f.events_target
                       ? ""
                       : " at " + with_commas(f.events_target) + " events";
  for (const recovery_open* o : {&f.first_open, &f.clean}) {
    double ready = o->ready_seconds();
    std::fprintf(out, "ready, %s: %s s  (target < %s s%s: %s)\n", recovery_open_name(f, o),
                 fixed(ready, 3).c_str(), fixed(recovery_ready_seconds_max, 0).c_str(),
                 at.c_str(), verdict(ready < recovery_ready_seconds_max));
  }
  double per = f.per_interrupted_ms();
  std::fprintf(out, "per interrupted run: %s ms  (target <= %s ms: %s)\n", fixed(per, 3).c_str(),
               fixed(recovery_per_interrupted_ms_max, 0).c_str(),
               verdict(per <= recovery_per_interrupted_ms_max));
}

void write_recovery_json(const recovery_figures& f, json_writer& w) {
  w.begin_object();
  w.field_uint("threads", f.threads);
  w.field_uint("events", f.events);
  w.field_uint("events_target", f.events_target);
  w.field("durability", "sync");
  write_number(w, "build_seconds", f.build_seconds);
  w.field_uint("build_writes", f.build_writes);
  w.field_uint("db_bytes", f.db_bytes);
  write_number(w, "interrupt_seconds", f.interrupt_seconds);
  w.field_uint("repair_sample", f.repair_sample);
  for (const recovery_open* o : {&f.first_open, &f.clean, &f.after_repair}) {
    w.key(o == &f.first_open ? "first_open" : o == &f.clean ? "clean_reopen" : "after_repair");
    w.begin_object();
    w.field_uint("interrupted", o->interrupted);
    w.field_uint("repaired", o->repaired);
    w.field_uint("wal_bytes", o->wal_bytes);
    write_number(w, "open_seconds", o->open_seconds);
    write_number(w, "first_run_seconds", o->first_run_seconds);
    w.end_object();
  }
  write_number(w, "per_interrupted_ms", f.per_interrupted_ms());
  w.key("targets");
  w.begin_object();
  write_target(w, "ready_first_open_seconds", f.first_open.ready_seconds(),
               recovery_ready_seconds_max, f.first_open.ready_seconds() < recovery_ready_seconds_max);
  write_target(w, "ready_clean_reopen_seconds", f.clean.ready_seconds(),
               recovery_ready_seconds_max, f.clean.ready_seconds() < recovery_ready_seconds_max);
  write_target(w, "per_interrupted_ms", f.per_interrupted_ms(), recovery_per_interrupted_ms_max,
               f.per_interrupted_ms() <= recovery_per_interrupted_ms_max);
  w.end_object();
  w.end_object();
}

double history_append::us_per_event() const {
  return events > 0 ? seconds * 1e6 / static_cast<double>(events) : 0;
}

double history_append::events_per_s() const {
  return seconds > 0 ? static_cast<double>(events) / seconds : 0;
}

double history_append::commits_per_write() const {
  return writes > 0 ? static_cast<double>(events) / static_cast<double>(writes) : 0;
}

namespace {

double cost_ratio(const history_figures& f, double (*cost)(const history_row&)) {
  if (f.rows.empty() || cost(f.rows.front()) <= 0) return 0;
  return cost(f.rows.back()) / cost(f.rows.front());
}

double concurrent_cost(const history_row& r) { return r.concurrent.us_per_event(); }
double sequential_cost(const history_row& r) { return r.sequential.us_per_event(); }

void print_history_appends(const history_figures& f, std::FILE* out) {
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"history events", "appends", "events", "events/s", "us/event", "commits/write",
                  "p50 ms", "p99 ms"});
  for (const auto& r : f.rows) {
    for (const history_append* a : {&r.concurrent, &r.sequential}) {
      rows.push_back({with_commas(r.history_events),
                      a == &r.concurrent ? "concurrent" : "sequential", with_commas(a->events),
                      with_commas(static_cast<uint64_t>(a->events_per_s())),
                      fixed(a->us_per_event(), 1), fixed(a->commits_per_write(), 1),
                      ms(a->p50_us), ms(a->p99_us)});
    }
  }
  print_table(rows, out);
  std::fprintf(out,
               "\nconcurrent: %zu threads of the length, one tick in flight each; us/event = "
               "wall time / events.\n"
               "sequential: one thread, one tick at a time; us/event = the mean ack latency. "
               "Latency: send to ack.\n",
               f.threads_per_length);
}

void print_history_cold(const history_figures& f, std::FILE* out) {
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"history events", "samples", "activation p50 ms", "max ms", "first run p50 ms",
                  "max ms"});
  for (const auto& r : f.rows) {
    rows.push_back({with_commas(r.history_events), with_commas(r.cold_samples),
                    ms(r.activate_p50_us), ms(r.activate_max_us), ms(r.run_p50_us),
                    ms(r.run_max_us)});
  }
  print_table(rows, out, 1);
  std::fprintf(out,
               "\nthrough skein::runtime, before the appends: cancel() on a passive thread "
               "activates it from its manifest;\n"
               "its first run then reads the whole log once, which grows with the history. Not "
               "part of the append figures.\n");
}

}  // namespace

double history_figures::concurrent_ratio() const { return cost_ratio(*this, concurrent_cost); }

double history_figures::sequential_ratio() const { return cost_ratio(*this, sequential_cost); }

void print_history(const history_figures& f, std::FILE* out) {
  std::fprintf(out,
               "history: one-event ticks through the journal on threads with long logs, "
               "durability sync;\n"
               "%zu threads per history length, built through the event log (%s events in %s s: "
               "not part of any figure);\n"
               "the lengths take turns, %zu rounds\n\n",
               f.threads_per_length, with_commas(f.build_events).c_str(),
               fixed(f.build_seconds, 1).c_str(), f.rounds);
  print_history_appends(f, out);
  std::fprintf(out, "\n");
  print_history_cold(f, out);
  if (f.rows.size() < 2) return;
  std::string longest = with_commas(f.rows.back().history_events);
  std::string shortest = with_commas(f.rows.front().history_events);
  for (double (*cost)(const history_row&) : {concurrent_cost, sequential_cost}) {
    double x = cost_ratio(f, cost);
    std::fprintf(out, "\nus/event, %s-event history over %s-event, %s: %sx  (target <= %s: %s)",
                 longest.c_str(), shortest.c_str(),
                 cost == concurrent_cost ? "concurrent" : "sequential", fixed(x, 2).c_str(),
                 fixed(history_cost_ratio_max, 1).c_str(), verdict(x <= history_cost_ratio_max));
  }
  std::fprintf(out, "\n");
}

void write_history_json(const history_figures& f, json_writer& w) {
  w.begin_object();
  w.field_uint("threads_per_length", f.threads_per_length);
  w.field_uint("rounds", f.rounds);
  w.field("durability", "sync");
  w.field_uint("build_events", f.build_events);
  write_number(w, "build_seconds", f.build_seconds);
  w.key("rows");
  w.begin_array();
  for (const auto& r : f.rows) {
    w.begin_object();
    w.field_uint("history_events", r.history_events);
    for (const history_append* a : {&r.concurrent, &r.sequential}) {
      w.key(a == &r.concurrent ? "concurrent" : "sequential");
      w.begin_object();
      w.field_uint("events", a->events);
      write_number(w, "seconds", a->seconds);
      write_number(w, "us_per_event", a->us_per_event());
      write_number(w, "events_per_s", a->events_per_s());
      w.field_uint("writes", a->writes);
      write_number(w, "p50_us", a->p50_us);
      write_number(w, "p99_us", a->p99_us);
      w.end_object();
    }
    w.key("cold");
    w.begin_object();
    w.field_uint("samples", r.cold_samples);
    write_number(w, "activate_p50_us", r.activate_p50_us);
    write_number(w, "activate_max_us", r.activate_max_us);
    write_number(w, "run_p50_us", r.run_p50_us);
    write_number(w, "run_max_us", r.run_max_us);
    w.end_object();
    w.end_object();
  }
  w.end_array();
  w.key("targets");
  w.begin_object();
  write_target(w, "concurrent_cost_ratio", f.concurrent_ratio(), history_cost_ratio_max,
               f.concurrent_ratio() <= history_cost_ratio_max);
  write_target(w, "sequential_cost_ratio", f.sequential_ratio(), history_cost_ratio_max,
               f.sequential_ratio() <= history_cost_ratio_max);
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
