// Fuzz target: the key codec (persistence/keys.cpp). Arbitrary bytes as a stored
// key must parse or be refused, never read out of bounds; keys built from
// arbitrary ids and seqs must parse back and keep a thread's events in one range,
// ordered by seq.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "persistence/keys.hpp"
#include "tests/fuzz/fuzz_check.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace keys = skein::keys;
  {
    // A key read back from a column family: untrusted bytes.
    std::string_view raw{reinterpret_cast<const char*>(data), size};
    std::string_view thread;
    uint64_t seq = 0;
    if (keys::parse_event_key(raw, &thread, &seq)) {
      SKEIN_FUZZ_CHECK(keys::event_key(thread, seq) == raw, "a parsed event key rebuilds the same bytes");
    }
  }
  skein::fuzz::input in{data, size};
  std::string thread = in.string(64);
  if (thread.empty()) thread = "t";  // ids are never empty (validate_id); parse_event_key relies on it
  uint64_t a = in.u64();
  uint64_t b = in.u64();
  std::string other = in.string(64);

  std::string ka = keys::event_key(thread, a), kb = keys::event_key(thread, b);
  std::string_view parsed_thread;
  uint64_t parsed_seq = 0;
  SKEIN_FUZZ_CHECK(keys::parse_event_key(ka, &parsed_thread, &parsed_seq), "an event key parses");
  SKEIN_FUZZ_CHECK(parsed_thread == thread && parsed_seq == a, "an event key round-trips");
  SKEIN_FUZZ_CHECK((a < b) == (ka < kb), "event keys order by seq");
  SKEIN_FUZZ_CHECK(keys::get_be64(ka.substr(ka.size() - 8)) == a, "be64 round-trips");

  // Ids never hold 0x00 (validate_id): then a thread's events are one range that
  // no other thread's events fall into.
  if (thread.find('\0') == std::string::npos && other.find('\0') == std::string::npos) {
    std::string lo = keys::event_prefix(thread), hi = keys::event_prefix_end(thread);
    SKEIN_FUZZ_CHECK(lo <= ka && ka < hi, "an event key lies in its thread's range");
    if (other != thread) {
      std::string ko = keys::event_key(other, b);
      SKEIN_FUZZ_CHECK(!(lo <= ko && ko < hi), "another thread's event lies outside the range");
    }
  }

  char kind = static_cast<char>(in.byte());
  std::string value = in.string(64);
  std::string ik = keys::index_key(kind, value, thread);
  SKEIN_FUZZ_CHECK(ik.rfind(keys::index_prefix(kind, value), 0) == 0, "an index key starts with its prefix");
  std::string ek = keys::effect_key(other, thread);
  SKEIN_FUZZ_CHECK(ek.size() == other.size() + 1 + thread.size(), "an effect key is effect 0x00 thread");
  std::string ik2 = keys::idempotency_key(thread, value);
  SKEIN_FUZZ_CHECK(ik2.rfind(keys::idempotency_prefix(thread), 0) == 0, "an idempotency key starts with its prefix");
  int64_t ts = static_cast<int64_t>(in.u64());
  std::string uk = keys::usage_key(thread, a);
  SKEIN_FUZZ_CHECK(uk == keys::event_key(thread, a), "a usage key is keyed like its event: thread 0x00 be64(seq)");
  std::string uk1 = keys::usage_key_v1(ts, thread, a);
  int64_t ts_back = 0;
  std::string_view thread_back;
  uint64_t seq_back = 0;
  if (ts >= 0 && ts < (int64_t{1} << 56))  // the times a version-1 key can hold
    SKEIN_FUZZ_CHECK(keys::parse_usage_key_v1(uk1, &ts_back, &thread_back, &seq_back) && ts_back == ts &&
                         thread_back == thread && seq_back == a,
                     "a version-1 usage key parses back");
  if (ts >= 0) {
    std::string uv = keys::updated_value(ts);
    SKEIN_FUZZ_CHECK(uv.size() == 8, "an updated value is be64");
    SKEIN_FUZZ_CHECK(static_cast<int64_t>(keys::get_be64(uv)) == ts - ts % 1000, "updated_at truncates to the second");
  }
  return 0;
}
