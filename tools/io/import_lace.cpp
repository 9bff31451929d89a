// lace JSONL event dumps, as read here (no manifest line):
//
//   body  := (event "\n")*
//   event := {"type":type,"data":data,"timestamp"?:time,"threadId"?:string}
//   type / data:
//     USER_MESSAGE          string                           -> message (user)
//     AGENT_MESSAGE         string | {"content":string,...}  -> message (assistant)
//     THINKING              string                           -> thinking
//     SYSTEM_PROMPT         string                           -> system_prompt
//     LOCAL_SYSTEM_MESSAGE  string                           -> local_system_message
//     TOOL_CALL             {"id","name","arguments"?}       -> tool_call
//     TOOL_RESULT           {"id"?,"content"?:text,"isError"?:bool,"status"?:string}
//                                                            -> tool_result (status other
//                                                               than completed/success: error)
//     COMPACTION            {"strategyId","originalEventCount"?,"compactedEvents":[...]}
//                                                            -> compaction over 1..(events so far)
//   time  := ISO-8601 string | epoch ms
//   text  := string | [{"type":"text","text":string} ...]
//
// One thread per threadId, in order of first appearance; lines without a threadId
// form one thread of their own. The thread keeps the lace id when it is a valid skein
// id, else gets a fresh one; a threadId longer than id_bytes_max is an error (an
// input past a limit, not an id of another shape). Agent: the default agent;
// status "open".
#include <unordered_map>

#include "runtime/model/ids.hpp"
#include "tools/io/import_formats.hpp"

namespace skein::io {
namespace {

using json::object_reader;

status data_text(dom::element data, std::string* out) {
  std::string_view s;
  if (data.get(s) != simdjson::SUCCESS)
    return status::invalid_input("event.data: expected a string");
  out->assign(s);
  return status::ok();
}

status agent_message(dom::element data, event* e) {
  std::string text;
  if (data.type() == dom::element_type::OBJECT) {
    object_reader d;
    SKEIN_TRY(object_reader::open(data, "event.data", &d));
    SKEIN_TRY(d.string("content", &text));
  } else {
    SKEIN_TRY(data_text(data, &text));
  }
  *e = make_message(message_role::assistant, std::move(text));
  return status::ok();
}

status tool_call(dom::element data, event* e) {
  object_reader d;
  SKEIN_TRY(object_reader::open(data, "event.data", &d));
  std::string call_id, tool, arguments = "{}";
  SKEIN_TRY(d.string("id", &call_id));
  SKEIN_TRY(d.string("name", &tool));
  if (d.has("arguments")) SKEIN_TRY(d.any_raw("arguments", &arguments));
  *e = make_tool_call(std::move(call_id), std::move(tool), std::move(arguments));
  return status::ok();
}

status tool_result(dom::element data, const thread_builder& t, event* e) {
  object_reader d;
  SKEIN_TRY(object_reader::open(data, "event.data", &d));
  std::string call_id;
  SKEIN_TRY(d.string("id", &call_id, false));
  std::string output;
  if (d.has("content")) {
    dom::element content;
    SKEIN_TRY(d.element("content", &content));
    SKEIN_TRY(read_text(content, d.name("content"), &output));
  }
  bool is_error = false;
  SKEIN_TRY(d.boolean("isError", &is_error, false));
  std::string state;
  SKEIN_TRY(d.string("status", &state, false));
  if (!state.empty() && state != "completed" && state != "success") is_error = true;
  *e = make_tool_result(call_id, t.tool_name(call_id), std::move(output), is_error);
  return status::ok();
}

status compaction(dom::element data, const thread_builder& t, event* e) {
  object_reader d;
  SKEIN_TRY(object_reader::open(data, "event.data", &d));
  std::string strategy, events;
  SKEIN_TRY(d.string("strategyId", &strategy));
  SKEIN_TRY(d.raw("compactedEvents", dom::element_type::ARRAY, &events));
  const uint64_t to_seq = t.size();
  *e = make_compaction(std::move(strategy), to_seq == 0 ? 0 : 1, to_seq, std::move(events));
  return status::ok();
}

status read_event(const std::string& type, dom::element data, const thread_builder& t,
                  event* e) {
  std::string text;
  if (type == "USER_MESSAGE") {
    SKEIN_TRY(data_text(data, &text));
    *e = make_message(message_role::user, std::move(text));
  } else if (type == "AGENT_MESSAGE") {
    return agent_message(data, e);
  } else if (type == "THINKING") {
    SKEIN_TRY(data_text(data, &text));
    *e = make_thinking(std::move(text));
  } else if (type == "SYSTEM_PROMPT") {
    SKEIN_TRY(data_text(data, &text));
    *e = make_system_prompt(std::move(text));
  } else if (type == "LOCAL_SYSTEM_MESSAGE") {
    SKEIN_TRY(data_text(data, &text));
    *e = make_local_system_message(std::move(text));
  } else if (type == "TOOL_CALL") {
    return tool_call(data, e);
  } else if (type == "TOOL_RESULT") {
    return tool_result(data, t, e);
  } else if (type == "COMPACTION") {
    return compaction(data, t, e);
  } else {
    return status::invalid_input("event.type: unknown lace event type '" + type + "'");
  }
  return status::ok();
}

}  // namespace

status import_lace(std::string_view body, const std::string& default_agent, int64_t now,
                   import_result* r) {
  SKEIN_TRY(check_default_agent(default_agent));
  std::vector<thread_builder> threads;
  std::unordered_map<std::string, size_t> by_lace_id;
  SKEIN_TRY(for_each_line(body, [&](const jsonl_line& line) -> status {
    json::document doc;
    SKEIN_TRY(parse_line(line.text, "event", &doc));
    object_reader obj;
    SKEIN_TRY(object_reader::open(doc.root(), "event", &obj));
    std::string type, lace_id;
    SKEIN_TRY(obj.string("type", &type));
    SKEIN_TRY(obj.string("threadId", &lace_id, false));
    if (lace_id.size() > id_bytes_max) return validate_id(lace_id, obj.name("threadId"));
    std::optional<int64_t> ts;
    SKEIN_TRY(read_time(obj, "timestamp", &ts));
    dom::element data;
    SKEIN_TRY(obj.element("data", &data));

    auto [it, fresh] = by_lace_id.try_emplace(lace_id, threads.size());
    if (fresh) {
      if (threads.size() >= import_threads_max) {
        by_lace_id.erase(it);
        return status::invalid_input("more than import_threads_max (" +
                                     std::to_string(import_threads_max) + ") threads");
      }
      thread_builder& t = threads.emplace_back();
      if (validate_id(lace_id, "threadId").is_ok()) t.m.id = lace_id;  // else minted
      t.m.agent_id = default_agent;
      t.m.status = thread_status::open;
    }
    thread_builder& t = threads[it->second];
    event e;
    SKEIN_TRY(read_event(type, data, t, &e));
    return t.add(std::move(e), ts);
  }, r));
  for (auto& t : threads) r->threads.push_back(t.finish(now));
  return status::ok();
}

}  // namespace skein::io
