#include "runtime/engines/openai_embedder.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <boost/asio/ssl.hpp>
#include <boost/beast/ssl.hpp>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <random>
#include <thread>

#include "runtime/model/embedding.hpp"
#include "runtime/model/json_reader.hpp"
#include "runtime/model/json_writer.hpp"
#include "runtime/engines/beast_names.hpp"
#include "runtime/engines/openai_http.hpp"

namespace skein {
namespace {

namespace ssl = boost::asio::ssl;

constexpr size_t reply_bytes_max = 256 << 20;  // one response body
constexpr size_t reply_depth_max = 8;

struct openai_config {
  openai_http::endpoint at;
  std::string model;
  std::string api_key_env = "OPENAI_API_KEY";
  std::string api_key;  // read once, at construction
  std::string ca_file;  // https only; empty: the system's trusted CAs
  uint64_t dims = 0;
  uint64_t batch_max = 64;
  uint64_t timeout_ms = 30000;
  uint64_t retries = 4;
  uint64_t backoff_ms = 200;
  uint64_t backoff_max_ms = 10000;
  uint64_t retry_after_max_ms = 30000;
  uint64_t queue_max = 1024;
};

status parse_config(std::string_view json_text, openai_config* c) {
  json::document doc;
  json::object_reader r;
  SKEIN_TRY(json::parse(json_text, {}, "openai embedder config", &doc));
  SKEIN_TRY(json::object_reader::open(doc.root(), "config", &r));
  std::string url;
  SKEIN_TRY(r.string("base_url", &url));
  SKEIN_TRY(openai_http::parse_base_url(url, &c->at));
  SKEIN_TRY(r.string("model", &c->model));
  SKEIN_TRY(r.uint("dims", &c->dims));
  SKEIN_TRY(r.string("api_key_env", &c->api_key_env, false));
  SKEIN_TRY(r.string("ca_file", &c->ca_file, false));
  SKEIN_TRY(r.uint("batch_max", &c->batch_max, false));
  SKEIN_TRY(r.uint("timeout_ms", &c->timeout_ms, false));
  SKEIN_TRY(r.uint("retries", &c->retries, false));
  SKEIN_TRY(r.uint("backoff_ms", &c->backoff_ms, false));
  SKEIN_TRY(r.uint("backoff_max_ms", &c->backoff_max_ms, false));
  SKEIN_TRY(r.uint("retry_after_max_ms", &c->retry_after_max_ms, false));
  SKEIN_TRY(r.uint("queue_max", &c->queue_max, false));
  if (c->model.empty()) return status::invalid_input("config.model: empty").with_field("model");
  if (c->dims == 0 || c->dims > embedding_dims_max)
    return status::invalid_input("config.dims: must be 1.." + std::to_string(embedding_dims_max))
        .with_field("dims")
        .with_limit("embedding_dims_max");
  if (c->batch_max == 0) return status::invalid_input("config.batch_max: must be at least 1").with_field("batch_max");
  if (c->retries == 0) return status::invalid_input("config.retries: must be at least 1").with_field("retries");
  if (c->timeout_ms == 0) return status::invalid_input("config.timeout_ms: must be at least 1").with_field("timeout_ms");
  if (c->queue_max == 0) return status::invalid_input("config.queue_max: must be at least 1").with_field("queue_max");
  // A CA file with plain http would suggest a protection the traffic does not have.
  if (!c->ca_file.empty() && !c->at.tls)
    return status::invalid_input("config.ca_file: only for an https:// base_url").with_field("ca_file");
  return openai_http::read_api_key(c->api_key_env, false, &c->api_key);
}

// One attempt's outcome: what it got, and whether trying again may help.
struct attempt {
  status result;
  bool retryable = false;
  uint64_t retry_after_ms = 0;  // 0: the server named no delay
  std::vector<std::vector<float>> vectors;
};

// The whole exchange under one deadline: tcp_stream's timeout covers connect,
// TLS handshake, write and read alike (it applies to asynchronous operations
// only, hence the coroutines on a private io_context). The name lookup before
// it is not bounded.
//
// Writes the request and reads the reply on a connected (for https: handshaken) stream.
template <class stream_type>
net::awaitable<beast::error_code> write_read(stream_type& stream, bhttp::request<bhttp::string_body>& req,
                                             bhttp::response_parser<bhttp::string_body>& parser) {
  auto tok = net::as_tuple(net::use_awaitable);
  auto [ec_w, written] = co_await bhttp::async_write(stream, req, tok);
  if (ec_w) co_return ec_w;
  beast::flat_buffer buffer;
  auto [ec_r, read] = co_await bhttp::async_read(stream, buffer, parser, tok);
  co_return ec_r;
}

net::awaitable<beast::error_code> exchange_http(tcp::resolver::results_type endpoints, std::chrono::milliseconds timeout,
                                                bhttp::request<bhttp::string_body>& req,
                                                bhttp::response_parser<bhttp::string_body>& parser) {
  beast::tcp_stream stream{co_await net::this_coro::executor};
  stream.expires_after(timeout);
  auto [ec, ep] = co_await stream.async_connect(endpoints, net::as_tuple(net::use_awaitable));
  if (!ec) ec = co_await write_read(stream, req, parser);
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  co_return ec;
}

// As exchange_http, with a TLS handshake after connect. A certificate that fails
// verification leaves OpenSSL's reason in *verify_failure (else it stays empty).
net::awaitable<beast::error_code> exchange_https(tcp::resolver::results_type endpoints,
                                                 std::chrono::milliseconds timeout, ssl::context& ctx,
                                                 const std::string& host, bhttp::request<bhttp::string_body>& req,
                                                 bhttp::response_parser<bhttp::string_body>& parser,
                                                 std::string* verify_failure) {
  beast::ssl_stream<beast::tcp_stream> stream{co_await net::this_coro::executor, ctx};
  auto& tcp_layer = beast::get_lowest_layer(stream);
  tcp_layer.expires_after(timeout);
  if (!openai_http::prepare_tls_peer(stream.native_handle(), host))
    co_return beast::error_code(static_cast<int>(::ERR_get_error()), net::error::get_ssl_category());
  auto tok = net::as_tuple(net::use_awaitable);
  auto [ec, ep] = co_await tcp_layer.async_connect(endpoints, tok);
  if (!ec) {
    std::tie(ec) = co_await stream.async_handshake(ssl::stream_base::client, tok);
    if (ec) *verify_failure = openai_http::tls_verify_failure(stream.native_handle());
  }
  if (!ec) ec = co_await write_read(stream, req, parser);
  // No TLS close_notify of ours: the reply is complete by now (a peer that closed
  // mid-reply without close_notify already failed the read as stream_truncated),
  // and waiting for the server's close_notify could only add a stall.
  beast::error_code ignored;
  tcp_layer.socket().shutdown(tcp::socket::shutdown_both, ignored);
  co_return ec;
}

class openai_embedder final : public embedder {
 public:
  // tls: the context for an https base_url, null for http.
  openai_embedder(openai_config c, std::unique_ptr<ssl::context> tls)
      : c_(std::move(c)), tls_(std::move(tls)), rng_(std::random_device{}()) {
    worker_ = std::thread([this] { work(); });
  }

  ~openai_embedder() override {
    {
      std::lock_guard lock{mu_};
      stopping_ = true;
    }
    cv_.notify_all();
    worker_.join();
    for (auto& j : queue_) j.on_done({status::io_error("openai embedder: closed before the request was sent"), {}});
  }

  size_t dimensions() const override { return c_.dims; }
  size_t batch_max() const override { return c_.batch_max; }

  void embed(std::vector<std::string> texts, std::function<void(embed_reply)> on_done) override {
    if (texts.empty()) return on_done({status::ok(), {}});
    {
      std::lock_guard lock{mu_};
      if (!stopping_ && queue_.size() < c_.queue_max) {
        queue_.push_back({std::move(texts), std::move(on_done)});
        cv_.notify_one();
        return;
      }
    }
    on_done({status::overloaded("openai embedder: " + std::to_string(c_.queue_max) + " calls already waiting")
                 .with_limit("queue_max"),
             {}});
  }

 private:
  struct job {
    std::vector<std::string> texts;
    std::function<void(embed_reply)> on_done;
  };

  // Takes queued calls while their texts fit one request (at least one call;
  // a call larger than batch_max goes alone and is split into requests).
  bool take(std::vector<job>* batch) {
    std::unique_lock lock{mu_};
    cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (stopping_) return false;
    size_t texts = 0;
    while (!queue_.empty() && (batch->empty() || texts + queue_.front().texts.size() <= c_.batch_max)) {
      texts += queue_.front().texts.size();
      batch->push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    return true;
  }

  void work() {
    for (;;) {
      std::vector<job> batch;
      if (!take(&batch)) return;
      std::vector<std::string> texts;
      for (auto& j : batch)
        for (auto& t : j.texts) texts.push_back(std::move(t));
      std::vector<std::vector<float>> vectors;
      status s;
      for (size_t from = 0; from < texts.size() && s; from += c_.batch_max) {
        std::vector<std::string> part(texts.begin() + static_cast<ptrdiff_t>(from),
                                      texts.begin() + static_cast<ptrdiff_t>(std::min(texts.size(), from + c_.batch_max)));
        std::vector<std::vector<float>> got;
        s = request_with_retries(part, &got);
        for (auto& v : got) vectors.push_back(std::move(v));
      }
      size_t at = 0;
      for (auto& j : batch) {
        embed_reply r;
        r.result = s;
        if (s) {
          for (size_t i = 0; i < j.texts.size(); ++i) r.vectors.push_back(std::move(vectors[at + i]));
          at += j.texts.size();
        }
        j.on_done(std::move(r));
      }
    }
  }

  status request_with_retries(const std::vector<std::string>& texts, std::vector<std::vector<float>>* out) {
    attempt a;
    for (uint64_t n = 1;; ++n) {
      a = send_once(texts);
      if (a.result) {
        *out = std::move(a.vectors);
        return status::ok();
      }
      if (!a.retryable || n >= c_.retries) break;
      uint64_t delay_ms = a.retry_after_ms > 0 ? std::min(a.retry_after_ms, c_.retry_after_max_ms) : openai_http::backoff_delay_ms(n, c_.backoff_ms, c_.backoff_max_ms, rng_);
      std::unique_lock lock{mu_};
      if (cv_.wait_for(lock, std::chrono::milliseconds(delay_ms), [&] { return stopping_; }))
        return status::io_error("openai embedder: closed while retrying; last error: " + a.result.message());
    }
    std::string tries = a.retryable ? " (after " + std::to_string(c_.retries) + " attempts)" : "";
    return status(a.result.code(), a.result.message() + tries).with_limit(a.retryable ? "retries" : "");
  }

  std::string body_of(const std::vector<std::string>& texts) const {
    std::string body;
    json_writer w{&body};
    w.begin_object();
    w.field("model", c_.model);
    w.field_strings("input", texts);
    w.end_object();
    return body;
  }

  attempt send_once(const std::vector<std::string>& texts) {
    attempt a;
    bhttp::request<bhttp::string_body> req{bhttp::verb::post, c_.at.path_prefix + "/v1/embeddings", 11};
    req.set(bhttp::field::host, c_.at.host);
    req.set(bhttp::field::content_type, "application/json");
    req.set(bhttp::field::user_agent, "skein");
    if (!c_.api_key.empty()) req.set(bhttp::field::authorization, "Bearer " + c_.api_key);
    req.body() = body_of(texts);
    req.prepare_payload();
    bhttp::response_parser<bhttp::string_body> parser;
    parser.body_limit(reply_bytes_max);
    net::io_context ioc;
    tcp::resolver resolver{ioc};
    beast::error_code ec;
    auto endpoints = resolver.resolve(c_.at.host, c_.at.port, ec);
    if (ec) {
      a.result = status::io_error("openai embedder: cannot resolve " + c_.at.host + ": " + ec.message());
      a.retryable = true;
      return a;
    }
    auto timeout = std::chrono::milliseconds(c_.timeout_ms);
    std::string verify_failure;
    auto on_end = [&](std::exception_ptr e, beast::error_code r) { ec = e ? beast::error_code(net::error::fault) : r; };
    if (tls_)
      net::co_spawn(ioc, exchange_https(endpoints, timeout, *tls_, c_.at.host, req, parser, &verify_failure), on_end);
    else
      net::co_spawn(ioc, exchange_http(endpoints, timeout, req, parser), on_end);
    ioc.run();
    if (!verify_failure.empty()) {  // the same certificate will come back: not retried
      a.result = status::io_error("openai embedder: the TLS certificate of " + c_.at.host + ":" + c_.at.port +
                                  " failed verification: " + verify_failure);
      return a;
    }
    if (ec) {
      a.retryable = true;
      a.result = ec == beast::error::timeout
                     ? status::io_error("openai embedder: no answer within timeout_ms " + std::to_string(c_.timeout_ms))
                           .with_limit("timeout_ms")
                     : status::io_error("openai embedder: " + c_.at.host + ":" + c_.at.port + ": " + ec.message());
      return a;
    }
    const auto& res = parser.get();
    unsigned code = res.result_int();
    if (code == 429 || code >= 500) {
      a.retryable = true;
      if (auto it = res.find(bhttp::field::retry_after); it != res.end())
        a.retry_after_ms = openai_http::parse_retry_after_ms({it->value().data(), it->value().size()});
      a.result = status::overloaded("openai embedder: HTTP " + std::to_string(code) + ": " + openai_http::error_message(res.body(), c_.api_key));
      return a;
    }
    if (code < 200 || code >= 300) {
      a.result = status::invalid_input("openai embedder: HTTP " + std::to_string(code) + ": " + openai_http::error_message(res.body(), c_.api_key));
      return a;
    }
    a.result = parse_reply(res.body(), texts.size(), &a.vectors);
    return a;
  }

  status parse_reply(const std::string& body, size_t count, std::vector<std::vector<float>>* out) const {
    json::document doc;
    json::object_reader r;
    json_limits limits;
    limits.json_bytes_max = reply_bytes_max;
    limits.json_depth_max = reply_depth_max;
    auto bad = [](const std::string& why) { return status::corruption("openai embedder: malformed reply: " + why); };
    if (status s = json::parse(body, limits, "reply", &doc); !s) return bad(s.message());
    if (status s = json::object_reader::open(doc.root(), "reply", &r); !s) return bad(s.message());
    json::dom::element data;
    json::dom::array items;
    if (!r.element("data", &data).is_ok() || data.get_array().get(items) != simdjson::SUCCESS)
      return bad("no data array");
    out->assign(count, {});
    size_t seen = 0;
    for (json::dom::element item : items) {
      json::object_reader ir;
      uint64_t index = 0;
      json::dom::element emb;
      json::dom::array values;
      if (!json::object_reader::open(item, "data[]", &ir).is_ok() || !ir.uint("index", &index).is_ok() ||
          !ir.element("embedding", &emb).is_ok() || emb.get_array().get(values) != simdjson::SUCCESS)
        return bad("an item without index and embedding array");
      if (index >= count || !(*out)[index].empty())
        return bad("index " + std::to_string(index) + " out of range or repeated (" + std::to_string(count) + " inputs)");
      std::vector<float>& v = (*out)[index];
      double norm = 0;
      for (json::dom::element x : values) {
        double d = 0;
        if (x.get_double().get(d) != simdjson::SUCCESS) return bad("a non-number in embedding " + std::to_string(index));
        v.push_back(static_cast<float>(d));
        norm += d * d;
      }
      if (v.size() != c_.dims)
        return status::corruption("openai embedder: the reply has vectors of " + std::to_string(v.size()) +
                                  " dims; config.dims is " + std::to_string(c_.dims))
            .with_field("dims");
      if (norm > 0)
        for (float& f : v) f = static_cast<float>(f / std::sqrt(norm));
      ++seen;
    }
    if (seen != count) return bad(std::to_string(seen) + " embeddings for " + std::to_string(count) + " inputs");
    return status::ok();
  }

  const openai_config c_;
  const std::unique_ptr<ssl::context> tls_;  // used by the worker alone
  std::mt19937_64 rng_;  // the worker's alone
  std::mutex mu_;        // guards queue_ and stopping_
  std::condition_variable cv_;
  std::deque<job> queue_;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace

status make_openai_embedder(std::string_view config_json, timer_service&, std::shared_ptr<embedder>* out) {
  openai_config c;
  SKEIN_TRY(parse_config(config_json, &c));
  std::unique_ptr<ssl::context> tls;
  if (c.at.tls) SKEIN_TRY(openai_http::make_tls_context(c.ca_file, "openai embedder", &tls));
  *out = std::make_shared<openai_embedder>(std::move(c), std::move(tls));
  return status::ok();
}

}  // namespace skein
