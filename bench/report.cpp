#include "bench/report.hpp"

#include "bench/report_format.hpp"

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
namespace detail {

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
                 size_t names) {
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

}  // namespace detail

using namespace detail;

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

namespace detail {

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

}  // namespace detail

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
