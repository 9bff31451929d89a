// Import of each foreign format, field by field: OpenNova, Lace, gitmem and
// skein's own export, auto-detection, and each format's quirks (times, defaults,
// minted ids, unanswered tool calls). Whole-body rules and export are in
// import_body_test.cpp.
#include <catch2/catch.hpp>

#include "runtime/model/json_codec.hpp"
#include "tests/tools/import_checks.hpp"
#include "tools/io/import_export.hpp"

using namespace skein;
using namespace skein::test;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

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
