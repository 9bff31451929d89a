// Every import format at the edge of what it accepts, through a real runtime: the
// longest, deepest and most malformed input either imports and reads back equal,
// or fails naming the line (or item) and the field or limit, and nothing stored
// is touched.
#include <catch2/catch.hpp>
#include <functional>

#include "runtime/model/ids.hpp"
#include "runtime/model/json_codec.hpp"
#include "runtime/runtime.hpp"
#include "tests/support/runtime_fixture.hpp"
#include "tools/io/import_export.hpp"

using namespace skein;
using namespace skein::test;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

constexpr size_t bytes_max = json_limits{}.json_bytes_max;
constexpr size_t depth_max = json_limits{}.json_depth_max;
constexpr int64_t t10 = 1740823200000;  // 2025-03-01T10:00:00Z

std::string nested(size_t depth) { return std::string(depth, '[') + "1" + std::string(depth, ']'); }

std::string skein_manifest(const std::string& id, uint64_t last_seq = 1) {
  manifest m;
  m.id = "placeholder_id";  // replaced below: the id under test may be one encode refuses
  m.agent_id = "importer";
  m.created_at_ms = m.updated_at_ms = t10;
  m.last_seq = last_seq;
  std::string out;
  REQUIRE(encode_manifest(m, &out).is_ok());
  out.replace(out.find("placeholder_id"), 14, id);
  return out + "\n";
}

std::string skein_event(event e, uint64_t seq = 1) {
  e.seq = seq;
  e.ts_ms = t10;
  std::string out;
  REQUIRE(encode_event(e, &out).is_ok());
  return out + "\n";
}

// How one format writes a body around the piece under test. Each body holds one
// thread; the piece sits on line `line` (gitmem: in item 0).
struct format_case {
  import_format format;
  std::string where;  // "line 2: " or "item 0: ", as errors name it
  std::function<std::string(const std::string& text)> message;
  std::function<std::string(const std::string& json)> tool_call;  // json: the tool input
  std::function<std::string(const std::string& id)> with_id;
  size_t tool_line_depth;  // the nesting the tool call line adds around its input
};

std::vector<format_case> formats() {
  return {
      {import_format::skein, "line 2: ",
       [](const std::string& text) {
         std::string line = skein_event(make_message(message_role::user, "@text@"));
         return skein_manifest("th_limits") + line.replace(line.find("@text@"), 6, text);  // raw bytes, unchecked
       },
       [](const std::string& json) {
         // Spliced in raw: encode_event itself refuses arguments that nest too deep.
         std::string line = skein_event(make_tool_call("c1", "n", "{}"));
         return skein_manifest("th_limits") + line.replace(line.find("\"arguments\":{}"), 14, "\"arguments\":" + json);
       },
       [](const std::string& id) { return skein_manifest(id) + skein_event(make_message(message_role::user, "x")); },
       2},
      {import_format::opennova, "line 2: ",
       [](const std::string& text) { return "{\"agentId\":\"importer\"}\n{\"role\":\"user\",\"text\":\"" + text + "\"}\n"; },
       [](const std::string& json) {
         return "{\"agentId\":\"importer\"}\n{\"type\":\"tool_use\",\"name\":\"n\",\"input\":" + json + "}\n";
       },
       [](const std::string& id) { return "{\"id\":\"" + id + "\"}\n{\"role\":\"user\",\"text\":\"x\"}\n"; }, 1},
      {import_format::lace, "line 1: ",
       [](const std::string& text) {
         return "{\"type\":\"USER_MESSAGE\",\"data\":\"" + text + "\",\"threadId\":\"lace_1\"}\n";
       },
       [](const std::string& json) {
         return "{\"type\":\"TOOL_CALL\",\"data\":{\"id\":\"c\",\"name\":\"n\",\"arguments\":" + json +
                "},\"threadId\":\"lace_1\"}\n";
       },
       [](const std::string& id) { return "{\"type\":\"USER_MESSAGE\",\"data\":\"x\",\"threadId\":\"" + id + "\"}\n"; },
       2},
      {import_format::gitmem, "item 0: ", [](const std::string& text) { return "[\"" + text + "\"]"; },
       [](const std::string& json) { return "[{\"text\":\"x\",\"extra\":" + json + "}]"; },
       [](const std::string& id) { return "[{\"id\":\"" + id + "\",\"text\":\"x\"}]"; }, 2},
  };
}

// A body whose piece is padded so that the line holding it is exactly `bytes`
// long (gitmem: the whole document).
std::string padded(const format_case& f, size_t bytes) {
  std::string empty = f.message("");
  size_t line = f.format == import_format::skein || f.format == import_format::opennova
                    ? empty.size() - empty.find('\n') - 2  // the second line, without "\n"
                    : empty.size() - (f.format == import_format::lace ? 1 : 0);
  REQUIRE(line < bytes);
  std::string body = f.message(std::string(bytes - line, 'x'));
  REQUIRE(body.size() == empty.size() + bytes - line);
  return body;
}

struct fixture {
  runtime_fixture rt{without_effects()};  // import() counts the log's writes
  std::string bystander;  // a thread that is there before every import

  fixture() {
    rt.agent("importer", R"({"default": {"reply": "ok"}})");
    bystander = rt.thread("importer").id;
  }

  size_t threads() {
    thread_query q;
    q.value = "importer";
    q.limit = thread_query::limit_max;
    thread_page page;
    REQUIRE(rt.rt->list_threads(q, &page).is_ok());
    return page.threads.size();
  }

  // Parses and imports as the import route does; returns the first refusal.
  status import(const std::string& body, import_format format) {
    const size_t before = threads();
    const uint64_t writes = rt.stats().log.writes;
    import_result parsed;
    status s = parse_import(body, format, "importer", &parsed);
    if (s) {
      std::vector<thread_import> threads;
      for (const auto& t : parsed.threads) threads.push_back({t.manifest, t.events});
      std::vector<manifest> stored;
      s = rt.rt->import_threads(std::move(threads), &stored);
    }
    if (!s) {
      CHECK(threads() == before);  // nothing stored is touched
      CHECK(rt.stats().log.writes == writes);
      CHECK(rt.events(bystander).empty());
      return s;
    }
    for (const auto& t : parsed.threads) {  // what was imported reads back equal
      manifest m;
      REQUIRE(rt.rt->get_thread(t.manifest.id, &m).is_ok());
      CHECK(m.last_seq == t.events.size());
      CHECK(rt.events(t.manifest.id) == t.events);
    }
    return s;
  }
};

}  // namespace

TEST_CASE("each import format at json_bytes_max") {
  for (const auto& f : formats()) {
    fixture fx;
    INFO(to_string(f.format));
    // The longest line that still reads back once stored with skein's envelope.
    CHECK(fx.import(padded(f, bytes_max - 256), f.format).is_ok());
    // Exactly json_bytes_max parses, but would be stored past the limit.
    status s = fx.import(padded(f, bytes_max), f.format);
    CHECK(s.code() == errc::invalid_input);
    CHECK_THAT(s.message(), StartsWith(f.where) && Contains("exceeds json_bytes_max (4194304)"));
    s = fx.import(padded(f, bytes_max + 1), f.format);
    CHECK(s.code() == errc::invalid_input);
    if (f.format != import_format::gitmem)  // gitmem reads a document, not lines
      CHECK_THAT(s.message(), StartsWith(f.where) && Contains("4194305 bytes exceeds json_bytes_max (4194304)"));
  }
}

TEST_CASE("each import format at json_depth_max") {
  for (const auto& f : formats()) {
    fixture fx;
    INFO(to_string(f.format));
    const size_t at_max = depth_max - f.tool_line_depth;  // the line nests at exactly json_depth_max
    status s = fx.import(f.tool_call(nested(at_max)), f.format);
    if (f.format == import_format::opennova) {
      // The input sits one level below the line, but two below the stored event.
      CHECK(s.message() == "line 2: event.payload.arguments: nesting 63 plus the 2 levels above it exceeds json_depth_max (64)");
      CHECK(fx.import(f.tool_call(nested(at_max - 1)), f.format).is_ok());
    } else {
      INFO(s.to_string());
      CHECK(s.is_ok());
    }
    s = fx.import(f.tool_call(nested(at_max + 1)), f.format);
    CHECK(s.code() == errc::invalid_input);
    CHECK_THAT(s.message(), Contains("nesting exceeds json_depth_max (64)"));
  }
}

TEST_CASE("each import format: invalid UTF-8, a torn last line, an empty body") {
  for (const auto& f : formats()) {
    fixture fx;
    INFO(to_string(f.format));
    status s = fx.import(f.message("caf\xC3\x28"), f.format);
    CHECK(s.code() == errc::invalid_input);
    CHECK_THAT(s.message(), Contains("invalid UTF-8"));
    if (f.format != import_format::gitmem) CHECK_THAT(s.message(), StartsWith(f.where));

    for (const char* empty : {"", "\n", " \r\n\t"}) {
      s = fx.import(empty, f.format);
      CHECK(s.message() == "import body is empty");
    }

    const std::string whole = f.message("whole");
    if (f.format == import_format::gitmem) {
      s = fx.import(whole.substr(0, whole.size() - 1), f.format);  // no closing bracket
      CHECK_THAT(s.message(), StartsWith("threads.json: malformed JSON"));
      continue;
    }
    // A last event cut in half by a crash of the writer: skipped and reported.
    std::string body = whole + "{\"role\":\"user\",\"text\":\"lo";
    std::string torn_line = "line 3";
    if (f.format == import_format::skein)  // its manifest counted the torn event
      body = skein_manifest("th_torn", 2) + skein_event(make_message(message_role::user, "whole")) +
             skein_event(make_message(message_role::user, "lost"), 2).substr(0, 30);
    if (f.format == import_format::lace) {
      body = whole + whole.substr(0, whole.size() / 2);
      torn_line = "line 2";
    }
    import_result r;
    s = parse_import(body, f.format, "importer", &r);
    INFO(s.to_string());
    REQUIRE(s.is_ok());
    CHECK(r.torn_detail == torn_line + ": unterminated JSON (skipped)");
    REQUIRE(r.threads.size() == 1);
    CHECK(r.threads[0].events.size() == 1);
    CHECK(fx.import(body, f.format).is_ok());
  }
}

TEST_CASE("each import format: ids of 128 characters import, 129 are refused naming the limit") {
  for (const auto& f : formats()) {
    fixture fx;
    INFO(to_string(f.format));
    const std::string id128(id_bytes_max, 'i');
    import_result r;
    REQUIRE(parse_import(f.with_id(id128), f.format, "importer", &r).is_ok());
    REQUIRE(r.threads.size() == 1);
    CHECK(r.threads[0].manifest.id == id128);
    CHECK(fx.import(f.with_id(id128), f.format).is_ok());

    status s = fx.import(f.with_id(id128 + "i"), f.format);
    CHECK(s.code() == errc::invalid_input);
    CHECK_THAT(s.message(), Contains("longer than id_bytes_max (128 characters)"));
    CHECK_THAT(s.message(), StartsWith(f.format == import_format::gitmem ? "item 0: id" : "line 1: "));
  }
  // Agent ids are kept verbatim: the same limit.
  fixture fx;
  status s = fx.import("{\"agentId\":\"" + std::string(id_bytes_max + 1, 'a') + "\"}\n{\"role\":\"user\",\"text\":\"x\"}\n",
                       import_format::opennova);
  CHECK(s.message() == "line 1: manifest.agentId: longer than id_bytes_max (128 characters)");
  s = fx.import("{\"type\":\"USER_MESSAGE\",\"data\":\"x\"}\n", import_format::lace);
  CHECK(s.is_ok());
}
