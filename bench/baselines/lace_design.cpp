#include "bench/baselines/lace_design.hpp"

#include <filesystem>
#include <sqlite3.h>

namespace skein::bench {
namespace {

constexpr const char* schema_sql =
    "CREATE TABLE threads(id TEXT PRIMARY KEY, agent_id TEXT NOT NULL, "
    "created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, last_seq INTEGER NOT NULL);"
    "CREATE TABLE events(id INTEGER PRIMARY KEY, thread_id TEXT NOT NULL, "
    "seq INTEGER NOT NULL, created_at INTEGER NOT NULL, data TEXT NOT NULL);"
    "CREATE INDEX events_by_thread ON events(thread_id, seq);";

status sqlite_error(sqlite3* db, int rc, const std::string& what) {
  std::string text = what + ": " + (db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
  if (rc == SQLITE_FULL) return status::no_space("sqlite " + text);
  return status::io_error("sqlite " + text);
}

// Steps a statement that returns no row, and resets it for the next use.
status step_done(sqlite3* db, sqlite3_stmt* s, const char* what) {
  int rc = sqlite3_step(s);
  sqlite3_reset(s);
  if (rc != SQLITE_DONE) return sqlite_error(db, rc, what);
  return status::ok();
}

// The one-row, one-column text answer of a pragma.
status pragma_text(sqlite3* db, const char* sql, std::string* out) {
  sqlite3_stmt* s = nullptr;
  int rc = sqlite3_prepare_v2(db, sql, -1, &s, nullptr);
  if (rc != SQLITE_OK) return sqlite_error(db, rc, sql);
  rc = sqlite3_step(s);
  if (rc == SQLITE_ROW) out->assign(reinterpret_cast<const char*>(sqlite3_column_text(s, 0)));
  sqlite3_finalize(s);
  if (rc != SQLITE_ROW) return sqlite_error(db, rc, sql);
  return status::ok();
}

void bind_text(sqlite3_stmt* s, int index, std::string_view text) {
  // SQLITE_STATIC: every caller steps the statement before `text` goes.
  sqlite3_bind_text(s, index, text.data(), static_cast<int>(text.size()), SQLITE_STATIC);
}

}  // namespace

const char* to_string(lace_sync s) { return s == lace_sync::full ? "FULL" : "NORMAL"; }

status lace_store::open(const std::string& path, lace_sync sync,
                        std::unique_ptr<lace_store>* out) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec))
    return status::conflict("sqlite database " + path + " exists");
  std::unique_ptr<lace_store> store{new lace_store};
  int rc = sqlite3_open_v2(path.c_str(), &store->db_,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                           nullptr);
  if (rc != SQLITE_OK) return sqlite_error(store->db_, rc, "open " + path);
  std::string mode;
  SKEIN_TRY(pragma_text(store->db_, "PRAGMA journal_mode=WAL", &mode));
  if (mode != "wal") return status::io_error("sqlite " + path + ": journal_mode is " + mode);
  std::string pragma = std::string{"PRAGMA synchronous="} + to_string(sync);
  rc = sqlite3_exec(store->db_, pragma.c_str(), nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return sqlite_error(store->db_, rc, pragma);
  rc = sqlite3_exec(store->db_, schema_sql, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return sqlite_error(store->db_, rc, "create the schema");
  SKEIN_TRY(store->prepare());
  *out = std::move(store);
  return status::ok();
}

status lace_store::prepare() {
  struct statement {
    sqlite3_stmt** s;
    const char* sql;
  };
  const statement statements[] = {
      {&begin_, "BEGIN IMMEDIATE"},
      {&commit_, "COMMIT"},
      {&rollback_, "ROLLBACK"},
      {&insert_thread_,
       "INSERT INTO threads(id, agent_id, created_at, updated_at, last_seq) "
       "VALUES(?1, ?2, ?3, ?3, 0)"},
      {&insert_event_,
       "INSERT INTO events(thread_id, seq, created_at, data) VALUES(?1, ?2, ?3, ?4)"},
      {&update_thread_, "UPDATE threads SET updated_at = ?2, last_seq = ?3 WHERE id = ?1"},
      {&count_events_,
       "SELECT count(*), count(DISTINCT seq), coalesce(min(seq), 0), coalesce(max(seq), 0) "
       "FROM events WHERE thread_id = ?1"},
      {&select_thread_, "SELECT last_seq FROM threads WHERE id = ?1"},
  };
  for (const auto& st : statements) {
    int rc = sqlite3_prepare_v3(db_, st.sql, -1, SQLITE_PREPARE_PERSISTENT, st.s, nullptr);
    if (rc != SQLITE_OK) return sqlite_error(db_, rc, st.sql);
  }
  return status::ok();
}

lace_store::~lace_store() {
  for (sqlite3_stmt* s : {begin_, commit_, rollback_, insert_thread_, insert_event_,
                          update_thread_, count_events_, select_thread_})
    sqlite3_finalize(s);  // a no-op on nullptr
  sqlite3_close_v2(db_);
}

status lace_store::in_transaction(const char* what, const std::function<status()>& body) {
  SKEIN_TRY(step_done(db_, begin_, "BEGIN IMMEDIATE"));
  status s = body();
  if (s) s = step_done(db_, commit_, what);
  if (!s && !sqlite3_get_autocommit(db_))
    step_done(db_, rollback_, "ROLLBACK").ignore();  // the first failure is the one to report
  return s;
}

status lace_store::create_thread(const std::string& thread, std::string_view agent,
                                 int64_t now_ms) {
  std::lock_guard lock{mutex_};
  return in_transaction("create thread", [&] {
    bind_text(insert_thread_, 1, thread);
    bind_text(insert_thread_, 2, agent);
    sqlite3_bind_int64(insert_thread_, 3, now_ms);
    return step_done(db_, insert_thread_, "insert thread");
  });
}

status lace_store::append_event(const std::string& thread, uint64_t seq, std::string_view json,
                                int64_t now_ms) {
  std::lock_guard lock{mutex_};
  return in_transaction("append event", [&] {
    bind_text(insert_event_, 1, thread);
    sqlite3_bind_int64(insert_event_, 2, static_cast<sqlite3_int64>(seq));
    sqlite3_bind_int64(insert_event_, 3, now_ms);
    bind_text(insert_event_, 4, json);
    SKEIN_TRY(step_done(db_, insert_event_, "insert event"));
    bind_text(update_thread_, 1, thread);
    sqlite3_bind_int64(update_thread_, 2, now_ms);
    sqlite3_bind_int64(update_thread_, 3, static_cast<sqlite3_int64>(seq));
    SKEIN_TRY(step_done(db_, update_thread_, "update thread"));
    if (sqlite3_changes(db_) != 1) return status::not_found("lace thread " + thread);
    return status::ok();
  });
}

status lace_store::read_thread(const std::string& thread, lace_thread_counts* out) {
  std::lock_guard lock{mutex_};
  bind_text(count_events_, 1, thread);
  int rc = sqlite3_step(count_events_);
  if (rc == SQLITE_ROW) {
    auto column = [&](int i) {
      return static_cast<uint64_t>(sqlite3_column_int64(count_events_, i));
    };
    out->events = column(0);
    out->distinct_seqs = column(1);
    out->min_seq = column(2);
    out->max_seq = column(3);
  }
  sqlite3_reset(count_events_);
  if (rc != SQLITE_ROW) return sqlite_error(db_, rc, "count events");
  bind_text(select_thread_, 1, thread);
  rc = sqlite3_step(select_thread_);
  if (rc == SQLITE_ROW)
    out->last_seq = static_cast<uint64_t>(sqlite3_column_int64(select_thread_, 0));
  sqlite3_reset(select_thread_);
  if (rc == SQLITE_DONE) return status::not_found("lace thread " + thread);
  if (rc != SQLITE_ROW) return sqlite_error(db_, rc, "select thread");
  return status::ok();
}

}  // namespace skein::bench
