#include "bench/log_builder.hpp"

#include <algorithm>
#include <cassert>
#include <filesystem>

#include "bench/workloads.hpp"
#include "runtime/model/ids.hpp"

namespace skein::bench {
namespace {

// Built events carry times from here on, one ms apart: older than anything the
// runtime writes afterwards.
constexpr int64_t built_since_ms = 1'700'000'000'000;

// Deterministic, so that every event of one run names the same run without a
// table of them; the form of new_run_id().
std::string run_id_of(size_t thread, uint64_t run) {
  static constexpr char alphabet[] = "0123456789abcdefghjkmnpqrstvwxyz";
  uint64_t high = splitmix64((static_cast<uint64_t>(thread) << 32) ^ run);
  uint64_t low = splitmix64(high);
  std::string id = "run_";
  for (int i = 11; i >= 0; --i) id += alphabet[(high >> (5 * i)) & 31];
  for (int i = 3; i >= 0; --i) id += alphabet[(low >> (5 * i)) & 31];
  return id;
}

// Event `seq` of the log of thread number `thread`: the system prompt, then runs.
event history_event(size_t thread, uint64_t seq) {
  event e;
  uint64_t run = seq < 2 ? 0 : (seq - 2) / history_run_events;
  std::string run_id = run_id_of(thread, run), n = std::to_string(run), call_id = "call_" + n;
  switch (seq < 2 ? history_run_events : (seq - 2) % history_run_events) {
    case 0: e = make_message(message_role::user, "What failed in build " + n + " of payments, and why?"); break;
    case 1: e = make_signal("thread.start", "{\"run_id\":\"" + run_id + "\",\"source\":\"api\"}"); break;
    case 2: e = make_thinking("The user asks about build " + n + "; look its log up first."); break;
    case 3: e = make_assistant_text("Looking up build " + n + "."); break;
    case 4: e = make_tool_call(call_id, "lookup", "{\"q\":\"build " + n + "\"}"); break;
    case 5:
      e = make_tool_result(call_id, "lookup", "build " + n + ": 3 tests failed in payments/retry_test (timeout)",
                           false);
      break;
    case 6:
      e = make_message(message_role::assistant,
                       "Build " + n + " failed on three retry tests that time out; raise the timeout.");
      break;
    case 7: e = make_result({}, 0, 900, 2, "completed"); break;
    case 8:
      e = make_signal("thread.stop", "{\"run_id\":\"" + run_id + "\",\"outcome\":\"completed\",\"error\":\"\"}");
      break;
    default:  // seq 1
      e = make_system_prompt("Be brief.");
      e.seq = 1;
      e.ts_ms = built_since_ms;
      return e;
  }
  e.seq = seq;
  e.ts_ms = built_since_ms + static_cast<int64_t>(seq);
  e.run_id = std::move(run_id);
  return e;
}

template <class iterator>
uint64_t bytes_under(const std::string& path, std::string_view extension) {
  uint64_t total = 0;
  std::error_code ec;
  for (const auto& e : iterator(path, ec))
    if (e.is_regular_file(ec) && (extension.empty() || e.path().extension() == extension)) total += e.file_size(ec);
  return total;
}

}  // namespace

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t buildable_length(uint64_t events) {
  uint64_t runs = (std::max(events, history_events_min) - 1 + history_run_events / 2) / history_run_events;
  return 1 + runs * history_run_events;
}

std::vector<std::string> bench_thread_ids(size_t n, uint64_t salt) {
  std::vector<std::string> ids;
  ids.reserve(n);
  // An odd multiplier is a bijection on the 60 id bits: distinct, yet spread.
  for (size_t i = 0; i < n; ++i)
    ids.push_back(new_thread_id(built_since_ms, (static_cast<uint64_t>(i) + 1 + (salt << 40)) * 0x9e3779b97f4a7c15ull));
  return ids;
}

agent_config bench_agent_config() {
  agent_config a = bench_agent();
  a.created_at_ms = built_since_ms;
  return a;
}

status commit_all(event_log& log, std::vector<tick>& ticks) {
  std::vector<tick*> ptrs;
  for (auto& t : ticks) ptrs.push_back(&t);
  std::vector<status> results(ticks.size());
  log.commit_group(ptrs, results);
  for (size_t i = 0; i < results.size(); ++i)
    if (!results[i])
      return status{results[i].code(), "building thread " + ticks[i].thread_id + ": " + results[i].message()};
  return status::ok();
}

status build_threads(event_log& log, const std::string& agent_id, const std::vector<std::string>& ids,
                     uint64_t events_per_thread, bool quiet, build_stats* out, size_t group_events) {
  assert(events_per_thread == buildable_length(events_per_thread));  // whole runs only
  const uint64_t tick_max = log.options().tick_events_max;
  log_counters before = log.counters();
  auto start = bench_clock::now();
  progress bar{"building " + std::to_string(events_per_thread) + "-event threads", ids.size() * events_per_thread,
               quiet};
  std::vector<tick> group;
  uint64_t in_group = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    manifest m;
    m.id = ids[i];
    m.agent_id = agent_id;
    m.status = thread_status::open;
    m.created_at_ms = built_since_ms;
    for (uint64_t seq = 1; seq <= events_per_thread;) {
      tick& t = group.emplace_back();
      t.thread_id = ids[i];
      t.create = seq == 1;
      for (uint64_t end = std::min(events_per_thread, seq + tick_max - 1); seq <= end; ++seq)
        t.events.push_back(history_event(i, seq));
      m.updated_at_ms = t.events.back().ts_ms;
      t.manifest = m;
      in_group += t.events.size();
      ++out->ticks;
      if (in_group < group_events) continue;
      SKEIN_TRY(commit_all(log, group));
      bar.advance(in_group);
      group.clear();
      in_group = 0;
    }
  }
  if (!group.empty()) SKEIN_TRY(commit_all(log, group));
  out->seconds += seconds_since(start, bench_clock::now());
  out->threads += ids.size();
  out->events += ids.size() * events_per_thread;
  log_counters after = log.counters();
  uint64_t ticks = after.commits - before.commits, events = after.events - before.events;
  out->writes += after.writes - before.writes;
  if (events != ids.size() * events_per_thread || after.rejected != before.rejected || after.failed != before.failed)
    return status::corruption("build: the log counted " + std::to_string(ticks) + " ticks and " +
                              std::to_string(events) + " events, expected " +
                              std::to_string(ids.size() * events_per_thread) + " events");
  return status::ok();
}

status open_build_log(const std::string& path, bool fresh, std::unique_ptr<event_log>* out) {
  std::error_code ec;
  if (fresh) std::filesystem::remove_all(path, ec);
  if (ec) return status::io_error("cannot clear " + path + ": " + ec.message());
  log_options lo;
  lo.path = path;
  lo.mode = durability::flush;
  return event_log::open(lo, out);
}

uint64_t directory_bytes(const std::string& path) {
  return bytes_under<std::filesystem::recursive_directory_iterator>(path, "");
}

uint64_t wal_bytes(const std::string& path) { return bytes_under<std::filesystem::directory_iterator>(path, ".log"); }

}  // namespace skein::bench
