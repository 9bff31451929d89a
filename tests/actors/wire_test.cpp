// The wire encoding of the values that cross a node's edge (actors/wire.hpp):
// each type round-trips through CAF's binary serializer with every field set to
// a value other than its default; truncated bytes, enums out of range and
// absurd lengths are refused with an error, never a crash.
#include <catch2/catch.hpp>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <string>
#include <vector>

#include "actors/wire.hpp"
#include "tests/support/sample_records.hpp"

using namespace skein;

namespace {

struct wire_fixture {
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};

  template <class T>
  std::vector<char> save(T x) {
    std::vector<char> buf;
    caf::binary_serializer sink{sys, buf};
    auto e = sink(x);
    REQUIRE(!e);
    return buf;
  }
  template <class T>
  caf::error load(const std::vector<char>& buf, T* out) {
    caf::binary_deserializer source{sys, buf};
    return source(*out);
  }
  template <class T>
  T round_trip(const T& x) {
    T back{};
    std::vector<char> buf = save(x);
    auto e = load(buf, &back);
    REQUIRE(!e);
    // Every strict prefix is refused (a cut link, a truncated frame).
    for (size_t n = 0; n < buf.size(); n += 1 + buf.size() / 64) {
      T partial{};
      std::vector<char> cut(buf.begin(), buf.begin() + n);
      CHECK(load(cut, &partial));
    }
    return back;
  }
};

token_usage filled_usage(uint64_t base) { return {base + 1, base + 2, base + 3, base + 4}; }

event filled_event() {
  event e;
  e.seq = 42;
  e.ts_ms = 1795000000123;
  e.run_id = "run_abcdefghijklmnop";
  e.type = event_type::result;
  e.role = message_role::assistant;
  e.text = "héllo\n\"world\"";
  e.call_id = "call_1";
  e.name = "weather";
  e.json = R"({"a":[1,2,{"b":null}]})";
  e.is_error = true;
  e.usage = filled_usage(10);
  e.cost_usd = 0.125;
  e.duration_ms = 987;
  e.turns = 3;
  e.outcome = "failed";
  e.from_seq = 5;
  e.to_seq = 9;
  e.original_events = 11;
  e.tokens_before = 1200;
  e.tokens_after = 300;
  e.prompt_seq = 2;
  return e;
}

// The sample manifest with the fields it leaves at their defaults set too.
manifest filled_manifest() {
  manifest m = test::sample_manifest();
  m.title_generated = true;
  m.compaction_seq = 77;
  m.archived_at_ms = 400;
  m.depth = 2;
  m.members = {{"helper", member_trigger::always}, {"critic", member_trigger::on_mention}};
  work_item w;
  w.text = "fix the deploy";
  w.status = work_status::resolved;
  w.cls = work_class::operational;
  w.project_state = true;
  w.touch_count = 3;
  w.created_at_ms = 10;
  w.last_touched_at_ms = 20;
  w.dormant_since_ms = 30;
  w.resolved_at_ms = 40;
  w.resolution = "done";
  w.resolved_session = "s1";
  w.archived_at_ms = 50;
  m.work = w;
  return m;
}

agent_config filled_agent() {
  agent_config a;
  a.id = "helper";
  a.system_prompt = "Be brief.";
  a.engine = "openai";
  a.engine_config = R"({"model":"m"})";
  a.tools = {"clock", "weather"};
  a.policy = mid_run_policy::interrupt;
  a.budgets = {7, 8, 9, 10, 11, 12, 13, 14.5};
  a.effects = {false, "openai", R"({"dims":8})"};
  a.compaction = {5000, {"summarize"}, 6, 7};
  a.retention = {30, 90};
  a.delegation = {{"critic"}, 5, true};
  a.created_at_ms = 123456;
  return a;
}

}  // namespace

TEST_CASE_METHOD(wire_fixture, "wire: model values round-trip with every field set", "[wire]") {
  SECTION("event") { CHECK(round_trip(filled_event()) == filled_event()); }
  SECTION("manifest") { CHECK(round_trip(filled_manifest()) == filled_manifest()); }
  SECTION("manifest without work fields") {
    manifest m = filled_manifest();
    m.work.reset();
    CHECK(round_trip(m) == m);
  }
  SECTION("agent_config") { CHECK(round_trip(filled_agent()) == filled_agent()); }
  SECTION("token_usage") { CHECK(round_trip(filled_usage(0)) == filled_usage(0)); }
  SECTION("run_input") {
    run_input in{"text", message_role::system, "key-1", "scheduler", "run_x", "critic", true};
    run_input back = round_trip(in);
    CHECK(back.text == in.text);
    CHECK(back.role == in.role);
    CHECK(back.idempotency_key == in.idempotency_key);
    CHECK(back.source == in.source);
    CHECK(back.run_id == in.run_id);
    CHECK(back.member == in.member);
    CHECK(back.follow_up == in.follow_up);
  }
  SECTION("run_result") {
    run_result r{"th", "run", run_outcome::cancelled, "text", "error", filled_usage(30), 2.25, 99, 4, 10, 20};
    run_result back = round_trip(r);
    CHECK(back.thread_id == r.thread_id);
    CHECK(back.run_id == r.run_id);
    CHECK(back.outcome == r.outcome);
    CHECK(back.text == r.text);
    CHECK(back.error == r.error);
    CHECK(back.usage == r.usage);
    CHECK(back.cost_usd == r.cost_usd);
    CHECK(back.duration_ms == r.duration_ms);
    CHECK(back.turns == r.turns);
    CHECK(back.first_seq == r.first_seq);
    CHECK(back.last_seq == r.last_seq);
  }
  SECTION("thread_options, with and without a policy") {
    for (std::optional<mid_run_policy> policy : {std::optional<mid_run_policy>{}, std::optional{mid_run_policy::reject}}) {
      thread_options o;
      o.agent_id = "helper";
      o.title = "t";
      o.name = "n";
      o.tags = {"a"};
      o.parent_thread_id = "th_p";
      o.task_id = "task";
      o.policy = policy;
      o.dm = true;
      o.members = {{"critic", member_trigger::on_mention}};
      o.engine_config = R"({"x":1})";
      thread_options back = round_trip(o);
      CHECK(back.agent_id == o.agent_id);
      CHECK(back.title == o.title);
      CHECK(back.name == o.name);
      CHECK(back.tags == o.tags);
      CHECK(back.parent_thread_id == o.parent_thread_id);
      CHECK(back.task_id == o.task_id);
      CHECK(back.policy == o.policy);
      CHECK(back.dm == o.dm);
      CHECK(back.members == o.members);
      CHECK(back.engine_config == o.engine_config);
    }
  }
  SECTION("a vector of events") {
    std::vector<event> v{filled_event(), event{}, filled_event()};
    v[1].seq = 43;
    CHECK(round_trip(v) == v);
  }
}

TEST_CASE_METHOD(wire_fixture, "wire: hostile bytes are refused, never trusted", "[wire]") {
  SECTION("an enum out of range") {
    // event_type is the fourth field: seq (8), ts_ms (8), run_id (length 0: 1 byte).
    std::vector<char> buf = save(event{});
    REQUIRE(buf.size() > 17);
    buf[17] = char(0x7f);
    event back;
    caf::error e = load(buf, &back);
    REQUIRE(e);
    CHECK(e == caf::sec::invalid_argument);
  }
  SECTION("a thread_options policy out of range") {
    thread_options o;
    std::vector<char> buf = save(o);
    // agent_id, title, name (3 empty strings), tags (empty), parent, task: 6 bytes; then the policy code.
    REQUIRE(buf.size() > 6);
    buf[6] = char(9);
    thread_options back;
    CHECK(load(buf, &back));
  }
  SECTION("a string or a list longer than the bytes that follow") {
    // A varint length of about 2^62 where event.run_id's length goes.
    std::vector<char> buf = save(event{});
    std::vector<char> evil(buf.begin(), buf.begin() + 16);
    for (int i = 0; i < 8; ++i) evil.push_back(char(0xff));
    evil.push_back(char(0x3f));
    event back;
    CHECK(load(evil, &back));
    std::vector<char> list{char(0xff), char(0xff), char(0xff), char(0xff), char(0x0f)};
    std::vector<event> events;
    CHECK(load(list, &events));
    CHECK(events.empty());
  }
}
