// Export and the rules an import applies to a whole body, whatever its format:
// export then import gives back the same thread, export refuses what import
// would, a bad line fails the import naming it, a torn last line is skipped,
// limits and invalid UTF-8 are named. Per-format mapping is in import_export_test.cpp.
#include <algorithm>
#include <catch2/catch.hpp>

#include "runtime/model/json_codec.hpp"
#include "tests/support/sample_records.hpp"
#include "tests/tools/import_checks.hpp"
#include "tools/io/import_export.hpp"

using namespace skein;
using namespace skein::test;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

std::vector<event> roundtrip_events() {
  std::vector<event> v = test::one_event_of_each_type();
  v.insert(v.begin(), make_signal("thread.start", R"({"by":"cli"})"));
  for (size_t i = 0; i < v.size(); ++i) {
    v[i].seq = i + 1;
    v[i].ts_ms = t10 + static_cast<int64_t>(i) * 7;
    v[i].run_id = i == 0 ? "" : "run_abcdefghjkmnpqrs";
  }
  return v;
}

}  // namespace

TEST_CASE("export then import gives back the same thread") {
  manifest m = test::sample_manifest();
  std::vector<event> events = roundtrip_events();
  m.last_seq = events.size();

  std::string body;
  REQUIRE(export_thread(m, events, &body).is_ok());
  // One line per record, each ending in "\n".
  CHECK(std::count(body.begin(), body.end(), '\n') == static_cast<long>(events.size() + 1));
  CHECK(body.back() == '\n');
  std::string first_line = body.substr(0, body.find('\n'));
  std::string manifest_json;
  REQUIRE(encode_manifest(m, &manifest_json).is_ok());
  CHECK(first_line == manifest_json);

  for (auto f : {import_format::skein, import_format::auto_detect}) {
    import_result r = must_import(body, f, "someone-else");
    CHECK(r.format == import_format::skein);
    CHECK_FALSE(r.torn_last_line);
    REQUIRE(r.threads.size() == 1);
    CHECK(r.threads[0].manifest == m);
    CHECK(r.threads[0].events == events);
  }

  // Export of the import is byte for byte the same.
  import_result r = must_import(body, import_format::skein);
  std::string again;
  REQUIRE(export_thread(r.threads[0].manifest, r.threads[0].events, &again).is_ok());
  CHECK(again == body);

  // The skein fixture survives import -> export -> import.
  import_result fx = must_import(fixture("skein.jsonl"), import_format::skein);
  std::string fx_body;
  REQUIRE(export_thread(fx.threads[0].manifest, fx.threads[0].events, &fx_body).is_ok());
  CHECK(same(must_import(fx_body, import_format::skein), fx));

  // A thread without events exports as the manifest alone.
  manifest empty = test::sample_manifest();
  empty.last_seq = 0;  // the seq of a log without events
  std::string empty_body;
  REQUIRE(export_thread(empty, {}, &empty_body).is_ok());
  import_result er = must_import(empty_body, import_format::skein);
  CHECK(er.threads[0].manifest == empty);
  CHECK(er.threads[0].events.empty());
}

TEST_CASE("export refuses what import would refuse and leaves out untouched") {
  manifest m = test::sample_manifest();
  std::vector<event> events = roundtrip_events();
  m.last_seq = events.size();
  const std::string keep = "keep";
  std::string out = keep;

  manifest wrong_last = m;
  wrong_last.last_seq = events.size() + 1;
  status s = export_thread(wrong_last, events, &out);
  CHECK(s.code() == errc::invalid_input);
  CHECK_THAT(s.message(), Contains("last_seq is 14"));
  CHECK(out == keep);

  std::vector<event> gap = events;
  gap[4].seq = 9;
  s = export_thread(m, gap, &out);
  CHECK(s.message() == "export: event 5: seq is 9, expected 5");
  CHECK(out == keep);

  std::vector<event> bad_text = events;
  bad_text[1].text = "bad \xff byte";
  s = export_thread(m, bad_text, &out);
  CHECK(s.message() == "export: event 2: event.payload.text: invalid UTF-8");
  CHECK(out == keep);

  std::vector<event> too_long = {make_message(message_role::user, std::string(5 << 20, 'x'))};
  too_long[0].seq = 1;
  manifest one = m;
  one.last_seq = 1;
  s = export_thread(one, too_long, &out);
  CHECK_THAT(s.message(), StartsWith("export: event 1: ") && Contains("json_bytes_max (4194304)"));
  CHECK(out == keep);

  std::vector<event> many(import_events_max + 1, make_message(message_role::user, "x"));
  manifest lots = m;
  lots.last_seq = many.size();
  s = export_thread(lots, many, &out);
  CHECK_THAT(s.message(), Contains("import_events_max (100000)"));
  CHECK(out == keep);
}

TEST_CASE("a bad line in the middle fails the whole import, naming its line") {
  std::string skein = fixture("skein.jsonl");
  SECTION("skein: malformed JSON on line 3") {
    size_t a = skein.find('\n') + 1;
    size_t b = skein.find('\n', a) + 1;  // start of line 3
    std::string body = skein.substr(0, b) + "{\"seq\":2,\"ts\":\n" + skein.substr(b);
    status s = must_fail(body, import_format::skein);
    CHECK_THAT(s.message(), StartsWith("line 3: event: malformed JSON"));
  }
  SECTION("skein: a gap in the seqs") {
    std::string body = skein;
    size_t at = body.find("{\"seq\":3,");
    REQUIRE(at != std::string::npos);
    body.replace(at, 9, "{\"seq\":4,");
    status s = must_fail(body, import_format::skein);
    CHECK(s.message() == "line 4: event.seq: expected 3, found 4");
  }
  SECTION("skein: a clean cut at a line boundary does not pass for whole") {
    std::string body = skein.substr(0, skein.rfind('\n', skein.size() - 2) + 1);
    status s = must_fail(body, import_format::skein);
    CHECK(s.message() == "line 1: manifest.last_seq is 7 but 6 events follow");
  }
  SECTION("opennova: an unknown event type on line 5") {
    std::string body = fixture("opennova.jsonl");
    size_t at = body.find("{\"type\":\"tool_use\",\"id\":\"toolu_01\"");
    REQUIRE(at != std::string::npos);
    body.insert(at, "{\"type\":\"system\",\"subtype\":\"init\"}\n");
    status s = must_fail(body, import_format::opennova);
    CHECK(s.message() == "line 5: event.type: unknown opennova event type 'system'");
  }
  SECTION("opennova: an event where the manifest should be") {
    status s = must_fail("{\"type\":\"message\",\"role\":\"user\",\"content\":\"hi\"}\n",
                         import_format::opennova);
    CHECK_THAT(s.message(), StartsWith("line 1: manifest: expected the opennova manifest"));
  }
  SECTION("opennova: a message without a role") {
    status s = must_fail("{\"agentId\":\"a\"}\n{\"content\":\"hi\"}\n{\"role\":\"user\",\"text\":\"x\"}\n",
                         import_format::opennova);
    CHECK(s.message() == "line 2: event.role: missing");
  }
  SECTION("lace: blank lines count, CRLF is fine, a broken line 4 is not") {
    std::string body = lace_line("lace_1", "a") + "\r\n" + lace_line("lace_1", "b") +
                       "{\"type\":\"USER_MESSAGE\",\"data\":\"c\"\n" + lace_line("lace_1", "d");
    status s = must_fail(body, import_format::lace);
    CHECK_THAT(s.message(), StartsWith("line 4: event: malformed JSON"));
  }
  SECTION("lace: an unknown type") {
    std::string body = lace_line("lace_1", "a") +
                       "{\"type\":\"TOOL_APPROVAL_REQUEST\",\"data\":{},\"threadId\":\"lace_1\"}\n" +
                       lace_line("lace_1", "b");
    status s = must_fail(body, import_format::lace);
    CHECK(s.message() == "line 2: event.type: unknown lace event type 'TOOL_APPROVAL_REQUEST'");
  }
  SECTION("lace: a bad timestamp") {
    std::string body = lace_line("lace_1", "a") +
                       "{\"type\":\"USER_MESSAGE\",\"data\":\"b\",\"timestamp\":\"2025-02-29T00:00:00Z\"}\n";
    status s = must_fail(body, import_format::lace);
    CHECK(s.message() ==
          "line 2: event.timestamp: expected an ISO-8601 time or epoch milliseconds >= 0");
  }
  SECTION("gitmem: item 2 is neither a string nor an object") {
    status s = must_fail(R"(["a", {"text":"b"}, 17, "d"])", import_format::gitmem);
    CHECK(s.message() == "item 2: expected a string or an object");
  }
  SECTION("gitmem: an object without text") {
    status s = must_fail(R"({"threads":["a", {"id":"t-9","status":"open"}]})", import_format::gitmem);
    CHECK(s.message() == "item 1: no text (expected text, note or item)");
  }
  SECTION("gitmem: an empty text") {
    status s = must_fail(R"(["a", "  "])", import_format::gitmem);
    CHECK(s.message() == "item 1: the text is empty");
  }
  SECTION("gitmem: a truncated document") {
    status s = must_fail(R"(["a", "b")", import_format::gitmem);
    CHECK_THAT(s.message(), StartsWith("threads.json: malformed JSON"));
  }
}

TEST_CASE("a torn last line is skipped and reported") {
  SECTION("lace") {
    std::string whole = fixture("lace.jsonl");
    std::string body = whole + R"({"type":"USER_MESSAGE","data":"half a mess)";
    import_result r = must_import(body, import_format::lace);
    CHECK(r.torn_last_line);
    CHECK(r.torn_detail == "line 14: unterminated JSON (skipped)");
    import_result full = must_import(whole, import_format::lace);
    REQUIRE(r.threads.size() == full.threads.size());
    for (size_t i = 0; i < r.threads.size(); ++i)
      CHECK(r.threads[i].events == full.threads[i].events);
  }
  SECTION("skein: the last event cut in half") {
    std::string whole = fixture("skein.jsonl");
    size_t last = whole.rfind('\n', whole.size() - 2) + 1;
    std::string body = whole.substr(0, last + 40);
    import_result r = must_import(body, import_format::skein);
    CHECK(r.torn_last_line);
    CHECK(r.torn_detail == "line 8: unterminated JSON (skipped)");
    REQUIRE(r.threads.size() == 1);
    CHECK(r.threads[0].events.size() == 6);
    CHECK(r.threads[0].manifest.last_seq == 6);
  }
  SECTION("opennova, with invalid UTF-8 where the cut split a character") {
    std::string body = fixture("opennova.jsonl") + "{\"role\":\"user\",\"content\":\"caf\xC3";
    import_result r = must_import(body, import_format::opennova);
    CHECK(r.torn_last_line);
    CHECK(r.torn_detail == "line 12: unterminated JSON (skipped)");
    CHECK(r.threads[0].events.size() == 10);
  }
  SECTION("an unterminated last line that is whole JSON is imported") {
    std::string body = lace_line("lace_1", "a") + R"({"type":"USER_MESSAGE","data":"b","threadId":"lace_1"})";
    import_result r = must_import(body, import_format::lace);
    CHECK_FALSE(r.torn_last_line);
    REQUIRE(r.threads.size() == 1);
    CHECK(r.threads[0].events.size() == 2);
    CHECK(r.threads[0].events[1].text == "b");
  }
  SECTION("an unterminated last line that is JSON but wrong still fails") {
    std::string body = lace_line("lace_1", "a") + R"({"type":"NOPE","data":"b"})";
    status s = must_fail(body, import_format::lace);
    CHECK(s.message() == "line 2: event.type: unknown lace event type 'NOPE'");
  }
  SECTION("a broken last line that ends in a newline fails") {
    std::string body = lace_line("lace_1", "a") + "{\"type\":\"USER_MESSAGE\",\"da\n";
    status s = must_fail(body, import_format::lace);
    CHECK_THAT(s.message(), StartsWith("line 2: event: malformed JSON"));
  }
}

TEST_CASE("an empty body is refused") {
  for (const char* body : {"", "   ", "\n\n \t\r\n", "\xEF\xBB\xBF"}) {
    for (auto f : {import_format::auto_detect, import_format::skein, import_format::opennova,
                   import_format::lace, import_format::gitmem}) {
      INFO(to_string(f));
      status s = must_fail(body, f);
      CHECK(s.message() == "import body is empty");
    }
  }
}

TEST_CASE("inputs past a limit name the limit") {
  SECTION("import_bytes_max") {
    std::string body(import_bytes_max + 1, ' ');
    body[0] = '[';
    status s = must_fail(body, import_format::auto_detect);
    CHECK(s.message() == "import body: 67108865 bytes exceeds import_bytes_max (67108864)");
  }
  SECTION("import_events_max") {
    std::string body;
    body.reserve((import_events_max + 1) * 50);
    for (size_t i = 0; i < import_events_max; ++i) body += lace_line("lace_big", "m");
    import_result r = must_import(body, import_format::lace);  // at the limit: fine
    REQUIRE(r.threads.size() == 1);
    CHECK(r.threads[0].events.size() == import_events_max);
    CHECK(r.threads[0].events.back().seq == import_events_max);
    body += lace_line("lace_big", "one too many");
    status s = must_fail(body, import_format::lace);
    CHECK(s.message() == "line 100001: thread has more than import_events_max (100000) events");
  }
  SECTION("import_threads_max") {
    std::string body;
    for (size_t i = 0; i <= import_threads_max; ++i) body += lace_line("lace_" + std::to_string(i), "m");
    status s = must_fail(body, import_format::lace);
    CHECK(s.message() == "line 10001: more than import_threads_max (10000) threads");
    std::string items = "[";
    for (size_t i = 0; i <= import_threads_max; ++i) items += "\"x\",";
    items.back() = ']';
    s = must_fail(items, import_format::gitmem);
    CHECK(s.message() == "threads.json: 10001 items exceeds import_threads_max (10000)");
  }
  SECTION("json_bytes_max on one line") {
    std::string body = lace_line("lace_1", "a") + lace_line("lace_1", std::string(5 << 20, 'x'));
    status s = must_fail(body, import_format::lace);
    CHECK_THAT(s.message(), StartsWith("line 2: event: ") && Contains("exceeds json_bytes_max (4194304)"));
  }
  SECTION("json_bytes_max on an unterminated last line is not a torn line") {
    std::string body = lace_line("lace_1", "a") + "{\"data\":\"" + std::string(5 << 20, 'x');
    status s = must_fail(body, import_format::lace);
    CHECK_THAT(s.message(), StartsWith("line 2: event: ") && Contains("json_bytes_max"));
  }
  SECTION("json_depth_max") {
    std::string deep = std::string(100, '[') + std::string(100, ']');
    std::string body = "{\"agentId\":\"a\"}\n{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"n\",\"input\":" +
                       deep + "}\n";
    status s = must_fail(body, import_format::opennova);
    CHECK(s.message() == "line 2: event: nesting exceeds json_depth_max (64)");
  }
}

TEST_CASE("invalid UTF-8 names the line") {
  std::string lace = lace_line("lace_1", "fine") + lace_line("lace_1", "bad \xC3\x28 byte") +
                     lace_line("lace_1", "fine");
  status s = must_fail(lace, import_format::lace);
  CHECK(s.message() == "line 2: event: invalid UTF-8");

  s = must_fail("{\"agentId\":\"a\",\"title\":\"\xFF\"}\n{\"role\":\"user\",\"text\":\"x\"}\n",
                import_format::opennova);
  CHECK(s.message() == "line 1: manifest: invalid UTF-8");

  std::string skein = fixture("skein.jsonl");
  size_t at = skein.find("grep first");
  REQUIRE(at != std::string::npos);
  skein[at] = '\xFE';
  s = must_fail(skein, import_format::skein);
  CHECK(s.message() == "line 4: event: invalid UTF-8");

  s = must_fail("[\"ok\", \"bad \xE2\x82 x\"]", import_format::gitmem);
  CHECK(s.message() == "threads.json: invalid UTF-8");
}

