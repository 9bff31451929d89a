#include <catch2/catch.hpp>
#include <cmath>

#include "runtime/model/embedding.hpp"
#include "runtime/model/engine.hpp"
#include "runtime/model/hashing_embedder.hpp"

using namespace skein;

namespace {
float dot(const std::vector<float>& a, const std::vector<float>& b) {
  float s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}
}  // namespace

TEST_CASE("embedding values round-trip and refuse every malformed buffer") {
  embedding_record r{"agent-1", true, {0.5f, -0.25f, 1.0f}};
  std::string v;
  REQUIRE(encode_embedding(r, &v).is_ok());
  embedding_record back;
  REQUIRE(decode_embedding(v, &back).is_ok());
  CHECK(back.agent_id == r.agent_id);
  CHECK(back.assistant);
  CHECK(back.vector == r.vector);
  for (size_t cut = 0; cut < v.size(); ++cut) CHECK_FALSE(decode_embedding(v.substr(0, cut), &back).is_ok());
  CHECK_FALSE(decode_embedding(v + "x", &back).is_ok());
  std::string bad = v;
  bad[0] = 2;
  CHECK(decode_embedding(bad, &back).message().find("format") != std::string::npos);
  bad = v;
  bad[1] = 7;
  CHECK(decode_embedding(bad, &back).message().find("role") != std::string::npos);
  CHECK(encode_embedding({"agent-1", false, {}}, &v).limit() == "embedding_dims_max");
  CHECK_FALSE(encode_embedding({"bad/agent", false, {1.0f}}, &v).is_ok());
}

TEST_CASE("the hashing embedder is deterministic, normalized and lexical") {
  auto a = hash_embed("The deploy of the billing service failed at noon");
  auto b = hash_embed("the DEPLOY of the billing service failed at noon!");
  auto c = hash_embed("Grandma's apple pie recipe needs cinnamon");
  REQUIRE(a.size() == hashing_dims_default);
  double n = 0;
  for (float x : a) n += x * x;
  CHECK(std::abs(n - 1.0) < 1e-5);
  CHECK(dot(a, b) > 0.999f);  // case and punctuation do not matter
  CHECK(dot(a, c) < 0.3f);
  auto empty = hash_embed("");
  for (float x : empty) CHECK(x == 0.0f);  // no words: the zero vector, scoring 0 against all
  std::shared_ptr<embedder> e;
  struct no_timers : timer_service {
    void after(std::chrono::milliseconds, std::function<void()>) override {}
  } timers;
  CHECK(make_hashing_embedder(R"({"dims":8})", timers, &e).message().find("dims") != std::string::npos);
  REQUIRE(make_hashing_embedder(R"({"dims":64})", timers, &e).is_ok());
  CHECK(e->dimensions() == 64);
  embed_reply got;
  e->embed({"one", "two words"}, [&](embed_reply r) { got = std::move(r); });
  REQUIRE(got.result.is_ok());
  REQUIRE(got.vectors.size() == 2);
  CHECK(got.vectors[1] == hash_embed("two words", 64));
}
