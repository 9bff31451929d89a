// runtime::compact: the embedded API over a real runtime, its statistics, and
// the first run after activation on a compacted thread.
#include <catch2/catch.hpp>

#include "runtime/model/conversation.hpp"
#include "tests/support/runtime_fixture.hpp"

using namespace skein;
using namespace skein::test;

namespace {

constexpr const char* chatty = R"({"default": {"reply": "a long answer that goes on and on and on and on and on and on"}})";

}  // namespace

TEST_CASE("runtime::compact compacts and counts and survives a reopen") {
  runtime_options o;
  temp_dir dir;
  o.data_dir = dir.str();
  std::string id;
  uint64_t seq = 0;
  {
    runtime_fixture f{o, false};
    f.agent("a", chatty);
    id = f.thread("a").id;
    for (int i = 0; i < 4; ++i) f.run(id, "question " + std::to_string(i));
    compact_result r = f.compacted(id, 1);
    seq = r.seq;
    runtime_stats st;
    REQUIRE(f.rt->stats(&st).is_ok());
    CHECK(st.compactions == 1);
    CHECK(st.compactions_failed == 0);
    CHECK(st.compaction_tokens_before == r.tokens_before);
    CHECK(st.compaction_tokens_after == r.tokens_after);

    compact_options bad;
    bad.stages = {"nope"};
    status s = f.rt->compact(id, bad, &r);
    CHECK(s.code() == errc::invalid_input);
    CHECK(s.field() == "stages");
    CHECK(f.rt->compact("no-such-thread", {}, &r).code() == errc::not_found);
  }
  runtime_fixture f{o, false};
  manifest m;
  REQUIRE(f.rt->get_thread(id, &m).is_ok());
  CHECK(m.compaction_seq == seq);
  // After activation the first run reads from the compaction on and sees it.
  auto r = f.run(id, "after the reopen");
  CHECK(r.outcome == run_outcome::completed);
  std::vector<event> working;
  REQUIRE(f.rt->read(id, history_view::working, 1, 0, &working).is_ok());
  CHECK(working == working_conversation(f.events(id)));
  REQUIRE(working.size() >= 2);
  CHECK(working[1].type == event_type::compaction);
}
