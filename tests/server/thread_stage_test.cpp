// What a thread shows after each outcome at any depth (manifest.hpp,
// thread_stage; docs/api.md, Status after a run): a root thread is `open` again after
// any run and its stage says how the last run ended; a child keeps the outcome
// as its status. Diagnose, a read of the thread and the listing answer alike.
// Before, a cancelled root thread diagnosed as stage `idle`, so the viewer
// never showed it.
#include <catch2/catch.hpp>

#include "runtime/model/json_reader.hpp"
#include "tests/support/runtime_fixture.hpp"
#include "tests/support/server_fixture.hpp"

using namespace skein;
using namespace skein::test;
using namespace std::chrono_literals;

namespace {

// {status, stage} of a thread as diagnose, GET and the listing show it.
struct shown {
  std::string diagnose_status, diagnose_stage, get_status, get_stage, listed_status, listed_stage;
};

shown show(server_fixture& f, const std::string& id) {
  shown s;
  auto d = f.call("GET", "/v1/threads/" + id + "/diagnose");
  REQUIRE(d.status == 200);
  s.diagnose_status = field(d.body, "status");
  s.diagnose_stage = field(d.body, "stage");
  auto g = f.call("GET", "/v1/threads/" + id);
  REQUIRE(g.status == 200);
  s.get_status = field(g.body, "status");
  s.get_stage = field(g.body, "stage");
  auto l = f.call("GET", "/v1/threads?limit=1000");
  REQUIRE(l.status == 200);
  // The listed row of `id`: its object starts at its "id" key.
  auto at = l.body.find(R"({"v":1,"id":")" + id + '"');
  REQUIRE(at != std::string::npos);
  auto row = l.body.substr(at, l.body.find("}", l.body.find(R"("stage")", at)) - at + 1);
  s.listed_status = field(row, "status");
  s.listed_stage = field(row, "stage");
  return s;
}

void check_shown(server_fixture& f, const std::string& id, const std::string& status, const std::string& stage) {
  shown s = show(f, id);
  INFO("thread " << id);
  CHECK(s.diagnose_status == status);
  CHECK(s.diagnose_stage == stage);
  CHECK(s.get_status == status);
  CHECK(s.get_stage == stage);
  CHECK(s.listed_status == status);
  CHECK(s.listed_stage == stage);
}

// Starts a run of the slow agent on `id`, waits until it runs, cancels it and
// waits until the run has ended.
void cancel_running(server_fixture& f, const std::string& id) {
  REQUIRE(f.call("POST", "/v1/threads/" + id + "/entries", R"({"text":"go"})").status == 202);
  REQUIRE(runtime_fixture::eventually([&] { return field(f.call("GET", "/v1/threads/" + id).body, "status") == "running"; }, 10s));
  auto c = f.call("POST", "/v1/threads/" + id + "/cancel");
  REQUIRE(c.status == 200);
  REQUIRE(runtime_fixture::eventually([&] { return field(f.call("GET", "/v1/threads/" + id).body, "status") != "running"; }, 10s));
}

}  // namespace

TEST_CASE("thread stage: one rule for status and stage after each outcome, root and child") {
  server_fixture f;
  f.agent("ok", R"({"default":{"reply":"fine"}})");
  f.agent("broken", R"({"default":{"error":"model down"}})");
  f.agent("slow", R"({"rules":[{"match":"quick","reply":"now"}],"default":{"reply":"late","latency_ms":3600000}})");

  const std::string fresh = f.thread("ok");
  check_shown(f, fresh, "open", "idle");

  const std::string done = f.thread("ok");
  REQUIRE(f.call("POST", "/v1/threads/" + done + "/entries", R"({"text":"hi","wait":true})").status == 200);
  check_shown(f, done, "open", "idle");

  const std::string failed = f.thread("broken");
  REQUIRE(f.call("POST", "/v1/threads/" + failed + "/entries", R"({"text":"hi","wait":true})").status == 200);
  check_shown(f, failed, "open", "failed");

  const std::string cancelled = f.thread("slow");
  cancel_running(f, cancelled);
  check_shown(f, cancelled, "open", "cancelled");

  // A child keeps its last outcome as its status, and shows the same stage.
  auto child = f.call("POST", "/v1/threads", R"({"agent_id":"slow","parent_thread_id":")" + done + R"("})");
  REQUIRE(child.status == 201);
  const std::string child_id = field(child.body, "id");
  cancel_running(f, child_id);
  check_shown(f, child_id, "cancelled", "cancelled");

  // A root thread's stage follows its last run: a run that completes after a
  // cancelled one shows idle again (the slow agent answers "quick" at once).
  REQUIRE(f.call("POST", "/v1/threads/" + cancelled + "/entries", R"({"text":"quick","wait":true})").status == 200);
  check_shown(f, cancelled, "open", "idle");
}
