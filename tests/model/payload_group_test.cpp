// Payload groups over every event type, the group filter's grammar, mentions of
// house members, and RFC 7386 merge patches of engine configs.
#include <catch2/catch.hpp>

#include "runtime/model/event.hpp"
#include "runtime/model/manifest.hpp"
#include "runtime/model/run.hpp"

using namespace skein;

TEST_CASE("event_group puts every event type in exactly one group") {
  const std::pair<event_type, payload_group> expected[] = {
      {event_type::message, payload_group::chat},
      {event_type::assistant_text, payload_group::chat},
      {event_type::local_system_message, payload_group::chat},
      {event_type::thinking, payload_group::model},
      {event_type::tool_call, payload_group::model},
      {event_type::tool_result, payload_group::model},
      {event_type::system_prompt, payload_group::model},
      {event_type::result, payload_group::model},
      {event_type::compaction, payload_group::model},
      {event_type::signal, payload_group::signal},
  };
  REQUIRE(std::size(expected) == event_type_count);
  for (int i = 0; i < event_type_count; ++i) {
    auto type = static_cast<event_type>(i);
    INFO(to_string(type));
    bool listed = false;
    for (auto [t, g] : expected)
      if (t == type) {
        listed = true;
        CHECK(event_group(type) == g);
      }
    CHECK(listed);
  }
}

TEST_CASE("group filter: names, lists, and a bad name naming the field") {
  group_filter f;
  REQUIRE(parse_group_filter("", &f).is_ok());
  CHECK(f.all());
  REQUIRE(parse_group_filter("chat,signal", &f).is_ok());
  CHECK(f.admits(event_type::message));
  CHECK(f.admits(event_type::signal));
  CHECK_FALSE(f.admits(event_type::tool_call));
  CHECK_FALSE(f.all());
  REQUIRE(parse_group_filter("model", &f).is_ok());
  CHECK(f.admits(event_type::thinking));
  CHECK_FALSE(f.admits(event_type::message));
  for (const char* bad : {"chats", "chat,", ",chat", "CHAT", "chat;signal"}) {
    INFO(bad);
    status s = parse_group_filter(bad, &f);
    CHECK(s.code() == errc::invalid_input);
    CHECK(s.field() == "group");
  }
  status huge = parse_group_filter(std::string(100000, 'x'), &f);
  CHECK(huge.message().size() < 400);  // the input is quoted, cut
}

TEST_CASE("mentions: @id as a word") {
  CHECK(mentions("hi @bob", "bob"));
  CHECK(mentions("@bob, look", "bob"));
  CHECK(mentions("ask @bob.", "bob"));
  CHECK(mentions("(@bob)", "bob"));
  CHECK_FALSE(mentions("hi @bobby", "bob"));
  CHECK_FALSE(mentions("hi bob", "bob"));
  CHECK_FALSE(mentions("mail bob@bob.example", "bo"));
  CHECK_FALSE(mentions("@bob.x", "bob"));
  CHECK(mentions("@bob.x", "bob.x"));
  std::vector<house_member> members = {{"a", member_trigger::always}, {"b", member_trigger::on_mention}};
  CHECK(triggered_members(members, "hello") == std::vector<std::string>{"a"});
  CHECK(triggered_members(members, "hello @b") == std::vector<std::string>{"a", "b"});
}

TEST_CASE("merge_patch follows RFC 7386") {
  // The examples of RFC 7386, appendix A.
  const char* cases[][3] = {
      {R"({"a":"b"})", R"({"a":"c"})", R"({"a":"c"})"},
      {R"({"a":"b"})", R"({"b":"c"})", R"({"a":"b","b":"c"})"},
      {R"({"a":"b"})", R"({"a":null})", R"({})"},
      {R"({"a":"b","b":"c"})", R"({"a":null})", R"({"b":"c"})"},
      {R"({"a":["b"]})", R"({"a":"c"})", R"({"a":"c"})"},
      {R"({"a":"c"})", R"({"a":["b"]})", R"({"a":["b"]})"},
      {R"({"a":{"b":"c"}})", R"({"a":{"b":"d","c":null}})", R"({"a":{"b":"d"}})"},
      {R"({"a":[{"b":"c"}]})", R"({"a":[1]})", R"({"a":[1]})"},
      {R"(["a","b"])", R"(["c","d"])", R"(["c","d"])"},
      {R"({"a":"b"})", R"(["c"])", R"(["c"])"},
      {R"({"a":"foo"})", "null", "null"},
      {R"({"a":"foo"})", R"("bar")", R"("bar")"},
      {R"({"e":null})", R"({"a":1})", R"({"e":null,"a":1})"},
      {R"([1,2])", R"({"a":"b","c":null})", R"({"a":"b"})"},
      {R"({})", R"({"a":{"bb":{"ccc":null}}})", R"({"a":{"bb":{}}})"},
  };
  for (auto& c : cases) {
    INFO(c[0] << " + " << c[1]);
    std::string out;
    REQUIRE(merge_patch(c[0], c[1], &out).is_ok());
    CHECK(out == c[2]);
  }
}

TEST_CASE("thread options: engine_config and members are checked at creation") {
  thread_options o;
  o.agent_id = "a";
  o.engine_config = "[1]";
  CHECK(validate_thread_options(o).field() == "engine_config");
  o.engine_config = std::string(engine_config_bytes_max + 1, ' ');
  CHECK(validate_thread_options(o).limit() == "engine_config_bytes_max");
  o.engine_config = std::string(engine_config_depth_max + 1, '[') + std::string(engine_config_depth_max + 1, ']');
  CHECK(validate_thread_options(o).code() == errc::invalid_input);
  o.engine_config = R"({"default":{"reply":"x"}})";
  CHECK(validate_thread_options(o).is_ok());
  o.members = {{"b", member_trigger::always}, {"b", member_trigger::on_mention}};
  CHECK(validate_thread_options(o).code() == errc::invalid_input);
  o.members = {{"b", member_trigger::always}};
  CHECK(validate_thread_options(o).is_ok());
  o.task_id = "t";
  CHECK(validate_thread_options(o).field() == "members");  // a task thread is no house
}
