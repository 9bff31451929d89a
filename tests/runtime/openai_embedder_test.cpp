// The openai embedder against a local fake server (Beast, 127.0.0.1, an
// ephemeral port): replies, batching, retries, timeouts, bad replies, the key;
// and over https, with certificates made for the test (tests/support/tls_cert.hpp).
#include <boost/beast/http.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "runtime/model/engine.hpp"
#include "runtime/engines/openai_embedder.hpp"
#include "tests/support/fake_http_server.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/tls_cert.hpp"

using namespace skein;

namespace {

namespace bhttp = boost::beast::http;
using request = bhttp::request<bhttp::string_body>;
using response = bhttp::response<bhttp::string_body>;
using clock_type = std::chrono::steady_clock;

constexpr const char* test_key = "sk-test-SECRET-0123456789";
constexpr auto wait_max = std::chrono::seconds(20);

using test::tls_setup;

// The shared fake server (tests/support/fake_http_server.hpp) answering with
// whole Beast responses; the handler's nullopt means "never answer" (the
// connection is held open until the server stops).
class fake_server : public test::fake_http_server {
 public:
  using handler = std::function<std::optional<response>(const request&, int n)>;

  explicit fake_server(handler h, std::optional<tls_setup> tls = {})
      : fake_http_server(as_bytes(std::move(h)), std::move(tls)) {}

  std::string url(const std::string& host = "127.0.0.1") const { return origin(host); }

 private:
  static fake_http_server::handler as_bytes(handler h) {
    return [h = std::move(h)](const request& req, int n) {
      auto res = h(req, n);
      if (!res) return test::fake_reply{{}, test::fake_reply::end::hold};
      res->version(11);
      res->prepare_payload();
      std::ostringstream bytes;
      bytes << *res;
      return test::fake_reply{{bytes.str()}};
    };
  }
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

// `extra` may set timeout_ms itself: the default is left out then, since the
// config reader takes the first of two equal keys.
std::string config(const fake_server& srv, const std::string& extra = "") {
  std::string timeout = extra.find("\"timeout_ms\"") == std::string::npos ? R"(,"timeout_ms":2000)" : "";
  return R"({"base_url":")" + srv.url() + R"(","model":"m","dims":4,"api_key_env":"SKEIN_TEST_EMBED_KEY",)"
         R"("backoff_ms":1)" + timeout + (extra.empty() ? "" : "," + extra) + "}";
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

TEST_CASE("openai embedder: vectors in input order, normalized, model, input and the key as Bearer") {
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
  CHECK_THAT(r.result.message(), Catch::Contains("timeout_ms 200 "));
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

TEST_CASE("openai embedder: config errors name the field, a bad scheme and a closed port are clear") {
  no_timers timers;
  std::shared_ptr<embedder> e;
  status s = make_openai_embedder(R"({"model":"m","dims":4})", timers, &e);
  CHECK_THAT(s.message(), Catch::Contains("base_url"));
  s = make_openai_embedder(R"({"base_url":"ftp://api.openai.com","model":"m","dims":4})", timers, &e);
  CHECK(s.field() == "base_url");
  CHECK_THAT(s.message(), Catch::Contains("http:// or https://"));
  s = make_openai_embedder(R"({"base_url":"http://127.0.0.1:1","model":"m"})", timers, &e);
  CHECK_THAT(s.message(), Catch::Contains("dims"));
  s = make_openai_embedder(R"({"base_url":"http://127.0.0.1:1","model":"m","dims":4,"retries":1})", timers, &e);
  REQUIRE(s.is_ok());
  auto r = embed_wait(*e, {"a"});
  CHECK(r.result.code() == errc::io_error);
  CHECK_THAT(r.result.message(), Catch::Contains("127.0.0.1:1"));
}

namespace {

// A test CA (its certificate in ca.pem in a temp dir) and server certificates it signs.
struct test_pki {
  test::temp_dir dir;
  test::pem_pair ca = test::make_test_ca();
  std::string ca_file = dir.str("ca.pem");

  test_pki() { test::write_text_file(ca_file, ca.cert); }

  // An https server whose certificate names `alt_names` (subjectAltName syntax).
  tls_setup server(const std::string& alt_names = "IP:127.0.0.1,DNS:localhost", bool handshake = true) const {
    test::pem_pair cert = test::make_server_cert(ca, alt_names);
    return {cert.cert, cert.key, handshake};
  }
  std::string ca_field() const { return R"("ca_file":")" + ca_file + R"(")"; }
};

response embeddings_reply(const request& r, int) { return reply(200, embeddings_body(inputs_in(r), 4)); }

}  // namespace

TEST_CASE("openai embedder https: vectors come back over TLS with ca_file, key and body sent, SNI for a name") {
  test_pki pki;
  fake_server srv{embeddings_reply, pki.server()};
  auto e = make(config(srv, pki.ca_field()));
  auto r = embed_wait(*e, {"alpha", "beta"});
  INFO(r.result.to_string());
  REQUIRE(r.result.is_ok());
  REQUIRE(r.vectors.size() == 2);
  double norm = std::sqrt(2.0 * 2.0 + 1);
  CHECK(r.vectors[1][0] == Approx(2 / norm));
  CHECK(r.vectors[1][1] == Approx(1 / norm));
  auto seen = srv.seen();
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].target() == "/v1/embeddings");
  CHECK(seen[0][bhttp::field::authorization] == std::string("Bearer ") + test_key);
  CHECK(seen[0].body() == R"({"model":"m","input":["alpha","beta"]})");
  CHECK(srv.server_names() == std::vector<std::string>{""});  // no SNI for an IP address

  // By name: the certificate's DNS:localhost matches, and the name goes out as SNI.
  std::string by_name = R"({"base_url":")" + srv.url("localhost") +
                        R"(","model":"m","dims":4,"api_key_env":"SKEIN_TEST_EMBED_KEY","timeout_ms":2000,)" +
                        pki.ca_field() + "}";
  auto named = make(by_name);
  r = embed_wait(*named, {"gamma"});
  INFO(r.result.to_string());
  REQUIRE(r.result.is_ok());
  CHECK(srv.server_names() == std::vector<std::string>{"", "localhost"});
}

TEST_CASE("openai embedder https: an untrusted certificate fails at once, names the host, not retried") {
  test_pki pki;
  fake_server srv{embeddings_reply, pki.server()};
  auto e = make(config(srv, R"("retries":3)"));  // no ca_file: the system's CAs know nothing of the test CA
  auto r = embed_wait(*e, {"a"});
  CHECK(r.result.code() == errc::io_error);
  CHECK_THAT(r.result.message(),
             Catch::Contains("failed verification") && Catch::Contains("127.0.0.1:" + std::to_string(srv.port())));
  CHECK(r.result.limit() != "retries");
  CHECK(r.result.to_string().find(test_key) == std::string::npos);
  CHECK(srv.accepted() == 1);
  CHECK(srv.seen().empty());  // the request, and the key with it, never left the client
}

TEST_CASE("openai embedder https: a certificate for another name fails host-name verification, not retried") {
  test_pki pki;
  fake_server srv{embeddings_reply, pki.server("DNS:other.example")};
  auto e = make(config(srv, pki.ca_field() + R"(,"retries":3)"));
  auto r = embed_wait(*e, {"a"});
  CHECK(r.result.code() == errc::io_error);
  CHECK_THAT(r.result.message(), Catch::Contains("failed verification") && Catch::Contains("IP address mismatch"));
  CHECK(r.result.to_string().find(test_key) == std::string::npos);
  CHECK(srv.accepted() == 1);
  CHECK(srv.seen().empty());
}

TEST_CASE("openai embedder https: a handshake that never completes ends at timeout_ms and is retried") {
  test_pki pki;
  fake_server srv{embeddings_reply, pki.server("IP:127.0.0.1", /*handshake=*/false)};
  auto e = make(config(srv, pki.ca_field() + R"(,"timeout_ms":200,"retries":2)"));
  auto t0 = clock_type::now();
  auto r = embed_wait(*e, {"a"});
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - t0).count();
  CHECK(r.result.code() == errc::io_error);
  CHECK_THAT(r.result.message(), Catch::Contains("timeout_ms 200 ") && Catch::Contains("2 attempts"));
  CHECK(r.result.limit() == "retries");
  CHECK(srv.accepted() == 2);
  CHECK(ms >= 400);
  CHECK(ms < 2000);  // two deadlines of 200 ms and a 1 ms backoff, with room for a slow machine
}

TEST_CASE("openai embedder https: a missing or non-PEM ca_file is refused at construction, naming ca_file") {
  test_pki pki;
  no_timers timers;
  std::shared_ptr<embedder> e;
  auto with_ca = [&](const std::string& scheme, const std::string& path) {
    return R"({"base_url":")" + scheme + R"(://127.0.0.1:1","model":"m","dims":4,"ca_file":")" + path + R"("})";
  };
  status s = make_openai_embedder(with_ca("https", pki.dir.str("absent.pem")), timers, &e);
  CHECK(s.code() == errc::invalid_input);
  CHECK(s.field() == "ca_file");
  CHECK_THAT(s.message(), Catch::Contains("absent.pem"));
  CHECK(e == nullptr);

  std::string garbage = pki.dir.str("garbage.pem");
  test::write_text_file(garbage, "this is not a certificate\n");
  s = make_openai_embedder(with_ca("https", garbage), timers, &e);
  CHECK(s.code() == errc::invalid_input);
  CHECK(s.field() == "ca_file");
  CHECK_THAT(s.message(), Catch::Contains("no PEM certificate"));

  std::string key_only = pki.dir.str("key.pem");  // PEM, but no certificate in it
  test::write_text_file(key_only, pki.ca.key);
  s = make_openai_embedder(with_ca("https", key_only), timers, &e);
  CHECK(s.field() == "ca_file");

  s = make_openai_embedder(with_ca("http", pki.ca_file), timers, &e);  // TLS options on plain http
  CHECK(s.field() == "ca_file");
  CHECK(e == nullptr);

  s = make_openai_embedder(with_ca("https", pki.ca_file), timers, &e);
  INFO(s.to_string());
  CHECK(s.is_ok());
}
