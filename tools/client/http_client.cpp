#include "tools/client/http_client.hpp"

#include <charconv>
#include <limits>

#include "runtime/engines/beast_names.hpp"

namespace skein::http {
namespace {

// Feeds bytes of an event stream and emits whole events.
class sse_parser {
 public:
  // False when on_event asked to stop.
  bool feed(std::string_view bytes, const std::function<bool(const sse_event&)>& on_event) {
    pending_.append(bytes);
    size_t start = 0;
    for (;;) {
      size_t nl = pending_.find('\n', start);
      if (nl == std::string::npos) break;
      std::string line = pending_.substr(start, nl - start);
      start = nl + 1;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.empty()) {
        if (has_data_ && !on_event(current_)) return false;
        current_ = sse_event{};
        has_data_ = false;
        continue;
      }
      if (line[0] == ':') continue;  // comment (keep-alive)
      size_t colon = line.find(':');
      std::string field = line.substr(0, colon);
      std::string value = colon == std::string::npos ? "" : line.substr(colon + 1);
      if (!value.empty() && value[0] == ' ') value.erase(0, 1);
      if (field == "id") current_.id = value;
      else if (field == "event") current_.event = value;
      else if (field == "data") {
        if (has_data_) current_.data += "\n";
        current_.data += value;
        has_data_ = true;
      }
    }
    pending_.erase(0, start);
    if (current_.event.empty()) current_.event = "";
    return true;
  }

 private:
  std::string pending_;
  sse_event current_;
  bool has_data_ = false;
};

}  // namespace

status parse_server_url(const std::string& url, endpoint* out) {
  std::string rest = url;
  if (rest.rfind("http://", 0) == 0) rest = rest.substr(7);
  else if (rest.find("://") != std::string::npos)
    return status::invalid_input("server: only http:// URLs are supported: " + url);
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  endpoint ep;
  size_t colon = rest.rfind(':');
  if (colon == std::string::npos) {
    ep.host = rest;
  } else {
    ep.host = rest.substr(0, colon);
    unsigned port = 0;
    auto p = rest.substr(colon + 1);
    auto r = std::from_chars(p.data(), p.data() + p.size(), port);
    if (p.empty() || r.ec != std::errc{} || r.ptr != p.data() + p.size() || port == 0 || port > 65535)
      return status::invalid_input("server: bad port in " + url);
    ep.port = static_cast<uint16_t>(port);
  }
  if (ep.host.empty()) return status::invalid_input("server: no host in " + url);
  *out = ep;
  return status::ok();
}

struct client::impl {
  endpoint ep;
  std::string token;
  std::chrono::milliseconds timeout;
  net::io_context ioc;
  std::unique_ptr<beast::tcp_stream> stream;
  beast::flat_buffer buffer;

  // Runs one asynchronous operation to its end. beast::tcp_stream applies its
  // expiry only to asynchronous operations: on expiry it closes the socket and
  // the operation ends with beast::error::timeout.
  template <class Start>
  beast::error_code run(Start start) {
    beast::error_code result;
    start([&](beast::error_code ec, auto&&...) { result = ec; });
    ioc.restart();
    ioc.run();
    return result;
  }

  status connect() {
    stream = std::make_unique<beast::tcp_stream>(ioc);
    tcp::resolver resolver{ioc};
    beast::error_code ec;
    auto results = resolver.resolve(ep.host, std::to_string(ep.port), ec);
    if (ec) return status::io_error("resolve " + ep.host + ": " + ec.message());
    stream->expires_after(timeout);
    ec = run([&](auto handler) { stream->async_connect(results, handler); });
    if (ec) {
      stream.reset();
      return status::io_error("connect " + ep.host + ":" + std::to_string(ep.port) + ": " + ec.message());
    }
    buffer.clear();
    return status::ok();
  }

  // Sends the request and reads the answer at the same time, as a server may
  // answer before it has read the whole body (413 on a declared length, 401 on
  // a bad token) and then close: a client that reads only after its last byte is
  // written meets a reset instead of the answer. An answer that arrives while
  // the body is still going stops the write (*early: the connection then
  // carries half a request and is not reused); a write that fails after the
  // server answered still yields the answer.
  beast::error_code exchange(bhttp::request<bhttp::string_body>& req, bhttp::response_parser<bhttp::string_body>& parser,
                             bool* early) {
    beast::error_code write_ec, read_ec;
    bool written = false;
    stream->expires_after(timeout);
    bhttp::async_write(*stream, req, [&](beast::error_code ec, size_t) {
      written = true;
      write_ec = ec;
    });
    bhttp::async_read(*stream, buffer, parser, [&](beast::error_code ec, size_t) {
      read_ec = ec;
      if (!ec && !written) {
        *early = true;
        beast::error_code ignored;
        stream->socket().cancel(ignored);  // ends the write (the read is complete)
      }
    });
    ioc.restart();
    ioc.run();
    if (!read_ec) return {};
    // No answer: the write's failure says more (the read then only saw the reset).
    return write_ec && write_ec != net::error::operation_aborted ? write_ec : read_ec;
  }

  static status deliver(bhttp::response<bhttp::string_body> res, response* out) {
    out->status = static_cast<int>(res.result_int());
    out->content_type = std::string{res[bhttp::field::content_type]};
    out->body = std::move(res.body());
    out->headers.clear();
    for (const auto& f : res) out->headers.emplace_back(std::string{f.name_string()}, std::string{f.value()});
    return status::ok();
  }

  bhttp::request<bhttp::string_body> make(const std::string& method, const std::string& target, const std::string& body,
                                          const header_list& extra) {
    bhttp::request<bhttp::string_body> req{bhttp::string_to_verb(method), target, 11};
    req.set(bhttp::field::host, ep.host);
    req.set(bhttp::field::user_agent, "skein-client");
    if (!token.empty()) req.set(bhttp::field::authorization, "Bearer " + token);
    if (!body.empty()) req.set(bhttp::field::content_type, "application/json");
    for (const auto& [k, v] : extra) req.set(k, v);
    req.body() = body;
    req.keep_alive(true);
    req.prepare_payload();
    return req;
  }
};

client::client(endpoint ep, std::string token, std::chrono::milliseconds timeout) : impl_(new impl) {
  impl_->ep = std::move(ep);
  impl_->token = std::move(token);
  impl_->timeout = timeout;
}

client::~client() {
  if (impl_->stream) {
    beast::error_code ec;
    impl_->stream->socket().shutdown(tcp::socket::shutdown_both, ec);
  }
}

status client::call(const std::string& method, const std::string& target, const std::string& body, response* out,
                    const header_list& extra) {
  auto req = impl_->make(method, target, body, extra);
  for (int attempt = 0; attempt < 2; ++attempt) {
    bool fresh = !impl_->stream;
    if (fresh) SKEIN_TRY(impl_->connect());
    bhttp::response_parser<bhttp::string_body> parser;
    parser.body_limit(std::numeric_limits<std::uint64_t>::max());
    bool early = false;
    auto ec = impl_->exchange(req, parser, &early);
    if (ec || early) {
      impl_->stream.reset();
      if (!ec) return impl_->deliver(parser.release(), out);
      // A kept-alive connection the server had closed: nothing of the request
      // was taken, so it is safe to send once more. A timeout is never retried:
      // the server may be running the request.
      bool closed_before = !fresh && !parser.got_some() && ec != beast::error::timeout;
      if (closed_before) continue;
      if (ec == beast::error::timeout)
        return status::io_error(method + " " + target + ": no answer within " + std::to_string(impl_->timeout.count()) + " ms");
      return status::io_error(method + " " + target + ": " + ec.message());
    }
    auto res = parser.release();
    if (!res.keep_alive()) impl_->stream.reset();
    return impl_->deliver(std::move(res), out);
  }
  return status::io_error(method + " " + target + ": connection closed");
}

status client::stream(const std::string& target, const header_list& extra,
                      const std::function<bool(const sse_event&)>& on_event, int* http_status,
                      std::chrono::milliseconds limit) {
  impl_->stream.reset();  // a stream takes its own connection
  SKEIN_TRY(impl_->connect());
  auto req = impl_->make("GET", target, "", extra);
  req.set(bhttp::field::accept, "text/event-stream");
  bhttp::response_parser<bhttp::string_body> parser;
  parser.body_limit(64 << 20);
  impl_->stream->expires_after(impl_->timeout);
  auto ec = impl_->run([&](auto handler) { bhttp::async_write(*impl_->stream, req, handler); });
  if (!ec) ec = impl_->run([&](auto handler) { bhttp::async_read_header(*impl_->stream, impl_->buffer, parser, handler); });
  if (ec) {
    impl_->stream.reset();
    return status::io_error("GET " + target + ": " + ec.message());
  }
  *http_status = static_cast<int>(parser.get().result_int());
  if (*http_status != 200) {
    ec = impl_->run([&](auto handler) { bhttp::async_read(*impl_->stream, impl_->buffer, parser, handler); });
    impl_->stream.reset();
    if (ec && ec != bhttp::error::end_of_stream) return status::io_error("GET " + target + ": " + ec.message());
    sse_event body;
    body.event = "error";
    body.data = parser.get().body();
    on_event(body);
    return status::ok();
  }
  sse_parser sse;
  std::string first = beast::buffers_to_string(impl_->buffer.data());
  impl_->buffer.consume(impl_->buffer.size());
  bool go = sse.feed(first, on_event);
  auto deadline = std::chrono::steady_clock::now() + limit;
  char chunk[8192];
  while (go) {
    if (limit.count() > 0) {
      auto left = deadline - std::chrono::steady_clock::now();
      if (left <= std::chrono::milliseconds(0)) break;
      impl_->stream->expires_after(std::chrono::duration_cast<std::chrono::milliseconds>(left));
    } else {
      impl_->stream->expires_never();
    }
    size_t n = 0;
    ec = impl_->run([&](auto handler) {
      impl_->stream->async_read_some(net::buffer(chunk), [&n, handler](beast::error_code e, size_t got) mutable {
        n = got;
        handler(e);
      });
    });
    if (ec) break;  // closed by the server, or the limit passed
    go = sse.feed(std::string_view(chunk, n), on_event);
  }
  impl_->stream.reset();
  return status::ok();
}

}  // namespace skein::http
