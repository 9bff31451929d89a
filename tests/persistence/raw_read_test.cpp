// Stored bytes are wire bytes: read_events_raw serves each event's stored JSON,
// which must equal what decoding it and encoding it again gives (the API, the
// export and SSE send these bytes instead of re-encoding).
#include <catch2/catch.hpp>

#include "persistence/event_log.hpp"
#include "persistence/keys.hpp"
#include "tests/support/log_fixtures.hpp"
#include "tests/support/raw_db.hpp"
#include "tests/support/temp_dir.hpp"

using namespace skein;
using namespace skein::test;

namespace {

// Every event kind, with the text a codec gets wrong first: escapes, control
// characters, unicode, a quote-laden run id, nested arguments, numbers.
std::vector<event> varied_events() {
  std::vector<event> v;
  v.push_back(make_system_prompt("be \"brief\"\n\tand kind"));
  v.push_back(make_message(message_role::user, "a\"b\\c\nd\x1f \xc3\xbc \xf0\x9f\x99\x82 ,\"type\":\"signal\""));
  v.push_back(make_thinking("hmm </think> \\u0000"));
  v.push_back(make_assistant_text("text with \"type\":\"result\" inside"));
  v.push_back(make_tool_call("c1", "echo", R"({"a":[1,2.5,-3e2,{"b":null}],"s":"x\"y","t":true})"));
  v.push_back(make_tool_result("c1", "echo", "out \"put\"\r\n", false));
  v.push_back(make_tool_result("c2", "broken", "", true));
  v.push_back(make_local_system_message("local"));
  v.push_back(make_message(message_role::assistant, "done"));
  v.push_back(make_result(token_usage{12, 34, 5, 6}, 0.1 + 0.2, 1234, 3, "completed"));
  v.push_back(make_result(token_usage{}, 1e-9, 0, 0, "failed"));
  v.push_back(make_signal("thread.stop", R"({"outcome":"completed","why":"\"quoted\""})"));
  std::string inner;
  event first = make_message(message_role::user, "compacted \"one\"");
  first.seq = 2;
  first.run_id = "r0";
  REQUIRE(encode_event(first, &inner).is_ok());
  v.push_back(make_compaction("trim-tool-results", 1, 12, "[" + inner + "]"));
  v.push_back(make_message(message_role::system, ""));
  for (size_t i = 0; i < v.size(); ++i) {
    v[i].seq = i + 1;
    v[i].ts_ms = 1700000000000 + static_cast<int64_t>(i) * 7 - 3;
    v[i].run_id = i % 3 == 0 ? "" : "run \"" + std::to_string(i) + "\" ,\"type\":\"x\"";
  }
  return v;
}

}  // namespace

TEST_CASE("raw reads equal the decoded events encoded again, for every event kind") {
  temp_dir dir;
  auto log = open_log(dir.str(), durability::flush);
  tick t;
  t.thread_id = "t";
  t.create = true;
  t.manifest = make_manifest("t");
  t.events = varied_events();
  REQUIRE(t.events.size() >= 10);
  auto committed = log->commit(t);
  INFO(committed.to_string());
  REQUIRE(committed.is_ok());

  std::vector<event> decoded;
  REQUIRE(log->read_events("t", 1, 0, &decoded).is_ok());
  std::vector<raw_event> raw;
  REQUIRE(log->read_events_raw("t", 1, 0, &raw).is_ok());
  REQUIRE(raw.size() == decoded.size());
  REQUIRE(raw.size() == t.events.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    INFO("seq " << decoded[i].seq << " " << to_string(decoded[i].type));
    std::string again;
    REQUIRE(encode_event(decoded[i], &again).is_ok());
    CHECK(raw[i].json == again);
    CHECK(raw[i].seq == decoded[i].seq);
    CHECK(raw[i].type == decoded[i].type);
  }

  // A page: from_seq and limit as read_events takes them.
  std::vector<raw_event> page;
  REQUIRE(log->read_events_raw("t", 4, 3, &page).is_ok());
  REQUIRE(page.size() == 3);
  CHECK(page[0].seq == 4);
  CHECK(page[2].seq == 6);
  CHECK(page[0].json == raw[3].json);
  REQUIRE(log->read_events_raw("t", raw.size() + 1, 0, &page).is_ok());
  CHECK(page.empty());
  REQUIRE(log->read_events_raw("nobody", 1, 0, &page).is_ok());
  CHECK(page.empty());
  CHECK(log->read_events_raw("bad id!", 1, 0, &page).code() == errc::invalid_input);
}

TEST_CASE("a raw read refuses a stored value whose envelope is not its key's") {
  temp_dir dir;
  {
    auto log = open_log(dir.str(), durability::flush);
    auto t = make_tick("t", 1, 3);
    REQUIRE(log->commit(t).is_ok());
  }
  std::string other;
  {
    event e = make_message(message_role::user, "x");
    e.seq = 9;
    REQUIRE(encode_event(e, &other).is_ok());
    raw_db db{dir.str()};
    db.put("events", keys::event_key("t", 2), other);
  }
  auto log = open_log(dir.str(), durability::flush);
  std::vector<raw_event> raw;
  auto s = log->read_events_raw("t", 1, 0, &raw);
  CHECK(s.code() == errc::corruption);
  CHECK_THAT(s.message(), Catch::Contains("t#2") && Catch::Contains("seq 9"));
  log.reset();
  {
    raw_db db{dir.str()};
    db.put("events", keys::event_key("t", 2), "not json");
  }
  log = open_log(dir.str(), durability::flush);
  s = log->read_events_raw("t", 1, 0, &raw);
  CHECK(s.code() == errc::corruption);
  CHECK_THAT(s.message(), Catch::Contains("envelope"));
}

TEST_CASE("peek_event_envelope reads encode_event's prefix and nothing else") {
  uint64_t seq = 0;
  event_type type = event_type::message;
  CHECK(peek_event_envelope(R"({"seq":17,"ts":-5,"run":"a\"type\":\"signal","type":"tool_call","payload":{}})", &seq, &type));
  CHECK(seq == 17);
  CHECK(type == event_type::tool_call);
  CHECK_FALSE(peek_event_envelope(R"({"ts":1,"seq":1,"type":"message"})", &seq, &type));
  CHECK_FALSE(peek_event_envelope(R"({"seq":,"type":"message"})", &seq, &type));
  CHECK_FALSE(peek_event_envelope(R"({"seq":1,"ts":0,"run":"","type":"nope","payload":{}})", &seq, &type));
  CHECK_FALSE(peek_event_envelope(R"({"seq":99999999999999999999,"type":"message"})", &seq, &type));
  CHECK_FALSE(peek_event_envelope("", &seq, &type));
}
