// lace_design: the storage design of the Lace agent tool, rebuilt in C++ as a
// skein-bench baseline. SQLite in WAL mode, one transaction per event:
//
//   threads(id TEXT PRIMARY KEY, agent_id TEXT NOT NULL, created_at INTEGER NOT NULL,
//           updated_at INTEGER NOT NULL, last_seq INTEGER NOT NULL)
//   events(id INTEGER PRIMARY KEY, thread_id TEXT NOT NULL, seq INTEGER NOT NULL,
//          created_at INTEGER NOT NULL, data TEXT NOT NULL)      -- data: the event's JSON
//   INDEX events_by_thread ON events(thread_id, seq)
//   append_event := BEGIN IMMEDIATE; INSERT INTO events; UPDATE threads SET updated_at,
//                   last_seq; COMMIT
//
// synchronous=FULL fsyncs the WAL at every commit; NORMAL only at checkpoints, so a
// commit survives a process crash but not a power loss.
//
// One connection, shared by every caller behind a mutex. SQLite admits one writer at
// a time whatever the connections. Measured with 4 writer threads, one connection
// each (busy_timeout) ran as fast within noise, but now and then far slower: a loser
// of the write lock sleeps in SQLite's busy handler (1 ms, then longer) where here it
// waits on the mutex. So the shared connection is the faster honest choice. Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "runtime/model/status.hpp"

struct sqlite3;
struct sqlite3_stmt;

namespace skein::bench {

enum class lace_sync { full, normal };

// What the database holds for one thread.
struct lace_thread_counts {
  uint64_t events = 0;         // rows in events
  uint64_t distinct_seqs = 0;  // among them
  uint64_t min_seq = 0;        // 0 without rows
  uint64_t max_seq = 0;
  uint64_t last_seq = 0;       // of its row in threads
};

// "FULL" or "NORMAL", as the pragma spells it.
const char* to_string(lace_sync s);

class lace_store {
 public:
  // Creates the database at `path` (a file, which must not exist) with the schema above.
  static status open(const std::string& path, lace_sync sync, std::unique_ptr<lace_store>* out);
  ~lace_store();
  lace_store(const lace_store&) = delete;
  lace_store& operator=(const lace_store&) = delete;

  // Inserts the thread's row, last_seq 0, in a transaction of its own.
  status create_thread(const std::string& thread, std::string_view agent, int64_t now_ms);

  // One transaction: the event's row, and the thread's updated_at and last_seq moved to it.
  status append_event(const std::string& thread, uint64_t seq, std::string_view json,
                      int64_t now_ms);

  // What the database holds for `thread` (not_found without its row in threads).
  status read_thread(const std::string& thread, lace_thread_counts* out);

 private:
  lace_store() = default;
  status prepare();
  // Runs `body` between BEGIN IMMEDIATE and COMMIT, rolling back when it fails.
  status in_transaction(const char* what, const std::function<status()>& body);

  std::mutex mutex_;          // guards the connection and its statements
  sqlite3* db_ = nullptr;     // owned
  sqlite3_stmt* begin_ = nullptr;
  sqlite3_stmt* commit_ = nullptr;
  sqlite3_stmt* rollback_ = nullptr;
  sqlite3_stmt* insert_thread_ = nullptr;
  sqlite3_stmt* insert_event_ = nullptr;
  sqlite3_stmt* update_thread_ = nullptr;
  sqlite3_stmt* count_events_ = nullptr;
  sqlite3_stmt* select_thread_ = nullptr;
};

}  // namespace skein::bench
