#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "runtime/model/ids.hpp"
#include "runtime/model/json_codec.hpp"
#include "tools/io/import_export.hpp"
#include "tests/support/sample_records.hpp"

#ifndef SKEIN_IO_FIXTURES
#error "SKEIN_IO_FIXTURES must name the fixture directory"
#endif

using namespace skein;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

// 2025-03-01T10:00:00Z and 2025-03-01T09:00:00Z.
constexpr int64_t t10 = 1740823200000;
constexpr int64_t t09 = 1740819600000;

std::string fixture(const std::string& name) {
  std::ifstream in(std::string{SKEIN_IO_FIXTURES} + "/" + name, std::ios::binary);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

import_result must_import(std::string_view body, import_format f,
                          const std::string& agent = "importer") {
  import_result r;
  status s = parse_import(body, f, agent, &r);
  INFO(s.to_string());
  REQUIRE(s.is_ok());
  return r;
}

// A result that a failed import must leave exactly as it was.
import_result sentinel() {
  import_result r;
  r.format = import_format::gitmem;
  r.threads.resize(1);
  r.threads[0].manifest.id = "sentinel";
  r.threads[0].events.push_back(make_thinking("keep me"));
  r.torn_last_line = true;
  r.torn_detail = "untouched";
  return r;
}

bool same(const import_result& a, const import_result& b) {
  if (a.format != b.format || a.torn_last_line != b.torn_last_line ||
      a.torn_detail != b.torn_detail || a.threads.size() != b.threads.size())
    return false;
  for (size_t i = 0; i < a.threads.size(); ++i)
    if (!(a.threads[i].manifest == b.threads[i].manifest) ||
        a.threads[i].events != b.threads[i].events)
      return false;
  return true;
}

// Runs an import that must fail: returns its status, checks *out is untouched.
status must_fail(std::string_view body, import_format f, const std::string& agent = "importer") {
  import_result r = sentinel();
  status s = parse_import(body, f, agent, &r);
  CHECK_FALSE(s.is_ok());
  CHECK(s.code() == errc::invalid_input);
  CHECK(same(r, sentinel()));
  return s;
}

void check_envelopes(const imported_thread& t) {
  REQUIRE(t.manifest.last_seq == t.events.size());
  for (size_t i = 0; i < t.events.size(); ++i) {
    CHECK(t.events[i].seq == i + 1);
    CHECK(t.events[i].ts_ms >= t.manifest.created_at_ms);
  }
  CHECK(validate_id(t.manifest.id, "id").is_ok());
  CHECK(validate_id(t.manifest.agent_id, "agent").is_ok());
}

std::string lace_line(const std::string& thread, const std::string& text) {
  return R"({"type":"USER_MESSAGE","data":")" + text + R"(","threadId":")" + thread + "\"}\n";
}

}  // namespace

TEST_CASE("import format names round-trip") {
  for (auto f : {import_format::auto_detect, import_format::skein, import_format::opennova,
                 import_format::lace, import_format::gitmem})
    CHECK(parse_import_format(to_string(f)) == f);
  CHECK(to_string(import_format::auto_detect) == "auto");
  CHECK(to_string(import_format::gitmem) == "gitmem");
  CHECK_FALSE(parse_import_format("jsonl").has_value());
  CHECK_FALSE(parse_import_format("").has_value());
}

TEST_CASE("opennova fixture imports field by field") {
  import_result r = must_import(fixture("opennova.jsonl"), import_format::opennova);
  CHECK(r.format == import_format::opennova);
  CHECK_FALSE(r.torn_last_line);
  REQUIRE(r.threads.size() == 1);
  const imported_thread& t = r.threads[0];
  check_envelopes(t);

  const manifest& m = t.manifest;
  CHECK(m.id == "on_sess_0001");
  CHECK(m.agent_id == "support-bot");  // from agentId, not the default
  CHECK(m.session_id == "8f14e45f-ceea-467a-9af3-2a1b6c1f0a11");
  CHECK(m.task_id == "TASK-42");
  CHECK(m.title == "Login redirects to 404 after SSO");
  CHECK(m.status == thread_status::open);
  CHECK(m.created_at_ms == t10);
  CHECK(m.updated_at_ms == t10 + 60000);
  CHECK(m.usage == token_usage{1200, 340, 800, 64});
  CHECK(m.cost_usd == Approx(0.0123));
  REQUIRE(m.last_seq == 10);

  const auto& e = t.events;
  CHECK(e[0].type == event_type::message);
  CHECK(e[0].role == message_role::system);
  CHECK(e[0].text == "You are a careful support engineer.");
  CHECK(e[0].ts_ms == t10 + 500);
  CHECK(e[1].role == message_role::user);
  CHECK(e[1].text == "After SSO the app sends me to /404 — any idea?");
  CHECK(e[1].ts_ms == t10 + 1000);
  CHECK(e[2].type == event_type::assistant_text);
  CHECK(e[2].text == "Let me look at the router config.");
  CHECK(e[2].ts_ms == t10 + 2000);  // epoch ms number
  CHECK(e[3].type == event_type::tool_call);
  CHECK(e[3].call_id == "toolu_01");
  CHECK(e[3].name == "read_file");
  CHECK(e[3].json == R"({"path":"src/router.ts","lines":[1,40]})");
  CHECK(e[3].ts_ms == t10 + 3000);
  CHECK(e[4].type == event_type::tool_result);
  CHECK(e[4].call_id == "toolu_01");
  CHECK(e[4].name == "read_file");  // taken from the matching tool_use
  CHECK(e[4].text == "export const routes = [\n  { path: \"/login\" },\n];");
  CHECK_FALSE(e[4].is_error);
  CHECK(e[4].ts_ms == t10 + 4250);
  CHECK(e[5].call_id == "toolu_02");
  CHECK(e[5].json == R"({"filter":"sso"})");
  CHECK(e[5].ts_ms == t10 + 5000);  // 11:00:05+01:00
  CHECK(e[6].type == event_type::tool_result);
  CHECK(e[6].name == "run_tests");
  CHECK(e[6].text == "1 failed\nsso.callback: expected 302");  // text blocks joined
  CHECK(e[6].is_error);
  CHECK(e[6].ts_ms == t10 + 5000);  // no timestamp: the one before
  CHECK(e[7].type == event_type::message);  // no type: a message
  CHECK(e[7].role == message_role::assistant);
  CHECK(e[7].text == "The /sso/callback route is missing; add it before the catch-all.");
  CHECK(e[8].role == message_role::user);
  CHECK(e[8].text == "Great, thanks!");  // "text" instead of "content"
  CHECK(e[8].ts_ms == t10 + 7000);
  CHECK(e[9].type == event_type::result);
  CHECK(e[9].usage == token_usage{1200, 340, 800, 64});
  CHECK(e[9].cost_usd == Approx(0.0123));
  CHECK(e[9].duration_ms == 5400);
  CHECK(e[9].turns == 2);
  CHECK(e[9].outcome == "completed");
  CHECK(e[9].ts_ms == t10 + 9000);
  for (const auto& ev : e) CHECK(ev.run_id.empty());
}

TEST_CASE("lace fixture imports field by field, one thread per threadId") {
  import_result r = must_import(fixture("lace.jsonl"), import_format::lace, "lace-agent");
  CHECK(r.format == import_format::lace);
  CHECK_FALSE(r.torn_last_line);
  REQUIRE(r.threads.size() == 3);
  for (const auto& t : r.threads) {
    check_envelopes(t);
    CHECK(t.manifest.agent_id == "lace-agent");
    CHECK(t.manifest.status == thread_status::open);
  }

  const imported_thread& a = r.threads[0];
  CHECK(a.manifest.id == "lace_20250301_abc123");
  CHECK(a.manifest.created_at_ms == t09);
  CHECK(a.manifest.updated_at_ms == t09 + 9000);
  REQUIRE(a.events.size() == 10);
  const auto& e = a.events;
  CHECK(e[0].type == event_type::system_prompt);
  CHECK(e[0].text == "You are Lace, a coding assistant.");
  CHECK(e[0].ts_ms == t09);
  CHECK(e[1].type == event_type::message);
  CHECK(e[1].role == message_role::user);
  CHECK(e[1].text == "List the files in src/");
  CHECK(e[2].type == event_type::thinking);
  CHECK(e[2].text == "I should call file_list.");
  CHECK(e[3].type == event_type::tool_call);
  CHECK(e[3].call_id == "call_1");
  CHECK(e[3].name == "file_list");
  CHECK(e[3].json == R"({"path":"src/","recursive":false})");
  CHECK(e[4].type == event_type::tool_result);
  CHECK(e[4].call_id == "call_1");
  CHECK(e[4].name == "file_list");
  CHECK(e[4].text == "main.ts\nutil.ts");
  CHECK_FALSE(e[4].is_error);
  CHECK(e[4].ts_ms == t09 + 4000);
  CHECK(e[5].name == "bash");
  CHECK(e[6].type == event_type::tool_result);
  CHECK(e[6].text == "permission denied");
  CHECK(e[6].is_error);  // isError
  CHECK(e[7].type == event_type::message);
  CHECK(e[7].role == message_role::assistant);
  CHECK(e[7].text == "src/ holds main.ts and util.ts.");
  CHECK(e[8].type == event_type::local_system_message);
  CHECK(e[8].text == "Conversation compacted");
  CHECK(e[9].type == event_type::compaction);
  CHECK(e[9].name == "summarize");
  CHECK(e[9].from_seq == 1);
  CHECK(e[9].to_seq == 9);
  CHECK(e[9].json == R"([{"type":"USER_MESSAGE","data":"Summary: the user listed src/"}])");
  CHECK(e[9].ts_ms == t09 + 9000);

  const imported_thread& b = r.threads[1];
  CHECK(b.manifest.id == "lace_20250301_def456");
  REQUIRE(b.events.size() == 2);
  CHECK(b.events[0].text == "Wie spät ist es in Tōkyō? 🕒");
  CHECK(b.events[0].ts_ms == t09 + 3500);
  CHECK(b.events[1].role == message_role::assistant);
  CHECK(b.events[1].text == "In Tokio ist es 18:00 Uhr.");  // {"content":...} data
  CHECK(b.manifest.created_at_ms == t09 + 3500);
  CHECK(b.manifest.updated_at_ms == t09 + 7500);

  const imported_thread& c = r.threads[2];  // "lace/imported/old" is no skein id
  CHECK_THAT(c.manifest.id, StartsWith("th_20250301_"));
  REQUIRE(c.events.size() == 1);
  CHECK(c.events[0].type == event_type::tool_result);
  CHECK(c.events[0].call_id == "call_9");
  CHECK(c.events[0].name.empty());  // no tool_call to name it
  CHECK(c.events[0].is_error);      // "status":"failed"
  CHECK(c.events[0].text == "timeout");
}

TEST_CASE("gitmem fixture imports all four item shapes") {
  const int64_t before = now_ms();
  import_result r = must_import(fixture("gitmem_threads.json"), import_format::gitmem, "gitmem");
  CHECK(r.format == import_format::gitmem);
  REQUIRE(r.threads.size() == 7);
  for (const auto& t : r.threads) {
    check_envelopes(t);
    CHECK(t.manifest.agent_id == "gitmem");
    CHECK(t.manifest.created_at_ms >= before);  // no times in threads.json: now
    CHECK(t.manifest.updated_at_ms == t.manifest.created_at_ms);
    REQUIRE(t.events.size() == 1);
    CHECK(t.events[0].type == event_type::message);
    CHECK(t.events[0].role == message_role::user);
    CHECK(t.events[0].ts_ms == t.manifest.created_at_ms);
  }
  const auto& th = r.threads;

  // A plain string.
  CHECK_THAT(th[0].manifest.id, StartsWith("th_"));
  CHECK(th[0].manifest.task_id.empty());
  CHECK(th[0].manifest.title == "Investigate flaky CI on main");
  CHECK(th[0].manifest.status == thread_status::open);
  CHECK(th[0].events[0].text == "Investigate flaky CI on main\nIt fails about one run in ten.");

  // {"id","text","status"}.
  CHECK(th[1].manifest.id == "t-1");
  CHECK(th[1].manifest.task_id == "t-1");
  CHECK(th[1].manifest.title == "Fix login redirect");
  CHECK(th[1].manifest.status == thread_status::completed);  // resolved
  CHECK(th[1].events[0].text == "Fix login redirect\nIt loops after SSO.");
  CHECK(th[2].manifest.id == "t-2");
  CHECK(th[2].manifest.status == thread_status::open);  // in-progress

  // A string holding JSON with text, then with note (and an id and status inside).
  CHECK_THAT(th[3].manifest.id, StartsWith("th_"));
  CHECK(th[3].manifest.title == "fix login");
  CHECK(th[3].events[0].text == "fix login");
  CHECK(th[4].manifest.id == "t-3");
  CHECK(th[4].manifest.status == thread_status::completed);  // done
  CHECK(th[4].events[0].text == "remember the rate limiter");

  // {"item","context"}.
  CHECK(th[5].manifest.title == "Document the import API");
  CHECK(th[5].events[0].text ==
        "Document the import API\n\nContext: Requested in the review of #311");

  // An id that is no skein id: fresh thread id, the item id kept as the task.
  CHECK_THAT(th[6].manifest.id, StartsWith("th_"));
  CHECK(th[6].manifest.task_id == "ticket #7");
  CHECK(th[6].manifest.title == "Résumé parsing drops ü and 日本語");
  CHECK(th[6].manifest.status == thread_status::open);  // wontfix: unknown -> open
  CHECK(th[0].manifest.id != th[3].manifest.id);
}

TEST_CASE("gitmem: a bare array, titles cut by characters, duplicate ids") {
  std::string long_text;
  for (int i = 0; i < 130; ++i) long_text += "é";
  std::string body = "[\"\\n\\n  " + long_text + "  \\nsecond line\", {\"id\":\"dup\",\"text\":\"a\"}," +
                     "{\"id\":\"dup\",\"text\":\"b\"}, {\"id\":42,\"note\":\"numbered\"}]";
  import_result r = must_import(body, import_format::gitmem);
  REQUIRE(r.threads.size() == 4);
  const std::string& title = r.threads[0].manifest.title;
  CHECK(title == long_text.substr(0, 240));  // 120 two-byte characters
  CHECK(valid_utf8(title));
  CHECK(r.threads[1].manifest.id == "dup");
  CHECK(r.threads[2].manifest.id != "dup");  // taken: a fresh id
  CHECK(r.threads[2].manifest.task_id == "dup");
  CHECK(r.threads[3].manifest.id == "42");
  CHECK(r.threads[3].events[0].text == "numbered");

  CHECK(must_import("[]", import_format::gitmem).threads.empty());
}

TEST_CASE("skein fixture imports field by field") {
  import_result r = must_import(fixture("skein.jsonl"), import_format::skein, "ignored");
  CHECK(r.format == import_format::skein);
  REQUIRE(r.threads.size() == 1);
  const imported_thread& t = r.threads[0];
  check_envelopes(t);
  const manifest& m = t.manifest;
  CHECK(m.id == "th_20250301_0123456789ab");
  CHECK(m.agent_id == "coder");  // the file's agent, not the default
  CHECK(m.session_id == "sess-9");
  CHECK(m.title == "Rename the config loader");
  CHECK(m.name == "rename");
  CHECK(m.tags == std::vector<std::string>{"refactor", "p2"});
  CHECK(m.status == thread_status::completed);
  CHECK(m.usage == token_usage{900, 120, 0, 0});
  CHECK(m.cost_usd == Approx(0.004));
  CHECK(m.config == R"({"model":"small"})");
  CHECK(m.created_at_ms == t10);
  CHECK(m.updated_at_ms == t10 + 15000);
  CHECK(m.last_seq == 7);
  REQUIRE(t.events.size() == 7);
  CHECK(t.events[0].type == event_type::signal);
  CHECK(t.events[0].name == "thread.start");
  CHECK(t.events[0].run_id.empty());
  CHECK(t.events[1].run_id == "run_k3v9x2m4p7q8r1s5");
  CHECK(t.events[1].text == "Rename load_cfg to load_config");
  CHECK(t.events[2].type == event_type::thinking);
  CHECK(t.events[3].json == R"({"pattern":"load_cfg","paths":["src"]})");
  CHECK(t.events[4].text == "src/main.cpp:12: load_cfg(\"app.toml\");");
  CHECK(t.events[5].role == message_role::assistant);
  CHECK(t.events[6].outcome == "completed");
  CHECK(t.events[6].duration_ms == 15000);
  CHECK(t.events[6].ts_ms == t10 + 15000);
}

TEST_CASE("auto-detection picks each format") {
  struct detect_case {
    std::string body;
    import_format expected;
  };
  std::vector<detect_case> cases = {
      {fixture("skein.jsonl"), import_format::skein},
      {fixture("opennova.jsonl"), import_format::opennova},
      {fixture("lace.jsonl"), import_format::lace},
      {fixture("gitmem_threads.json"), import_format::gitmem},  // {"threads": ...} over lines
      {R"(["one","two"])", import_format::gitmem},
      {"  \n[\n \"one\"\n]\n", import_format::gitmem},
      {R"({"threads":["one"]})", import_format::gitmem},
      {"{\"createdAt\":1740823200000,\"title\":\"x\"}\n{\"role\":\"user\",\"content\":\"hi\"}\n",
       import_format::opennova},  // camelCase manifest without agentId/sessionId
  };
  for (const auto& c : cases) {
    INFO(c.body.substr(0, 60));
    import_result r = must_import(c.body, import_format::auto_detect);
    CHECK(r.format == c.expected);
    CHECK_FALSE(r.threads.empty());
  }
  // Deterministic formats give the same threads as when named.
  CHECK(same(must_import(fixture("skein.jsonl"), import_format::auto_detect),
             must_import(fixture("skein.jsonl"), import_format::skein)));
  CHECK(same(must_import(fixture("opennova.jsonl"), import_format::auto_detect),
             must_import(fixture("opennova.jsonl"), import_format::opennova)));

  for (const char* body : {"{\"role\":\"user\",\"content\":\"hi\"}\n", "{\"type\":\"message\"}\n",
                           "42\n", "not json at all\n"}) {
    INFO(body);
    status s = must_fail(body, import_format::auto_detect);
    CHECK(s.message() == "cannot tell the import format; pass format=");
  }
}

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

TEST_CASE("opennova times: ISO-8601 variants and epoch milliseconds") {
  struct time_case {
    const char* json;
    int64_t ms;
  };
  const time_case cases[] = {
      {R"("2025-03-01T10:00:00Z")", t10},
      {R"("2025-03-01T10:00:00.5Z")", t10 + 500},
      {R"("2025-03-01T10:00:00.123456Z")", t10 + 123},
      {R"("2025-03-01T12:30:00+02:30")", t10},
      {R"("2025-03-01T05:00:00-0500")", t10},
      {R"("2025-03-01t10:00:00z")", t10},
      {R"("2025-03-01 10:00:00")", t10},  // no zone: UTC
      {R"("2025-03-01T10:00")", t10},
      {R"("2025-03-01")", t10 - 10 * 3600 * 1000},
      {R"("2024-02-29T00:00:00Z")", 1709164800000},
      {R"("1970-01-01T00:00:00Z")", 0},
      {"1740823200000", t10},
      {"1740823200000.0", t10},
  };
  for (const auto& c : cases) {
    INFO(c.json);
    std::string body = std::string{"{\"agentId\":\"a\",\"createdAt\":"} + c.json +
                       "}\n{\"role\":\"user\",\"text\":\"x\",\"timestamp\":" + c.json + "}\n";
    import_result r = must_import(body, import_format::opennova);
    CHECK(r.threads[0].manifest.created_at_ms == c.ms);
    CHECK(r.threads[0].events[0].ts_ms == c.ms);
  }
  for (const char* bad : {R"("2025-02-29T00:00:00Z")", R"("2025-13-01T00:00:00Z")",
                          R"("2025-03-01T24:00:00Z")", R"("2025-03-01T10:00:00+25:00")",
                          R"("yesterday")", R"("2025-03-01T10:00:00.Z")", "-5", "true",
                          "18446744073709551615", R"("1969-12-31T23:59:59Z")"}) {
    INFO(bad);
    std::string body = std::string{"{\"agentId\":\"a\"}\n{\"role\":\"user\",\"text\":\"x\",\"timestamp\":"} +
                       bad + "}\n";
    status s = must_fail(body, import_format::opennova);
    CHECK(s.message() == "line 2: event.timestamp: expected an ISO-8601 time or epoch milliseconds >= 0");
  }
}

TEST_CASE("opennova: defaults, minted ids and result outcomes") {
  std::string body =
      "{\"sessionId\":\"s1\",\"createdAt\":\"2025-03-01T10:00:00Z\"}\n"
      "{\"role\":\"user\",\"content\":\"go\"}\n"
      "{\"type\":\"result\",\"is_error\":true,\"total_cost_usd\":0.5}\n"
      "{\"type\":\"result\",\"subtype\":\"error_max_turns\"}\n"
      "{\"type\":\"result\",\"subtype\":\"interrupted\"}\n"
      "{\"type\":\"result\",\"total_cost_usd\":0.25,\"usage\":{\"input_tokens\":5}}\n";
  import_result r = must_import(body, import_format::opennova, "fallback-agent");
  const imported_thread& t = r.threads[0];
  CHECK(t.manifest.agent_id == "fallback-agent");
  CHECK_THAT(t.manifest.id, StartsWith("th_20250301_"));  // minted from createdAt
  CHECK(t.manifest.session_id == "s1");
  CHECK(t.manifest.updated_at_ms == t10);  // no updatedAt, no later event time
  REQUIRE(t.events.size() == 5);
  CHECK(t.events[0].ts_ms == t10);  // no timestamp: the created time
  CHECK(t.events[1].outcome == "failed");
  CHECK(t.events[2].outcome == "failed");
  CHECK(t.events[3].outcome == "cancelled");
  CHECK(t.events[4].outcome == "completed");
  CHECK(t.manifest.cost_usd == Approx(0.75));
  CHECK(t.manifest.usage.input_tokens == 5);

  status s = must_fail("{\"sessionId\":\"s1\"}\n{\"role\":\"user\",\"content\":\"go\"}\n",
                       import_format::opennova, "not a valid id");
  CHECK_THAT(s.message(), StartsWith("line 1: default_agent: "));

  s = must_fail("{\"agentId\":\"a\"}\n{\"role\":\"user\",\"content\":[{\"type\":\"image\",\"data\":\"...\"}]}\n",
                import_format::opennova);
  CHECK(s.message() ==
        "line 2: event.content[0].type: only text blocks can be imported, not 'image'");
}

TEST_CASE("lace: a compaction first, lines without a threadId, a bad default agent") {
  std::string body =
      "{\"type\":\"COMPACTION\",\"data\":{\"strategyId\":\"trim\",\"compactedEvents\":[]}}\n"
      "{\"type\":\"USER_MESSAGE\",\"data\":\"after\",\"timestamp\":1740823200000}\n";
  import_result r = must_import(body, import_format::lace);
  REQUIRE(r.threads.size() == 1);  // both without threadId: one thread
  const auto& e = r.threads[0].events;
  REQUIRE(e.size() == 2);
  CHECK(e[0].from_seq == 0);
  CHECK(e[0].to_seq == 0);
  CHECK(e[0].json == "[]");
  CHECK(e[0].ts_ms == t10);  // before the first time: the created time (the first time seen)
  CHECK(r.threads[0].manifest.created_at_ms == t10);

  status s = must_fail(body, import_format::lace, "");
  CHECK(s.message() == "default_agent: must not be empty");
}

TEST_CASE("opennova as OpenNova writes it: no ids, camelCase results") {
  const std::string body = fixture("opennova_native.jsonl");
  import_result r = must_import(body, import_format::auto_detect);
  CHECK(r.format == import_format::opennova);
  REQUIRE(r.threads.size() == 1);
  const imported_thread& t = r.threads[0];
  check_envelopes(t);
  CHECK_THAT(t.manifest.id, StartsWith("th_20250301_"));  // the file name was the id: minted
  CHECK(t.manifest.agent_id == "nova");
  CHECK(t.manifest.task_id == "7");
  CHECK(t.manifest.updated_at_ms == t10 + 9000);
  REQUIRE(t.events.size() == 7);
  const auto& e = t.events;
  CHECK(e[2].type == event_type::tool_call);
  CHECK(e[2].call_id == "opennova_line_4");  // minted from the line
  CHECK(e[2].name == "list_tickets");
  CHECK(e[2].json == R"({"since":"2025-02-22"})");
  CHECK(e[3].call_id == "opennova_line_5");
  CHECK(e[5].type == event_type::result);
  CHECK(e[5].usage == token_usage{900, 120, 300, 0});
  CHECK(e[5].cost_usd == Approx(0.0042));
  CHECK(e[5].duration_ms == 6100);
  CHECK(e[5].turns == 3);
  CHECK(e[5].outcome == "completed");
  CHECK(t.manifest.usage == token_usage{900, 120, 300, 0});

  // The same file again: the same call ids (the thread id is minted afresh).
  import_result again = must_import(body, import_format::opennova);
  CHECK(again.threads[0].events == t.events);
}

TEST_CASE("opennova: a tool_result without tool_use_id answers the earliest open call") {
  const std::string body =
      "{\"agentId\":\"a\"}\n"
      "{\"type\":\"tool_use\",\"name\":\"first\"}\n"
      "{\"type\":\"tool_use\",\"name\":\"second\"}\n"
      "{\"type\":\"tool_use\",\"id\":\"given\",\"name\":\"third\"}\n"
      "{\"type\":\"tool_result\",\"tool_use_id\":\"given\",\"content\":\"3\"}\n"
      "{\"type\":\"tool_result\",\"content\":\"1\"}\n"
      "{\"type\":\"tool_result\",\"content\":\"2\"}\n";
  import_result r = must_import(body, import_format::opennova);
  const auto& e = r.threads[0].events;
  REQUIRE(e.size() == 6);
  CHECK(e[3].call_id == "given");
  CHECK(e[3].name == "third");
  CHECK(e[4].call_id == "opennova_line_2");
  CHECK(e[4].name == "first");
  CHECK(e[4].text == "1");
  CHECK(e[5].call_id == "opennova_line_3");
  CHECK(e[5].name == "second");

  status s = must_fail(body + "{\"type\":\"tool_result\",\"content\":\"none left\"}\n", import_format::opennova);
  CHECK(s.message() == "line 8: event.tool_use_id: missing, and no earlier tool_use waits for a result");
}
