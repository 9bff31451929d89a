// Key codec for the event log's column families. The grammar is in keys.cpp.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace skein::keys {

// Big-endian fixed-width integers, so that byte order is numeric order.
void put_be64(std::string* out, uint64_t v);
uint64_t get_be64(std::string_view eight_bytes);

// events CF
std::string event_key(std::string_view thread, uint64_t seq);
std::string event_prefix(std::string_view thread);       // thread 0x00
// Inbox keys share the event key's shape: thread 0x00 be64(arrival order).
inline std::string inbox_key(std::string_view thread, uint64_t order) { return event_key(thread, order); }
std::string event_prefix_end(std::string_view thread);   // thread 0x01: exclusive upper bound
// Splits an event key; false when it is not one.
bool parse_event_key(std::string_view key, std::string_view* thread, uint64_t* seq);

// index CF: "<kind>/<value>/<thread>" with kind one of a (agent), p (parent),
// s (status), t (tag), u (updated_at as be64).
std::string index_prefix(char kind, std::string_view value);
std::string index_key(char kind, std::string_view value, std::string_view thread);
// be64 of the (non-negative) time, truncated to the second: a thread that commits
// many ticks a second keeps one index entry instead of rewriting it every tick.
std::string updated_value(int64_t updated_at_ms);

// index CF, idempotency keys: "k/<thread>/<key>" -> be64(first seq) run-id
std::string idempotency_prefix(std::string_view thread);
std::string idempotency_key(std::string_view thread, std::string_view key);

// index CF, claims: "c/<kind>/<id>" -> thread id (kind "task" or "dm")
std::string claim_key(std::string_view kind, std::string_view id);

// usage CF: thread 0x00 be64(seq) of the result event — the shape of an event
// key, so a thread's usage rows are the range [event_prefix, event_prefix_end).
std::string usage_key(std::string_view thread, uint64_t seq);
// usage CF of schema 1, read once by the migration at open: be64(ts) thread 0x00
// be64(seq). Its first byte is 0x00 (times below 2^56 ms), which no id starts with.
std::string usage_key_v1(int64_t ts_ms, std::string_view thread, uint64_t seq);
bool parse_usage_key_v1(std::string_view key, int64_t* ts_ms, std::string_view* thread,
                        uint64_t* seq);

// embeddings CF: thread 0x00 be64(seq) — same shape as event keys
// effects CF: effect 0x00 thread
std::string effect_key(std::string_view effect, std::string_view thread);

// schedules CF: "d/" id -> definition and state; "h/" id 0x00 be64(seq) -> one firing
std::string schedule_key(std::string_view id);
std::string schedule_history_key(std::string_view id, uint64_t seq);
std::string schedule_history_prefix(std::string_view id);  // "h/" id 0x00
std::string schedule_history_end(std::string_view id);     // "h/" id 0x01: exclusive upper bound

}  // namespace skein::keys

namespace skein::detail {
// Listing cursors are index key suffixes in hex (event_log::list_threads; a
// cluster merges pages by them). In event_log.cpp.
std::string hex_encode(std::string_view bytes);
bool hex_decode(std::string_view hex, std::string* out);
}  // namespace skein::detail
