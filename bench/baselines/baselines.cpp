// The append and runs baselines (baselines.hpp): the same threads written step by
// step from host threads, host h owning threads h, h + hosts, ... and going round by
// round, as skein's threads all step at once. A step of append is one tick (one
// event); a step of runs is one run: the five events of skein's scripted run. Their
// calls block, so a host thread has one step in flight. Databases:
// <workload>-opennova-design/ and <workload>-lace-design-<FULL|NORMAL>/lace.db.
//
// opennova-design (the OpenNova agent tool's storage, rebuilt): one JSONL file per
// thread, <thread>.jsonl := manifest "\n" (event "\n")*. An event line is appended
// and fdatasynced; after each step the manifest line is replaced (skein's tick
// carries the manifest in its batch), which rewrites the file: read it, write
// <thread>.jsonl.tmp, fsync, rename. The directory is not fsynced after the rename,
// which errs in the design's favour. A lock per thread is held across its appends and
// across its rewrite, or an append between the read and the rename would be lost.
//
// lace-design (the Lace agent tool's storage, rebuilt): SQLite in WAL mode, one
// transaction per event (BEGIN IMMEDIATE; INSERT INTO events; UPDATE threads SET
// updated_at, last_seq; COMMIT), schema in design::open. synchronous=FULL fsyncs the
// WAL at every commit; NORMAL only at checkpoints (a commit survives a process crash,
// not a power loss). One connection shared behind a mutex: one connection per writer
// (busy_timeout) ran as fast within noise but now and then far slower, a loser of
// the write lock sleeping in SQLite's busy handler (1 ms, then longer).
#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <mutex>
#include <thread>

#include "bench/baselines/baselines.hpp"
#include "runtime/model/ids.hpp"
#include "runtime/model/json_codec.hpp"
#include "runtime/model/manifest.hpp"

namespace skein::bench {
namespace {

struct design_spec {
  const char* system;
  const char* mode;  // opennova-design: how it syncs; lace-design: its synchronous pragma
  bool capped;       // NORMAL syncs at checkpoints only: cheap enough for every step
  const char* tick_note;
  const char* run_note;
};

constexpr const char* lace_tick_note =
    "one transaction per event (INSERT event, UPDATE thread), WAL, one connection behind a mutex";
constexpr const char* lace_run_note =
    "a run: 5 transactions (INSERT event, UPDATE thread), WAL, one connection behind a mutex";
constexpr design_spec designs[] = {
    {"opennova-design", "fdatasync", true,
     "each tick: its event line appended + fdatasync, then the manifest line rewritten (temp file, fsync, rename)",
     "a run: 5 event lines, each appended + fdatasync, then the manifest line rewritten (temp file, fsync, rename)"},
    {"lace-design", "FULL", true, lace_tick_note, lace_run_note},
    {"lace-design", "NORMAL", false, lace_tick_note, lace_run_note},
};

bool is_nova(const design_spec& spec) { return spec.mode == std::string_view{"fdatasync"}; }

status os_error(const std::string& what, const std::string& path) {
  return status::io_error(what + " " + path + ": " + std::strerror(errno));
}

// Writes `data` to `path` opened with `flags`, then fdatasyncs (`data_only`) or
// fsyncs it before closing it.
status write_synced(const std::string& path, std::string_view data, int flags, bool data_only) {
  int fd = ::open(path.c_str(), flags | O_WRONLY | O_CLOEXEC, 0644);
  if (fd < 0) return os_error("open", path);
  status s = status::ok();
  while (s && !data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n >= 0) data.remove_prefix(static_cast<size_t>(n));
    else if (errno != EINTR) s = os_error("write", path);
  }
  if (s && (data_only ? ::fdatasync(fd) : ::fsync(fd)) != 0) s = os_error(data_only ? "fdatasync" : "fsync", path);
  ::close(fd);
  return s;
}

status read_whole(const std::string& path, std::string* out) {
  std::ifstream in{path, std::ios::binary | std::ios::ate};
  if (!in) return os_error("open", path);
  out->resize(static_cast<size_t>(in.tellg()));
  in.seekg(0);
  if (!in.read(out->data(), static_cast<std::streamsize>(out->size()))) return status::io_error("read " + path);
  return status::ok();
}

status sqlite_error(sqlite3* db, int rc, const std::string& what) {
  std::string text = "sqlite " + what + ": " + (db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
  return rc == SQLITE_FULL ? status::no_space(text) : status::io_error(text);
}

void bind_arg(sqlite3_stmt* s, int i, std::string_view v) {
  sqlite3_bind_text(s, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
}
void bind_arg(sqlite3_stmt* s, int i, int64_t v) { sqlite3_bind_int64(s, i, v); }

// Binds `args` to ?1, ?2, ... of `s` (text as SQLITE_STATIC: `s` is stepped before
// it goes), steps `s`, which must return no row, and resets it.
template <class... Args>
status step(sqlite3* db, sqlite3_stmt* s, const char* what, const Args&... args) {
  [[maybe_unused]] int i = 0;
  (bind_arg(s, ++i, args), ...);
  int rc = sqlite3_step(s);
  sqlite3_reset(s);
  return rc == SQLITE_DONE ? status::ok() : sqlite_error(db, rc, what);
}

// One design, opened fresh in `dir` over `threads` (created there before the clock).
class design {
 public:
  design(const design_spec& spec, std::string dir, size_t threads)
      : spec_(spec), dir_(std::move(dir)), locks_(threads) {}
  ~design() {
    for (sqlite3_stmt* s : statements_) sqlite3_finalize(s);  // a no-op on nullptr
    sqlite3_close_v2(db_);
  }
  design(const design&) = delete;
  design& operator=(const design&) = delete;

  status open(const std::vector<manifest>& threads) {
    SKEIN_TRY(fresh_dir(dir_));
    if (nova()) {
      for (const auto& m : threads) {
        std::string line;
        SKEIN_TRY(encode_manifest(m, &line));
        SKEIN_TRY(write_synced(file(m.id), line + "\n", O_CREAT | O_TRUNC, false));
      }
      return status::ok();
    }
    std::string path = dir_ + "/lace.db";
    int rc = sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                             nullptr);
    if (rc != SQLITE_OK) return sqlite_error(db_, rc, "open " + path);
    std::string journal;
    auto first_value = [](void* out, int, char** values, char**) {
      static_cast<std::string*>(out)->assign(values[0] != nullptr ? values[0] : "");
      return 0;
    };
    rc = sqlite3_exec(db_, "PRAGMA journal_mode=WAL", first_value, &journal, nullptr);
    if (rc != SQLITE_OK) return sqlite_error(db_, rc, "PRAGMA journal_mode=WAL");
    if (journal != "wal") return status::io_error("sqlite " + path + ": journal_mode is " + journal);
    std::string setup = std::string{"PRAGMA synchronous="} + spec_.mode +
                        ";"
                        "CREATE TABLE threads(id TEXT PRIMARY KEY, agent_id TEXT NOT NULL, "
                        "created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, last_seq INTEGER NOT NULL);"
                        "CREATE TABLE events(id INTEGER PRIMARY KEY, thread_id TEXT NOT NULL, "
                        "seq INTEGER NOT NULL, created_at INTEGER NOT NULL, data TEXT NOT NULL);"
                        "CREATE INDEX events_by_thread ON events(thread_id, seq);";
    rc = sqlite3_exec(db_, setup.c_str(), nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) return sqlite_error(db_, rc, "create the schema");
    const char* sql[] = {"BEGIN IMMEDIATE", "COMMIT",
                         "INSERT INTO events(thread_id, seq, created_at, data) VALUES(?1, ?2, ?3, ?4)",
                         "UPDATE threads SET updated_at = ?2, last_seq = ?3 WHERE id = ?1",
                         "INSERT INTO threads(id, agent_id, created_at, updated_at, last_seq) "
                         "VALUES(?1, ?2, ?3, ?3, 0)"};
    for (size_t k = 0; k < std::size(sql); ++k) {
      rc = sqlite3_prepare_v3(db_, sql[k], -1, SQLITE_PREPARE_PERSISTENT, &statements_[k], nullptr);
      if (rc != SQLITE_OK) return sqlite_error(db_, rc, sql[k]);
    }
    // Each thread's row in a transaction of its own.
    for (const auto& m : threads)
      SKEIN_TRY(step(db_, statements_[4], "insert thread", m.id, std::string_view{bench_agent_id}, m.created_at_ms));
    return status::ok();
  }

  // Thread `i`'s events of one step, seqs first_seq, ...; `m` its manifest before it.
  status step_thread(size_t i, manifest m, uint64_t first_seq, const std::vector<std::string>& events) {
    if (!nova()) {
      for (size_t k = 0; k < events.size(); ++k) {
        std::lock_guard lock{lace_mutex_};
        auto seq = static_cast<int64_t>(first_seq + k);
        int64_t now = now_ms();
        SKEIN_TRY(step(db_, statements_[0], "BEGIN IMMEDIATE"));
        status s = step(db_, statements_[2], "insert event", m.id, seq, now, events[k]);
        if (s) s = step(db_, statements_[3], "update thread", m.id, now, seq);
        if (s && sqlite3_changes(db_) != 1) s = status::not_found("lace thread " + m.id);
        if (s) s = step(db_, statements_[1], "append event");
        // The first failure is the one to report.
        if (!s && sqlite3_get_autocommit(db_) == 0) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
        SKEIN_TRY(s);
      }
      return status::ok();
    }
    std::string path = file(m.id), line, old;
    std::lock_guard lock{locks_[i]};
    for (const auto& e : events) SKEIN_TRY(write_synced(path, e + "\n", O_APPEND, true));
    m.updated_at_ms = now_ms();
    m.last_seq = first_seq + events.size() - 1;
    SKEIN_TRY(encode_manifest(m, &line));
    SKEIN_TRY(read_whole(path, &old));
    size_t end_of_manifest = old.find('\n');
    if (end_of_manifest == std::string::npos) return status::corruption(path + ": no manifest line");
    line.append(old, end_of_manifest, std::string::npos);  // from its "\n" on
    SKEIN_TRY(write_synced(path + ".tmp", line, O_CREAT | O_TRUNC, false));
    if (::rename((path + ".tmp").c_str(), path.c_str()) != 0) return os_error("rename to", path);
    return status::ok();
  }

  // The thread must hold exactly seqs 1..events (OpenNova: and its manifest at last_seq events).
  status check(const std::string& id, uint64_t events) {
    auto wrong = [&](const std::string& what) {
      return status::corruption("thread " + id + ": " + what + ", expected seqs 1.." + std::to_string(events));
    };
    if (!nova()) {
      const char* sql = "SELECT count(*), count(DISTINCT seq), coalesce(min(seq), 0), coalesce(max(seq), 0), "
                        "(SELECT last_seq FROM threads WHERE id = ?1) FROM events WHERE thread_id = ?1";
      sqlite3_stmt* q = nullptr;
      int rc = sqlite3_prepare_v2(db_, sql, -1, &q, nullptr);
      if (rc == SQLITE_OK) {
        bind_arg(q, 1, id);
        rc = sqlite3_step(q);
      }
      uint64_t c[5] = {};
      for (int k = 0; rc == SQLITE_ROW && k < 5; ++k) c[k] = static_cast<uint64_t>(sqlite3_column_int64(q, k));
      sqlite3_finalize(q);
      if (rc != SQLITE_ROW) return sqlite_error(db_, rc, "count events");
      if (c[0] != events || c[1] != events || c[2] != std::min<uint64_t>(events, 1) || c[3] != events || c[4] != events)
        return wrong(std::to_string(c[0]) + " event rows, " + std::to_string(c[1]) + " distinct seqs from " +
                     std::to_string(c[2]) + " to " + std::to_string(c[3]) + ", threads.last_seq " +
                     std::to_string(c[4]));
      return status::ok();
    }
    std::string body;
    SKEIN_TRY(read_whole(file(id), &body));
    if (body.empty() || body.back() != '\n') return wrong("empty or a torn last line");
    size_t begin = body.find('\n');
    manifest m;
    SKEIN_TRY(decode_manifest(std::string_view{body}.substr(0, begin), &m));
    uint64_t lines = 0;
    for (++begin; begin < body.size(); ++lines) {
      size_t end = body.find('\n', begin);
      event e;
      SKEIN_TRY(decode_event(std::string_view{body}.substr(begin, end - begin), &e));
      if (e.seq != lines + 1) return wrong("line " + std::to_string(lines + 2) + " holds seq " + std::to_string(e.seq));
      begin = end + 1;
    }
    if (m.id != id || m.last_seq != events || lines != events)
      return wrong("manifest of " + m.id + " at last_seq " + std::to_string(m.last_seq) + " over " +
                   std::to_string(lines) + " event lines");
    return status::ok();
  }

 private:
  bool nova() const { return is_nova(spec_); }
  std::string file(const std::string& id) const { return dir_ + "/" + id + ".jsonl"; }

  const design_spec& spec_;
  std::string dir_;
  std::vector<std::mutex> locks_;  // opennova: one per thread, see the top of the file
  std::mutex lace_mutex_;          // lace: guards the connection and its statements
  sqlite3* db_ = nullptr;
  sqlite3_stmt* statements_[5] = {};  // lace: as prepared in open()
};

// The events of step `round` of thread `i` (its first seq follows the earlier steps').
using step_events = std::function<status(size_t i, size_t round, std::vector<std::string>* events)>;

// Creates `threads` on the design under `workload`'s directory, runs `rounds` steps
// of `per_step` events on each from `hosts` host threads, then reads every thread
// back; the first failure stops every host. *row gets the steps' figures.
status drive_design(const design_spec& spec, const std::string& workload, const std::vector<manifest>& threads,
                    size_t rounds, uint64_t per_step, size_t hosts, const bench_options& options,
                    const step_events& make, measured_row* row) {
  row->system = spec.system;
  row->mode = spec.mode;
  std::string label = row->system + " " + row->mode;
  auto failed = [&](const status& s, const char* what) { return status{s.code(), label + ": " + what + s.message()}; };
  design d{spec, options.dir + "/" + workload + "-" + spec.system + (is_nova(spec) ? "" : "-" + row->mode),
           threads.size()};
  if (status s = d.open(threads); !s) return failed(s, "");
  std::vector<std::vector<int64_t>> ns(hosts);
  std::atomic<bool> stop{false};
  progress bar{label, threads.size() * rounds, options.quiet};
  auto start = bench_clock::now();
  status s = on_host_threads(hosts, hosts, [&](size_t h) {
    std::vector<std::string> events;
    for (size_t round = 0; round < rounds; ++round) {
      for (size_t i = h; i < threads.size() && !stop.load(std::memory_order_relaxed); i += hosts) {
        auto sent = bench_clock::now();
        status called = make(i, round, &events);
        if (called) called = d.step_thread(i, threads[i], round * per_step + 1, events);
        ns[h].push_back((bench_clock::now() - sent).count());
        bar.advance();
        if (!called) {
          stop = true;
          return called;
        }
      }
    }
    return status::ok();
  });
  row->seconds = seconds_since(start, bench_clock::now());
  if (!s) return failed(s, "");
  std::vector<int64_t> all;
  for (auto& n : ns) all.insert(all.end(), n.begin(), n.end());
  row->count = all.size();
  row->take_latencies(std::move(all), false);
  for (const auto& m : threads)
    if (status v = d.check(m.id, rounds * per_step); !v) return failed(v, "lost writes: ");
  return status::ok();
}

// One fsync or more per event: capped as the rocksdb put-sync baseline is, at about
// `at_scale_1` events (append: whole rounds, so every thread ends with as many) or
// runs (runs: whole threads, each with every one of its runs, so files grow as
// skein's logs do).
size_t capped(double at_scale_1, double scale, size_t per_unit, size_t max) {
  return std::clamp<size_t>(static_cast<size_t>(std::llround(at_scale_1 * scale)) / per_unit, 1, max);
}

}  // namespace

status run_append_baselines(const std::vector<manifest>& threads, size_t ticks,
                            const std::function<status(size_t, uint64_t, std::string*)>& event_json,
                            const bench_options& options, std::vector<measured_row>* rows) {
  size_t hosts = 2 * std::max<size_t>(1, std::thread::hardware_concurrency());
  for (const auto& spec : designs) {
    size_t rounds = spec.capped ? capped(4000, options.scale, threads.size(), ticks) : ticks;
    measured_row& row = rows->emplace_back();
    SKEIN_TRY(drive_design(spec, "append", threads, rounds, 1, hosts, options,
                           [&](size_t i, size_t round, std::vector<std::string>* events) {
                             events->resize(1);
                             return event_json(i, round + 1, &events->front());
                           },
                           &row));
    row.note = std::string{spec.tick_note} + "; " + std::to_string(hosts) + " host threads" +
               (is_nova(spec) ? ", one lock per thread" : "");
  }
  return status::ok();
}

status run_runs_baselines(size_t threads, size_t runs_per_thread, size_t hosts, const bench_options& options,
                          std::vector<measured_row>* rows) {
  int64_t created_at_ms = now_ms();
  for (const auto& spec : designs) {
    size_t n = spec.capped ? capped(2000, options.scale, runs_per_thread, threads) : threads;
    std::vector<manifest> ms(n);
    for (size_t i = 0; i < n; ++i) {
      // An odd multiplier spreads the ids as random ones would, without repeats.
      ms[i].id = new_thread_id(created_at_ms, (i + 1) * 0x9e3779b97f4a7c15ull);
      ms[i].agent_id = bench_agent_id;
      ms[i].status = thread_status::open;  // where a chat thread rests between runs
      ms[i].created_at_ms = ms[i].updated_at_ms = created_at_ms;
    }
    measured_row& row = rows->emplace_back();
    SKEIN_TRY(drive_design(spec, "runs", ms, runs_per_thread, scripted_events_per_run, hosts, options,
                           [](size_t, size_t round, std::vector<std::string>* out) {
                             std::string run_id = new_run_id();
                             event events[] = {make_message(message_role::user, "run " + std::to_string(round)),
                                               make_signal("thread.start"), make_message(message_role::assistant, "ok"),
                                               make_result({}, 0, 0, 1, "completed"), make_signal("thread.stop")};
                             static_assert(std::size(events) == scripted_events_per_run);
                             out->assign(std::size(events), {});
                             for (size_t k = 0; k < std::size(events); ++k) {
                               events[k].seq = round * scripted_events_per_run + k + 1;
                               events[k].ts_ms = now_ms();
                               events[k].run_id = run_id;
                               SKEIN_TRY(encode_event(events[k], &(*out)[k]));
                             }
                             return status::ok();
                           },
                           &row));
    row.note = std::string{spec.run_note} + "; " +
               (n == threads ? "all " + std::to_string(n) + " threads"
                             : std::to_string(n) + " of the " + std::to_string(threads) + " threads (capped)") +
               ", " + std::to_string(hosts) + " host threads with one run in flight each";
  }
  // kernl: every thread at once on Node's one event loop; never fails the workload.
  run_kernl(threads, runs_per_thread, 0, &rows->emplace_back());
  return status::ok();
}

}  // namespace skein::bench
