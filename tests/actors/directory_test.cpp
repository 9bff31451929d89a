// The directory's lifetime: found by LeakSanitizer under the http_api fuzz target,
// which opens and closes runtimes.
#include <catch2/catch.hpp>

#include "tests/support/det_runtime.hpp"

using namespace skein;
using namespace skein::test;

TEST_CASE("a closed core frees its directory and agent actors") {
  caf::weak_actor_ptr directory;
  {
    det_runtime rt;
    auto t = rt.start_run(scripted_agent("a", R"({"default": {"reply": "ok"}})"), "hi");
    REQUIRE(rt.drain().size() == 1);
    directory = caf::actor_cast<caf::weak_actor_ptr>(rt.actors.directory);
    REQUIRE(directory.lock() != nullptr);
  }
  // The thread context handed to agents and threads held a strong handle to the
  // directory, which held the context: a cycle that outlived the actor system.
  CHECK(directory.lock() == nullptr);
}
