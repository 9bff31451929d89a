// The openai embedder against a local fake server (Beast, 127.0.0.1, an
// ephemeral port): replies, batching, retries, timeouts, bad replies, the key.
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <thread>

#include "runtime/model/engine.hpp"
#include "runtime/openai_embedder.hpp"

using namespace skein;

namespace {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using request = bhttp::request<bhttp::string_body>;
using response = bhttp::response<bhttp::string_body>;
using clock_type = std::chrono::steady_clock;

constexpr const char* test_key = "sk-test-SECRET-0123456789";
constexpr auto wait_max = std::chrono::seconds(20);

// Serves one connection at a time; the handler's nullopt means "never answer"
// (the connection is held open until the server stops).
class fake_server {
 public:
  using handler = std::function<std::optional<response>(const request&, int n)>;

  explicit fake_server(handler h) : handler_(std::move(h)), acceptor_(ioc_, {net::ip::make_address("127.0.0.1"), 0}) {
    thread_ = std::thread([this] { loop(); });
  }
  ~fake_server() {
    stopping_ = true;
    tcp::socket wake{ioc_};
    beast::error_code ec;
    wake.connect({net::ip::make_address("127.0.0.1"), port()}, ec);
    thread_.join();
  }

  uint16_t port() const { return acceptor_.local_endpoint().port(); }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port()); }
  std::vector<request> seen() {
    std::lock_guard lock{mu_};
    return seen_;
  }

 private:
  void loop() {
    std::vector<tcp::socket> held;
    for (;;) {
      tcp::socket s{ioc_};
      beast::error_code ec;
      acceptor_.accept(s, ec);
      if (stopping_ || ec) return;
      beast::flat_buffer buf;
      request req;
      bhttp::read(s, buf, req, ec);
      if (ec) continue;
      int n;
      {
        std::lock_guard lock{mu_};
        seen_.push_back(req);
        n = static_cast<int>(seen_.size());
      }
      auto res = handler_(req, n);
      if (!res) {
        held.push_back(std::move(s));
        continue;
      }
      res->version(11);
      res->prepare_payload();
      bhttp::write(s, *res, ec);
      s.shutdown(tcp::socket::shutdown_both, ec);
    }
  }

  handler handler_;
  net::io_context ioc_;
  tcp::acceptor acceptor_;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;  // guards seen_
  std::vector<request> seen_;
  std::thread thread_;
};

response reply(unsigned code, std::string body) {
  response r{static_cast<bhttp::status>(code), 11};
  r.set(bhttp::field::content_type, "application/json");
  r.body() = std::move(body);
  return r;
}

// Embeddings for `n` inputs: input i gets [i+1, 1, 0, ...] over `dims`, listed in reverse order.
std::string embeddings_body(size_t n, size_t dims) {
  std::string s = R"({"object":"list","data":[)";
  for (size_t k = n; k-- > 0;) {
    s += R"({"object":"embedding","index":)" + std::to_string(k) + R"(,"embedding":[)";
    for (size_t d = 0; d < dims; ++d) s += std::string(d ? "," : "").append(std::to_string(d == 0 ? k + 1 : d == 1 ? 1 : 0));
    s += "]}";
    if (k) s += ",";
  }
  return s + R"(],"model":"m"})";
}

// Inputs in a request body: counted by the commas of its "input" array (tests send plain words).
size_t inputs_in(const request& r) {
  auto at = r.body().find("\"input\":[");
  if (at == std::string::npos) return 0;
  auto end = r.body().find(']', at);
  return static_cast<size_t>(std::count(r.body().begin() + at, r.body().begin() + end, ',')) + 1;
}

class no_timers final : public timer_service {
 public:
  void after(std::chrono::milliseconds, std::function<void()>) override {}
};

std::shared_ptr<embedder> make(const std::string& config) {
  ::setenv("SKEIN_TEST_EMBED_KEY", test_key, 1);
  no_timers timers;
  std::shared_ptr<embedder> e;
  auto s = make_openai_embedder(config, timers, &e);
  INFO(s.to_string());
  REQUIRE(s.is_ok());
  return e;
}

std::string config(const fake_server& srv, const std::string& extra = "") {
  return R"({"base_url":")" + srv.url() + R"(","model":"m","dims":4,"api_key_env":"SKEIN_TEST_EMBED_KEY",)"
         R"("backoff_ms":1,"timeout_ms":2000)" + (extra.empty() ? "" : "," + extra) + "}";
}

embed_reply embed_wait(embedder& e, std::vector<std::string> texts) {
  std::mutex mu;
  std::condition_variable cv;
  std::optional<embed_reply> got;
  e.embed(std::move(texts), [&](embed_reply r) {
    std::lock_guard lock{mu};
    got = std::move(r);
    cv.notify_all();
  });
  std::unique_lock lock{mu};
  REQUIRE(cv.wait_for(lock, wait_max, [&] { return got.has_value(); }));
  return std::move(*got);
}

}  // namespace

TEST_CASE("openai embedder: vectors in input order, normalized; model, input and the key as Bearer") {
  fake_server srv{[](const request& r, int) { return reply(200, embeddings_body(inputs_in(r), 4)); }};
  auto e = make(config(srv));
  CHECK(e->dimensions() == 4);
  auto r = embed_wait(*e, {"alpha", "beta", "gamma"});
  INFO(r.result.to_string());
  REQUIRE(r.result.is_ok());
  REQUIRE(r.vectors.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    double x = double(i + 1), norm = std::sqrt(x * x + 1);
    CHECK(r.vectors[i][0] == Approx(x / norm));
    CHECK(r.vectors[i][1] == Approx(1 / norm));
  }
  auto seen = srv.seen();
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].method() == bhttp::verb::post);
  CHECK(seen[0].target() == "/v1/embeddings");
  CHECK(seen[0][bhttp::field::authorization] == std::string("Bearer ") + test_key);
  CHECK(seen[0].body() == R"({"model":"m","input":["alpha","beta","gamma"]})");
}

TEST_CASE("openai embedder: a call larger than batch_max is split into requests of batch_max") {
  fake_server srv{[](const request& r, int) { return reply(200, embeddings_body(inputs_in(r), 4)); }};
  auto e = make(config(srv, R"("batch_max":4)"));
  std::vector<std::string> texts;
  for (int i = 0; i < 10; ++i) texts.push_back(std::string("w").append(std::to_string(i)));
  auto r = embed_wait(*e, texts);
  REQUIRE(r.result.is_ok());
  REQUIRE(r.vectors.size() == 10);
  auto seen = srv.seen();
  REQUIRE(seen.size() == 3);
  CHECK(inputs_in(seen[0]) == 4);
  CHECK(inputs_in(seen[1]) == 4);
  CHECK(inputs_in(seen[2]) == 2);
  // Input 4 was the first of the second request: its vector is the second request's index 0.
  CHECK(r.vectors[4][0] == Approx(1 / std::sqrt(2.0)));
}

TEST_CASE("openai embedder: 429 then success honors Retry-After, bounded by retry_after_max_ms") {
  auto handler = [](const request& r, int n) {
    if (n == 1) {
      auto res = reply(429, R"({"error":{"message":"slow down"}})");
      res.set(bhttp::field::retry_after, "1");
      return res;
    }
    return reply(200, embeddings_body(inputs_in(r), 4));
  };
  {
    fake_server srv{handler};
    auto e = make(config(srv));
    auto t0 = clock_type::now();
    auto r = embed_wait(*e, {"a"});
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - t0).count();
    REQUIRE(r.result.is_ok());
    CHECK(srv.seen().size() == 2);
    CHECK(ms >= 1000);  // backoff_ms is 1: only Retry-After makes it wait
  }
  {
    fake_server srv{[](const request& r, int n) {
      if (n == 1) {
        auto res = reply(429, "{}");
        res.set(bhttp::field::retry_after, "3600");
        return res;
      }
      return reply(200, embeddings_body(inputs_in(r), 4));
    }};
    auto e = make(config(srv, R"("retry_after_max_ms":50)"));
    auto t0 = clock_type::now();
    auto r = embed_wait(*e, {"a"});
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - t0).count();
    REQUIRE(r.result.is_ok());
    CHECK(ms < 2000);
  }
}

TEST_CASE("openai embedder: 500 on every attempt fails after `retries` attempts") {
  fake_server srv{[](const request&, int) { return reply(500, R"({"error":{"message":"boom"}})"); }};
  auto e = make(config(srv, R"("retries":3)"));
  auto r = embed_wait(*e, {"a"});
  CHECK_FALSE(r.result.is_ok());
  CHECK(r.vectors.empty());
  CHECK(srv.seen().size() == 3);
  CHECK(r.result.limit() == "retries");
  CHECK_THAT(r.result.message(), Catch::Contains("HTTP 500: boom") && Catch::Contains("3 attempts"));
}

TEST_CASE("openai embedder: a server that never answers times out, and is retried") {
  fake_server srv{[](const request&, int) { return std::optional<response>{}; }};
  auto e = make(config(srv, R"("timeout_ms":200,"retries":2)"));
  auto t0 = clock_type::now();
  auto r = embed_wait(*e, {"a"});
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - t0).count();
  CHECK_FALSE(r.result.is_ok());
  CHECK_THAT(r.result.message(), Catch::Contains("timeout_ms 200"));
  CHECK(srv.seen().size() == 2);
  CHECK(ms >= 400);
  CHECK(ms < 5000);
}

TEST_CASE("openai embedder: wrong dims and a malformed body fail at once, naming what is wrong") {
  fake_server srv{[](const request& r, int) {
    if (r.body().find("dims3") != std::string::npos) return reply(200, embeddings_body(1, 3));
    return reply(200, "{not json");
  }};
  auto e = make(config(srv, R"("retries":3)"));
  auto r = embed_wait(*e, {"dims3"});
  CHECK_FALSE(r.result.is_ok());
  CHECK_THAT(r.result.message(), Catch::Contains("vectors of 3 dims") && Catch::Contains("config.dims is 4"));
  r = embed_wait(*e, {"other"});
  CHECK(r.result.code() == errc::corruption);
  CHECK_THAT(r.result.message(), Catch::Contains("malformed reply"));
  CHECK(srv.seen().size() == 2);  // neither was retried
}

TEST_CASE("openai embedder: the key never appears in an error, even when the server echoes it") {
  fake_server srv{[](const request& r, int) {
    std::string key = std::string(r[bhttp::field::authorization]).substr(7);
    if (r.body().find("retry") != std::string::npos) return reply(503, "upstream rejected " + key);
    return reply(401, R"({"error":{"message":"Incorrect API key provided: )" + key + R"("}})");
  }};
  auto e = make(config(srv, R"("retries":2)"));
  auto r = embed_wait(*e, {"a"});
  CHECK(r.result.code() == errc::invalid_input);
  CHECK_THAT(r.result.message(), Catch::Contains("HTTP 401") && Catch::Contains("***"));
  CHECK(r.result.to_string().find(test_key) == std::string::npos);
  CHECK(srv.seen().size() == 1);  // a 401 is not retried
  r = embed_wait(*e, {"retry"});
  CHECK_THAT(r.result.message(), Catch::Contains("HTTP 503"));
  CHECK(r.result.to_string().find(test_key) == std::string::npos);
}

TEST_CASE("openai embedder: config errors name the field; https and a closed port are clear") {
  no_timers timers;
  std::shared_ptr<embedder> e;
  status s = make_openai_embedder(R"({"model":"m","dims":4})", timers, &e);
  CHECK_THAT(s.message(), Catch::Contains("base_url"));
  s = make_openai_embedder(R"({"base_url":"https://api.openai.com","model":"m","dims":4})", timers, &e);
  CHECK_THAT(s.message(), Catch::Contains("https:// is not supported"));
  s = make_openai_embedder(R"({"base_url":"http://127.0.0.1:1","model":"m"})", timers, &e);
  CHECK_THAT(s.message(), Catch::Contains("dims"));
  s = make_openai_embedder(R"({"base_url":"http://127.0.0.1:1","model":"m","dims":4,"retries":1})", timers, &e);
  REQUIRE(s.is_ok());
  auto r = embed_wait(*e, {"a"});
  CHECK(r.result.code() == errc::io_error);
  CHECK_THAT(r.result.message(), Catch::Contains("127.0.0.1:1"));
}
