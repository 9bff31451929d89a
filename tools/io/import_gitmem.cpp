// gitmem threads.json, as read here: one JSON document (not JSONL).
//
//   body   := [item, ...] | {"threads":[item, ...], ...}
//   item   := string                                   the text
//           | string holding a JSON object item        "{\"text\":\"fix login\"}"
//           | {"id"?:string|int,("text"|"note"|"item"):string,"context"?:string,
//              "status"?:string}
//
// Each item becomes one thread: id = the item id when it is a valid skein id (and
// not taken by an earlier item), else a fresh one (an id longer than id_bytes_max
// is an error); task_id = the item id; title =
// the first non-blank line of the text, at most 120 characters; status resolved,
// done, closed, completed, fixed -> completed, anything else -> open; one user
// message with the text, plus "\n\nContext: <context>" when there is a context.
// Errors name "item N", N the index in the array (from 0).
#include <unordered_set>

#include "runtime/model/ids.hpp"
#include "tools/io/import_formats.hpp"

namespace skein::io {
namespace {

constexpr size_t title_chars_max = 120;

// One item, copied out of the document before any nested parse (the thread-local
// parser reuses the document's memory).
struct work_item {
  bool is_string = false;
  std::string text;  // the string itself, or text/note/item
  std::string id;
  std::string context;
  std::string state;
};

status item_string(dom::object obj, std::string_view field, std::string* out, bool* found) {
  dom::element el;
  *found = obj.at_key(field).get(el) == simdjson::SUCCESS;
  if (!*found) return status::ok();
  std::string_view s;
  if (el.get(s) != simdjson::SUCCESS)
    return status::invalid_input(std::string{field} + ": expected a string");
  out->assign(s);
  return status::ok();
}

// Fields of an object item; `*has_text` says whether it carried text, note or item.
status read_object(dom::object obj, work_item* w, bool* has_text) {
  *has_text = false;
  for (const char* field : {"text", "note", "item"}) {
    SKEIN_TRY(item_string(obj, field, &w->text, has_text));
    if (*has_text) break;
  }
  bool found = false;
  SKEIN_TRY(item_string(obj, "context", &w->context, &found));
  SKEIN_TRY(item_string(obj, "status", &w->state, &found));
  dom::element id;
  if (obj.at_key("id").get(id) == simdjson::SUCCESS) {
    std::string_view s;
    int64_t n = 0;
    if (id.get(s) == simdjson::SUCCESS) w->id.assign(s);
    else if (id.get(n) == simdjson::SUCCESS) w->id = std::to_string(n);
    else return status::invalid_input("id: expected a string or an integer");
  }
  return status::ok();
}

status read_item(dom::element el, work_item* w) {
  std::string_view s;
  if (el.get(s) == simdjson::SUCCESS) {
    w->is_string = true;
    w->text.assign(s);
    return status::ok();
  }
  dom::object obj;
  if (el.get(obj) != simdjson::SUCCESS)
    return status::invalid_input("expected a string or an object");
  bool has_text = false;
  SKEIN_TRY(read_object(obj, w, &has_text));
  if (!has_text) return status::invalid_input("no text (expected text, note or item)");
  return status::ok();
}

// A string item that is itself a JSON object with text or note: read it as an
// object item. Anything else stays the plain text it is.
void unwrap_string(work_item* w) {
  size_t first = w->text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos || w->text[first] != '{') return;
  json::document doc;
  dom::object obj;
  if (!json::parse(w->text, json_limits{}, "item", &doc).is_ok()) return;
  if (doc.root().get(obj) != simdjson::SUCCESS) return;
  work_item inner;
  bool has_text = false;
  if (!read_object(obj, &inner, &has_text).is_ok() || !has_text) return;
  *w = std::move(inner);
}

thread_status map_status(std::string state) {
  for (char& c : state)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  for (const char* done : {"resolved", "done", "closed", "completed", "fixed"})
    if (state == done) return thread_status::completed;
  return thread_status::open;  // open, in-progress, todo, and anything unknown
}

// The first non-blank line, trimmed, cut to title_chars_max code points.
std::string make_title(std::string_view text) {
  std::string_view line;
  while (!text.empty()) {
    size_t end = text.find('\n');
    line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
    size_t a = line.find_first_not_of(" \t\r");
    if (a == std::string_view::npos) continue;
    line = line.substr(a, line.find_last_not_of(" \t\r") - a + 1);
    break;
  }
  size_t chars = 0, i = 0;
  for (; i < line.size(); ++i) {
    const bool continuation = (static_cast<unsigned char>(line[i]) & 0xC0) == 0x80;
    if (!continuation && chars++ == title_chars_max) break;
  }
  return std::string{line.substr(0, i)};
}

status make_thread(work_item w, const std::string& agent, int64_t now,
                   std::unordered_set<std::string>* taken, imported_thread* out) {
  if (w.text.find_first_not_of(" \t\r\n") == std::string::npos)
    return status::invalid_input("the text is empty");
  if (w.id.size() > id_bytes_max) return validate_id(w.id, "id");
  thread_builder t;
  if (!w.id.empty() && validate_id(w.id, "id").is_ok() && taken->insert(w.id).second)
    t.m.id = w.id;  // else finish() mints one
  t.m.agent_id = agent;
  t.m.task_id = w.id;
  t.m.title = make_title(w.text);
  t.m.status = map_status(w.state);
  std::string text = std::move(w.text);
  if (!w.context.empty()) text += "\n\nContext: " + w.context;
  SKEIN_TRY(t.add(make_message(message_role::user, std::move(text)), std::nullopt));
  *out = t.finish(now);
  return status::ok();
}

status item_error(size_t index, const status& s) {
  return status(s.code(), "item " + std::to_string(index) + ": " + s.message());
}

}  // namespace

status import_gitmem(std::string_view body, const std::string& default_agent, int64_t now,
                     import_result* r) {
  SKEIN_TRY(check_default_agent(default_agent));
  json::document doc;
  SKEIN_TRY(json::parse(body, json_limits{import_bytes_max}, "threads.json", &doc));
  dom::element root = doc.root();
  dom::object obj;
  if (root.get(obj) == simdjson::SUCCESS && obj.at_key("threads").get(root) != simdjson::SUCCESS)
    return status::invalid_input("threads.json: an object needs a \"threads\" array");
  dom::array items;
  if (root.get(items) != simdjson::SUCCESS)
    return status::invalid_input(
        "threads.json: expected an array of work items or {\"threads\":[...]}");
  if (items.size() > import_threads_max)
    return status::invalid_input("threads.json: " + std::to_string(items.size()) +
                                 " items exceeds import_threads_max (" +
                                 std::to_string(import_threads_max) + ")");
  std::vector<work_item> work;
  work.reserve(items.size());
  for (dom::element el : items) {
    status s = read_item(el, &work.emplace_back());
    if (!s) return item_error(work.size() - 1, s);
  }
  std::unordered_set<std::string> taken;
  for (size_t i = 0; i < work.size(); ++i) {
    if (work[i].is_string) unwrap_string(&work[i]);
    imported_thread t;
    status s = make_thread(std::move(work[i]), default_agent, now, &taken, &t);
    if (!s) return item_error(i, s);
    r->threads.push_back(std::move(t));
  }
  return status::ok();
}

}  // namespace skein::io
