#include "persistence/recovery.hpp"

#include <optional>
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

bool storage_error(const status& s) { return s.code() == errc::io_error || s.code() == errc::no_space; }

// A reason fit to store in signal data: at most reason_bytes_max, valid UTF-8.
std::string storable_reason(std::string_view why) {
  constexpr size_t reason_bytes_max = 1024;
  std::string_view cut = why.substr(0, reason_bytes_max);
  while (cut.size() < why.size() && !cut.empty() && (static_cast<unsigned char>(cut.back()) & 0xc0) == 0x80)
    cut.remove_suffix(1);  // do not split a UTF-8 sequence
  if (!cut.empty() && cut.size() < why.size() && static_cast<unsigned char>(cut.back()) >= 0xc0)
    cut.remove_suffix(1);
  if (valid_utf8(cut)) return std::string{cut};
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : cut) {
    if (c < 0x80) out.push_back(static_cast<char>(c));
    else out += std::string{"\\x"} + hex[c >> 4] + hex[c & 15];
  }
  return out;
}

// The run a thread was in: its last thread.start among the events that decoded.
std::string last_run_id(const std::vector<event>& events) {
  for (auto it = events.rbegin(); it != events.rend(); ++it)
    if (it->type == event_type::signal && it->name == "thread.start") return it->run_id;
  return "";
}

// A fresh manifest for a thread whose own does not decode, from its index
// entries: agent (required), parent when the id is a child id of it, tags.
status manifest_from_index(event_log& log, const std::string& id, manifest* m) {
  std::vector<std::string> entries;
  SKEIN_TRY(log.find_index_keys(id, &entries));
  manifest out;
  out.id = id;
  std::string parent;
  for (const auto& key : entries) {
    // Claims (keys.cpp) carry the thread in the value: the key names the claimed id.
    if (key.starts_with("c/task/")) {
      out.task_id = key.substr(7);
      continue;
    }
    if (key.starts_with("c/")) continue;
    if (key.size() < 2 + 1 + id.size()) continue;
    std::string value = key.substr(2, key.size() - 2 - 1 - id.size());
    if (key.starts_with("a/")) out.agent_id = value;
    else if (key.starts_with("p/")) parent = value;
    else if (key.starts_with("t/")) out.tags.push_back(value);
  }
  if (out.agent_id.empty())
    return status::not_found("thread " + id + ": no index entry names its agent");
  // Only a delegated child's id says what its parent is (agent.cpp mints parent.N).
  if (!parent.empty() && id.starts_with(parent + ".")) {
    out.parent = parent_kind::thread;
    out.parent_id = parent;
  }
  *m = std::move(out);
  return status::ok();
}

// The tick that quarantines `id`: status failed, thread.quarantined naming the
// record and the reason, thread.stop. `readable` is its decoded manifest, if any.
status quarantine_tick(event_log& log, const quarantined_thread& q, const manifest* readable,
                       const std::vector<event>& events, tick* t) {
  int64_t now = now_ms();
  manifest m;
  if (readable != nullptr) m = *readable;
  else {
    SKEIN_TRY(manifest_from_index(log, q.thread_id, &m));
    m.created_at_ms = !events.empty() && events.front().seq == 1 ? events.front().ts_ms : now;
  }
  m.status = thread_status::failed;
  m.last_outcome = run_outcome::failed;
  m.updated_at_ms = now;
  uint64_t last = 0;
  SKEIN_TRY(log.last_event_seq(q.thread_id, &last));

  std::string run_id = last_run_id(events), data, stop;
  json_writer w{&data};
  w.begin_object();
  w.field("key", storable_reason(q.key));
  w.field("reason", storable_reason(q.reason));
  w.end_object();
  json_writer sw{&stop};
  sw.begin_object();
  sw.field("run_id", run_id);
  sw.field("outcome", "failed");
  sw.field("error", "quarantined: " + storable_reason(q.reason));
  sw.end_object();

  tick out;
  out.thread_id = q.thread_id;
  out.quarantine = true;
  out.events.push_back(make_signal("thread.quarantined", data));
  out.events.push_back(make_signal("thread.stop", stop));
  for (auto& e : out.events) {
    e.seq = ++last;
    e.ts_ms = now;
    e.run_id = run_id;
  }
  out.manifest = std::move(m);
  *t = std::move(out);
  return status::ok();
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

namespace {

// One thread's pending recovery commit: a repair, or a quarantine when `q` is set.
struct recovery_item {
  tick t;
  std::optional<quarantined_thread> q;
  std::optional<manifest> readable;  // for a repair refused by the writer: quarantine it
  std::vector<event> events;
};

class recovery {
 public:
  recovery(event_log& log, std::vector<std::string>* repaired, std::vector<quarantined_thread>* quarantined)
      : log_(log), repaired_(repaired), quarantined_(quarantined) {}

  status visit(const std::string& id) {
    manifest m;
    status ms = log_.read_manifest(id, &m);
    if (storage_error(ms)) return ms;
    recovery_item item;
    std::vector<unreadable_record> bad;
    SKEIN_TRY(log_.read_events_lenient(id, 1, 0, &item.events, &bad));
    if (ms && bad.empty()) {
      item.t.thread_id = id;
      item.t.events = interrupted_run_closing(item.events);
      int64_t now = now_ms();
      uint64_t seq = m.last_seq;
      for (auto& e : item.t.events) {
        e.seq = ++seq;
        e.ts_ms = now;
      }
      item.t.manifest = m;
      item.t.manifest.status = thread_status::failed;
      item.t.manifest.last_outcome = run_outcome::failed;
      item.t.manifest.updated_at_ms = now;
      item.readable = std::move(m);
      return add(std::move(item));
    }
    quarantined_thread q;
    q.thread_id = id;
    if (!ms) {
      q.key = "threads key " + id;
      q.reason = ms.message();
    } else {
      q.key = bad.front().key;
      q.reason = bad.front().reason;
      item.readable = std::move(m);
    }
    return add_quarantine(std::move(q), std::move(item));
  }

  status finish() {
    SKEIN_TRY(flush());
    return flush();  // the quarantines of repairs the writer refused
  }

 private:
  static constexpr size_t group_max = 256;  // one write and one fsync for many threads

  status add(recovery_item item) {
    items_.push_back(std::move(item));
    if (items_.size() == group_max) return flush();
    return status::ok();
  }

  status add_quarantine(quarantined_thread q, recovery_item item) {
    status built = quarantine_tick(log_, q, item.readable ? &*item.readable : nullptr, item.events, &item.t);
    if (storage_error(built)) return built;
    if (!built) {
      q.reason += "; not quarantined: " + built.message();
      quarantined_->push_back(std::move(q));
      return status::ok();
    }
    item.q = std::move(q);
    return add(std::move(item));
  }

  status flush() {
    std::vector<recovery_item> group;
    group.swap(items_);
    std::vector<tick*> ticks;
    for (auto& item : group) ticks.push_back(&item.t);
    std::vector<status> results(ticks.size());
    log_.commit_group(ticks, results);
    std::vector<std::pair<quarantined_thread, recovery_item>> refused;
    for (size_t i = 0; i < group.size(); ++i) {
      status& r = results[i];
      if (storage_error(r)) return r;
      recovery_item& item = group[i];
      if (item.q) {
        item.q->written = r.is_ok();
        if (!r) item.q->reason += "; not quarantined: " + r.message();
        quarantined_->push_back(std::move(*item.q));
      } else if (r) {
        repaired_->push_back(item.t.thread_id);
      } else {
        // A repair the writer refuses (it would not read back, say) must not stop
        // the open either: quarantine the thread with that reason.
        quarantined_thread q{item.t.thread_id, "threads key " + item.t.thread_id, r.message(), false};
        refused.emplace_back(std::move(q), std::move(item));
      }
    }
    for (auto& [q, item] : refused) SKEIN_TRY(add_quarantine(std::move(q), std::move(item)));
    return status::ok();
  }

  event_log& log_;
  std::vector<std::string>* repaired_;
  std::vector<quarantined_thread>* quarantined_;
  std::vector<recovery_item> items_;
};

}  // namespace

status repair_interrupted(event_log& log, std::vector<std::string>* repaired,
                          std::vector<quarantined_thread>* quarantined,
                          const std::function<bool(std::string_view)>& only) {
  repaired->clear();
  std::vector<quarantined_thread> ignored;
  if (quarantined == nullptr) quarantined = &ignored;
  quarantined->clear();
  std::vector<std::string> running;
  SKEIN_TRY(log.list_running(&running));
  recovery r{log, repaired, quarantined};
  for (const auto& id : running)
    if (!only || only(id)) SKEIN_TRY(r.visit(id));
  return r.finish();
}

}  // namespace skein
