#include "persistence/recovery.hpp"

#include <unordered_set>

#include "runtime/model/ids.hpp"
#include "runtime/model/json_writer.hpp"

namespace skein {
namespace {

std::string stop_data(const std::string& run_id, const std::string& why) {
  std::string out;
  json_writer w{&out};
  w.begin_object();
  w.field("run_id", run_id);
  w.field("outcome", "failed");
  w.field("error", why);
  w.end_object();
  return out;
}

}  // namespace

std::vector<event> interrupted_run_closing(const std::vector<event>& log, const std::string& signal_name) {
  size_t start = 0;
  std::string run_id;
  for (size_t i = 0; i < log.size(); ++i) {
    if (log[i].type == event_type::signal && log[i].name == "thread.start") {
      start = i;
      run_id = log[i].run_id;
    }
  }
  std::unordered_set<std::string> answered;
  for (size_t i = start; i < log.size(); ++i)
    if (log[i].type == event_type::tool_result) answered.insert(log[i].call_id);
  std::vector<event> out;
  for (size_t i = start; i < log.size(); ++i) {
    const event& e = log[i];
    if (e.type == event_type::tool_call && !answered.count(e.call_id))
      out.push_back(make_tool_result(e.call_id, e.name,
                                     "(error: interrupted: the tool call never returned)", true));
  }
  bool crash = signal_name == "thread.interrupted";
  out.push_back(make_signal(signal_name, "{\"run_id\":\"" + run_id + "\"}"));
  out.push_back(make_signal("thread.stop", stop_data(run_id, crash ? "interrupted: skein stopped while the run was in progress"
                                                                   : "orphaned: the run stopped sending heartbeats")));
  for (auto& e : out) e.run_id = run_id;
  return out;
}

status repair_interrupted(event_log& log, std::vector<std::string>* repaired) {
  repaired->clear();
  std::vector<std::string> running;
  SKEIN_TRY(log.list_running(&running));
  // Repairs go out in groups: one write and one fsync for many threads.
  constexpr size_t group_max = 256;
  std::vector<tick> ticks;
  auto flush = [&]() -> status {
    std::vector<tick*> group;
    for (auto& t : ticks) group.push_back(&t);
    std::vector<status> results(group.size());
    log.commit_group(group, results);
    for (size_t i = 0; i < results.size(); ++i) {
      SKEIN_TRY(results[i]);
      repaired->push_back(ticks[i].thread_id);
    }
    ticks.clear();
    return status::ok();
  };
  for (const auto& id : running) {
    manifest m;
    SKEIN_TRY(log.read_manifest(id, &m));
    std::vector<event> events;
    SKEIN_TRY(log.read_events(id, 1, 0, &events));
    tick t;
    t.thread_id = id;
    t.events = interrupted_run_closing(events);
    int64_t now = now_ms();
    uint64_t seq = m.last_seq;
    for (auto& e : t.events) {
      e.seq = ++seq;
      e.ts_ms = now;
    }
    t.manifest = m;
    t.manifest.status = thread_status::failed;
    t.manifest.updated_at_ms = now;
    ticks.push_back(std::move(t));
    if (ticks.size() == group_max) SKEIN_TRY(flush());
  }
  return flush();
}

}  // namespace skein
