#include "tools/server/http_server.hpp"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <deque>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

namespace skein::http {
namespace {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

std::string json_error(std::string_view code, std::string_view message, std::string_view limit) {
  std::string out = R"({"error":{"code":")";
  out += code;
  out += R"(","message":")";
  out += message;  // callers pass plain ASCII without quotes
  out += '"';
  if (!limit.empty()) {
    out += R"(,"limit":")";
    out += limit;
    out += '"';
  }
  out += "}}";
  return out;
}

}  // namespace

class session;

struct server::impl : std::enable_shared_from_this<server::impl> {
  server_limits limits;
  handler on_request;
  net::io_context ioc;
  tcp::acceptor acceptor{ioc};
  std::vector<std::thread> threads;
  std::atomic<bool> stopped{false};

  std::mutex sessions_mu;  // guards sessions
  std::set<std::shared_ptr<session>> sessions;

  std::atomic<uint64_t> connections{0}, streams{0}, in_flight{0}, requests{0}, rejected{0},
      slow_clients{0}, r2xx{0}, r4xx{0}, r5xx{0};

  void count_status(int status) {
    if (status < 400) r2xx.fetch_add(1, std::memory_order_relaxed);
    else if (status < 500) r4xx.fetch_add(1, std::memory_order_relaxed);
    else r5xx.fetch_add(1, std::memory_order_relaxed);
  }

  void accept();
  void forget(const std::shared_ptr<session>& s);
};

namespace {

// The stream side of a session, handed to handlers.
class session_stream : public event_stream {
 public:
  explicit session_stream(std::shared_ptr<session> s) : session_(std::move(s)) {}
  bool send(std::string bytes) override;
  void close() override;
  void on_close(std::function<void()> fn) override;

 private:
  std::shared_ptr<session> session_;
};

class session_exchange : public exchange {
 public:
  session_exchange(std::shared_ptr<session> s, bool keep_alive, unsigned version)
      : session_(std::move(s)), keep_alive_(keep_alive), version_(version) {}
  ~session_exchange() override;
  void reply(response r) override;
  std::shared_ptr<event_stream> stream(header_list headers) override;

 private:
  std::shared_ptr<session> session_;
  bool keep_alive_;
  unsigned version_;
  std::atomic<bool> answered_{false};
};

}  // namespace

class session : public std::enable_shared_from_this<session> {
 public:
  session(tcp::socket socket, std::shared_ptr<server::impl> srv)
      : stream_(std::move(socket)), server_(std::move(srv)) {}

  void start() {
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->read_header(); });
  }

  // Called on any thread; everything below runs on the session's strand.
  void respond(response r, bool keep_alive, unsigned version) {
    net::post(stream_.get_executor(), [self = shared_from_this(), r = std::move(r), keep_alive, version]() mutable {
      self->write_response(std::move(r), keep_alive, version);
    });
  }

  void open_stream(header_list headers) {
    net::post(stream_.get_executor(), [self = shared_from_this(), h = std::move(headers)] { self->write_stream_head(h); });
  }

  bool push(std::string bytes) {
    {
      std::lock_guard<std::mutex> lock{stream_mu_};
      if (stream_closed_) return false;
      if (queued_bytes_ + bytes.size() > server_->limits.stream_buffer_bytes_max) {
        server_->slow_clients.fetch_add(1, std::memory_order_relaxed);
        stream_closed_ = true;
      } else {
        queued_bytes_ += bytes.size();
        pending_.push_back(std::move(bytes));
      }
    }
    net::post(stream_.get_executor(), [self = shared_from_this()] { self->pump_stream(); });
    return !is_stream_closed();
  }

  void close_stream() {
    {
      std::lock_guard<std::mutex> lock{stream_mu_};
      stream_closed_ = true;
    }
    net::post(stream_.get_executor(), [self = shared_from_this()] { self->pump_stream(); });
  }

  void on_stream_close(std::function<void()> fn) {
    bool now = false;
    {
      std::lock_guard<std::mutex> lock{stream_mu_};
      if (stream_finished_) now = true;
      else close_callbacks_.push_back(std::move(fn));
    }
    if (now) fn();
  }

  void shutdown() {
    net::post(stream_.get_executor(), [self = shared_from_this()] { self->close_socket(); });
  }

  void request_done(int status) {
    server_->in_flight.fetch_sub(1, std::memory_order_relaxed);
    server_->count_status(status);
  }

 private:
  bool is_stream_closed() {
    std::lock_guard<std::mutex> lock{stream_mu_};
    return stream_closed_;
  }

  void read_header() {
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(server_->limits.header_bytes_max));
    parser_->body_limit(std::max(server_->limits.body_bytes_max, server_->limits.import_body_bytes_max));
    stream_.expires_after(server_->limits.idle_timeout);
    bhttp::async_read_header(stream_, buffer_, *parser_,
                             [self = shared_from_this()](beast::error_code ec, size_t) { self->on_header(ec); });
  }

  void on_header(beast::error_code ec) {
    if (ec == bhttp::error::body_limit) {  // Content-Length past the largest route limit
      reject(413, "body_bytes_max", "request body too large");
      return;
    }
    if (ec) {
      if (ec == bhttp::error::header_limit) reject(431, "header_bytes_max", "request header too large");
      else close_socket();
      return;
    }
    std::string_view target{parser_->get().target().data(), parser_->get().target().size()};
    bool import = target.substr(0, 10) == "/v1/import";
    size_t limit = import ? server_->limits.import_body_bytes_max : server_->limits.body_bytes_max;
    // The parser checked Content-Length against its own limit with the header;
    // this route's limit is checked here (and by the parser for chunked bodies).
    auto length = parser_->content_length();
    if (length && *length > limit) {
      reject(413, import ? "import_body_bytes_max" : "body_bytes_max", "request body too large");
      return;
    }
    parser_->body_limit(limit);
    bhttp::async_read(stream_, buffer_, *parser_,
                      [self = shared_from_this(), import](beast::error_code ec, size_t) { self->on_body(ec, import); });
  }

  void on_body(beast::error_code ec, bool import) {
    if (ec == bhttp::error::body_limit) {
      reject(413, import ? "import_body_bytes_max" : "body_bytes_max", "request body too large");
      return;
    }
    if (ec) {
      close_socket();
      return;
    }
    auto msg = parser_->release();
    server_->requests.fetch_add(1, std::memory_order_relaxed);
    request req;
    req.method = std::string{msg.method_string()};
    req.target = std::string{msg.target()};
    if (!parse_target(req.target, &req.path, &req.query)) {
      reject(400, "", "malformed request target", msg.keep_alive());
      return;
    }
    for (const auto& field : msg) {
      std::string name{field.name_string()};
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      req.headers[name] = std::string{field.value()};
    }
    req.body = std::move(msg.body());
    if (server_->in_flight.fetch_add(1, std::memory_order_relaxed) >= server_->limits.requests_in_flight_max) {
      server_->in_flight.fetch_sub(1, std::memory_order_relaxed);
      reject(429, "requests_in_flight_max", "too many requests in flight", msg.keep_alive());
      return;
    }
    auto ex = std::make_shared<session_exchange>(shared_from_this(), msg.keep_alive(), msg.version());
    try {
      server_->on_request(req, ex);
    } catch (const std::exception& e) {
      ex->reply(response{500, "application/json", json_error("internal", "handler failed", ""), {}});
    }
  }

  // An answer from the server itself, before any handler.
  void reject(int status, std::string_view limit, std::string_view message, bool keep_alive = false) {
    server_->rejected.fetch_add(1, std::memory_order_relaxed);
    server_->count_status(status);
    std::string code = status == 413 ? "too_large" : status == 429 ? "overloaded" : "invalid_input";
    write_response(response{status, "application/json", json_error(code, message, limit), {}}, keep_alive, 11);
  }

  void write_response(response r, bool keep_alive, unsigned version) {
    auto res = std::make_shared<bhttp::response<bhttp::string_body>>(static_cast<bhttp::status>(r.status), version);
    res->set(bhttp::field::server, "skein");
    res->set(bhttp::field::content_type, r.content_type);
    for (auto& [k, v] : r.headers) res->set(k, v);
    res->body() = std::move(r.body);
    res->keep_alive(keep_alive && !server_->stopped.load());
    res->prepare_payload();
    stream_.expires_after(std::chrono::seconds(30));
    bhttp::async_write(stream_, *res, [self = shared_from_this(), res](beast::error_code ec, size_t) {
      if (ec || !res->keep_alive()) {
        self->close_socket();
        return;
      }
      self->read_header();
    });
  }

  void write_stream_head(const header_list& headers) {
    server_->streams.fetch_add(1, std::memory_order_relaxed);
    streaming_ = true;
    stream_.expires_never();
    std::string head =
        "HTTP/1.1 200 OK\r\nServer: skein\r\nContent-Type: text/event-stream\r\n"
        "Cache-Control: no-cache\r\nConnection: close\r\nX-Accel-Buffering: no\r\n";
    for (const auto& [k, v] : headers) head += k + ": " + v + "\r\n";
    head += "\r\n";
    {
      std::lock_guard<std::mutex> lock{stream_mu_};
      queued_bytes_ += head.size();
      pending_.push_front(std::move(head));
    }
    watch_disconnect();
    arm_keepalive();
    pump_stream();
  }

  // A stream client sends nothing; a read that ends means it went away.
  void watch_disconnect() {
    stream_.socket().async_wait(tcp::socket::wait_read, [self = shared_from_this()](beast::error_code) {
      self->close_stream();
    });
  }

  void arm_keepalive() {
    if (!keepalive_) keepalive_.emplace(stream_.get_executor());
    keepalive_->expires_after(server_->limits.stream_keepalive);
    keepalive_->async_wait([self = shared_from_this()](beast::error_code ec) {
      if (ec || self->is_stream_closed()) return;
      self->push(": keepalive\n\n");
      self->arm_keepalive();
    });
  }

  void pump_stream() {
    if (!streaming_ || writing_) return;
    std::string next;
    bool closed = false;
    {
      std::lock_guard<std::mutex> lock{stream_mu_};
      closed = stream_closed_;
      if (!closed && !pending_.empty()) {
        next = std::move(pending_.front());
        pending_.pop_front();
      }
    }
    if (closed) {
      finish_stream();
      return;
    }
    if (next.empty()) return;
    writing_ = true;
    auto buf = std::make_shared<std::string>(std::move(next));
    net::async_write(stream_.socket(), net::buffer(*buf), [self = shared_from_this(), buf](beast::error_code ec, size_t) {
      self->writing_ = false;
      {
        std::lock_guard<std::mutex> lock{self->stream_mu_};
        self->queued_bytes_ -= buf->size();
        if (ec) self->stream_closed_ = true;
      }
      self->pump_stream();
    });
  }

  void finish_stream() {
    std::vector<std::function<void()>> callbacks;
    {
      std::lock_guard<std::mutex> lock{stream_mu_};
      if (stream_finished_) return;
      stream_finished_ = true;
      callbacks.swap(close_callbacks_);
      pending_.clear();
    }
    server_->streams.fetch_sub(1, std::memory_order_relaxed);
    if (keepalive_) keepalive_->cancel();
    close_socket();
    for (auto& fn : callbacks) fn();
  }

  void close_socket() {
    if (socket_closed_) return;
    socket_closed_ = true;
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.socket().close(ec);
    if (streaming_) {
      std::lock_guard<std::mutex> lock{stream_mu_};
      stream_closed_ = true;
    }
    if (streaming_) pump_stream();
    server_->forget(shared_from_this());
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  std::shared_ptr<server::impl> server_;
  std::optional<net::steady_timer> keepalive_;
  bool streaming_ = false;
  bool writing_ = false;
  bool socket_closed_ = false;

  std::mutex stream_mu_;  // guards the fields below: producers push from any thread
  std::deque<std::string> pending_;
  size_t queued_bytes_ = 0;
  bool stream_closed_ = false;
  bool stream_finished_ = false;
  std::vector<std::function<void()>> close_callbacks_;
};

namespace {

bool session_stream::send(std::string bytes) { return session_->push(std::move(bytes)); }
void session_stream::close() { session_->close_stream(); }
void session_stream::on_close(std::function<void()> fn) { session_->on_stream_close(std::move(fn)); }

session_exchange::~session_exchange() {
  // A handler that dropped its exchange without answering must not hang the client.
  if (!answered_.exchange(true)) {
    session_->request_done(500);
    session_->respond(response{500, "application/json", json_error("internal", "no answer", ""), {}}, false, version_);
  }
}

void session_exchange::reply(response r) {
  if (answered_.exchange(true)) return;
  session_->request_done(r.status);
  session_->respond(std::move(r), keep_alive_, version_);
}

std::shared_ptr<event_stream> session_exchange::stream(header_list headers) {
  if (answered_.exchange(true)) return nullptr;
  session_->request_done(200);
  session_->open_stream(std::move(headers));
  return std::make_shared<session_stream>(session_);
}

}  // namespace

void server::impl::accept() {
  acceptor.async_accept(net::make_strand(ioc), [self = shared_from_this()](beast::error_code ec, tcp::socket socket) {
    if (ec) {
      if (!self->stopped.load()) self->accept();
      return;
    }
    if (self->connections.load() >= self->limits.connections_max) {
      beast::error_code ignored;
      socket.close(ignored);
    } else {
      auto s = std::make_shared<session>(std::move(socket), self);
      {
        std::lock_guard<std::mutex> lock{self->sessions_mu};
        self->sessions.insert(s);
      }
      self->connections.fetch_add(1, std::memory_order_relaxed);
      s->start();
    }
    self->accept();
  });
}

void server::impl::forget(const std::shared_ptr<session>& s) {
  std::lock_guard<std::mutex> lock{sessions_mu};
  if (sessions.erase(s) > 0) connections.fetch_sub(1, std::memory_order_relaxed);
}

server::server(std::shared_ptr<impl> p) : impl_(std::move(p)) {}

server::~server() { stop(); }

status server::start(const std::string& host, uint16_t port, server_limits limits, handler h, size_t threads,
                     std::unique_ptr<server>* out) {
  auto p = std::make_shared<impl>();
  p->limits = limits;
  p->on_request = std::move(h);
  beast::error_code ec;
  auto address = net::ip::make_address(host, ec);
  if (ec) return status::invalid_input("listen address '" + host + "': " + ec.message());
  tcp::endpoint endpoint{address, port};
  p->acceptor.open(endpoint.protocol(), ec);
  if (!ec) p->acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) p->acceptor.bind(endpoint, ec);
  if (!ec) p->acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) return status::io_error("listen on " + host + ":" + std::to_string(port) + ": " + ec.message());
  p->accept();
  for (size_t i = 0; i < std::max<size_t>(1, threads); ++i) p->threads.emplace_back([p] { p->ioc.run(); });
  out->reset(new server(p));
  return status::ok();
}

uint16_t server::port() const { return impl_->acceptor.local_endpoint().port(); }

server_counters server::counters() const {
  server_counters c;
  c.connections = impl_->connections.load();
  c.streams = impl_->streams.load();
  c.in_flight = impl_->in_flight.load();
  c.requests = impl_->requests.load();
  c.rejected = impl_->rejected.load();
  c.slow_clients = impl_->slow_clients.load();
  c.responses_2xx = impl_->r2xx.load();
  c.responses_4xx = impl_->r4xx.load();
  c.responses_5xx = impl_->r5xx.load();
  return c;
}

void server::stop() {
  if (impl_->stopped.exchange(true)) return;
  net::post(impl_->ioc, [p = impl_] {
    beast::error_code ec;
    p->acceptor.close(ec);
    std::vector<std::shared_ptr<session>> all;
    {
      std::lock_guard<std::mutex> lock{p->sessions_mu};
      all.assign(p->sessions.begin(), p->sessions.end());
    }
    for (auto& s : all) s->shutdown();
  });
  // Sessions finish their last writes and close; then the I/O threads run dry.
  for (auto& t : impl_->threads)
    if (t.joinable()) t.join();
}

}  // namespace skein::http
