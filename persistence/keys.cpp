// Key formats, version 3 (the schema version in the `meta` column family).
//
//   threads    key := thread-id                                  value := manifest JSON
//                                                                (since schema 5 possibly behind
//                                                                its log: event_log_tick.cpp)
//   events     key := thread-id 0x00 be64(seq)                   value := event JSON
//   index      key := "a/" agent-id "/" thread-id                value := ""
//                   | "p/" parent-id "/" thread-id
//                   | "s/" status "/" thread-id
//                   | "t/" tag "/" thread-id
//                   | "u/" be64(updated_at_ms - updated_at_ms % 1000) "/" thread-id
//                   | "k/" thread-id "/" idempotency-key      value := be64(first seq) run-id
//                   | "c/" claim-kind "/" claimed-id          value := thread-id
//   claim-kind := "task" (claimed-id: a task id; the task's dedicated thread)
//               | "dm"   (claimed-id: an agent id; the agent's DM thread)
//   usage      key := thread-id 0x00 be64(seq)                   value := usage JSON
//   effects    key := effect-name 0x00 thread-id                 value := be64(last seq processed)
//   embeddings key := thread-id 0x00 be64(seq)                   value := embedding
//                                                                (grammar in runtime/model/embedding.hpp)
//   schedules  key := "d/" schedule-id                           value := schedule JSON
//                   | "h/" schedule-id 0x00 be64(history seq)   value := firing JSON
//                                                                (both grammars in runtime/model/schedule.cpp)
//   agents     key := agent-id                                   value := agent JSON
//   meta       key := "schema_version"                           value := decimal
//   inbox      key := thread-id 0x00 be64(arrival)               value := inbox input JSON
//                                                                (grammar in runtime/model/run.hpp)
//   work, graph, sessions, suggestions (version 3, work items): keys and values in
//                                                                persistence/work_rows.cpp
//
// Version 2 lacked the work-item families; opening it creates them (empty) and
// records version 3. Version 1 differed only in the usage key, be64(ts_ms) thread-id 0x00 be64(seq):
// erasing a thread had to read its log to find its rows. Opening a version-1
// database rewrites its usage rows (event_log.cpp) before anything else runs.
//
// Claims ("c/") make a thread unique for what it claims: the writer puts one in
// the tick that creates the thread, refusing the tick with `conflict` when the key
// names another live thread (or another tick of the same group claimed it), and
// deletes it with the thread. A database from before claims has none: its threads
// are simply unclaimed (a lookup misses them), and nothing needs migrating.
//
// Schedule definitions ("d/") and history rows ("h/") never share a prefix, so a
// listing of definitions never meets a history row; a schedule's history is the
// range ["h/" id 0x00, "h/" id 0x01), newest last, and no other schedule's rows fall
// in it (ids hold no 0x00). Nothing wrote the schedules family before, so the
// schema version did not change.
//
// be64 is an 8-byte big-endian unsigned integer. Ids never contain 0x00 or '/'
// (validate_id), so "t1" 0x00 sorts before "t10" and a thread's events are one
// contiguous range [thread 0x00, thread 0x01) that no other thread shares.
// Manifest and event JSON grammars are in runtime/model/json_codec.cpp, the agent
// grammar in runtime/model/agent.hpp, the usage grammar in persistence/event_log_tick.cpp.
#include "persistence/keys.hpp"

#include <cassert>

namespace skein::keys {

void put_be64(std::string* out, uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8) out->push_back(static_cast<char>((v >> shift) & 0xff));
}

uint64_t get_be64(std::string_view b) {
  assert(b.size() >= 8);  // callers check the key length first
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<unsigned char>(b[i]);
  return v;
}

std::string event_key(std::string_view thread, uint64_t seq) {
  std::string k;
  k.reserve(thread.size() + 9);
  k.append(thread);
  k.push_back('\0');
  put_be64(&k, seq);
  return k;
}

std::string event_prefix(std::string_view thread) {
  std::string k{thread};
  k.push_back('\0');
  return k;
}

std::string event_prefix_end(std::string_view thread) {
  std::string k{thread};
  k.push_back('\1');
  return k;
}

bool parse_event_key(std::string_view key, std::string_view* thread, uint64_t* seq) {
  if (key.size() < 10 || key[key.size() - 9] != '\0') return false;
  *thread = key.substr(0, key.size() - 9);
  *seq = get_be64(key.substr(key.size() - 8));
  return true;
}

std::string index_prefix(char kind, std::string_view value) {
  std::string k;
  k.reserve(value.size() + 3);
  k.push_back(kind);
  k.push_back('/');
  k.append(value);
  k.push_back('/');
  return k;
}

std::string index_key(char kind, std::string_view value, std::string_view thread) {
  std::string k = index_prefix(kind, value);
  k.append(thread);
  return k;
}

std::string updated_value(int64_t updated_at_ms) {
  std::string v;
  int64_t second = updated_at_ms < 0 ? 0 : updated_at_ms - updated_at_ms % 1000;
  put_be64(&v, static_cast<uint64_t>(second));
  return v;
}

std::string idempotency_prefix(std::string_view thread) { return index_prefix('k', thread); }

std::string idempotency_key(std::string_view thread, std::string_view key) {
  return index_key('k', thread, key);
}

std::string claim_key(std::string_view kind, std::string_view id) { return index_key('c', kind, id); }

std::string usage_key(std::string_view thread, uint64_t seq) { return event_key(thread, seq); }

std::string usage_key_v1(int64_t ts_ms, std::string_view thread, uint64_t seq) {
  std::string k;
  put_be64(&k, static_cast<uint64_t>(ts_ms < 0 ? 0 : ts_ms));
  k.append(thread);
  k.push_back('\0');
  put_be64(&k, seq);
  return k;
}

bool parse_usage_key_v1(std::string_view key, int64_t* ts_ms, std::string_view* thread,
                        uint64_t* seq) {
  if (key.size() < 8 + 1 + 9 || key[0] != '\0') return false;
  uint64_t ts = get_be64(key);
  if (ts > static_cast<uint64_t>(INT64_MAX)) return false;
  *ts_ms = static_cast<int64_t>(ts);
  return parse_event_key(key.substr(8), thread, seq);
}

std::string effect_key(std::string_view effect, std::string_view thread) {
  std::string k{effect};
  k.push_back('\0');
  k.append(thread);
  return k;
}

std::string schedule_key(std::string_view id) {
  std::string k = "d/";
  k.append(id);
  return k;
}

std::string schedule_history_key(std::string_view id, uint64_t seq) {
  std::string k = schedule_history_prefix(id);
  put_be64(&k, seq);
  return k;
}

std::string schedule_history_prefix(std::string_view id) {
  std::string k = "h/";
  k.append(id);
  k.push_back('\0');
  return k;
}

std::string schedule_history_end(std::string_view id) {
  std::string k = "h/";
  k.append(id);
  k.push_back('\1');
  return k;
}

}  // namespace skein::keys
