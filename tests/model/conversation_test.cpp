#include <catch2/catch.hpp>

#include "runtime/model/conversation.hpp"
#include "runtime/model/run.hpp"

using namespace skein;

namespace {

std::vector<event> numbered(std::vector<event> v) {
  for (size_t i = 0; i < v.size(); ++i) {
    v[i].seq = i + 1;
    v[i].run_id = "r";
  }
  return v;
}

std::vector<event_type> types_of(const std::vector<event>& v) {
  std::vector<event_type> out;
  for (const auto& e : v) out.push_back(e.type);
  return out;
}

}  // namespace

TEST_CASE("the working conversation drops signals, results and local messages") {
  auto log = numbered({make_system_prompt("p"), make_signal("thread.start"),
                       make_message(message_role::user, "hi"), make_local_system_message("note"),
                       make_message(message_role::assistant, "hello"),
                       make_result({}, 0, 0, 1, "completed"), make_signal("thread.stop")});
  auto w = working_conversation(log);
  CHECK(types_of(w) == std::vector<event_type>{event_type::system_prompt, event_type::message,
                                               event_type::message});
  CHECK(w[1].text == "hi");
}

TEST_CASE("the working conversation starts at the latest compaction, keeping the prompt") {
  auto log = numbered({make_system_prompt("p"), make_message(message_role::user, "old"),
                       make_compaction("summarize", 1, 2, "[]"),
                       make_message(message_role::user, "mid"),
                       make_compaction("summarize", 1, 4, "[]"),
                       make_message(message_role::user, "new")});
  auto w = working_conversation(log);
  REQUIRE(w.size() == 3);
  CHECK(w[0].type == event_type::system_prompt);
  CHECK(w[1].type == event_type::compaction);
  CHECK(w[1].to_seq == 4);
  CHECK(w[2].text == "new");
}

TEST_CASE("a tool call without a result gets a synthesized error result in the view only") {
  auto log = numbered({make_message(message_role::user, "go"), make_tool_call("a", "t", "{}"),
                       make_tool_call("b", "t", "{}"), make_tool_result("a", "t", "ok", false),
                       make_signal("thread.interrupted"), make_message(message_role::user, "again")});
  auto w = working_conversation(log);
  REQUIRE(w.size() == 6);
  CHECK(w[3].type == event_type::tool_result);
  CHECK(w[3].call_id == "a");
  CHECK(w[4].type == event_type::tool_result);
  CHECK(w[4].call_id == "b");
  CHECK(w[4].is_error);
  CHECK(w[4].seq == 0);
  CHECK(w[4].text == missing_tool_result_text);
  CHECK(w[5].text == "again");
  CHECK(log.size() == 6);
}

TEST_CASE("agents round-trip and bad agents name the field") {
  agent_config a;
  a.id = "helper";
  a.system_prompt = "You help.";
  a.engine_config = R"({"rules":[]})";
  a.tools = {"search", "clock"};
  a.policy = mid_run_policy::interrupt;
  a.budgets.ticks_max = 4;
  a.created_at_ms = 9;
  std::string json;
  REQUIRE(encode_agent(a, &json).is_ok());
  agent_config back;
  REQUIRE(decode_agent(json, &back).is_ok());
  CHECK(back == a);

  REQUIRE(decode_agent(R"({"id":"min"})", &back).is_ok());
  CHECK(back.policy == mid_run_policy::queue);
  CHECK(back.budgets.ticks_max == 32);
  CHECK(back.budgets.engine_idle_ms == 180000);

  CHECK_THAT(decode_agent(R"({"id":"x","policy":"later"})", &back).message(), Catch::Contains("agent.policy"));
  CHECK_THAT(decode_agent(R"({"id":"x","budgets":{"ticks_max":0}})", &back).message(), Catch::Contains("ticks_max"));
  CHECK_THAT(decode_agent(R"({"id":"x","tools":["a b"]})", &back).message(), Catch::Contains("agent.tools"));
  CHECK_THAT(decode_agent(R"({"id":"x","engine_config":[]})", &back).message(), Catch::Contains("agent.engine_config"));
}

TEST_CASE("inputs and thread options are validated, naming the field") {
  run_input in;
  in.text = std::string(input_bytes_max + 1, 'a');
  CHECK_THAT(validate_input(in).message(), Catch::Contains("input_bytes_max"));
  in.text = "\xc0";
  CHECK_THAT(validate_input(in).message(), Catch::Contains("text: invalid UTF-8"));
  in.text = "ok";
  in.idempotency_key = "has space";
  CHECK_THAT(validate_input(in).message(), Catch::Contains("idempotency_key"));

  thread_options o;
  o.agent_id = "a";
  CHECK(validate_thread_options(o).is_ok());
  o.tags = {"x/y"};
  CHECK_THAT(validate_thread_options(o).message(), Catch::Contains("tags"));
  o.tags.clear();
  o.title = std::string(title_bytes_max + 1, 't');
  CHECK_THAT(validate_thread_options(o).message(), Catch::Contains("title"));
}

TEST_CASE("a thread's mid-run policy override wins over its agent's") {
  CHECK(effective_policy(R"({"mid_run":"reject"})", mid_run_policy::queue) == mid_run_policy::reject);
  CHECK(effective_policy("{}", mid_run_policy::interrupt) == mid_run_policy::interrupt);
  CHECK(effective_policy(R"({"mid_run":"bogus"})", mid_run_policy::queue) == mid_run_policy::queue);
}

TEST_CASE("a run's result is rebuilt from its slice of the log") {
  auto log = numbered({make_message(message_role::user, "q"), make_message(message_role::assistant, "a"),
                       make_result({3, 4, 0, 0}, 0.5, 12, 2, "completed"),
                       make_signal("thread.stop", R"({"outcome":"completed"})")});
  run_result r;
  REQUIRE(result_from_log("t", "r", log, &r).is_ok());
  CHECK(r.text == "a");
  CHECK(r.outcome == run_outcome::completed);
  CHECK(r.usage.output_tokens == 4);
  CHECK(r.turns == 2);
  CHECK(r.first_seq == 1);
  CHECK(r.last_seq == 4);
  log.pop_back();
  CHECK(result_from_log("t", "r", log, &r).code() == errc::not_found);
}

TEST_CASE("extending a working conversation event by event equals building it from the log") {
  auto log = numbered({make_message(message_role::user, "a"), make_system_prompt("p1"),
                       make_signal("thread.start"), make_tool_call("c", "t", "{}"),
                       make_tool_result("c", "t", "r", false), make_message(message_role::assistant, "b"),
                       make_result({}, 0, 0, 1, "completed"), make_system_prompt("p2"),
                       make_compaction("summarize", 1, 6, "[]"), make_local_system_message("x"),
                       make_message(message_role::user, "c")});
  for (size_t n = 0; n <= log.size(); ++n) {
    INFO("prefix of " << n << " events");
    std::vector<event> prefix(log.begin(), log.begin() + static_cast<std::ptrdiff_t>(n));
    if (!prefix.empty() && prefix.back().type == event_type::tool_call) continue;  // a call still waiting
    std::vector<event> view;
    for (const auto& e : prefix) extend_working_conversation(&view, e);
    CHECK(view == working_conversation(prefix));
  }
}
