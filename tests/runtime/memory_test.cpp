// Memory search through the runtime: rows rebuilt from the embeddings column
// family at open, rows fed live through memory(), the tool, limits and erasure.
#include <catch2/catch.hpp>

#include "tests/support/generated_messages.hpp"
#include <random>

#include "persistence/keys.hpp"
#include "runtime/model/hashing_embedder.hpp"
#include "runtime/model/text.hpp"
#include "tests/support/raw_db.hpp"
#include "tests/support/runtime_fixture.hpp"

using namespace skein;
using namespace skein::test;

namespace {


const std::string planted = "Remember: the spare key to the lighthouse is hidden under the blue ceramic frog";

thread_import imported(const std::string& id, const std::vector<std::string>& texts) {
  thread_import t;
  t.manifest.id = id;
  t.manifest.agent_id = "mem";
  for (size_t i = 0; i < texts.size(); ++i) {
    event e = make_message(i % 2 ? message_role::assistant : message_role::user, texts[i]);
    e.seq = i + 1;
    t.events.push_back(std::move(e));
  }
  return t;
}

std::string embedding_value(const std::string& text, bool assistant) {
  std::string v;
  REQUIRE(encode_embedding({"mem", assistant, hash_embed(text)}, &v).is_ok());
  return v;
}

void add_live(runtime& rt, const std::string& thread, uint64_t seq, const std::string& text) {
  REQUIRE(rt.memory().add(thread, seq, {"mem", seq % 2 == 0, hash_embed(text)}).is_ok());
}

}  // namespace

TEST_CASE("memory search: the planted message is found first among 10,000 others, rebuilt at open") {
  const uint64_t seed = std::random_device{}();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  temp_dir dir;
  std::vector<std::pair<std::string, std::string>> rows;  // embeddings CF
  {
    runtime_options o;
    o.data_dir = dir.str();
    runtime_fixture f{o, false};
    f.agent("mem", R"({"default": {"reply": "ok"}})");
    std::vector<thread_import> threads;
    for (int t = 0; t < 100; ++t) {
      std::vector<std::string> texts;
      for (int i = 0; i < 100; ++i) texts.push_back(generated_message(rng));
      threads.push_back(imported("m" + std::to_string(t), texts));
      for (size_t i = 0; i < texts.size(); ++i)
        rows.emplace_back(keys::event_key(threads.back().manifest.id, i + 1), embedding_value(texts[i], i % 2));
    }
    threads.push_back(imported("planted", {"hello there", planted, "noted"}));
    rows.emplace_back(keys::event_key("planted", 2), embedding_value(planted, false));
    std::vector<manifest> out;
    REQUIRE(f.rt->import_threads(std::move(threads), &out).is_ok());
  }
  rows.emplace_back(keys::event_key("m1", 999), "not a vector");  // skipped, never fatal
  { raw_db{dir.str()}.put_many("embeddings", rows); }

  runtime_options o;
  o.data_dir = dir.str();
  runtime_fixture f{o, false};
  runtime_stats st;
  REQUIRE(f.rt->stats(&st).is_ok());
  CHECK(st.memory_rebuild.rows == 10001);
  CHECK(st.memory_rebuild.skipped == 1);
  CHECK(st.memory.rows == 10001);
  WARN("memory rebuild at open: " << st.memory_rebuild.rows << " rows in " << st.memory_rebuild.ms << " ms");
  std::vector<memory_hit> hits;
  REQUIRE(f.rt->memory_search("mem", "where is the lighthouse key hidden? some frog?", 5, &hits).is_ok());
  REQUIRE(hits.size() == 5);
  CHECK(hits[0].thread_id == "planted");
  CHECK(hits[0].seq == 2);
  CHECK(hits[0].role == "user");
  CHECK(hits[0].snippet == planted);
  CHECK(hits[0].score > hits[1].score);
}

TEST_CASE("memory search: limits name q and k, an unknown agent is not found") {
  runtime_fixture f;
  f.agent("mem", R"({"default": {"reply": "ok"}})");
  std::vector<memory_hit> hits;
  status s = f.rt->memory_search("mem", "anything", 0, &hits);
  CHECK(s.code() == errc::invalid_input);
  CHECK(s.field() == "k");
  s = f.rt->memory_search("mem", "anything", memory_search_k_max + 1, &hits);
  CHECK(s.field() == "k");
  CHECK(s.limit() == "memory_search_k_max");
  CHECK(s.message().find("101") != std::string::npos);
  s = f.rt->memory_search("mem", "", 5, &hits);
  CHECK(s.field() == "q");
  s = f.rt->memory_search("mem", std::string(memory_query_bytes_max + 1, 'x'), 5, &hits);
  CHECK(s.limit() == "memory_query_bytes_max");
  CHECK(f.rt->memory_search("ghost", "anything", 5, &hits).code() == errc::not_found);
  REQUIRE(f.rt->memory_search("mem", "anything", 5, &hits).is_ok());  // no rows yet: no hits
  CHECK(hits.empty());
}

TEST_CASE("memory search: snippets are cut on a UTF-8 boundary, a deleted thread's rows are gone") {
  runtime_fixture f;
  f.agent("mem", R"({"default": {"reply": "ok"}})");
  std::string long_text = "café lighthouse ";
  while (long_text.size() < 600) long_text += "é";
  std::vector<manifest> out;
  REQUIRE(f.rt->import_threads({imported("keep", {"a lighthouse keeper"}), imported("drop", {long_text})}, &out).is_ok());
  add_live(*f.rt, "keep", 1, "a lighthouse keeper");
  add_live(*f.rt, "drop", 1, long_text);
  add_live(*f.rt, "ghost-thread", 1, "lighthouse lighthouse");  // its event never existed: skipped
  std::vector<memory_hit> hits;
  REQUIRE(f.rt->memory_search("mem", "cafe lighthouse é", 10, &hits).is_ok());
  REQUIRE(hits.size() == 2);
  const memory_hit* cut = hits[0].thread_id == "drop" ? &hits[0] : &hits[1];
  CHECK(cut->thread_id == "drop");
  CHECK(cut->snippet.size() <= memory_snippet_bytes_max + 3);
  CHECK(cut->snippet.size() > memory_snippet_bytes_max - 4);
  CHECK(to_valid_utf8(cut->snippet) == cut->snippet);
  CHECK(cut->snippet.rfind("\xE2\x80\xA6") == cut->snippet.size() - 3);

  REQUIRE(f.rt->delete_thread("drop").is_ok());
  CHECK(f.rt->memory().rows("mem") == 2);  // keep and ghost-thread
  REQUIRE(f.rt->memory_search("mem", "cafe lighthouse é", 10, &hits).is_ok());
  REQUIRE(hits.size() == 1);
  CHECK(hits[0].thread_id == "keep");
}

TEST_CASE("memory search: the built-in tool searches the calling thread's agent") {
  runtime_fixture f;
  agent_config a;
  a.id = "mem";
  a.system_prompt = "test";
  a.tools = {"memory_search"};
  a.engine_config = R"({"rules": [
      {"turn": 1, "tool_calls": [{"name": "memory_search", "id": "c1",
                                  "arguments": {"query": "the lighthouse key under the frog", "k": 3}}]},
      {"turn": 2, "reply": "found it"}]})";
  REQUIRE(f.rt->create_agent(a).is_ok());
  std::vector<manifest> out;
  REQUIRE(f.rt->import_threads({imported("old", {"hi", planted})}, &out).is_ok());
  add_live(*f.rt, "old", 2, planted);
  auto t = f.thread("mem");
  auto r = f.run(t.id, "what did I tell you about the key?");
  CHECK(r.text == "found it");
  bool seen = false;
  for (const auto& e : f.events(t.id)) {
    if (e.type != event_type::tool_result) continue;
    seen = true;
    CHECK_FALSE(e.is_error);
    CHECK_THAT(e.text, Catch::StartsWith(R"({"hits":[{"thread_id":"old","seq":2,"role":"assistant","score":)"));
    CHECK_THAT(e.text, Catch::Contains(planted));
  }
  CHECK(seen);
}
