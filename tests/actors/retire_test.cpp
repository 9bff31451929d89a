// Retention's erase goes through the thread actor (retire_atom), so that it is
// ordered with the thread's inputs: a busy or recently touched thread is never
// erased, and one that agreed takes no further input.
#include <catch2/catch.hpp>

#include "actors/directory.hpp"
#include "tests/support/det_runtime.hpp"

using namespace skein;
using namespace skein::test;

namespace {

bool retire(det_runtime& rt, const std::string& id, int64_t before_ms) {
  return rt.ask<bool>(rt.actors.directory, retire_atom::value, id, before_ms);
}

const char* slow_rules =
    R"({"rules":[{"match":"slow","turn":1,"tool_calls":[{"name":"slow","id":"s1"}]}],"default":{"reply":"ok"}})";

}  // namespace

TEST_CASE("retire: a running thread is not erased, an idle one untouched since the cutoff is") {
  det_runtime rt;
  rt.add_agent(scripted_agent("a", slow_rules, {"slow"}));
  auto t = rt.add_thread("a");
  rt.send(t.id, "slow");
  rt.run();
  REQUIRE(rt.slow->calls().size() == 1);  // mid-run: a tool call in flight
  CHECK_FALSE(retire(rt, t.id, INT64_MAX));
  CHECK(rt.read_manifest(t.id).status == thread_status::running);

  rt.slow->calls()[0].done(tool_output{"done", false});
  rt.run();
  rt.drain();
  manifest m = rt.read_manifest(t.id);
  REQUIRE(m.status == thread_status::open);
  CHECK_FALSE(retire(rt, t.id, m.updated_at_ms));  // touched at the cutoff: not before it
  CHECK(rt.read_manifest(t.id).last_seq == m.last_seq);
  CHECK(retire(rt, t.id, m.updated_at_ms + 1));
  manifest gone;
  CHECK(rt.log->read_manifest(t.id, &gone).code() == errc::not_found);
}

TEST_CASE("retire: ordered with inputs in the thread's mailbox, whichever comes first wins") {
  det_runtime rt;
  rt.add_agent(scripted_agent("a", slow_rules, {"slow"}));
  auto first = rt.add_thread("a"), second = rt.add_thread("a");

  // An input ahead of the retire: the thread is busy when the retire is asked.
  auto a1 = rt.thread(first.id);
  run_input in;
  in.text = "slow";
  (*rt.self)->send(a1, send_atom::value, in);
  (*rt.self)->send(rt.actors.directory, retire_atom::value, first.id, INT64_MAX);
  rt.run();
  bool retired = true;
  (*rt.self)->receive([&](bool v) { retired = v; }, [&](caf::error& e) { FAIL(to_status(e).to_string()); });
  CHECK_FALSE(retired);
  CHECK(rt.read_manifest(first.id).status == thread_status::running);

  // The retire ahead of an input: once the actor agreed, the input is refused
  // as for a deleted thread, though the directory has not stopped it yet.
  auto a2 = rt.thread(second.id);
  (*rt.self)->send(rt.actors.directory, retire_atom::value, second.id, INT64_MAX);
  REQUIRE(rt.sched->try_run_once());  // the directory asks the actor
  REQUIRE(rt.sched->try_run_once());  // the actor agrees
  in.text = "too late";
  (*rt.self)->send(a2, send_atom::value, in);
  rt.run();
  bool refused = false, erased = false;
  while (!(*rt.self)->mailbox().empty())
    (*rt.self)->receive([&](bool v) { erased = v; },
                        [&](caf::error& e) {
                          // Refused at admission ("is being deleted"), not started and then cut off ("was deleted").
                          status st = to_status(e);
                          refused = refused || (st.code() == errc::not_found &&
                                                st.message().find("is being deleted") != std::string::npos);
                        },
                        [](run_result&) { FAIL("the input ran"); });
  CHECK(erased);
  CHECK(refused);
  manifest gone;
  CHECK(rt.log->read_manifest(second.id, &gone).code() == errc::not_found);
  rt.slow->calls()[0].done(tool_output{"done", false});
  rt.run();
  rt.drain();
}

// A cluster handoff's freeze (directory freeze_atom) uses the same decision:
// a busy thread is not frozen; an idle one is, its actor stops, an input that
// reached the actor after it agreed is refused as moving (ask again), and the
// directory activates it no more until it is unfrozen; its log is untouched.
TEST_CASE("freeze: only an idle thread freezes and then nothing reaches it until it thaws") {
  det_runtime rt;
  rt.add_agent(scripted_agent("a", slow_rules, {"slow"}));
  auto busy = rt.add_thread("a"), idle = rt.add_thread("a");
  rt.send(busy.id, "slow");
  rt.run();
  REQUIRE(rt.slow->calls().size() == 1);
  CHECK_FALSE(rt.ask<bool>(rt.actors.directory, freeze_atom::value, busy.id, true));
  CHECK(rt.read_manifest(busy.id).status == thread_status::running);

  auto actor = rt.thread(idle.id);
  (*rt.self)->send(rt.actors.directory, freeze_atom::value, idle.id, true);
  REQUIRE(rt.sched->try_run_once());  // the directory asks the actor
  REQUIRE(rt.sched->try_run_once());  // the actor agrees
  run_input in;
  in.text = "too late";
  (*rt.self)->send(actor, send_atom::value, in);
  rt.run();
  bool frozen = false, refused = false;
  while (!(*rt.self)->mailbox().empty())
    (*rt.self)->receive([&](bool v) { frozen = v; },
                        [&](caf::error& e) {
                          status st = to_status(e);
                          refused = refused || (st.code() == errc::unavailable &&
                                                st.message().find("moving") != std::string::npos);
                        },
                        [](run_result&) { FAIL("the input ran"); });
  CHECK(frozen);
  CHECK(refused);
  // Not activated again while frozen; the log is as it was.
  (*rt.self)->send(rt.actors.directory, resolve_atom::value, idle.id);
  rt.run();
  status resolved;
  (*rt.self)->receive([&](caf::actor&) {}, [&](caf::error& e) { resolved = to_status(e); });
  CHECK(resolved.code() == errc::unavailable);
  manifest still;
  CHECK(rt.log->read_manifest(idle.id, &still).is_ok());
  CHECK(rt.ask<bool>(rt.actors.directory, freeze_atom::value, idle.id, false));
  CHECK(rt.thread(idle.id));  // thawed: activated again
  rt.slow->calls()[0].done(tool_output{"done", false});
  rt.run();
  rt.drain();
}
