// submit answers only once an input is durable: in the inbox while the thread
// is busy, consumed in the same batch that appends it when its run starts.
#include <catch2/catch.hpp>

#include "tests/support/det_runtime.hpp"

using namespace skein;
using namespace skein::test;

namespace {

std::string submit(det_runtime& rt, const thread_actor& thread, const std::string& text, const std::string& key = "") {
  run_input in;
  in.text = text;
  in.idempotency_key = key;
  (*rt.self)->send(thread, submit_atom::value, std::move(in));
  rt.run();
  std::string run_id;
  REQUIRE_FALSE((*rt.self)->mailbox().empty());
  (*rt.self)->receive([&](std::string& id) { run_id = id; },
                      [&](caf::error& e) { FAIL("submit failed: " << to_status(e).to_string()); });
  return run_id;
}

// Agent "a": an input "slow" calls the slow tool, which keeps its thread busy
// until the test completes the call; anything else is answered "ok".
agent_config slow_agent() {
  return scripted_agent(
      "a", R"({"rules":[{"match":"slow","turn":1,"tool_calls":[{"name":"slow","id":"s1"}]}],"default":{"reply":"ok"}})",
      {"slow"});
}

}  // namespace

TEST_CASE("an input submitted to a busy thread waits in the inbox until its run starts") {
  det_runtime rt;
  rt.add_agent(slow_agent());
  auto t = rt.add_thread("a");
  auto actor = rt.thread(t.id);

  std::string first = submit(rt, actor, "slow");  // starts at once: durable by its first tick
  std::vector<inbox_item> inbox;
  REQUIRE(rt.log->read_inbox(t.id, &inbox).is_ok());
  CHECK(inbox.empty());
  REQUIRE(rt.slow->calls().size() == 1);

  std::string second = submit(rt, actor, "next", "key-1");
  REQUIRE(rt.log->read_inbox(t.id, &inbox).is_ok());
  REQUIRE(inbox.size() == 1);  // durable before the answer came
  CHECK(inbox[0].input.run_id == second);
  CHECK(inbox[0].input.text == "next");

  // A retry with the same key is the same input: no second inbox entry.
  CHECK(submit(rt, actor, "next", "key-1") == second);
  REQUIRE(rt.log->read_inbox(t.id, &inbox).is_ok());
  CHECK(inbox.size() == 1);
  std::vector<std::string> listed;
  REQUIRE(rt.log->list_inbox_threads(&listed).is_ok());
  CHECK(listed == std::vector<std::string>{t.id});

  rt.slow->calls()[0].done(tool_output{"done", false});
  rt.run();
  REQUIRE(rt.log->read_inbox(t.id, &inbox).is_ok());
  CHECK(inbox.empty());  // consumed with the run's first tick
  auto log = rt.events(t.id);
  int starts = 0;
  for (const auto& e : log) starts += e.type == event_type::signal && e.name == "thread.start" && e.run_id == second;
  CHECK(starts == 1);
  CHECK(signals(log).back() == "thread.stop@" + second);
  CHECK(rt.read_manifest(t.id).status == thread_status::open);
  CHECK(first != second);
}

TEST_CASE("a deleted thread leaves no inbox behind") {
  det_runtime rt;
  rt.add_agent(slow_agent());
  auto t = rt.add_thread("a");
  auto actor = rt.thread(t.id);
  submit(rt, actor, "slow");
  submit(rt, actor, "queued");
  std::vector<inbox_item> inbox;
  REQUIRE(rt.log->read_inbox(t.id, &inbox).is_ok());
  REQUIRE(inbox.size() == 1);
  (*rt.self)->send(rt.actors.directory, delete_atom::value, t.id);
  rt.run();
  rt.drain();
  REQUIRE(rt.log->read_inbox(t.id, &inbox).is_ok());
  CHECK(inbox.empty());
  size_t keys = 1;
  REQUIRE(rt.log->count_thread_keys(t.id, &keys).is_ok());
  CHECK(keys == 0);
}
