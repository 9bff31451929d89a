#include <catch2/catch.hpp>

#include "tests/support/generated_messages.hpp"
#include <cmath>
#include <map>
#include <random>
#include <string>

#include "runtime/model/hashing_embedder.hpp"
#include "runtime/model/memory_index.hpp"

using namespace skein;
using namespace skein::test;

namespace {

std::vector<float> unit(std::vector<float> v) {
  double n = 0;
  for (float x : v) n += double(x) * x;
  for (float& x : v) x = static_cast<float>(x / std::sqrt(n));
  return v;
}

embedding_record rec(std::string agent, std::vector<float> v, bool assistant = false) {
  return embedding_record{std::move(agent), assistant, unit(std::move(v))};
}


}  // namespace

TEST_CASE("memory index: top-k by dot product, best first, per agent") {
  memory_index ix;
  REQUIRE(ix.add("t1", 1, rec("a", {1, 0, 0, 0})).is_ok());
  REQUIRE(ix.add("t1", 2, rec("a", {1, 1, 0, 0}, true)).is_ok());
  REQUIRE(ix.add("t2", 1, rec("a", {0, 1, 0, 0})).is_ok());
  REQUIRE(ix.add("t3", 1, rec("b", {1, 0, 0, 0})).is_ok());
  std::vector<memory_match> hits;
  std::vector<float> q = unit({1, 0.2f, 0, 0});
  REQUIRE(ix.search("a", q, 2, &hits).is_ok());
  REQUIRE(hits.size() == 2);
  CHECK(hits[0].thread_id == "t1");
  CHECK(hits[0].seq == 1);
  CHECK_FALSE(hits[0].assistant);
  CHECK(hits[1].seq == 2);
  CHECK(hits[1].assistant);
  CHECK(hits[0].score > hits[1].score);
  CHECK(hits[0].score == Approx(q[0]));
  REQUIRE(ix.search("a", q, 10, &hits).is_ok());
  CHECK(hits.size() == 3);  // agent b's row never shows
  REQUIRE(ix.search("nobody", q, 10, &hits).is_ok());
  CHECK(hits.empty());
  CHECK(ix.rows("a") == 3);
  CHECK(ix.dimensions("b") == 4);
}

TEST_CASE("memory index: a repeated (thread, seq) replaces its row, wrong dims are refused, naming both") {
  memory_index ix;
  REQUIRE(ix.add("t1", 1, rec("a", {1, 0, 0, 0})).is_ok());
  REQUIRE(ix.add("t1", 2, rec("a", {0, 1, 0, 0})).is_ok());
  REQUIRE(ix.add("t1", 1, rec("a", {0, 0, 1, 0})).is_ok());  // again, as the rebuild and the feed may
  CHECK(ix.rows("a") == 2);
  std::vector<memory_match> hits;
  REQUIRE(ix.search("a", std::vector<float>{0, 0, 1, 0}, 1, &hits).is_ok());
  REQUIRE(hits.size() == 1);
  CHECK(hits[0].seq == 1);
  CHECK(hits[0].score == Approx(1.0f));
  status s = ix.add("t1", 3, rec("a", {1, 0, 0}));
  CHECK(s.code() == errc::invalid_input);
  CHECK(s.message().find("3 dims") != std::string::npos);
  CHECK(s.message().find("have 4") != std::string::npos);
  s = ix.search("a", std::vector<float>{1, 0}, 1, &hits);
  CHECK(s.code() == errc::invalid_input);
  CHECK(s.message().find("2 dims") != std::string::npos);
  CHECK_FALSE(ix.add("t1", 4, rec("b", {1, 0, 0, 0})).is_ok());  // t1 is agent a's
  CHECK_FALSE(ix.add("t9", 1, embedding_record{"a", false, {}}).is_ok());
}

TEST_CASE("memory index: remove_thread drops exactly that thread's rows and keeps the rest findable") {
  memory_index ix;
  const uint64_t seed = std::random_device{}();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd;
  std::map<std::pair<std::string, uint64_t>, std::vector<float>> kept;
  for (int t = 0; t < 20; ++t)
    for (uint64_t s = 1; s <= 25; ++s) {
      std::vector<float> v(32);
      for (float& x : v) x = nd(rng);
      auto r = rec("a", v);
      std::string thread = std::string("t").append(std::to_string(t));
      REQUIRE(ix.add(thread, s, r).is_ok());
      if (t % 3 != 0) kept[{thread, s}] = r.vector;
    }
  for (int t = 0; t < 20; t += 3) ix.remove_thread(std::string("t").append(std::to_string(t)));
  ix.remove_thread("t0");  // idempotent
  CHECK(ix.rows("a") == kept.size());
  // Every kept row is still found as its own best match, under its own key.
  for (const auto& [key, v] : kept) {
    std::vector<memory_match> hits;
    REQUIRE(ix.search("a", v, 1, &hits).is_ok());
    REQUIRE(hits.size() == 1);
    CHECK(hits[0].thread_id == key.first);
    CHECK(hits[0].seq == key.second);
    CHECK(hits[0].score == Approx(1.0f));
  }
  // A removed thread's slot is reused cleanly by a new one.
  REQUIRE(ix.add("fresh", 1, rec("a", std::vector<float>(32, 1.0f))).is_ok());
  std::vector<memory_match> hits;
  REQUIRE(ix.search("a", unit(std::vector<float>(32, 1.0f)), 1, &hits).is_ok());
  CHECK(hits[0].thread_id == "fresh");
}

TEST_CASE("memory index: the scan agrees with a plain dot product at every length") {
  std::mt19937_64 rng(7);
  std::normal_distribution<float> nd;
  for (size_t n : {1u, 15u, 16u, 17u, 384u, 385u}) {
    std::vector<float> a(n), b(n);
    for (size_t i = 0; i < n; ++i) a[i] = nd(rng), b[i] = nd(rng);
    double plain = 0;
    for (size_t i = 0; i < n; ++i) plain += double(a[i]) * b[i];
    CHECK(memory_dot(a.data(), b.data(), n) == Approx(plain).margin(1e-4));
  }
}

TEST_CASE("memory index: the planted message is found first among 10,000 others (hashing embedder)") {
  const uint64_t seed = std::random_device{}();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  memory_index ix;
  for (uint64_t i = 0; i < 10000; ++i) {
    std::string thread = std::string("t").append(std::to_string(i % 500));
    REQUIRE(ix.add(thread, i / 500 + 1, embedding_record{"a", i % 2 == 1, hash_embed(generated_message(rng))}).is_ok());
  }
  const std::string planted = "Remember: the spare key to the lighthouse is hidden under the blue ceramic frog";
  REQUIRE(ix.add("planted", 7, embedding_record{"a", false, hash_embed(planted)}).is_ok());
  std::vector<memory_match> hits;
  REQUIRE(ix.search("a", hash_embed("where is the lighthouse key hidden? some frog?"), 5, &hits).is_ok());
  REQUIRE(hits.size() == 5);
  CHECK(hits[0].thread_id == "planted");
  CHECK(hits[0].seq == 7);
  CHECK(hits[0].score > hits[1].score);
}

TEST_CASE("memory index: rows past one chunk (4096) grow, search and swap-remove across chunks") {
  memory_index ix;
  std::mt19937_64 rng(11);
  std::normal_distribution<float> nd;
  std::vector<std::vector<float>> b_rows;
  for (uint64_t s = 1; s <= 5000; ++s) {  // a: 5000 rows first, then b interleaved past them
    std::vector<float> v(16);
    for (float& x : v) x = nd(rng);
    REQUIRE(ix.add("a", s, rec("agent", v)).is_ok());
    if (s % 2 == 0) {
      std::vector<float> w(16);
      for (float& x : w) x = nd(rng);
      auto r = rec("agent", w);
      REQUIRE(ix.add("b", s, r).is_ok());
      b_rows.push_back(r.vector);
    }
  }
  CHECK(ix.rows("agent") == 7500);
  size_t bytes_before = ix.stats().bytes;
  ix.remove_thread("a");
  CHECK(ix.rows("agent") == 2500);
  CHECK(ix.stats().bytes < bytes_before);  // emptied chunks are freed
  for (size_t i = 0; i < b_rows.size(); i += 97) {
    std::vector<memory_match> hits;
    REQUIRE(ix.search("agent", b_rows[i], 1, &hits).is_ok());
    REQUIRE(hits.size() == 1);
    CHECK(hits[0].thread_id == "b");
    CHECK(hits[0].seq == 2 * (i + 1));
  }
}
