// Sample model records for the tests that round-trip them (the JSON codec, the
// wire encoding, import and export): a thread's manifest with each of its core
// fields set to a value other than its default, and one event of each payload
// type. Text fields carry what an encoder must escape or pass through intact:
// quotes, backslashes, control characters, non-ASCII and astral-plane unicode.
// Callers set what their case needs on top (seqs, timestamps, run ids, the
// optional effect and work fields).
#pragma once

#include <vector>

#include "runtime/model/event.hpp"
#include "runtime/model/manifest.hpp"

namespace skein::test {

// A child thread's manifest: every field up to heartbeat_at_ms set, none of the
// effect, delegation, house or work fields (title_generated onwards).
inline manifest sample_manifest() {
  manifest m;
  m.id = "th_20250301_roundtrip0001";
  m.agent_id = "coder";
  m.parent = parent_kind::thread;
  m.parent_id = "th_20250301_parent000001";
  m.session_id = "sess \"quoted\" \\ back";
  m.task_id = "TASK-1";
  m.title = "Ünïcödé title — 日本語 🙂\ttab";
  m.name = "line1\nline2";
  m.tags = {"alpha", "b-2"};
  m.pinned_at_ms = 1740823200005;
  m.environment_id = "env:prod";
  m.status = thread_status::failed;
  m.usage = {10, 20, 3, 4};
  m.cost_usd = 0.125;
  m.config = R"({"model":"x","nested":{"a":[1,2.5,null,true]}})";
  m.created_at_ms = 1740823200000;
  m.updated_at_ms = 1740823200099;
  m.last_seq = 42;
  m.children_count = 2;
  m.heartbeat_at_ms = 1740823200050;
  return m;
}

// One event of each payload type, in log order, with seq, ts_ms and run_id unset.
inline std::vector<event> one_event_of_each_type() {
  std::vector<event> v;
  v.push_back(make_message(message_role::user, "hello \"world\"\n\t\\ \x01 ünïcødé 日本語 🙂 \u2028"));
  v.push_back(make_message(message_role::assistant, ""));
  v.push_back(make_message(message_role::system, "be brief"));
  v.push_back(make_assistant_text("partial </script>"));
  v.push_back(make_thinking("hmm\r\n"));
  v.push_back(make_tool_call("c1", "search", R"({"q":"x\"y","n":[1,2.5,true,null],"o":{}})"));
  v.push_back(make_tool_result("c1", "search", "no hits: \\d+", true));
  v.push_back(make_system_prompt("You are skein."));
  v.push_back(make_local_system_message("(compacted)"));
  v.push_back(make_result({10, 20, 3, 4}, 0.125, 1500, 3, "failed"));
  v.push_back(make_compaction("trim-tool-results", 1, 9, R"([{"seq":1}])"));
  v.push_back(make_signal("thread.stop", R"({"outcome":"failed","error":"x"})"));
  return v;
}

}  // namespace skein::test
