// Export and import carry compaction events intact; the imported manifest's
// compaction_seq comes from the events, whatever the export said.
#include <catch2/catch.hpp>

#include "runtime/model/conversation.hpp"
#include "tests/support/runtime_fixture.hpp"
#include "tools/io/import_export.hpp"

using namespace skein;
using namespace skein::test;

TEST_CASE("a thread with a compaction round-trips through export and import") {
  runtime_fixture f;
  f.agent("a", R"({"default": {"reply": "a long answer that goes on and on and on and on and on"}})");
  std::string id = f.thread("a").id;
  for (int i = 0; i < 3; ++i) f.run(id, "question " + std::to_string(i));
  compact_result r = f.compacted(id, 1);
  f.run(id, "one more");

  manifest m;
  REQUIRE(f.rt->get_thread(id, &m).is_ok());
  auto events = f.events(id);
  std::string body;
  REQUIRE(export_thread(m, events, &body).is_ok());
  // The export's manifest may say anything: the import derives it.
  size_t at = body.find("\"compaction_seq\":");
  REQUIRE(at != std::string::npos);
  body.replace(at, std::string("\"compaction_seq\":").size() + std::to_string(r.seq).size(), "\"compaction_seq\":1");

  import_result parsed;
  REQUIRE(parse_import(body, import_format::skein, "a", &parsed).is_ok());
  REQUIRE(parsed.threads.size() == 1);
  parsed.threads[0].manifest.id = "copy";
  manifest stored;
  REQUIRE(f.rt->import_thread(parsed.threads[0].manifest, parsed.threads[0].events, &stored).is_ok());
  CHECK(stored.compaction_seq == r.seq);
  manifest read_back;
  REQUIRE(f.rt->get_thread("copy", &read_back).is_ok());
  CHECK(read_back.compaction_seq == r.seq);
  auto copy = f.events("copy");
  REQUIRE(copy.size() == events.size());
  for (size_t i = 0; i < events.size(); ++i) {
    CHECK(copy[i].type == events[i].type);
    CHECK(copy[i].json == events[i].json);
    CHECK(copy[i].tokens_before == events[i].tokens_before);
    CHECK(copy[i].prompt_seq == events[i].prompt_seq);
  }
  std::vector<event> working;
  REQUIRE(f.rt->read("copy", history_view::working, 1, 0, &working).is_ok());
  CHECK(working == working_conversation(copy));
  CHECK(f.run("copy", "continue").outcome == run_outcome::completed);

  // A fork past the compaction starts from it too.
  manifest fork;
  REQUIRE(f.rt->fork(id, r.seq + 1, &fork).is_ok());
  CHECK(fork.compaction_seq == r.seq);
}
