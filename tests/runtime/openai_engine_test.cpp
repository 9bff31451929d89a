// The openai engine against a local fake chat-completions server that writes
// its replies byte for byte (127.0.0.1, an ephemeral port, http and https):
// streamed and whole replies, thinking, tool calls, the request body, usage and
// cost, retries, limits, malformed chunks, cancellation; and end to end through
// `runtime` with a real agent whose engine is "openai".
#include <boost/beast/http.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include "runtime/model/compaction.hpp"
#include "runtime/model/engine.hpp"
#include "runtime/model/tool.hpp"
#include "runtime/engines/openai_engine.hpp"
#include "runtime/engines/openai_sse.hpp"
#include "tests/support/fake_http_server.hpp"
#include "tests/support/runtime_fixture.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/tls_cert.hpp"

using namespace skein;
using namespace std::chrono_literals;

namespace {

namespace bhttp = boost::beast::http;
using request = bhttp::request<bhttp::string_body>;
using clock_type = std::chrono::steady_clock;

constexpr const char* key_env = "SKEIN_TEST_OPENAI_KEY";
constexpr const char* test_key = "sk-test-ENGINE-SECRET-42";
constexpr auto wait_max = std::chrono::seconds(20);

// What the server answers one request with: raw bytes (status line, headers,
// body), each piece written by a write() of its own; then, with `hold`, the
// connection stays open until the client closes it.
struct script {
  std::vector<std::string> pieces;
  bool hold = false;
};

using test::tls_setup;

// The shared fake server (tests/support/fake_http_server.hpp) writing scripts;
// a held script's connection is read until the client closes it, and counted.
class llm_server : public test::fake_http_server {
 public:
  using handler = std::function<script(const request&, int n)>;

  explicit llm_server(handler h, std::optional<tls_setup> tls = {})
      : fake_http_server(as_reply(std::move(h)), std::move(tls)) {}

  std::string url(const std::string& path = "/v1") const { return origin() + path; }
  // Waits until `n` held connections were closed by the client.
  bool wait_client_closed(int n, std::chrono::seconds limit = wait_max) {
    return fake_http_server::wait_client_closed(n, limit);
  }
  // Waits until `n` requests have come in.
  bool wait_requests(size_t n, std::chrono::seconds limit = wait_max) {
    return fake_http_server::wait_requests(n, limit);
  }

 private:
  static fake_http_server::handler as_reply(handler h) {
    return [h = std::move(h)](const request& req, int n) {
      script sc = h(req, n);
      using end = test::fake_reply::end;
      return test::fake_reply{std::move(sc.pieces), sc.hold ? end::hold_until_client_closes : end::close};
    };
  }
};

// ---- replies, byte for byte ---------------------------------------------------

std::string sse_head() {
  return "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\nCache-Control: no-cache\r\n"
         "Connection: close\r\n\r\n";
}
std::string chunked_sse_head() {
  return "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
}
// One HTTP/1.1 chunk of a chunked body.
std::string http_chunk(const std::string& data) {
  char size[32];
  std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  return size + data + "\r\n";
}
std::string http_reply(unsigned code, const std::string& reason, const std::string& body,
                       const std::string& headers = "") {
  return "HTTP/1.1 " + std::to_string(code) + " " + reason + "\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\nConnection: close\r\n" + headers + "\r\n" + body;
}
std::string sse_event(const std::string& json) { return "data: " + json + "\n\n"; }
std::string delta(const std::string& delta_json, const std::string& finish = "null") {
  return sse_event(R"({"id":"chatcmpl-1","object":"chat.completion.chunk","model":"gpt-test","choices":[{"index":0,"delta":)" +
               delta_json + R"(,"finish_reason":)" + finish + "}]}");
}
std::string text(const std::string& t) { return delta(R"({"content":")" + t + R"("})"); }
std::string finish(const std::string& reason = "stop") { return delta("{}", "\"" + reason + "\""); }
std::string usage(uint64_t prompt, uint64_t completion, uint64_t cached = 0) {
  return sse_event(R"({"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":)" +
               std::to_string(prompt) + R"(,"completion_tokens":)" + std::to_string(completion) +
               R"(,"total_tokens":)" + std::to_string(prompt + completion) +
               R"(,"prompt_tokens_details":{"cached_tokens":)" + std::to_string(cached) + "}}}");
}
const std::string done = "data: [DONE]\n\n";

// Splits `bytes` into pieces at every `step` bytes: lines end up cut across writes.
std::vector<std::string> split(const std::string& bytes, size_t step) {
  std::vector<std::string> out;
  for (size_t at = 0; at < bytes.size(); at += step) out.push_back(bytes.substr(at, step));
  return out;
}

script streamed(const std::vector<std::string>& events, size_t step = 7) {
  std::string all = sse_head();
  for (const auto& e : events) all += e;
  return {split(all, step), false};
}

// ---- calling the engine ---------------------------------------------------------

class no_timers final : public timer_service {
 public:
  void after(std::chrono::milliseconds, std::function<void()>) override {}
};

std::string config(const llm_server& srv, const std::string& extra = "") {
  std::string timeout = extra.find("\"timeout_ms\"") == std::string::npos ? R"(,"timeout_ms":5000)" : "";
  return R"({"base_url":")" + srv.url() + R"(","model":"gpt-test","api_key_env":")" + key_env +
         R"(","backoff_ms":1)" + timeout + (extra.empty() ? "" : "," + extra) + "}";
}

status try_make(const std::string& cfg, std::shared_ptr<engine>* out) {
  ::setenv(key_env, test_key, 1);
  no_timers timers;
  return make_openai_engine(cfg, timers, out);
}

std::shared_ptr<engine> make(const std::string& cfg) {
  std::shared_ptr<engine> e;
  auto s = try_make(cfg, &e);
  INFO(s.to_string());
  REQUIRE(s.is_ok());
  return e;
}

engine_request ask(const std::string& input) {
  engine_request r;
  r.thread_id = "t";
  r.run_id = "r";
  r.conversation = {make_system_prompt("be brief"), make_message(message_role::user, input)};
  return r;
}

struct outcome {
  engine_reply reply;
  std::vector<std::string> deltas;
};

// The state a call's callbacks write into; shared, so a late callback finds it alive.
struct collector {
  std::mutex mu;
  std::condition_variable cv;
  std::optional<engine_reply> reply;
  std::vector<std::string> deltas;
  int done_calls = 0;

  engine_callbacks callbacks(const std::shared_ptr<collector>& self) {
    engine_callbacks cb;
    cb.on_delta = [self](std::string d) {
      std::lock_guard lock{self->mu};
      self->deltas.push_back(std::move(d));
      self->cv.notify_all();
    };
    cb.on_done = [self](engine_reply r) {
      std::lock_guard lock{self->mu};
      self->reply = std::move(r);
      ++self->done_calls;
      self->cv.notify_all();
    };
    return cb;
  }
};

outcome call(engine& e, engine_request req) {
  auto c = std::make_shared<collector>();
  auto handle = e.start(std::move(req), c->callbacks(c));
  std::unique_lock lock{c->mu};
  REQUIRE(c->cv.wait_for(lock, wait_max, [&] { return c->reply.has_value(); }));
  CHECK(c->done_calls == 1);
  return {std::move(*c->reply), c->deltas};
}

std::string joined(const std::vector<std::string>& parts) {
  std::string s;
  for (const auto& p : parts) s += p;
  return s;
}

}  // namespace

// ---- the SSE framing ---------------------------------------------------------------

TEST_CASE("openai sse: events come out whole whatever the split: LF, CRLF, CR, comments, multi-line data") {
  const std::string stream = ": keep-alive\r\n\r\ndata: {\"a\":1}\r\n\r\nevent: x\nid: 7\ndata:two\ndata: lines\n\n"
                             "retry: 10\r\r: only a comment\n\ndata: [DONE]\r\rdata: unterminated";
  const std::vector<std::string> expected = {"{\"a\":1}", "two\nlines", "[DONE]"};
  // Every split point into two writes, and byte by byte.
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    std::vector<std::string> got;
    sse_parser p{1024, [&](std::string_view d) {
                   got.emplace_back(d);
                   return status::ok();
                 }};
    REQUIRE(p.feed(stream.substr(0, cut)).is_ok());
    REQUIRE(p.feed(stream.substr(cut)).is_ok());
    INFO("cut at " << cut);
    CHECK(got == expected);
    CHECK(p.pending());  // "data: unterminated" waits for its blank line
  }
  std::vector<std::string> got;
  sse_parser p{1024, [&](std::string_view d) {
                 got.emplace_back(d);
                 return status::ok();
               }};
  for (char ch : stream) REQUIRE(p.feed(std::string_view{&ch, 1}).is_ok());
  CHECK(got == expected);
}

TEST_CASE("openai sse: a line past line_bytes_max fails the feed, naming the limit — a handler's failure stops it") {
  sse_parser p{16, [](std::string_view) { return status::ok(); }};
  auto s = p.feed("data: " + std::string(40, 'x'));
  CHECK(s.limit() == "line_bytes_max");
  sse_parser q{1024, [](std::string_view d) {
                 return d == "bad" ? status::corruption("bad chunk") : status::ok();
               }};
  CHECK(q.feed("data: ok\n\ndata: bad\n\n").message() == "bad chunk");
}

// ---- replies --------------------------------------------------------------------------

TEST_CASE("openai engine: a streamed reply gives its deltas in order, the text, usage and cost") {
  llm_server srv{[](const request&, int) {
    return streamed({text("Hel"), ": ping\n\n", text("lo, "), text("w\\u00f6rld"), finish(), usage(12, 5, 2), done});
  }};
  auto e = make(config(srv, R"("prices":{"gpt-test":{"input_per_mtok":2,"output_per_mtok":10},"other":{"input_per_mtok":99}})"));
  auto r = call(*e, ask("hi"));
  INFO(r.reply.result.to_string());
  REQUIRE(r.reply.result.is_ok());
  CHECK(r.deltas == std::vector<std::string>{"Hel", "lo, ", "w\xc3\xb6rld"});
  CHECK(r.reply.step.text == "Hello, w\xc3\xb6rld");
  CHECK(r.reply.step.tool_calls.empty());
  CHECK(r.reply.step.usage.input_tokens == 10);
  CHECK(r.reply.step.usage.cache_read_tokens == 2);
  CHECK(r.reply.step.usage.output_tokens == 5);
  CHECK(r.reply.step.cost_usd == Approx((12 * 2.0 + 5 * 10.0) / 1e6));
  auto seen = srv.seen();
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].method() == bhttp::verb::post);
  CHECK(seen[0].target() == "/v1/chat/completions");
  CHECK(seen[0][bhttp::field::authorization] == std::string("Bearer ") + test_key);
  CHECK(seen[0][bhttp::field::content_type] == "application/json");
  CHECK_THAT(seen[0].body(), Catch::EndsWith(R"(,"stream":true,"stream_options":{"include_usage":true}})"));
}

TEST_CASE("openai engine: a reply that is not streamed is read the same way, thinking and tool calls included") {
  llm_server srv{[](const request&, int) {
    std::string body =
        R"({"id":"chatcmpl-9","object":"chat.completion","choices":[{"index":0,"finish_reason":"tool_calls",)"
        R"("message":{"role":"assistant","content":"Checking.","reasoning_content":"need the weather",)"
        R"("tool_calls":[{"id":"call_1","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Oslo\"}"}},)"
        R"({"id":"call_2","type":"function","function":{"name":"time","arguments":""}}]}}],)"
        R"("usage":{"prompt_tokens":30,"completion_tokens":9}})";
    return script{{http_reply(200, "OK", body)}, false};
  }};
  auto e = make(config(srv, R"("stream":false,"prices":{"gpt-test":{"input_per_mtok":1,"output_per_mtok":1}})"));
  auto r = call(*e, ask("weather?"));
  INFO(r.reply.result.to_string());
  REQUIRE(r.reply.result.is_ok());
  CHECK(r.deltas.empty());
  CHECK(r.reply.step.text == "Checking.");
  CHECK(r.reply.step.thinking == "need the weather");
  REQUIRE(r.reply.step.tool_calls.size() == 2);
  CHECK(r.reply.step.tool_calls[0].call_id == "call_1");
  CHECK(r.reply.step.tool_calls[0].name == "weather");
  CHECK(r.reply.step.tool_calls[0].arguments_json == R"({"city":"Oslo"})");
  CHECK(r.reply.step.tool_calls[1].call_id == "call_2");
  CHECK(r.reply.step.tool_calls[1].arguments_json == "{}");  // none given: an empty object
  CHECK(r.reply.step.usage.input_tokens == 30);
  CHECK(r.reply.step.usage.output_tokens == 9);
  CHECK(r.reply.step.cost_usd == Approx(39 / 1e6));
  auto seen = srv.seen();
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].body().find("\"stream\"") == std::string::npos);
}

TEST_CASE("openai engine: streamed thinking comes from reasoning_content and reasoning, not as deltas") {
  llm_server srv{[](const request&, int) {
    return streamed({delta(R"({"role":"assistant","content":null,"reasoning_content":"first, "})"),
                     delta(R"({"reasoning":"then"})"), text("answer"), finish(), done}, 3);
  }};
  auto e = make(config(srv));
  auto r = call(*e, ask("think"));
  REQUIRE(r.reply.result.is_ok());
  CHECK(r.reply.step.thinking == "first, then");
  CHECK(r.reply.step.text == "answer");
  CHECK(r.deltas == std::vector<std::string>{"answer"});
}

TEST_CASE("openai engine: tool calls assembled by index across chunks, a parallel pair, ids kept (chunked body)") {
  llm_server srv{[](const request&, int) {
    std::vector<std::string> events = {
        delta(R"({"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_A","type":"function","function":{"name":"weather","arguments":""}}]})"),
        delta(R"({"tool_calls":[{"index":0,"function":{"arguments":"{\"ci"}}]})"),
        delta(R"({"tool_calls":[{"index":1,"id":"call_B","type":"function","function":{"name":"clock","arguments":"{\"tz\":"}}]})"),
        delta(R"({"tool_calls":[{"index":0,"function":{"arguments":"ty\":\"Oslo\"}"}}]})"),
        delta(R"({"tool_calls":[{"index":1,"function":{"arguments":"\"UTC\"}"}}]})"),
        finish("tool_calls"), usage(40, 20), done};
    std::string body;
    for (const auto& ev : events) body += ev;
    script sc;
    sc.pieces.push_back(chunked_sse_head());
    for (size_t at = 0; at < body.size(); at += 11) sc.pieces.push_back(http_chunk(body.substr(at, 11)));
    sc.pieces.push_back("0\r\n\r\n");
    return sc;
  }};
  auto e = make(config(srv));
  auto r = call(*e, ask("weather and time"));
  INFO(r.reply.result.to_string());
  REQUIRE(r.reply.result.is_ok());
  CHECK(r.reply.step.text.empty());
  REQUIRE(r.reply.step.tool_calls.size() == 2);
  CHECK(r.reply.step.tool_calls[0].call_id == "call_A");
  CHECK(r.reply.step.tool_calls[0].name == "weather");
  CHECK(r.reply.step.tool_calls[0].arguments_json == R"({"city":"Oslo"})");
  CHECK(r.reply.step.tool_calls[1].call_id == "call_B");
  CHECK(r.reply.step.tool_calls[1].name == "clock");
  CHECK(r.reply.step.tool_calls[1].arguments_json == R"({"tz":"UTC"})");
  CHECK(r.reply.step.usage.input_tokens == 40);
}

TEST_CASE("openai engine: the request body maps the conversation, tools, model, temperature and max_tokens") {
  llm_server srv{[](const request&, int) { return streamed({text("ok"), finish(), done}); }};
  auto e = make(config(srv, R"("temperature":0.25,"max_tokens":100)"));
  std::string compacted;
  REQUIRE(encode_compacted({make_message(message_role::system, "[summary] earlier"),
                            make_message(message_role::user, "old q"), make_message(message_role::assistant, "old a")},
                           &compacted)
              .is_ok());
  engine_request req;
  req.conversation = {make_system_prompt("You help."),
                      make_compaction("summarize", 1, 3, compacted),
                      make_message(message_role::user, "weather in Paris and Rome?"),
                      make_thinking("two lookups"),
                      make_assistant_text("Looking up."),
                      make_tool_call("call_a", "weather", R"({"city":"Paris"})"),
                      make_tool_call("call_b", "weather", R"({"city":"Rome"})"),
                      make_tool_result("call_a", "weather", "sunny", false),
                      make_tool_result("call_b", "weather", "(error: timeout)", true),
                      make_tool_call("call_c", "weather", R"({"city":"Oslo"})"),
                      make_tool_result("call_c", "weather", "snow", false),
                      make_message(message_role::assistant, "Paris sunny, Oslo snow."),
                      make_message(message_role::user, "thanks \"really\"")};
  req.tools = {{"weather", "Weather now", R"({"type": "object", "properties": {"city": {"type": "string"}}})"}};
  auto r = call(*e, req);
  REQUIRE(r.reply.result.is_ok());
  auto seen = srv.seen();
  REQUIRE(seen.size() == 1);
  const std::string expected =
      R"({"model":"gpt-test","messages":[)"
      R"({"role":"system","content":"You help."},)"
      R"({"role":"system","content":"[summary] earlier"},{"role":"user","content":"old q"},)"
      R"({"role":"assistant","content":"old a"},)"
      R"({"role":"user","content":"weather in Paris and Rome?"},)"
      R"({"role":"assistant","content":"Looking up.","tool_calls":[)"
      R"({"id":"call_a","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Paris\"}"}},)"
      R"({"id":"call_b","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Rome\"}"}}]},)"
      R"({"role":"tool","tool_call_id":"call_a","content":"sunny"},)"
      R"x({"role":"tool","tool_call_id":"call_b","content":"(error: timeout)"},)x"
      R"({"role":"assistant","content":null,"tool_calls":[)"
      R"({"id":"call_c","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Oslo\"}"}}]},)"
      R"({"role":"tool","tool_call_id":"call_c","content":"snow"},)"
      R"({"role":"assistant","content":"Paris sunny, Oslo snow."},)"
      R"({"role":"user","content":"thanks \"really\""}],)"
      R"("tools":[{"type":"function","function":{"name":"weather","description":"Weather now",)"
      R"("parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}],)"
      R"("temperature":0.25,"max_tokens":100,"stream":true,"stream_options":{"include_usage":true}})";
  CHECK(seen[0].body() == expected);
}

TEST_CASE("openai engine: title and summary calls ask for it in a last user message, with no tools") {
  llm_server srv{[](const request&, int) { return streamed({text("A Short Title"), finish(), done}); }};
  auto e = make(config(srv));
  engine_request req = ask("plan a trip to Oslo");
  req.purpose = engine_purpose::title;
  req.tools = {{"weather", "", "{}"}};
  auto r = call(*e, req);
  REQUIRE(r.reply.result.is_ok());
  CHECK(r.reply.step.text == "A Short Title");
  req.purpose = engine_purpose::summary;
  REQUIRE(call(*e, req).reply.result.is_ok());
  auto seen = srv.seen();
  REQUIRE(seen.size() == 2);
  CHECK_THAT(seen[0].body(), Catch::Contains(R"({"role":"user","content":"plan a trip to Oslo"},{"role":"user","content":"Give the conversation above a title)"));
  CHECK_THAT(seen[1].body(), Catch::Contains(R"({"role":"user","content":"Summarize the conversation above)"));
  CHECK(seen[0].body().find("\"tools\"") == std::string::npos);
}

// ---- retries and failures ------------------------------------------------------------

TEST_CASE("openai engine: 429 then success honours Retry-After, bounded by retry_after_max_ms") {
  llm_server srv{[](const request&, int n) {
    if (n == 1)
      return script{{http_reply(429, "Too Many Requests", R"({"error":{"message":"slow down"}})", "Retry-After: 0.3\r\n")}};
    return streamed({text("fine"), finish(), done});
  }};
  // Without Retry-After the backoff (a minute) would outlast the wait: the 0.3 s must be what was waited.
  auto e = make(config(srv, R"("backoff_ms":60000,"backoff_max_ms":60000)"));
  auto t0 = clock_type::now();
  auto r = call(*e, ask("x"));
  auto waited = clock_type::now() - t0;
  INFO(r.reply.result.to_string());
  REQUIRE(r.reply.result.is_ok());
  CHECK(r.reply.step.text == "fine");
  CHECK(srv.seen().size() == 2);
  CHECK(waited >= 250ms);
  CHECK(waited < 10s);
  // A Retry-After past retry_after_max_ms waits the bound.
  llm_server slow{[](const request&, int n) {
    if (n == 1) return script{{http_reply(429, "Too Many Requests", "{}", "Retry-After: 3600\r\n")}};
    return streamed({text("fine"), finish(), done});
  }};
  auto e2 = make(config(slow, R"("retry_after_max_ms":50)"));
  t0 = clock_type::now();
  REQUIRE(call(*e2, ask("x")).reply.result.is_ok());
  CHECK(clock_type::now() - t0 < 10s);
}

TEST_CASE("openai engine: 500 on all retries+1 attempts fails clearly — another 4xx fails at once with its message") {
  llm_server srv{[](const request&, int) {
    return script{{http_reply(500, "Internal Server Error", R"({"error":{"message":"upstream exploded"}})")}};
  }};
  auto e = make(config(srv, R"("retries":2)"));
  auto r = call(*e, ask("x"));
  CHECK(!r.reply.result.is_ok());
  CHECK_THAT(r.reply.result.message(),
             Catch::Contains("HTTP 500") && Catch::Contains("upstream exploded") && Catch::Contains("after 3 attempts"));
  CHECK(r.reply.result.limit() == "retries");
  CHECK(srv.seen().size() == 3);

  llm_server bad{[](const request&, int) {
    return script{{http_reply(400, "Bad Request",
                              std::string(R"({"error":{"message":"model not found; your key )") + test_key +
                                  R"( is fine","type":"invalid_request_error"}})")}};
  }};
  auto e2 = make(config(bad));
  auto r2 = call(*e2, ask("x"));
  CHECK(r2.reply.result.code() == errc::invalid_input);
  CHECK_THAT(r2.reply.result.message(), Catch::Contains("HTTP 400") && Catch::Contains("model not found"));
  CHECK(r2.reply.result.message().find(test_key) == std::string::npos);
  CHECK(bad.seen().size() == 1);
}

TEST_CASE("openai engine: a connection that breaks before the reply begins is retried — after it began, not") {
  llm_server srv{[](const request&, int n) {
    if (n == 1) return script{{sse_head()}};  // headers, then the server closes: nothing began
    if (n == 2) return streamed({text("part"), text("ial")});  // began, then closed without [DONE]
    return streamed({text("never"), finish(), done});
  }};
  auto e = make(config(srv));
  auto r = call(*e, ask("x"));
  CHECK(!r.reply.result.is_ok());
  CHECK_THAT(r.reply.result.message(), Catch::Contains("before data: [DONE]"));
  CHECK(r.deltas == std::vector<std::string>{"part", "ial"});
  CHECK(srv.seen().size() == 2);
}

TEST_CASE("openai engine: a stall after a partial answer is not retried: timeout_ms ends it") {
  llm_server srv{[](const request&, int) {
    script sc = streamed({text("half an ans")});
    sc.hold = true;
    return sc;
  }};
  auto e = make(config(srv, R"("timeout_ms":300,"retries":3)"));
  auto r = call(*e, ask("x"));
  CHECK(!r.reply.result.is_ok());
  CHECK(r.reply.result.limit() == "timeout_ms");
  CHECK_THAT(r.reply.result.message(), Catch::Contains("not retried"));
  CHECK(joined(r.deltas) == "half an ans");
  CHECK(srv.seen().size() == 1);
  CHECK(srv.wait_client_closed(1));
}

TEST_CASE("openai engine: a malformed chunk fails the call at once, quoting at most ~200 bytes of it") {
  const std::string junk = R"({"choices":[{"index":0,"delta":{"content":42}}],"pad":")" + std::string(5000, 'p') + "\"}";
  llm_server srv{[&](const request&, int n) {
    if (n == 1) return streamed({text("ok so far"), sse_event(junk), done});
    return streamed({sse_event("{not json at all"), done});
  }};
  auto e = make(config(srv));
  auto r = call(*e, ask("x"));
  CHECK(r.reply.result.code() == errc::corruption);
  CHECK_THAT(r.reply.result.message(), Catch::Contains("malformed stream chunk") && Catch::Contains("content"));
  CHECK(r.reply.result.message().size() < 600);
  CHECK(srv.seen().size() == 1);
  auto r2 = call(*e, ask("x"));
  CHECK(r2.reply.result.code() == errc::corruption);
  CHECK_THAT(r2.reply.result.message(), Catch::Contains("{not json at all"));
  CHECK(srv.seen().size() == 2);
}

TEST_CASE("openai engine: a reply past reply_bytes_max, a line past line_bytes_max, too many tool calls, too deep") {
  llm_server srv{[](const request&, int n) {
    if (n == 1) {
      std::vector<std::string> many;
      for (int i = 0; i < 100; ++i) many.push_back(text(std::string(100, 'a')));
      return streamed(many, 4096);
    }
    if (n == 2) return streamed({"data: " + std::string(2 << 20, 'x')}, 65536);
    if (n == 3) {
      std::string calls;
      for (int i = 0; i < 129; ++i)
        calls += std::string(i ? "," : "") + R"({"index":)" + std::to_string(i) +
                 R"(,"id":"c","function":{"name":"f","arguments":"{}"}})";
      return streamed({delta(R"({"tool_calls":[)" + calls + "]}"), done}, 4096);
    }
    return streamed({sse_event(R"({"choices":[{"index":0,"delta":{"content":"x"}}],"deep":)" + std::string(20, '[') +
                           std::string(20, ']') + "}"),
                     done});
  }};
  auto e = make(config(srv, R"("reply_bytes_max":4000)"));
  auto r = call(*e, ask("x"));
  CHECK(r.reply.result.limit() == "reply_bytes_max");
  CHECK_THAT(r.reply.result.message(), Catch::Contains("reply_bytes_max"));
  auto e2 = make(config(srv));
  auto r2 = call(*e2, ask("x"));
  CHECK(r2.reply.result.limit() == "line_bytes_max");
  auto r3 = call(*e2, ask("x"));
  CHECK(r3.reply.result.limit() == "tool_calls_max");
  auto r4 = call(*e2, ask("x"));
  CHECK(r4.reply.result.limit() == "reply_depth_max");
  for (const auto* x : {&r, &r2, &r3, &r4})  // said once whose error it is
    CHECK(x->reply.result.message().find("openai engine: openai engine") == std::string::npos);
  CHECK(srv.seen().size() == 4);  // none retried
}

TEST_CASE("openai engine: cancel closes the connection at once and no callback follows") {
  llm_server srv{[](const request&, int) {
    script sc = streamed({text("start")});
    sc.hold = true;
    return sc;
  }};
  auto e = make(config(srv, R"("timeout_ms":60000)"));
  auto c = std::make_shared<collector>();
  auto handle = e->start(ask("x"), c->callbacks(c));
  {
    std::unique_lock lock{c->mu};
    REQUIRE(c->cv.wait_for(lock, wait_max, [&] { return !c->deltas.empty(); }));
  }
  auto t0 = clock_type::now();
  handle->cancel();
  REQUIRE(srv.wait_client_closed(1));
  CHECK(clock_type::now() - t0 < 5s);  // not the 60 s read timeout
  // The engine is destroyed after: a late on_done would land now.
  e.reset();
  std::lock_guard lock{c->mu};
  CHECK(c->done_calls == 0);
}

TEST_CASE("openai engine: destroying the engine cancels its calls in flight, closing their connections") {
  llm_server srv{[](const request&, int) {
    script sc{{sse_head()}, true};
    return sc;
  }};
  auto e = make(config(srv, R"("timeout_ms":60000)"));
  auto c = std::make_shared<collector>();
  auto handle = e->start(ask("x"), c->callbacks(c));
  REQUIRE(srv.wait_requests(1));
  e.reset();
  REQUIRE(srv.wait_client_closed(1));
  handle->cancel();  // a handle that outlives its engine is harmless
  std::lock_guard lock{c->mu};
  CHECK(c->done_calls == 0);
}

// ---- https --------------------------------------------------------------------------------

TEST_CASE("openai engine https: a reply over TLS with the test CA — an untrusted server fails, not retried") {
  test::temp_dir dir;
  auto ca = test::make_test_ca();
  auto cert = test::make_server_cert(ca, "IP:127.0.0.1,DNS:localhost");
  std::string ca_file = dir.str("ca.pem");
  test::write_text_file(ca_file, ca.cert);
  llm_server srv{[](const request&, int) { return streamed({text("secure"), finish(), done}); },
                 tls_setup{cert.cert, cert.key}};
  auto e = make(config(srv, R"("ca_file":")" + ca_file + "\""));
  auto r = call(*e, ask("x"));
  INFO(r.reply.result.to_string());
  REQUIRE(r.reply.result.is_ok());
  CHECK(r.reply.step.text == "secure");
  REQUIRE(srv.seen().size() == 1);
  CHECK(srv.seen()[0][bhttp::field::authorization] == std::string("Bearer ") + test_key);

  auto untrusted = make(config(srv, R"("retries":3)"));  // the system's CAs know nothing of the test CA
  auto r2 = call(*untrusted, ask("x"));
  CHECK_THAT(r2.reply.result.message(), Catch::Contains("failed verification"));
  CHECK(srv.seen().size() == 1);  // the handshake failed: no request, and no retry
}

// ---- config -----------------------------------------------------------------------------------

TEST_CASE("openai engine config: missing key variable, unknown fields and wrong types are refused naming the field") {
  ::unsetenv("SKEIN_TEST_OPENAI_NO_SUCH_KEY");
  no_timers timers;
  std::shared_ptr<engine> e;
  auto s = make_openai_engine(
      R"({"base_url":"http://127.0.0.1:1/v1","model":"m","api_key_env":"SKEIN_TEST_OPENAI_NO_SUCH_KEY"})", timers, &e);
  CHECK(s.field() == "api_key_env");
  CHECK_THAT(s.message(), Catch::Contains("SKEIN_TEST_OPENAI_NO_SUCH_KEY"));
  ::setenv(key_env, test_key, 1);
  auto refused = [&](const std::string& extra) {
    std::string cfg = R"({"base_url":"http://127.0.0.1:1/v1","model":"m","api_key_env":")" + std::string(key_env) +
                      "\"" + (extra.empty() ? "" : "," + extra) + "}";
    status r = make_openai_engine(cfg, timers, &e);
    CHECK(r.message().find(test_key) == std::string::npos);
    return r;
  };
  CHECK(refused("").is_ok());
  CHECK(refused(R"("temprature":1)").field() == "temprature");
  CHECK(refused(R"("temperature":"hot")").field() == "temperature");
  CHECK(refused(R"("stream":1)").field() == "stream");
  CHECK(refused(R"("max_tokens":-3)").field() == "max_tokens");
  CHECK(refused(R"("prices":{"m":{"input_per_mtok":"x"}})").field() == "prices");
  CHECK(refused(R"("prices":{"m":{"input":1}})").field() == "prices");
  CHECK(refused(R"("ca_file":"x.pem")").field() == "ca_file");  // http: no CA file
  CHECK(make_openai_engine(R"({"base_url":"ftp://x/v1","model":"m"})", timers, &e).field() == "base_url");
  CHECK(make_openai_engine(R"({"base_url":"http://x/v1"})", timers, &e).field() == "model");
  // A variable set to "" is a server that wants no key: no Authorization header.
  ::setenv("SKEIN_TEST_OPENAI_EMPTY_KEY", "", 1);
  llm_server srv{[](const request&, int) { return streamed({text("ok"), finish(), done}); }};
  REQUIRE(make_openai_engine(R"({"base_url":")" + srv.url() + R"(","model":"m","api_key_env":"SKEIN_TEST_OPENAI_EMPTY_KEY"})",
                             timers, &e)
              .is_ok());
  REQUIRE(call(*e, ask("x")).reply.result.is_ok());
  auto seen = srv.seen();
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].find(bhttp::field::authorization) == seen[0].end());
}

// ---- end to end through runtime ------------------------------------------------------------

namespace {

agent_config openai_agent(const std::string& id, const std::string& engine_config) {
  agent_config a;
  a.id = id;
  a.system_prompt = "You are terse.";
  a.engine = "openai";
  a.engine_config = engine_config;
  return a;
}

runtime_options with_weather_tool() {
  runtime_options o = test::without_effects();
  o.tools.push_back(make_function_tool(
      {"weather", "Weather now", R"({"type":"object","properties":{"city":{"type":"string"}}})"},
      [](const tool_invocation& inv) { return tool_output{"sunny at " + inv.arguments_json, false}; }));
  return o;
}

}  // namespace

TEST_CASE("openai engine end to end: the model calls a tool, then answers — the log is as with any engine") {
  llm_server srv{[](const request&, int n) {
    if (n == 1)
      return streamed({delta(R"({"role":"assistant","content":"Let me look.","tool_calls":[{"index":0,"id":"call_w1","type":"function","function":{"name":"weather","arguments":"{\"city\":"}}]})"),
                       delta(R"({"tool_calls":[{"index":0,"function":{"arguments":"\"Oslo\"}"}}]})"),
                       finish("tool_calls"), usage(50, 10), done});
    return streamed({text("Sunny in Oslo."), finish(), usage(80, 5), done});
  }};
  test::runtime_fixture f{with_weather_tool()};
  ::setenv(key_env, test_key, 1);
  agent_config a = openai_agent("w", config(srv, R"("prices":{"gpt-test":{"input_per_mtok":1,"output_per_mtok":2}})"));
  a.tools = {"weather"};
  REQUIRE(f.rt->create_agent(a).is_ok());
  manifest t = f.thread("w");
  run_result r = f.run(t.id, "weather in Oslo?");
  INFO(r.error);
  REQUIRE(r.outcome == run_outcome::completed);
  CHECK(r.text == "Sunny in Oslo.");
  CHECK(r.turns == 2);
  CHECK(r.usage.input_tokens == 130);
  CHECK(r.usage.output_tokens == 15);
  CHECK(r.cost_usd == Approx((130 + 30) / 1e6));
  std::vector<std::string> kinds;
  for (const auto& e : f.events(t.id))
    if (e.type != event_type::signal) kinds.push_back(std::string{to_string(e.type)} + ":" + e.text + e.json);
  CHECK(kinds == std::vector<std::string>{"system_prompt:You are terse.", "message:weather in Oslo?",
                                          "assistant_text:Let me look.", "tool_call:{\"city\":\"Oslo\"}",
                                          "tool_result:sunny at {\"city\":\"Oslo\"}", "message:Sunny in Oslo.",
                                          "result:"});
  auto seen = srv.seen();
  REQUIRE(seen.size() == 2);
  CHECK_THAT(seen[0].body(), Catch::Contains(R"("tools":[{"type":"function","function":{"name":"weather")"));
  CHECK_THAT(seen[1].body(),
             Catch::Contains(R"({"role":"assistant","content":"Let me look.","tool_calls":[{"id":"call_w1","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Oslo\"}"}}]},)"
                             R"({"role":"tool","tool_call_id":"call_w1","content":"sunny at {\"city\":\"Oslo\"}"})"));
}

TEST_CASE("openai engine end to end: a thread's engine_config patch changes its model and temperature only, and no more") {
  llm_server srv{[](const request&, int) { return streamed({text("ok"), finish(), done}); }};
  test::runtime_fixture f{test::without_effects()};
  ::setenv(key_env, test_key, 1);
  REQUIRE(f.rt->create_agent(openai_agent("p", config(srv, R"("temperature":1)"))).is_ok());
  thread_options o;
  o.agent_id = "p";
  o.engine_config = R"({"model":"gpt-other","temperature":0.5,"max_tokens":7})";
  manifest patched;
  REQUIRE(f.rt->create_thread(o, &patched).is_ok());
  manifest plain = f.thread("p");
  CHECK(f.run(patched.id, "a").text == "ok");
  CHECK(f.run(plain.id, "b").text == "ok");
  auto seen = srv.seen();
  REQUIRE(seen.size() == 2);
  CHECK_THAT(seen[0].body(), Catch::StartsWith(R"({"model":"gpt-other",)") &&
                                 Catch::Contains(R"("temperature":0.5,"max_tokens":7,)"));
  CHECK_THAT(seen[1].body(), Catch::StartsWith(R"({"model":"gpt-test",)") && Catch::Contains(R"("temperature":1,)"));
  CHECK(seen[1].body().find("max_tokens") == std::string::npos);
  // A key a thread may not set (a misspelt one too) is refused at creation, naming it.
  o.engine_config = R"({"temprature":0.5})";
  manifest refused;
  status s = f.rt->create_thread(o, &refused);
  CHECK(s.code() == errc::invalid_input);
  CHECK(s.field() == "engine_config.temprature");
  o.engine_config = R"({"base_url":"http://127.0.0.1:1/v1"})";
  CHECK(f.rt->create_thread(o, &refused).field() == "engine_config.base_url");
  // A patch the factory refuses (a mistyped value) fails that thread's runs, naming it.
  o.engine_config = R"({"temperature":"hot"})";
  manifest broken;
  REQUIRE(f.rt->create_thread(o, &broken).is_ok());
  run_input in;
  in.text = "c";
  run_result r;
  REQUIRE(f.rt->send(broken.id, in).wait(&r, 60s).is_ok());
  CHECK(r.outcome == run_outcome::failed);
  CHECK_THAT(r.error, Catch::Contains("temperature"));
  CHECK(srv.seen().size() == 2);  // neither reached the server
}

TEST_CASE("openai engine end to end: a stall after a partial answer is caught by engine_idle_ms, not retried") {
  llm_server srv{[](const request&, int) {
    script sc = streamed({text("I will now th")});
    sc.hold = true;
    return sc;
  }};
  test::runtime_fixture f{test::without_effects()};
  ::setenv(key_env, test_key, 1);
  agent_config a = openai_agent("s", config(srv, R"("timeout_ms":60000)"));
  a.budgets.engine_idle_ms = 400;
  REQUIRE(f.rt->create_agent(a).is_ok());
  manifest t = f.thread("s");
  auto t0 = clock_type::now();
  run_result r = f.run(t.id, "go");
  CHECK(r.outcome == run_outcome::failed);
  CHECK_THAT(r.error, Catch::Contains("engine_idle_ms"));
  CHECK(clock_type::now() - t0 < 30s);
  CHECK(srv.wait_client_closed(1));  // the run's end cancelled the call: its connection closed
  CHECK(srv.seen().size() == 1);
}

TEST_CASE("openai engine end to end: a malformed chunk fails the run with a clear error — a missing key refuses the agent") {
  llm_server srv{[](const request&, int) { return streamed({text("fi"), sse_event(R"({"choices":"nope"})"), done}); }};
  test::runtime_fixture f{test::without_effects()};
  ::setenv(key_env, test_key, 1);
  REQUIRE(f.rt->create_agent(openai_agent("m", config(srv))).is_ok());
  manifest t = f.thread("m");
  run_result r = f.run(t.id, "go");
  CHECK(r.outcome == run_outcome::failed);
  CHECK_THAT(r.error, Catch::Contains("malformed stream chunk") && Catch::Contains("choices is not an array"));
  CHECK(srv.seen().size() == 1);

  ::unsetenv("SKEIN_TEST_OPENAI_UNSET");
  auto s = f.rt->create_agent(openai_agent(
      "k", R"({"base_url":")" + srv.url() + R"(","model":"m","api_key_env":"SKEIN_TEST_OPENAI_UNSET"})"));
  CHECK(s.code() == errc::invalid_input);
  CHECK_THAT(s.message(), Catch::Contains("api_key_env") && Catch::Contains("SKEIN_TEST_OPENAI_UNSET"));
}
