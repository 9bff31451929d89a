// Exceptions from host code — engine factories, tools' cancel, on_done and
// subscriber callbacks — are caught at the edge: the run or the call fails, the
// failure is counted, and every shared actor keeps serving.
#include <catch2/catch.hpp>
#include <condition_variable>
#include <mutex>
#include <stdexcept>

#include "tests/support/runtime_fixture.hpp"

using namespace skein;
using namespace skein::test;
using namespace std::chrono_literals;

namespace {

// A tool that never answers and whose cancel throws.
class throwing_cancel_tool : public tool {
 public:
  const tool_spec& spec() const override { return spec_; }
  std::unique_ptr<call_handle> invoke(tool_invocation, std::function<void(tool_output)>) override {
    struct handle : call_handle {
      void cancel() override { throw std::runtime_error("cancel exploded"); }
    };
    std::lock_guard<std::mutex> lock{mu};
    ++invoked;
    cv.notify_all();
    return std::make_unique<handle>();
  }
  std::mutex mu;
  std::condition_variable cv;
  int invoked = 0;

 private:
  tool_spec spec_{"stuck", "never answers", "{}"};
};

}  // namespace

TEST_CASE("host code that throws fails its own call and nothing else") {
  auto stuck = std::make_shared<throwing_cancel_tool>();
  runtime_options o;
  o.engines["exploding"] = [](std::string_view, timer_service&, std::shared_ptr<engine>*) -> status {
    throw std::runtime_error("factory exploded");
  };
  o.tools.push_back(stuck);
  runtime_fixture f{o};

  agent_config bad;
  bad.id = "bad";
  bad.engine = "exploding";
  status s = f.rt->create_agent(bad);
  CHECK(s.code() == errc::invalid_input);
  CHECK_THAT(s.message(), Catch::Contains("factory exploded"));

  // The directory that ran the factory still serves.
  f.agent("good", R"({"rules":[{"match":"stick","turn":1,"tool_calls":[{"name":"stuck","id":"s1"}]}],"default":{"reply":"fine"}})");
  {
    agent_config a;
    REQUIRE(f.rt->get_agent("good", &a).is_ok());
    a.tools = {"stuck"};
    a.id = "good2";
    REQUIRE(f.rt->create_agent(a).is_ok());
  }
  auto t = f.thread("good2");

  // An on_done callback that throws: counted; the client actor that ran it goes on.
  run_input in;
  in.text = "hello";
  auto h = f.rt->send(t.id, in);
  std::mutex mu;
  std::condition_variable cv;
  bool called = false;
  h.on_done([&](const status&, const run_result&) {
    {
      std::lock_guard<std::mutex> lock{mu};
      called = true;
    }
    cv.notify_all();
    throw std::runtime_error("callback exploded");
  });
  run_result r;
  REQUIRE(h.wait(&r, 60s).is_ok());
  {
    std::unique_lock<std::mutex> lock{mu};
    REQUIRE(cv.wait_for(lock, 30s, [&] { return called; }));
  }
  CHECK(runtime_fixture::eventually([&] { return f.stats().host_failures == 1; }));
  for (int i = 0; i < 8; ++i) CHECK(f.run(t.id, "again").outcome == run_outcome::completed);  // every client actor

  // A subscriber that throws on every event: counted, and runs go on.
  event_sink sink;
  sink.on_event = [](const event&) { throw std::runtime_error("subscriber exploded"); };
  uint64_t sub = 0;
  REQUIRE(f.rt->subscribe(t.id, 1, sink, &sub).is_ok());
  CHECK(f.run(t.id, "watched").outcome == run_outcome::completed);
  CHECK(runtime_fixture::eventually([&] { return f.stats().host_failures > 1; }));
  REQUIRE(f.rt->unsubscribe(sub).is_ok());

  // A tool whose cancel throws: the cancel still ends the run.
  auto stuck_run = f.rt->send(t.id, run_input{.text = "stick"});
  {
    std::unique_lock<std::mutex> lock{stuck->mu};
    REQUIRE(stuck->cv.wait_for(lock, 30s, [&] { return stuck->invoked == 1; }));
  }
  bool cancelled = false;
  REQUIRE(f.rt->cancel(t.id, &cancelled).is_ok());
  CHECK(cancelled);
  REQUIRE(stuck_run.wait(&r, 60s).is_ok());
  CHECK(r.outcome == run_outcome::cancelled);
  CHECK(f.run(t.id, "after").outcome == run_outcome::completed);
  check_runs(f.events(t.id));
}
