// Tables and JSON of the workloads over skein::runtime and its server: runs,
// latency, scale, http and fanout. Shared formatting: report_format.hpp.
#include <algorithm>
#include <cmath>

#include "bench/report.hpp"
#include "bench/report_format.hpp"

namespace skein::bench {

using namespace detail;

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

}  // namespace skein::bench
