#include "runtime/model/conversation.hpp"

#include <unordered_set>

namespace skein {
namespace {

bool shown_to_engine(event_type t) {
  return t != event_type::local_system_message && t != event_type::signal &&
         t != event_type::result && t != event_type::system_prompt;
}

}  // namespace

std::vector<event> working_conversation(const std::vector<event>& log) {
  const event* prompt = nullptr;
  size_t start = 0;
  for (size_t i = 0; i < log.size(); ++i) {
    if (log[i].type == event_type::system_prompt) prompt = &log[i];
    if (log[i].type == event_type::compaction) start = i;
  }
  std::unordered_set<std::string> answered;
  for (size_t i = start; i < log.size(); ++i)
    if (log[i].type == event_type::tool_result) answered.insert(log[i].call_id);

  std::vector<event> out;
  if (prompt != nullptr) out.push_back(*prompt);
  std::vector<const event*> unanswered;
  auto flush_unanswered = [&] {
    for (const event* call : unanswered) {
      event r = make_tool_result(call->call_id, call->name, missing_tool_result_text, true);
      r.run_id = call->run_id;
      r.ts_ms = call->ts_ms;
      out.push_back(std::move(r));  // seq 0: synthesized, not in the log
    }
    unanswered.clear();
  };
  for (size_t i = start; i < log.size(); ++i) {
    const event& e = log[i];
    if (e.type != event_type::tool_call && e.type != event_type::tool_result) flush_unanswered();
    if (!shown_to_engine(e.type)) continue;
    out.push_back(e);
    if (e.type == event_type::tool_call && !answered.count(e.call_id)) unanswered.push_back(&e);
  }
  flush_unanswered();
  return out;
}

void extend_working_conversation(std::vector<event>* view, const event& e) {
  bool has_prompt = !view->empty() && view->front().type == event_type::system_prompt;
  if (e.type == event_type::system_prompt) {
    if (has_prompt) view->front() = e;
    else view->insert(view->begin(), e);
    return;
  }
  if (e.type == event_type::compaction) {
    view->erase(view->begin() + (has_prompt ? 1 : 0), view->end());
    view->push_back(e);
    return;
  }
  if (shown_to_engine(e.type)) view->push_back(e);
}

event_list working_list(std::vector<event> view) {
  event_list out;
  size_t i = 0;
  if (!view.empty() && view.front().type == event_type::system_prompt) out.pin_front(std::move(view[i++]));
  for (; i < view.size(); ++i) out.push_back(std::move(view[i]));
  return out;
}

void extend_working_conversation(event_list* view, const event& e) {
  if (e.type == event_type::system_prompt) {
    // Lists built by working_list() hold their prompt pinned; one that holds it
    // unpinned is rebuilt (never for a thread's own view).
    if (view->pinned_front() == nullptr && !view->empty() && view->front().type == event_type::system_prompt) {
      std::vector<event> all = view->to_vector();
      all.front() = e;
      *view = working_list(std::move(all));
      return;
    }
    view->pin_front(e);
    return;
  }
  if (e.type == event_type::compaction) {
    if (view->pinned_front() == nullptr && !view->empty() && view->front().type == event_type::system_prompt) {
      event prompt = view->front();
      view->clear();
      view->pin_front(std::move(prompt));
    } else {
      view->clear_unpinned();
    }
    view->push_back(e);
    return;
  }
  if (shown_to_engine(e.type)) view->push_back(e);
}

}  // namespace skein
