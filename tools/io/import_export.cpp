// skein JSONL, the export format (and the first import format):
//
//   body     := manifest "\n" (event "\n")*
//   manifest := encode_manifest's object (runtime/model/json_codec.cpp), "v":1
//   event    := encode_event's object, seq 1, 2, ..., n with n == manifest.last_seq
//
// Import checks the same: seqs contiguous from 1, last_seq equal to the number of
// events (one more is allowed only when the last line was torn off).
#include "tools/io/import_export.hpp"

#include <algorithm>
#include <array>
#include <cassert>
#include <utility>

#include "runtime/model/ids.hpp"
#include "runtime/model/json_codec.hpp"
#include "tools/io/import_formats.hpp"

namespace skein {
namespace {

constexpr std::array<std::pair<import_format, std::string_view>, 5> format_names = {{
    {import_format::auto_detect, "auto"},
    {import_format::skein, "skein"},
    {import_format::opennova, "opennova"},
    {import_format::lace, "lace"},
    {import_format::gitmem, "gitmem"},
}};

bool space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

std::string_view first_line(std::string_view body) {
  size_t start = 0;
  while (start < body.size()) {
    size_t end = body.find('\n', start);
    if (end == std::string_view::npos) end = body.size();
    std::string_view line = body.substr(start, end - start);
    for (char c : line)
      if (!space(c)) return line;
    start = end + 1;
  }
  return {};
}

// createdAt, taskId: starts lower case, has an upper-case letter, no '_'.
bool camel_case(std::string_view key) {
  if (key.empty() || key[0] < 'a' || key[0] > 'z') return false;
  bool upper = false;
  for (char c : key) {
    if (c == '_') return false;
    if (c >= 'A' && c <= 'Z') upper = true;
  }
  return upper;
}

bool upper_snake_case(std::string_view s) {
  if (s.empty() || s[0] < 'A' || s[0] > 'Z') return false;
  for (char c : s)
    if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

bool threads_document(simdjson::dom::element root) {
  simdjson::dom::object obj;
  simdjson::dom::element threads;
  return root.get(obj) == simdjson::SUCCESS &&
         obj.at_key("threads").get(threads) == simdjson::SUCCESS;
}

std::optional<import_format> detect_from_line(simdjson::dom::element root) {
  simdjson::dom::object obj;
  if (root.get(obj) != simdjson::SUCCESS) return std::nullopt;
  json::object_reader r{obj, "line"};
  if (r.has("threads")) return import_format::gitmem;
  if (r.has("v") && r.has("agent_id")) return import_format::skein;
  if (r.has("agentId") || r.has("sessionId")) return import_format::opennova;
  std::string_view type;
  simdjson::dom::element el;
  if (obj.at_key("type").get(el) == simdjson::SUCCESS) {
    if (el.get(type) == simdjson::SUCCESS && upper_snake_case(type)) return import_format::lace;
    return std::nullopt;
  }
  for (auto field : obj)
    if (camel_case(field.key)) return import_format::opennova;
  return std::nullopt;
}

status detect_format(std::string_view body, import_format* out) {
  const status unknown = status::invalid_input("cannot tell the import format; pass format=");
  size_t first = 0;
  while (first < body.size() && space(body[first])) ++first;
  assert(first < body.size());  // the caller rejects blank bodies
  if (body[first] == '[') {
    *out = import_format::gitmem;
    return status::ok();
  }
  json::document doc;
  if (io::parse_line(first_line(body), "line", &doc).is_ok()) {
    auto f = detect_from_line(doc.root());
    if (!f) return unknown;
    *out = *f;
    return status::ok();
  }
  // A pretty-printed {"threads": [...]} document spans lines.
  if (body[first] == '{' &&
      json::parse(body, json_limits{import_bytes_max}, "body", &doc).is_ok() &&
      threads_document(doc.root())) {
    *out = import_format::gitmem;
    return status::ok();
  }
  return unknown;
}

}  // namespace

std::optional<import_format> parse_import_format(std::string_view name) {
  for (const auto& [f, n] : format_names)
    if (n == name) return f;
  return std::nullopt;
}

std::string_view to_string(import_format f) {
  for (const auto& [g, n] : format_names)
    if (g == f) return n;
  return "unknown";
}

status parse_import(std::string_view body, import_format format, const std::string& default_agent,
                    import_result* out) {
  if (body.size() > import_bytes_max)
    return status::invalid_input("import body: " + std::to_string(body.size()) +
                                 " bytes exceeds import_bytes_max (" +
                                 std::to_string(import_bytes_max) + ")");
  if (body.starts_with("\xEF\xBB\xBF")) body.remove_prefix(3);  // a UTF-8 byte order mark
  if (first_line(body).empty()) return status::invalid_input("import body is empty");
  if (format == import_format::auto_detect) SKEIN_TRY(detect_format(body, &format));

  import_result result;
  result.format = format;
  const int64_t now = now_ms();
  switch (format) {
    case import_format::skein:
      SKEIN_TRY(io::import_skein(body, &result));
      break;
    case import_format::opennova:
      SKEIN_TRY(io::import_opennova(body, default_agent, now, &result));
      break;
    case import_format::lace:
      SKEIN_TRY(io::import_lace(body, default_agent, now, &result));
      break;
    case import_format::gitmem:
      SKEIN_TRY(io::import_gitmem(body, default_agent, now, &result));
      break;
    case import_format::auto_detect:
      assert(false);  // detect_format picked one above
      return status::invalid_input("cannot tell the import format; pass format=");
  }
  // Every value must read back once stored (the log's read limits).
  for (const auto& t : result.threads) {
    status s = io::check_stored(t.manifest);
    if (!s) return status(s.code(), "thread " + t.manifest.id + ": " + s.message());
  }
  // Each format sets last_seq and a valid id; the runtime relies on both.
  assert(std::all_of(result.threads.begin(), result.threads.end(), [](const imported_thread& t) {
    return t.manifest.last_seq == t.events.size();
  }));
  assert(std::all_of(result.threads.begin(), result.threads.end(), [](const imported_thread& t) {
    return validate_id(t.manifest.id, "thread id").is_ok();
  }));
  *out = std::move(result);
  return status::ok();
}

status io::import_skein(std::string_view body, import_result* r) {
  std::optional<manifest> m;
  size_t manifest_line = 0;
  std::vector<event> events;
  SKEIN_TRY(for_each_line(body, [&](const jsonl_line& line) -> status {
    if (!m) {
      manifest decoded;
      SKEIN_TRY(decode_manifest(line.text, &decoded));
      m = std::move(decoded);
      manifest_line = line.number;
      return status::ok();
    }
    if (events.size() >= import_events_max)
      return status::invalid_input("thread has more than import_events_max (" +
                                   std::to_string(import_events_max) + ") events");
    event e;
    SKEIN_TRY(decode_event(line.text, &e));
    SKEIN_TRY(check_stored(e, e.ts_ms));
    if (e.seq != events.size() + 1)
      return status::invalid_input("event.seq: expected " + std::to_string(events.size() + 1) +
                                   ", found " + std::to_string(e.seq));
    events.push_back(std::move(e));
    return status::ok();
  }, r));
  if (!m) return status::invalid_input("no manifest line (" + r->torn_detail + ")");
  const bool torn_event = r->torn_last_line && m->last_seq == events.size() + 1;
  if (m->last_seq != events.size() && !torn_event)
    return status::invalid_input("line " + std::to_string(manifest_line) +
                                 ": manifest.last_seq is " + std::to_string(m->last_seq) +
                                 " but " + std::to_string(events.size()) + " events follow");
  m->last_seq = events.size();
  r->threads.push_back(imported_thread{std::move(*m), std::move(events)});
  return status::ok();
}

namespace {

// The export of `count` events; line(i, &text) writes event i's JSON.
template <class line_fn>
status export_lines(const manifest& m, size_t count, const line_fn& line_of, std::string* out) {
  if (count > import_events_max)
    return status::invalid_input("export: " + std::to_string(count) +
                                 " events exceeds import_events_max (" +
                                 std::to_string(import_events_max) + ")");
  if (m.last_seq != count)
    return status::invalid_input("export: manifest.last_seq is " + std::to_string(m.last_seq) +
                                 " but there are " + std::to_string(count) + " events");
  std::string text;
  std::string line;
  // Appends `line` unless import would refuse it; `where` names it in the error.
  const auto append = [&](const auto& where) -> status {
    const size_t line_bytes_max = json_limits{}.json_bytes_max;
    if (line.size() > line_bytes_max)
      return status::invalid_input(where() + std::to_string(line.size()) +
                                   " bytes exceeds json_bytes_max (" +
                                   std::to_string(line_bytes_max) + ")");
    if (text.size() + line.size() + 1 > import_bytes_max)
      return status::invalid_input("export: more than import_bytes_max (" +
                                   std::to_string(import_bytes_max) + ") bytes");
    text += line;
    text += '\n';
    return status::ok();
  };
  status s = encode_manifest(m, &line);
  if (!s) return status(s.code(), "export: " + s.message());
  SKEIN_TRY(append([] { return std::string{"export: manifest: "}; }));
  for (size_t i = 0; i < count; ++i) {
    const auto where = [i] { return "export: event " + std::to_string(i + 1) + ": "; };
    uint64_t seq = 0;
    s = line_of(i, &seq, &line);
    if (seq != i + 1)
      return status::invalid_input(where() + "seq is " + std::to_string(seq) + ", expected " +
                                   std::to_string(i + 1));
    if (!s) return status(s.code(), where() + s.message());
    SKEIN_TRY(append(where));
  }
  *out = std::move(text);
  return status::ok();
}

}  // namespace

status export_thread(const manifest& m, const std::vector<event>& events, std::string* out) {
  return export_lines(m, events.size(), [&](size_t i, uint64_t* seq, std::string* line) {
    *seq = events[i].seq;
    return *seq == i + 1 ? encode_event(events[i], line) : status::ok();
  }, out);
}

status export_thread_raw(const manifest& m, const std::vector<raw_event>& events, std::string* out) {
  return export_lines(m, events.size(), [&](size_t i, uint64_t* seq, std::string* line) {
    *seq = events[i].seq;
    line->assign(events[i].json);
    return status::ok();
  }, out);
}

}  // namespace skein
