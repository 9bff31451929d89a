// Work-item column families, version 1 (schema version 3 in `meta`).
//
//   work        key := agent-id "/" thread-id
//               value := work-json [0x00 vector]
//     work-json := {"v":1,"agent":id,"thread":id,"work":work}   (work: json_codec.cpp)
//     vector    := dims x float32 (little-endian): the item's text embedded; absent
//                  when the embedder failed (embedded again at the next open or touch)
//   graph       key := "s/" subject 0x00 predicate 0x00 object            value := triple
//                    | "o/" object 0x00 predicate 0x00 subject            value := triple
//                    | "g/" agent-id 0x00 subject 0x00 predicate 0x00 object  value := triple
//     triple    := {"s":node,"p":predicate,"o":node,"agent":id,"thread":id,"seq":uint,"at":int
//                   [,"project":string]}
//     node      := "agent:" id | "thread:" id | "session:" id | "issue:" id
//   sessions    key := agent-id "/" session-id
//               value := {"v":1,"agent":id,"id":id,"started_at":int,"closed_at":int,
//                         "texts":[string...],"dims":uint[,"project":string]} [0x00 vectors]
//     vectors   := texts x dims x float32 (little-endian), present when dims > 0
//   suggestions key := agent-id "/" suggestion-id
//               value := {"v":1,"id":id,"agent":id,"text":string,"status":suggestion-status,
//                         "sessions":[id...],"dismissals":uint,"promoted_thread":string,
//                         "created_at":int,"updated_at":int[,"project":string]}
//     suggestion-status := "pending" | "promoted" | "dismissed" | "suppressed"
//
// `project` (of a triple, a session, a suggestion; an item's is in `work`) came
// later in version 1 (issue 29): written when not "default", so a row written
// before reads as one of project "default", and an older reader ignores it.
//
// Ids hold no 0x00 and no '/' (validate_id), so an agent's rows are the prefix
// agent "/" and a node's triples the prefix "s/" node 0x00 (or "o/" node 0x00).
// JSON text never holds a raw 0x00, so the first 0x00 of a value ends its JSON.
// Every triple is written with the signal event that causes it (its thread and
// seq), and erased with its thread (event_log::erase_thread).
#include "persistence/work_rows.hpp"

#include <cstring>

#include "runtime/model/json_codec.hpp"
#include "runtime/model/json_reader.hpp"
#include "runtime/model/json_writer.hpp"

namespace skein {
namespace {

constexpr int64_t work_rows_format_version = 1;

void append_floats(std::string* out, const std::vector<float>& v) {
  size_t at = out->size();
  out->resize(at + v.size() * sizeof(float));
  // Little-endian hosts only (as embedding.cpp): the bytes are the floats.
  std::memcpy(out->data() + at, v.data(), v.size() * sizeof(float));
}

status read_floats(std::string_view bytes, size_t dims, std::vector<float>* out, std::string_view what) {
  if (dims == 0 || bytes.size() != dims * sizeof(float))
    return status::corruption(std::string{what} + ": vector of " + std::to_string(bytes.size()) + " bytes");
  out->resize(dims);
  std::memcpy(out->data(), bytes.data(), bytes.size());
  return status::ok();
}

// Splits a value at its first 0x00: the JSON, then the binary tail.
void split_value(std::string_view value, std::string_view* json, std::string_view* tail) {
  size_t nul = value.find('\0');
  *json = value.substr(0, nul);
  *tail = nul == std::string_view::npos ? std::string_view{} : value.substr(nul + 1);
}

std::string joined(std::initializer_list<std::string_view> parts, std::string_view lead) {
  std::string k{lead};
  bool first = true;
  for (auto p : parts) {
    if (!first) k.push_back('\0');
    first = false;
    k.append(p);
  }
  return k;
}

// Opens a row's JSON and checks its format version. With `tail`, the value may
// carry a binary tail after its first 0x00 (split_value), which *tail gets.
status open_doc(std::string_view value, std::string_view what, json::document* doc, json::object_reader* r,
                std::string_view* tail = nullptr) {
  std::string_view json = value;
  if (tail != nullptr) split_value(value, &json, tail);
  return json::parse_versioned(json, json_limits{}, what, work_rows_format_version, doc, r);
}

}  // namespace

namespace keys {
std::string work_key(std::string_view agent, std::string_view thread) {
  return std::string{agent} + "/" + std::string{thread};
}
std::string work_prefix(std::string_view agent) { return std::string{agent} + "/"; }
std::string graph_subject_prefix(std::string_view subject) { return "s/" + std::string{subject} + '\0'; }
std::string graph_object_prefix(std::string_view object) { return "o/" + std::string{object} + '\0'; }
std::string graph_agent_prefix(std::string_view agent) { return "g/" + std::string{agent} + '\0'; }
std::string session_key(std::string_view agent, std::string_view id) { return work_key(agent, id); }
std::string suggestion_key(std::string_view agent, std::string_view id) { return work_key(agent, id); }
}  // namespace keys

side_row work_row_put(const work_row& r) {
  std::string value;
  json_writer w(&value);
  w.begin_object();
  w.field_int("v", work_rows_format_version);
  w.field("agent", r.agent_id);
  w.field("thread", r.thread_id);
  w.key("work");
  write_work_item(w, r.item);
  w.end_object();
  if (!r.vector.empty()) {
    value.push_back('\0');
    append_floats(&value, r.vector);
  }
  return {side_row::op::put, keys::work_key(r.agent_id, r.thread_id), std::move(value), side_cf::work};
}

side_row work_row_erase(std::string_view agent, std::string_view thread) {
  return {side_row::op::erase, keys::work_key(agent, thread), {}, side_cf::work};
}

status decode_work_row(std::string_view value, work_row* out) {
  std::string_view tail;
  json::document doc;
  json::object_reader r;
  SKEIN_TRY(open_doc(value, "work row", &doc, &r, &tail));
  work_row row;
  SKEIN_TRY(r.string("agent", &row.agent_id));
  SKEIN_TRY(r.string("thread", &row.thread_id));
  json::dom::element el;
  SKEIN_TRY(r.element("work", &el));
  json::object_reader wr;
  SKEIN_TRY(json::object_reader::open(el, "work row.work", &wr));
  SKEIN_TRY(read_work_item(wr, &row.item));
  if (!tail.empty()) SKEIN_TRY(read_floats(tail, tail.size() / sizeof(float), &row.vector, "work row"));
  *out = std::move(row);
  return status::ok();
}

namespace {
std::string encode_triple(const work_triple& t) {
  std::string value;
  json_writer w(&value);
  w.begin_object();
  w.field("s", t.subject);
  w.field("p", t.predicate);
  w.field("o", t.object);
  w.field("agent", t.agent_id);
  w.field("thread", t.thread_id);
  w.field_uint("seq", t.seq);
  w.field_int("at", t.at_ms);
  if (t.project != work_default_project) w.field("project", t.project);
  w.end_object();
  return value;
}

}  // namespace

std::vector<std::string> triple_keys(const work_triple& t) {
  return {joined({t.subject, t.predicate, t.object}, "s/"), joined({t.object, t.predicate, t.subject}, "o/"),
          joined({t.agent_id, t.subject, t.predicate, t.object}, "g/")};
}

std::vector<side_row> triple_rows(const work_triple& t) {
  std::string value = encode_triple(t);
  std::vector<side_row> rows;
  for (auto& k : triple_keys(t)) rows.push_back({side_row::op::put, std::move(k), value, side_cf::graph});
  return rows;
}

status decode_triple(std::string_view value, work_triple* out) {
  json::document doc;
  json::object_reader r;
  SKEIN_TRY(open_doc(value, "triple", &doc, &r));
  work_triple t;
  SKEIN_TRY(r.string("s", &t.subject));
  SKEIN_TRY(r.string("p", &t.predicate));
  SKEIN_TRY(r.string("o", &t.object));
  SKEIN_TRY(r.string("agent", &t.agent_id));
  SKEIN_TRY(r.string("thread", &t.thread_id));
  SKEIN_TRY(r.uint("seq", &t.seq));
  SKEIN_TRY(r.int64("at", &t.at_ms));
  SKEIN_TRY(r.string("project", &t.project, false));
  *out = std::move(t);
  return status::ok();
}

side_row session_row_put(const work_session_row& s) {
  std::string value;
  json_writer w(&value);
  size_t dims = s.vectors.size() == s.texts.size() && !s.vectors.empty() ? s.vectors.front().size() : 0;
  w.begin_object();
  w.field_int("v", work_rows_format_version);
  w.field("agent", s.agent_id);
  w.field("id", s.id);
  w.field_int("started_at", s.started_at_ms);
  w.field_int("closed_at", s.closed_at_ms);
  w.field_strings("texts", s.texts);
  w.field_uint("dims", dims);
  if (s.project != work_default_project) w.field("project", s.project);
  w.end_object();
  if (dims > 0) {
    value.push_back('\0');
    for (const auto& v : s.vectors) append_floats(&value, v);
  }
  return {side_row::op::put, keys::session_key(s.agent_id, s.id), std::move(value), side_cf::sessions};
}

status decode_session_row(std::string_view value, work_session_row* out) {
  std::string_view tail;
  json::document doc;
  json::object_reader r;
  SKEIN_TRY(open_doc(value, "session", &doc, &r, &tail));
  work_session_row s;
  SKEIN_TRY(r.string("agent", &s.agent_id));
  SKEIN_TRY(r.string("id", &s.id));
  SKEIN_TRY(r.int64("started_at", &s.started_at_ms, false));
  SKEIN_TRY(r.int64("closed_at", &s.closed_at_ms, false));
  SKEIN_TRY(r.strings("texts", &s.texts, false));
  SKEIN_TRY(r.string("project", &s.project, false));
  uint64_t dims = 0;
  SKEIN_TRY(r.uint("dims", &dims, false));
  if (dims > 0) {
    if (tail.size() != s.texts.size() * dims * sizeof(float))
      return status::corruption("session: vectors of " + std::to_string(tail.size()) + " bytes for " +
                                std::to_string(s.texts.size()) + " texts");
    for (size_t i = 0; i < s.texts.size(); ++i)
      SKEIN_TRY(read_floats(tail.substr(i * dims * sizeof(float), dims * sizeof(float)), dims,
                            &s.vectors.emplace_back(), "session"));
  }
  *out = std::move(s);
  return status::ok();
}

side_row suggestion_row_put(const work_suggestion& s) {
  std::string value;
  json_writer w(&value);
  w.begin_object();
  w.field_int("v", work_rows_format_version);
  w.field("id", s.id);
  w.field("agent", s.agent_id);
  w.field("text", s.text);
  w.field("status", to_string(s.status));
  w.field_strings("sessions", s.sessions);
  w.field_uint("dismissals", s.dismissals);
  w.field("promoted_thread", s.promoted_thread);
  w.field_int("created_at", s.created_at_ms);
  w.field_int("updated_at", s.updated_at_ms);
  if (s.project != work_default_project) w.field("project", s.project);
  w.end_object();
  return {side_row::op::put, keys::suggestion_key(s.agent_id, s.id), std::move(value), side_cf::suggestions};
}

status decode_suggestion(std::string_view value, work_suggestion* out) {
  json::document doc;
  json::object_reader r;
  SKEIN_TRY(open_doc(value, "suggestion", &doc, &r));
  work_suggestion s;
  std::string st;
  SKEIN_TRY(r.string("id", &s.id));
  SKEIN_TRY(r.string("agent", &s.agent_id));
  SKEIN_TRY(r.string("text", &s.text));
  SKEIN_TRY(r.string("status", &st));
  bool known = false;
  for (auto c : {suggestion_status::pending, suggestion_status::promoted, suggestion_status::dismissed,
                 suggestion_status::suppressed})
    if (to_string(c) == st) {
      s.status = c;
      known = true;
    }
  if (!known) return status::invalid_input("suggestion.status: unknown status '" + quote_input(st) + "'");
  SKEIN_TRY(r.strings("sessions", &s.sessions, false));
  uint64_t d = 0;
  SKEIN_TRY(r.uint("dismissals", &d, false));
  s.dismissals = static_cast<uint32_t>(d);
  SKEIN_TRY(r.string("promoted_thread", &s.promoted_thread, false));
  SKEIN_TRY(r.int64("created_at", &s.created_at_ms, false));
  SKEIN_TRY(r.int64("updated_at", &s.updated_at_ms, false));
  SKEIN_TRY(r.string("project", &s.project, false));
  *out = std::move(s);
  return status::ok();
}

}  // namespace skein
