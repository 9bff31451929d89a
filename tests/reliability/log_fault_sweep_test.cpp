// The fault sweep at the storage level: the event log and its journal under a
// file system that fails the n-th write, sync, read or rename (once, or from then
// on), or loses power at the n-th mutating operation, for every n a clean run of
// the workload performs (SKEIN_FAULT_SWEEP=full) or a spread of them.
//
// Each run: a database with history (copied from a template) is opened under the
// armed file system; three writers commit ticks through one journal, each tick
// after the previous one's answer, as thread actors do; the session is closed
// (after a power loss: the unsynced data is dropped). Then the database is opened
// on a healthy file system and must hold every acknowledged tick at its seqs,
// logs without gaps that match their manifests, and no tick in part. It must
// take new writes. In the faulted session every call must come back with a
// value or an error: a hang fails the run.
#include <caf/all.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <rocksdb/env.h>
#include <thread>

#include "actors/error.hpp"
#include "actors/journal.hpp"
#include "tests/reliability/sweep_support.hpp"
#include "tests/support/fault_fs.hpp"
#include "tests/support/log_fixtures.hpp"
#include "tests/support/temp_dir.hpp"

using namespace skein;
using namespace skein::test;
using namespace std::chrono_literals;

namespace {

constexpr size_t writers = 3;
constexpr size_t ticks_per_writer = 8;
constexpr size_t quick_points = 7;   // n per kind and fault mode in the quick sweep
// Small enough that the workload crosses it: flushes, new SSTs and MANIFEST
// writes happen during the faulted session, not only at close.
constexpr uint64_t wal_bytes_max = 24 << 10;
constexpr auto session_limit = 60s;  // a faulted session and its check, together

// A tick's events carry its identity: "<thread>|<tick>|<index>|<count>|padding".
std::string event_text(const std::string& thread, size_t k, size_t i, size_t n) {
  return thread + "|" + std::to_string(k) + "|" + std::to_string(i) + "|" + std::to_string(n) + "|" +
         std::string(300, 'x');
}

struct identity {
  std::string tick;  // "<thread>|<k>"
  size_t index = 0, count = 0;
};

bool parse_identity(const std::string& text, identity* out) {
  size_t a = text.find('|'), b = text.find('|', a + 1), c = text.find('|', b + 1), d = text.find('|', c + 1);
  if (d == std::string::npos) return false;
  out->tick = text.substr(0, b);
  out->index = std::stoul(text.substr(b + 1, c - b - 1));
  out->count = std::stoul(text.substr(c + 1, d - c - 1));
  return true;
}

tick tagged_tick(const std::string& thread, uint64_t first_seq, size_t k, size_t count, bool create) {
  tick t = make_tick(thread, first_seq, count);
  t.create = create;
  for (size_t i = 0; i < count; ++i) t.events[i].text = event_text(thread, k, i, count);
  return t;
}

struct attempt {
  std::string thread;
  size_t k = 0, count = 0;
  bool acked = false;
  uint64_t first_seq = 0;  // where it was acknowledged
};

std::unique_ptr<event_log> open_log(const std::string& path, rocksdb::Env* env, status* s) {
  log_options o;
  o.path = path;
  o.mode = durability::sync;
  o.env = env;
  o.wal_bytes_max = wal_bytes_max;
  std::unique_ptr<event_log> log;
  *s = event_log::open(o, &log);
  return log;
}

struct sweep_env {
  temp_dir dir{temp_dir::memory_base()};  // syncs cost nothing there: the sweep tests logic
  std::shared_ptr<fault_fs> fs = std::make_shared<fault_fs>();
  std::unique_ptr<rocksdb::Env> env = rocksdb::NewCompositeEnv(fs);
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  std::string template_db = dir.str("template");
  uint64_t run_counter = 0;

  sweep_env() {
    register_skein_types(cfg);
    cfg.set("scheduler.max-threads", 2);
    sys = std::make_unique<caf::actor_system>(cfg);
    // History the faulted sessions start from: the w threads, flushed to SSTs.
    status s;
    auto log = open_log(template_db, nullptr, &s);
    REQUIRE(s.is_ok());
    for (size_t w = 0; w < writers; ++w) {
      std::string id = "w" + std::to_string(w);
      auto t = tagged_tick(id, 1, 0, 2, true);
      REQUIRE(log->commit(t).is_ok());
    }
  }

  // One faulted session on a copy of the template; returns its attempts.
  std::vector<attempt> faulted_session(const std::string& db, sweep_tally* tally) {
    status s;
    auto log = open_log(db, env.get(), &s);
    std::vector<attempt> attempts;
    if (!s) {
      ++tally->open_refused;
      return attempts;
    }
    auto journal = spawn_journal(*sys, *log);
    std::mutex mu;
    bool refused = false;  // guarded by mu: a writer stopped on a failed read
    std::vector<std::thread> threads;
    for (size_t w = 0; w < writers; ++w) {
      threads.emplace_back([&, w] {
        // Thread w{w} has history; n{w} is created in this session.
        for (std::string id : {"w" + std::to_string(w), "n" + std::to_string(w)}) {
          manifest m;
          status r = log->read_manifest(id, &m);
          bool create = r.code() == errc::not_found;
          if (!r && !create) {  // a failed read: this writer stops, as an actor would
            std::lock_guard<std::mutex> lock{mu};
            refused = true;
            return;
          }
          uint64_t last = create ? 0 : m.last_seq;
          for (size_t k = 1; k <= ticks_per_writer / 2; ++k) {
            size_t count = 1 + (k + w) % 3;
            auto t = tagged_tick(id, last + 1, k, count, create);
            status c = journal_commit(*sys, journal, t);
            std::lock_guard<std::mutex> lock{mu};
            attempts.push_back({id, k, count, c.is_ok(), last + 1});
            if (c) {
              last = t.manifest.last_seq;
              create = false;
              continue;
            }
            // Like a thread actor after a failed commit: start again from what the log says.
            manifest again;
            status re = log->read_manifest(id, &again);
            if (re) {
              last = again.last_seq;
              create = false;
            } else if (re.code() != errc::not_found) {
              refused = true;
              return;
            }
          }
        }
      });
    }
    for (auto& t : threads) t.join();
    journal_close(*sys, journal).ignore();
    log.reset();
    bool failed = refused;
    for (const auto& a : attempts) failed = failed || !a.acked;
    ++(failed ? tally->writes_failed : tally->unaffected);
    return attempts;
  }

  // Reopens on a healthy file system and checks every claim of the sweep.
  void verify(const std::string& db, const std::vector<attempt>& attempts, sweep_tally* tally) {
    status s;
    auto log = open_log(db, nullptr, &s);
    INFO("reopen: " << s.to_string());
    REQUIRE(s.is_ok());
    std::map<std::string, std::vector<uint64_t>> seqs_of_tick;  // tick identity -> seqs it holds
    std::map<std::string, std::map<size_t, uint64_t>> index_seq;
    for (size_t w = 0; w < writers; ++w) {
      for (std::string id : {"w" + std::to_string(w), "n" + std::to_string(w)}) {
        manifest m;
        status r = log->read_manifest(id, &m);
        if (r.code() == errc::not_found && id[0] == 'n') continue;
        INFO("thread " << id << ": " << r.to_string());
        REQUIRE(r.is_ok());
        std::vector<event> events;
        REQUIRE(log->read_events(id, 1, 0, &events).is_ok());
        REQUIRE(events.size() == m.last_seq);  // the manifest matches its log
        for (size_t i = 0; i < events.size(); ++i) {
          REQUIRE(events[i].seq == i + 1);  // no gaps, no duplicates
          identity who;
          REQUIRE(parse_identity(events[i].text, &who));
          seqs_of_tick[who.tick].push_back(events[i].seq);
          index_seq[who.tick][who.index] = events[i].seq;
          REQUIRE(who.count > 0);
        }
        // Every tick present is whole: all of its events, consecutive.
        for (const auto& [t, by_index] : index_seq) {
          if (t.rfind(id + "|", 0) != 0) continue;
          identity first;
          REQUIRE(parse_identity(events[by_index.begin()->second - 1].text, &first));
          INFO("tick " << t);
          REQUIRE(by_index.size() == first.count);
          REQUIRE(seqs_of_tick[t].size() == first.count);
          for (size_t i = 0; i < first.count; ++i) REQUIRE(by_index.at(i) == by_index.at(0) + i);
        }
        // The database takes new writes.
        auto next = tagged_tick(id, m.last_seq + 1, 99, 1, false);
        REQUIRE(log->commit(next).is_ok());
      }
    }
    for (const auto& a : attempts) {
      if (!a.acked) continue;
      ++tally->acked;
      std::string t = a.thread + "|" + std::to_string(a.k);
      INFO("acknowledged tick " << t << " at seq " << a.first_seq);
      REQUIRE(index_seq.count(t) == 1);
      REQUIRE(index_seq[t].at(0) == a.first_seq);
    }
  }

  void run_one(fault_fs::kind k, uint64_t n, fault_fs::fault f, sweep_tally* tally) {
    sweep_run(*this, "log sweep", k, n, f, session_limit, tally);
  }

  // Operations of each kind one clean session performs.
  std::map<fault_fs::kind, uint64_t> count_clean() { return count_clean_session(*this); }
};

void print_tally(const char* what, const sweep_tally& t, double seconds) {
  print_sweep_tally("log fault sweep", what, "writes", "ticks", t, seconds);
}

}  // namespace

TEST_CASE("log fault sweep: failed writes/syncs/reads/renames lose nothing acknowledged and split no tick") {
  sweep_env e;
  auto counts = e.count_clean();
  std::printf("log fault sweep (%s): a clean session does %llu writes, %llu syncs, %llu reads, %llu renames\n",
              full_sweep() ? "full" : "quick", static_cast<unsigned long long>(counts[fault_fs::kind::append]),
              static_cast<unsigned long long>(counts[fault_fs::kind::sync]),
              static_cast<unsigned long long>(counts[fault_fs::kind::read]),
              static_cast<unsigned long long>(counts[fault_fs::kind::rename]));
  REQUIRE(counts[fault_fs::kind::append] > 0);
  REQUIRE(counts[fault_fs::kind::sync] > 0);
  REQUIRE(counts[fault_fs::kind::rename] > 0);
  for (auto f : {fault_fs::fault::once, fault_fs::fault::persistent}) {
    for (auto k : {fault_fs::kind::append, fault_fs::kind::sync, fault_fs::kind::read, fault_fs::kind::rename}) {
      sweep_tally tally;
      auto start = std::chrono::steady_clock::now();
      for (uint64_t n : sweep_points(counts[k], quick_points)) {
        INFO(kind_name(k) << (f == fault_fs::fault::once ? " fails once" : " fails from then on") << " at n=" << n);
        e.run_one(k, n, f, &tally);
      }
      std::string what = std::string{kind_name(k)} + (f == fault_fs::fault::once ? ", once" : ", persistent");
      print_tally(what.c_str(), tally, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      CHECK(tally.runs > 0);
    }
  }
}

TEST_CASE("log fault sweep: a power loss at any write, sync or rename keeps every acknowledged tick") {
  sweep_env e;
  auto counts = e.count_clean();
  uint64_t total = counts[fault_fs::kind::power_loss];
  std::printf("log power-loss sweep (%s): a clean session does %llu mutating operations\n",
              full_sweep() ? "full" : "quick", static_cast<unsigned long long>(total));
  REQUIRE(total > 0);
  sweep_tally tally;
  auto start = std::chrono::steady_clock::now();
  for (uint64_t n : sweep_points(total, 2 * quick_points)) {
    INFO("power lost at mutating operation n=" << n);
    e.run_one(fault_fs::kind::power_loss, n, fault_fs::fault::persistent, &tally);
  }
  print_tally("power loss", tally, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  std::printf("log power-loss sweep: %llu unsynced bytes dropped in all\n",
              static_cast<unsigned long long>(e.fs->dropped_bytes()));
  CHECK(tally.writes_failed + tally.open_refused > 0);  // the sweep did hit the workload
  CHECK(e.fs->dropped_bytes() > 0);                     // and the power losses took data
}
