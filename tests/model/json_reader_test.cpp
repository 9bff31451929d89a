#include "runtime/model/json_reader.hpp"

#include <catch2/catch.hpp>
#include <thread>

using namespace skein;

TEST_CASE("two documents alive at once on one thread are both readable") {
  json::document a, b;
  REQUIRE(json::parse(R"({"name":"first","items":[1,2,3]})", {}, "a", &a).is_ok());
  REQUIRE(json::parse(R"({"name":"second","items":[4,5]})", {}, "b", &b).is_ok());
  // Decoding parses too: a third document must not disturb the first two.
  json::document c;
  REQUIRE(json::parse(R"({"name":"third"})", {}, "c", &c).is_ok());

  json::object_reader ra, rb;
  REQUIRE(json::object_reader::open(a.root(), "a", &ra).is_ok());
  REQUIRE(json::object_reader::open(b.root(), "b", &rb).is_ok());
  std::string name;
  REQUIRE(ra.string("name", &name).is_ok());
  CHECK(name == "first");
  REQUIRE(rb.string("name", &name).is_ok());
  CHECK(name == "second");
  std::string items;
  REQUIRE(ra.any_raw("items", &items).is_ok());
  CHECK(items == "[1,2,3]");

  // A moved document keeps its elements valid; the moved-from one is empty.
  json::document moved = std::move(b);
  json::object_reader rm;
  REQUIRE(json::object_reader::open(moved.root(), "moved", &rm).is_ok());
  REQUIRE(rm.any_raw("items", &items).is_ok());
  CHECK(items == "[4,5]");
  CHECK(ra.string("name", &name).is_ok());
  CHECK(name == "first");
}

TEST_CASE("a document may die on another thread than the one that parsed it") {
  auto doc = std::make_unique<json::document>();
  REQUIRE(json::parse(R"([1,2])", {}, "doc", doc.get()).is_ok());
  std::thread t{[d = std::move(doc)]() mutable { d.reset(); }};
  t.join();
  json::document again;
  CHECK(json::parse(R"([3])", {}, "again", &again).is_ok());
}

TEST_CASE("after a large document the pooled parser capacity is back under the threshold") {
  std::thread worker{[] {
    json_limits big_limits;
    big_limits.json_bytes_max = 64 << 20;
    std::string big = "[\"" + std::string(16 << 20, 'x') + "\"]";
    {
      json::document small;
      REQUIRE(json::parse("[1]", {}, "small", &small).is_ok());
      json::document large;
      REQUIRE(json::parse(big, big_limits, "large", &large).is_ok());
      std::string_view s;
      REQUIRE(large.root().at(0).get(s) == simdjson::SUCCESS);
      CHECK(s.size() == 16u << 20);
    }
    // Both documents are gone: the small parser is pooled, the large one freed.
    CHECK(json::pooled_parser_capacity_bytes() > 0);
    CHECK(json::pooled_parser_capacity_bytes() <= json::pooled_parser_capacity_bytes_max);
    // A parse after that still works and still stays under the threshold.
    json::document next;
    REQUIRE(json::parse("{\"a\":1}", {}, "next", &next).is_ok());
    CHECK(json::pooled_parser_capacity_bytes() <= json::pooled_parser_capacity_bytes_max);
  }};
  worker.join();
}

TEST_CASE("the depth limit is the deepest nesting accepted") {
  json_limits limits;
  limits.json_depth_max = 4;
  json::document doc;
  CHECK(json::parse("[[[[1]]]]", limits, "four", &doc).is_ok());
  status s = json::parse("[[[[[1]]]]]", limits, "five", &doc);
  CHECK(s.code() == errc::invalid_input);
  CHECK(s.message() == "five: nesting exceeds json_depth_max (4)");
  CHECK(json::parse("{\"a\":{\"b\":[{\"c\":1}]}}", limits, "objects", &doc).is_ok());
}
