#include "runtime/engines/openai_engine.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <atomic>
#include <boost/asio/ssl.hpp>
#include <boost/beast/ssl.hpp>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <unordered_map>

#include "runtime/model/compaction.hpp"
#include "runtime/model/json_reader.hpp"
#include "runtime/model/json_writer.hpp"
#include "runtime/engines/openai_chat.hpp"
#include "runtime/engines/beast_names.hpp"
#include "runtime/engines/openai_http.hpp"
#include "runtime/engines/openai_sse.hpp"

namespace skein {
namespace {

namespace ssl = boost::asio::ssl;

constexpr size_t read_buffer_bytes = 16 << 10;    // body bytes taken per read
constexpr size_t error_body_bytes_max = 64 << 10;  // of a non-2xx body, read for its message
constexpr size_t header_bytes_max = 64 << 10;     // a response's header block

using openai_chat::build_body;
using openai_chat::line_bytes_max;
using openai_chat::openai_config;
using openai_chat::parse_config;
using openai_chat::reply_reader;
using openai_chat::who;

// ---- calls -------------------------------------------------------------------

// One call in flight. The io thread alone touches everything but `cancelled`.
struct call_state {
  std::shared_ptr<const openai_config> c;
  ssl::context* tls = nullptr;  // the engine core's, for https; outlives every call
  std::string target;
  std::string body;
  status body_status;  // not ok: the request could not be built; the call fails with it
  engine_callbacks cb;
  std::atomic<bool> cancelled{false};
  bool done = false;
  std::function<void()> abort;  // stops the operation in progress (closes the connection)
  std::mt19937_64 rng;
  uint64_t id = 0;

  void deliver(engine_reply reply) {
    if (done || cancelled.load()) return;
    done = true;
    if (cb.on_done) cb.on_done(std::move(reply));
  }
  void delta(std::string text) {
    if (!done && !cancelled.load() && cb.on_delta) cb.on_delta(std::move(text));
  }
};

// Clears call_state::abort when the stream it closes goes away (declared after it).
struct abort_scope {
  call_state& cs;
  ~abort_scope() { cs.abort = nullptr; }
};

// One attempt's outcome: what it got, and whether trying again may help.
struct attempt {
  status result;
  bool retryable = false;
  bool started = false;  // the reply had begun: never retried
  uint64_t retry_after_ms = 0;
  engine_step step;
};

void connection_failed(const call_state& cs, beast::error_code ec, attempt* a) {
  const openai_config& c = *cs.c;
  a->retryable = true;
  if (ec == beast::error::timeout)
    a->result = status::io_error(std::string{who} + ": no answer within timeout_ms (" + std::to_string(c.timeout_ms) +
                                 ")")
                    .with_limit("timeout_ms");
  else
    a->result = status::io_error(std::string{who} + ": " + c.at.host + ":" + c.at.port + ": " + ec.message());
}

// Ends a connection after its exchange without waiting on the server: for https
// no close_notify, as the reply is complete or abandoned, and waiting for the
// server's could only add a stall.
void shut_down(beast::tcp_stream& stream) {
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
}

// Sends the request on a connected (for https: handshaken) stream and reads the reply.
template <class stream_type>
net::awaitable<void> exchange(stream_type& stream, call_state& cs, attempt* a) {
  const openai_config& c = *cs.c;
  auto& tcp_layer = beast::get_lowest_layer(stream);
  const auto timeout = std::chrono::milliseconds(c.timeout_ms);
  auto tok = net::as_tuple(net::use_awaitable);
  bhttp::request<bhttp::string_body> req{bhttp::verb::post, cs.target, 11};
  bool default_port = c.at.port == (c.at.tls ? "443" : "80");
  req.set(bhttp::field::host, default_port ? c.at.host : c.at.host + ":" + c.at.port);
  req.set(bhttp::field::content_type, "application/json");
  req.set(bhttp::field::accept, c.stream ? "text/event-stream" : "application/json");
  req.set(bhttp::field::user_agent, "skein");
  if (!c.api_key.empty()) req.set(bhttp::field::authorization, "Bearer " + c.api_key);
  req.body() = cs.body;
  req.prepare_payload();
  tcp_layer.expires_after(timeout);
  auto [ec_w, written] = co_await bhttp::async_write(stream, req, tok);
  if (ec_w) co_return connection_failed(cs, ec_w, a);

  bhttp::response_parser<bhttp::buffer_body> parser;
  parser.header_limit(header_bytes_max);
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());  // counted below, to name our limit
  beast::flat_buffer buffer;
  tcp_layer.expires_after(timeout);
  auto [ec_h, got_h] = co_await bhttp::async_read_header(stream, buffer, parser, tok);
  if (ec_h) co_return connection_failed(cs, ec_h, a);
  const unsigned code = parser.get().result_int();
  const bool ok = code >= 200 && code < 300;
  std::string_view type{parser.get()[bhttp::field::content_type].data(),
                        parser.get()[bhttp::field::content_type].size()};
  const bool sse = ok && type.rfind("text/event-stream", 0) == 0;

  reply_reader reader{c, [&cs](std::string d) { cs.delta(std::move(d)); }};
  sse_parser events{line_bytes_max, [&reader](std::string_view data) { return reader.on_event(data); }};
  std::string whole;  // a body that is not an event stream
  std::vector<char> piece(read_buffer_bytes);
  uint64_t total = 0;
  while (!parser.is_done()) {
    parser.get().body().data = piece.data();
    parser.get().body().size = piece.size();
    tcp_layer.expires_after(timeout);
    // read_some: a stream's events are wanted as they come, not once a buffer is full.
    auto [ec, n] = co_await bhttp::async_read_some(stream, buffer, parser, tok);
    if (ec == bhttp::error::need_buffer) ec = {};
    if (cs.cancelled) co_return;
    size_t got = piece.size() - parser.get().body().size;
    total += got;
    std::string_view bytes{piece.data(), got};
    if (!ok) {
      whole.append(bytes.substr(0, error_body_bytes_max - std::min(whole.size(), error_body_bytes_max)));
      if (ec || whole.size() >= error_body_bytes_max) break;  // enough of an error body
      continue;
    }
    if (total > c.reply_bytes_max) {
      a->started = reader.started();
      a->result = status::invalid_input(std::string{who} + ": the reply is longer than reply_bytes_max (" +
                                        std::to_string(c.reply_bytes_max) + " bytes)")
                      .with_limit("reply_bytes_max");
      co_return;
    }
    if (sse) {
      if (status s = events.feed(bytes); !s) {
        a->started = reader.started();
        // The framing's own errors (line_bytes_max) do not say whose they are yet.
        bool ours = s.message().rfind(who, 0) == 0;
        a->result = ours ? s : status(s.code(), std::string{who} + ": " + s.message()).with_limit(s.limit());
        co_return;
      }
      if (reader.done()) break;  // nothing after [DONE] is read
    } else {
      whole.append(bytes);
    }
    if (ec) {
      connection_failed(cs, ec, a);
      a->started = reader.started();
      if (a->started) {
        a->retryable = false;
        a->result = status(a->result.code(), a->result.message() + " (the reply had begun: not retried)")
                        .with_limit(a->result.limit());
      }
      co_return;
    }
  }
  if (!ok) {
    std::string msg = std::string{who} + ": HTTP " + std::to_string(code) + ": " +
                      openai_http::error_message(whole, c.api_key);
    if (code == 429 || code >= 500) {
      a->retryable = true;
      auto ra = parser.get().find(bhttp::field::retry_after);
      if (ra != parser.get().end())
        a->retry_after_ms = openai_http::parse_retry_after_ms({ra->value().data(), ra->value().size()});
      a->result = status::overloaded(std::move(msg));
    } else {
      a->result = status::invalid_input(std::move(msg));
    }
    co_return;
  }
  if (sse) {
    a->started = reader.started();
    if (!reader.done() && !reader.finished()) {
      a->retryable = !a->started;
      a->result = status::io_error(std::string{who} + ": the stream ended before data: [DONE]");
      co_return;
    }
  } else if (status s = reader.on_whole(whole); !s) {
    a->result = s;
    co_return;
  }
  a->result = status::ok();
  a->step = reader.take_step();
}

net::awaitable<attempt> attempt_once(call_state& cs) {
  attempt a;
  const openai_config& c = *cs.c;
  auto ex = co_await net::this_coro::executor;
  auto tok = net::as_tuple(net::use_awaitable);
  tcp::resolver resolver{ex};
  tcp::resolver::results_type endpoints;
  {
    abort_scope scope{cs};
    cs.abort = [&resolver] { resolver.cancel(); };
    auto [ec, found] = co_await resolver.async_resolve(c.at.host, c.at.port, tok);
    if (cs.cancelled) co_return a;
    if (ec) {
      a.retryable = true;
      a.result = status::io_error(std::string{who} + ": cannot resolve " + c.at.host + ": " + ec.message());
      co_return a;
    }
    endpoints = std::move(found);
  }
  const auto timeout = std::chrono::milliseconds(c.timeout_ms);
  if (cs.tls == nullptr) {
    beast::tcp_stream stream{ex};
    abort_scope scope{cs};
    cs.abort = [&stream] { stream.close(); };
    stream.expires_after(timeout);
    auto [ec, ep] = co_await stream.async_connect(endpoints, tok);
    if (cs.cancelled) co_return a;
    if (ec) {
      connection_failed(cs, ec, &a);
      co_return a;
    }
    co_await exchange(stream, cs, &a);
    shut_down(stream);
    co_return a;
  }
  beast::ssl_stream<beast::tcp_stream> stream{ex, *cs.tls};
  abort_scope scope{cs};
  auto& tcp_layer = beast::get_lowest_layer(stream);
  cs.abort = [&tcp_layer] { tcp_layer.close(); };
  if (!openai_http::prepare_tls_peer(stream.native_handle(), c.at.host)) {
    a.result = status::io_error(std::string{who} + ": cannot set up TLS for " + c.at.host + ": " +
                                std::to_string(::ERR_get_error()));
    co_return a;
  }
  tcp_layer.expires_after(timeout);
  auto [ec, ep] = co_await tcp_layer.async_connect(endpoints, tok);
  if (cs.cancelled) co_return a;
  if (ec) {
    connection_failed(cs, ec, &a);
    co_return a;
  }
  std::tie(ec) = co_await stream.async_handshake(ssl::stream_base::client, tok);
  if (cs.cancelled) co_return a;
  if (ec) {
    // The same certificate would come back: not retried.
    if (std::string why = openai_http::tls_verify_failure(stream.native_handle()); !why.empty()) {
      a.result = status::io_error(std::string{who} + ": the TLS certificate of " + c.at.host + ":" + c.at.port +
                                  " failed verification: " + why);
      co_return a;
    }
    connection_failed(cs, ec, &a);
    co_return a;
  }
  co_await exchange(stream, cs, &a);
  shut_down(tcp_layer);
  co_return a;
}

net::awaitable<void> run_call(std::shared_ptr<call_state> cs) {
  if (!cs->body_status) co_return cs->deliver({cs->body_status, false, {}});
  const openai_config& c = *cs->c;
  attempt a;
  for (uint64_t n = 1;; ++n) {
    if (cs->cancelled) co_return;
    a = co_await attempt_once(*cs);
    if (cs->cancelled) co_return;
    if (a.result) co_return cs->deliver({status::ok(), false, std::move(a.step)});
    if (!a.retryable || a.started || n > c.retries) break;
    uint64_t delay_ms = a.retry_after_ms > 0 ? std::min(a.retry_after_ms, c.retry_after_max_ms)
                                             : openai_http::backoff_delay_ms(n, c.backoff_ms, c.backoff_max_ms, cs->rng);
    net::steady_timer timer{co_await net::this_coro::executor};
    abort_scope scope{*cs};
    cs->abort = [&timer] { timer.cancel(); };
    timer.expires_after(std::chrono::milliseconds(delay_ms));
    co_await timer.async_wait(net::as_tuple(net::use_awaitable));
  }
  std::string tries = a.retryable && !a.started ? " (after " + std::to_string(c.retries + 1) + " attempts)" : "";
  status s = status(a.result.code(), a.result.message() + tries);
  if (!tries.empty()) s = std::move(s).with_limit("retries");
  else if (!a.result.limit().empty()) s = std::move(s).with_limit(a.result.limit());
  cs->deliver({std::move(s), false, {}});
}

// What the engine and the handles of its calls share. The handles hold it weakly:
// a handle may outlive its engine.
struct engine_core {
  std::unique_ptr<ssl::context> tls;  // for https; here so that a detached io thread keeps it
  net::io_context ioc{1};
  std::mutex mu;  // guards everything below
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work;
  std::thread io_thread;
  std::unordered_map<uint64_t, std::weak_ptr<call_state>> live;
  uint64_t next_id = 0;
};

void abort_call(engine_core& core, const std::shared_ptr<call_state>& cs) {
  cs->cancelled = true;
  net::post(core.ioc, [cs] {
    if (cs->abort) cs->abort();
  });
}

class openai_call_handle final : public call_handle {
 public:
  openai_call_handle(std::weak_ptr<engine_core> core, std::weak_ptr<call_state> call)
      : core_(std::move(core)), call_(std::move(call)) {}
  void cancel() override {
    auto cs = call_.lock();
    auto core = core_.lock();
    if (cs && core) abort_call(*core, cs);
    else if (cs) cs->cancelled = true;
  }

 private:
  std::weak_ptr<engine_core> core_;
  std::weak_ptr<call_state> call_;
};

class openai_engine final : public engine {
 public:
  openai_engine(std::shared_ptr<const openai_config> c, std::unique_ptr<ssl::context> tls)
      : c_(std::move(c)), core_(std::make_shared<engine_core>()) {
    core_->tls = std::move(tls);
  }

  ~openai_engine() override {
    std::vector<std::shared_ptr<call_state>> calls;
    {
      std::lock_guard lock{core_->mu};
      for (auto& [id, weak] : core_->live)
        if (auto cs = weak.lock()) calls.push_back(std::move(cs));
      core_->work.reset();
    }
    for (auto& cs : calls) abort_call(*core_, cs);
    if (!core_->io_thread.joinable()) return;
    // Dropped by a callback of its own call: the io thread cannot wait for
    // itself; it ends by itself once the aborted calls have, and holds the core
    // until then.
    if (core_->io_thread.get_id() == std::this_thread::get_id()) core_->io_thread.detach();
    else core_->io_thread.join();
  }

  std::unique_ptr<call_handle> start(engine_request request, engine_callbacks callbacks) override {
    auto cs = std::make_shared<call_state>();
    cs->c = c_;
    cs->tls = core_->tls.get();
    cs->target = c_->at.path_prefix + "/chat/completions";
    cs->body_status = build_body(*c_, request, &cs->body);
    cs->cb = std::move(callbacks);
    {
      std::lock_guard lock{core_->mu};
      cs->id = ++core_->next_id;
      cs->rng.seed(seed_ ^ cs->id);
      core_->live[cs->id] = cs;
      if (!core_->io_thread.joinable()) {
        core_->work.emplace(net::make_work_guard(core_->ioc));
        // The thread holds the core: were it detached (see the destructor), the
        // io_context still outlives its run().
        core_->io_thread = std::thread([core = core_] { run_io(*core); });
      }
    }
    engine_core* core = core_.get();  // outlives the io thread, which runs the completion
    net::co_spawn(core->ioc, run_call(cs), [core, cs](std::exception_ptr e) {
      if (e) {  // not expected (allocation): the call fails rather than never answering
        std::string what = "unknown";
        try {
          std::rethrow_exception(e);
        } catch (const std::exception& x) {
          what = x.what();
        } catch (...) {
        }
        cs->deliver({status::io_error(std::string{who} + ": internal error: " + what), false, {}});
      }
      std::lock_guard lock{core->mu};
      core->live.erase(cs->id);
    });
    return std::make_unique<openai_call_handle>(core_, cs);
  }

 private:
  static void run_io(engine_core& core) {
    for (;;) {
      try {
        core.ioc.run();
        return;
      } catch (...) {  // a handler threw: the others still run
      }
    }
  }

  const std::shared_ptr<const openai_config> c_;
  const std::shared_ptr<engine_core> core_;
  const uint64_t seed_ = std::random_device{}();
};

}  // namespace

status make_openai_engine(std::string_view config_json, timer_service&, std::shared_ptr<engine>* out) {
  auto c = std::make_shared<openai_config>();
  SKEIN_TRY(parse_config(config_json, c.get()));
  std::unique_ptr<ssl::context> tls;
  if (c->at.tls) SKEIN_TRY(openai_http::make_tls_context(c->ca_file, who, &tls));
  *out = std::make_shared<openai_engine>(std::move(c), std::move(tls));
  return status::ok();
}

}  // namespace skein
