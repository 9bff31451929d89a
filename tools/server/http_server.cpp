#include "tools/server/http_server.hpp"

#include "tools/server/handler_pool.hpp"

#include <array>
#include <deque>
#include <limits>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "runtime/engines/beast_names.hpp"

namespace skein::http {
namespace {

int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Handler threads kept while idle, and how long an idle one past them stays.
constexpr size_t handler_threads_min = 2;
constexpr std::chrono::milliseconds handler_idle_exit{10000};

// How often connections' deadlines are checked: a timeout fires up to this late.
constexpr std::chrono::milliseconds sweep_period{100};

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
  explicit impl(server_limits l)
      : limits(l), pool(handler_threads_min, std::max<size_t>(1, l.handler_threads_max), handler_idle_exit) {}

  server_limits limits;
  handler on_request;
  admitter admit;
  inline_check runs_inline;
  // Runs admission and handlers: an I/O thread never waits on what they wait on.
  handler_pool pool;
  net::io_context ioc;
  tcp::acceptor acceptor{ioc};
  std::vector<std::thread> threads;
  std::atomic<bool> stopped{false};
  // Set once stop() has let the I/O threads run dry: nothing posted after it
  // would run, and a posted handler holding a session would keep it (and this
  // server) alive for good.
  std::atomic<bool> drained{false};
  // Closes connections past their deadline (session::set_deadline), every
  // sweep_period; the timer is used on its strand only (sweep, stop).
  net::strand<net::io_context::executor_type> sweep_strand{net::make_strand(ioc)};
  net::steady_timer sweeper{sweep_strand};

  std::mutex sessions_mu;  // guards sessions
  std::set<std::shared_ptr<session>> sessions;

  std::atomic<uint64_t> body_bytes_buffered{0};
  std::atomic<uint64_t> connections{0}, streams{0}, in_flight{0}, requests{0}, rejected{0},
      slow_clients{0}, r2xx{0}, r4xx{0}, r5xx{0};

  void count_status(int status) {
    if (status < 400) r2xx.fetch_add(1, std::memory_order_relaxed);
    else if (status < 500) r4xx.fetch_add(1, std::memory_order_relaxed);
    else r5xx.fetch_add(1, std::memory_order_relaxed);
  }

  void accept();
  void sweep();
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
      : server_(std::move(srv)), stream_(std::move(socket)) {}

  // Called by the server's sweeper (any thread): closes the connection, on its
  // strand, once its deadline has passed.
  void expire_if_due(int64_t now_ns) {
    if (deadline_ns_.load(std::memory_order_relaxed) > now_ns) return;
    net::post(stream_.get_executor(), [self = shared_from_this()] {
      if (self->deadline_ns_.load(std::memory_order_relaxed) <= steady_now_ns()) self->close_socket();
    });
  }

  void start() {
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->read_header(); });
  }

  // Called on any thread; everything below runs on the session's strand. After
  // the server drained nothing runs there (and a posted handler holding this
  // session would keep the server alive): a late answer goes nowhere.
  void respond(response r, bool keep_alive, unsigned version) {
    if (server_->drained.load()) return;
    net::post(stream_.get_executor(), [self = shared_from_this(), r = std::move(r), keep_alive, version]() mutable {
      self->write_response(std::move(r), keep_alive, version);
    });
  }

  void open_stream(header_list headers) {
    net::post(stream_.get_executor(), [self = shared_from_this(), h = std::move(headers)] { self->write_stream_head(h); });
  }

  // The bound is on the backlog, never on one frame: the largest queued frame
  // does not count against it. So an idle client takes a frame of any size even
  // when it comes in a burst with others, and a resume makes progress whatever
  // the size of the event it resumes at. One stream holds at most
  // stream_buffer_bytes_max plus its largest frame (plus the one being written).
  bool push(std::string bytes) {
    {
      std::lock_guard<std::mutex> lock{stream_mu_};
      if (stream_closed_ || stream_ending_) return false;
      size_t largest = pending_sizes_.empty() ? 0 : *pending_sizes_.rbegin();
      size_t backlog = queued_bytes_ + bytes.size() - std::max(largest, bytes.size());
      if (backlog > server_->limits.stream_buffer_bytes_max) {
        server_->slow_clients.fetch_add(1, std::memory_order_relaxed);
        stream_closed_ = true;
      } else {
        queued_bytes_ += bytes.size();
        pending_sizes_.insert(bytes.size());
        pending_.push_back(std::move(bytes));
      }
    }
    post_pump();
    return !is_stream_closed();
  }

  // Drops what is queued and closes: the client went away or fell behind.
  void close_stream() {
    {
      std::lock_guard<std::mutex> lock{stream_mu_};
      stream_closed_ = true;
    }
    post_pump();
  }

  // Writes what is queued, then closes.
  void end_stream() {
    {
      std::lock_guard<std::mutex> lock{stream_mu_};
      stream_ending_ = true;
    }
    post_pump();
  }

  // The stream's writer runs on the session's strand; after the server drained
  // there is none to run it (the socket is closed already).
  void post_pump() {
    if (server_->drained.load()) return;
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

  // The connection's deadline, checked by the server's sweeper: a whole phase
  // (idle, body, write, linger) is bounded without arming and cancelling a
  // timer for every read and write.
  void set_deadline(std::chrono::steady_clock::duration d) {
    deadline_ns_.store(steady_now_ns() + std::chrono::duration_cast<std::chrono::nanoseconds>(d).count(),
                       std::memory_order_relaxed);
  }
  void clear_deadline() { deadline_ns_.store(no_deadline_ns, std::memory_order_relaxed); }

  void read_header() {
    parser_.emplace();
    keep_alive_ = false;
    body_pending_ = false;
    import_ = false;
    parser_->header_limit(static_cast<std::uint32_t>(server_->limits.header_bytes_max));
    parser_->body_limit(boost::none);  // the route's limit is set once the head is read
    set_deadline(server_->limits.idle_timeout);
    bhttp::async_read_header(stream_, buffer_, *parser_,
                             [self = shared_from_this()](beast::error_code ec, size_t) { self->on_header(ec); });
  }

  // Everything about a request that its head decides, before any body byte.
  void on_header(beast::error_code ec) {
    if (ec) {
      if (ec == bhttp::error::header_limit) reject(431, "header_bytes_max", "request header too large");
      else close_socket();
      return;
    }
    server_->requests.fetch_add(1, std::memory_order_relaxed);
    const auto& head = parser_->get();
    auto length = parser_->content_length();
    // With body bytes unread the connection cannot serve another request.
    body_pending_ = parser_->chunked() || (length && *length > 0);
    keep_alive_ = head.keep_alive();
    version_ = head.version();
    req_ = request{};
    req_.method = std::string{head.method_string()};
    req_.target = std::string{head.target()};
    if (!parse_target(req_.target, &req_.path, &req_.query)) return reject(400, "", "malformed request target");
    for (const auto& field : head) {
      std::string name{field.name_string()};
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      req_.headers[name] = std::string{field.value()};
    }
    if (server_->in_flight.fetch_add(1, std::memory_order_relaxed) >= server_->limits.requests_in_flight_max) {
      server_->in_flight.fetch_sub(1, std::memory_order_relaxed);
      return reject(429, "requests_in_flight_max", "too many requests in flight");
    }
    holds_in_flight_ = true;
    if (!server_->admit) return admitted(admission{});
    if (parser_->is_done()) return admit_and_handle();
    // A request with a body: admission decides before the body is read, here
    // when it need not wait, else on a handler thread (it reads the thread a
    // write goes to, which may be another node's). The session reads nothing
    // meanwhile, so req_ stays as it is.
    admission adm = admit_here();
    if (!adm.defer) return admitted(std::move(adm));
    req_.may_wait = true;
    server_->pool.post([self = shared_from_this()] {
      admission adm = self->admit_here();
      if (self->server_->drained.load()) return;  // stopped meanwhile: see respond()
      net::post(self->stream_.get_executor(),
                [self, adm = std::move(adm)]() mutable { self->admitted(std::move(adm)); });
    });
  }

  admission admit_here() { return admit(*server_, req_); }

  // The service's admission of `req`; an exception it throws refuses with 500.
  static admission admit(server::impl& srv, const request& req) {
    try {
      return srv.admit(req);
    } catch (const std::exception&) {
      admission adm;
      adm.refuse = response{500, "application/json", json_error("internal", "admission failed", ""), {}};
      return adm;
    }
  }

  // A request without a body: its admission and its handler in one go on a
  // handler thread (one hand-off, not two); a refusal answers through the
  // exchange as any answer does.
  void admit_and_handle() {
    auto [req, ex] = hand_over();
    req->may_wait = true;
    server_->pool.post([srv = server_, req = std::move(req), ex = std::move(ex)] {
      admission adm = admit(*srv, *req);
      if (adm.refuse) {
        srv->rejected.fetch_add(1, std::memory_order_relaxed);
        return ex->reply(std::move(*adm.refuse));
      }
      req->admitted_thread = std::move(adm.visible_thread);
      run_handler(*srv, *req, ex);
    });
  }

  // The request, read whole, leaves the session for an exchange that answers it.
  std::pair<std::shared_ptr<request>, std::shared_ptr<session_exchange>> hand_over() {
    clear_deadline();  // the handler may take as long as its run: no timeout until the answer is written
    parser_.reset();
    body_pending_ = false;
    holds_in_flight_ = false;  // the exchange answers for it now
    auto req = std::make_shared<request>(std::move(req_));
    req_ = request{};
    return {std::move(req), std::make_shared<session_exchange>(shared_from_this(), keep_alive_, version_)};
  }

  static void run_handler(server::impl& srv, request& req, const std::shared_ptr<session_exchange>& ex) {
    try {
      srv.on_request(req, ex);
    } catch (const std::exception&) {
      ex->reply(response{500, "application/json", json_error("internal", "handler failed", ""), {}});
    }
  }

  // The rest of the head's checks, back on the session's strand.
  void admitted(admission adm) {
    if (socket_closed_) return;  // closed meanwhile (a deadline, the server's stop): nothing to answer
    const auto& head = parser_->get();
    auto length = parser_->content_length();
    if (adm.refuse) return refuse(std::move(*adm.refuse));
    req_.admitted_thread = std::move(adm.visible_thread);
    import_ = adm.body == body_class::import;
    size_t limit = import_ ? server_->limits.import_body_bytes_max : server_->limits.body_bytes_max;
    if (length && *length > limit) return reject(413, body_limit_name(), "request body too large");
    if (length && !reserve(*length)) return reject(429, "body_bytes_buffered_max", "too many body bytes buffered");
    parser_->body_limit(limit);
    if (parser_->is_done()) return on_body();
    // A body that trickles in must not hold its share of the budget for long.
    set_deadline(server_->limits.body_timeout);
    // A client that waits for leave to send its body gets it only now, after
    // every check: a refused one never sends a byte.
    if (beast::iequals(head[bhttp::field::expect], "100-continue")) return send_continue();
    read_body();
  }

  void send_continue() {
    static const std::string interim = "HTTP/1.1 100 Continue\r\n\r\n";
    net::async_write(stream_, net::buffer(interim), [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec) return self->close_socket();
      self->read_body();
    });
  }

  const char* body_limit_name() const { return import_ ? "import_body_bytes_max" : "body_bytes_max"; }

  // Takes `bytes` from the budget shared by all connections.
  bool reserve(uint64_t bytes) {
    uint64_t now = server_->body_bytes_buffered.load(std::memory_order_relaxed);
    do {
      if (now + bytes > server_->limits.body_bytes_buffered_max) return false;
    } while (!server_->body_bytes_buffered.compare_exchange_weak(now, now + bytes, std::memory_order_relaxed));
    reserved_bytes_ += bytes;
    return true;
  }

  void release_reserved() {
    server_->body_bytes_buffered.fetch_sub(reserved_bytes_, std::memory_order_relaxed);
    reserved_bytes_ = 0;
  }

  void release_in_flight() {
    if (!holds_in_flight_) return;
    holds_in_flight_ = false;
    server_->in_flight.fetch_sub(1, std::memory_order_relaxed);
  }

  // Reads the body a part at a time so a chunked body is held to the shared
  // budget as its bytes arrive.
  void read_body() {
    bhttp::async_read_some(stream_, buffer_, *parser_,
                           [self = shared_from_this()](beast::error_code ec, size_t) { self->on_body_part(ec); });
  }

  void on_body_part(beast::error_code ec) {
    if (ec == bhttp::error::body_limit) return reject(413, body_limit_name(), "request body too large");
    if (ec) {
      release_reserved();
      release_in_flight();
      close_socket();
      return;
    }
    size_t have = parser_->get().body().size();
    if (have > reserved_bytes_ && !reserve(have - reserved_bytes_))
      return reject(429, "body_bytes_buffered_max", "too many body bytes buffered");
    if (!parser_->is_done()) return read_body();
    on_body();
  }

  void on_body() {
    req_.body = std::move(parser_->get().body());
    auto [req, ex] = hand_over();
    // The handler runs on a handler thread (it may wait on an actor, the disk
    // or a peer); the body's bytes stay in the budget until it has run, since
    // it copied what it keeps by then.
    uint64_t held = std::exchange(reserved_bytes_, 0);
    if (server_->runs_inline && server_->runs_inline(*req)) {  // answers without waiting: no hand-off
      run_handler(*server_, *req, ex);
      server_->body_bytes_buffered.fetch_sub(held, std::memory_order_relaxed);
      return;
    }
    server_->pool.post([srv = server_, req = std::move(req), ex = std::move(ex), held] {
      run_handler(*srv, *req, ex);
      srv->body_bytes_buffered.fetch_sub(held, std::memory_order_relaxed);
    });
  }

  // An answer from the server itself, before any handler.
  void reject(int status, std::string_view limit, std::string_view message) {
    std::string code = status == 413 ? "too_large" : status == 429 ? "overloaded" : "invalid_input";
    response r{status, "application/json", json_error(code, message, limit), {}};
    if (status == 429) r.headers.emplace_back("Retry-After", "1");
    refuse(std::move(r));
  }

  // Answers before the body was read (or in the middle of it).
  void refuse(response r) {
    server_->rejected.fetch_add(1, std::memory_order_relaxed);
    server_->count_status(r.status);
    release_reserved();
    release_in_flight();
    write_response(std::move(r), keep_alive_ && !body_pending_, version_);
  }

  void write_response(response r, bool keep_alive, unsigned version) {
    auto res = std::make_shared<bhttp::response<bhttp::string_body>>(static_cast<bhttp::status>(r.status), version);
    res->set(bhttp::field::server, "skein");
    res->set(bhttp::field::content_type, r.content_type);
    for (auto& [k, v] : r.headers) res->set(k, v);
    res->body() = std::move(r.body);
    res->keep_alive(keep_alive && !server_->stopped.load());
    res->prepare_payload();
    set_deadline(write_timeout);
    bhttp::async_write(stream_, *res, [self = shared_from_this(), res](beast::error_code ec, size_t) {
      if (ec) return self->close_socket();
      if (!res->keep_alive()) return self->linger();
      self->read_header();
    });
  }

  // Closing a socket with unread bytes resets the connection, and a reset can
  // destroy the answer before the client reads it. So: stop sending, discard
  // what the client still sends for a bounded time and size, then close.
  void linger() {
    beast::error_code ec;
    stream_.shutdown(tcp::socket::shutdown_send, ec);
    if (ec || !body_pending_) return close_socket();
    set_deadline(linger_ms);
    drain();
  }

  void drain() {
    auto buf = std::make_shared<std::array<char, 4096>>();
    stream_.async_read_some(net::buffer(*buf), [self = shared_from_this(), buf](beast::error_code ec, size_t n) {
      self->drained_bytes_ += n;
      if (ec || self->drained_bytes_ > linger_bytes_max) return self->close_socket();
      self->drain();
    });
  }

  void write_stream_head(const header_list& headers) {
    server_->streams.fetch_add(1, std::memory_order_relaxed);
    clear_deadline();
    auto head = std::make_shared<std::string>(
        "HTTP/1.1 200 OK\r\nServer: skein\r\nContent-Type: text/event-stream\r\n"
        "Cache-Control: no-cache\r\nConnection: close\r\nX-Accel-Buffering: no\r\n");
    for (const auto& [k, v] : headers) *head += k + ": " + v + "\r\n";
    *head += "\r\n";
    // The head goes out before any frame, outside the frame queue, so it never
    // counts as backlog.
    streaming_ = true;
    writing_ = true;
    net::async_write(stream_, net::buffer(*head), [self = shared_from_this(), head](beast::error_code ec, size_t) {
      self->writing_ = false;
      if (ec) {
        std::lock_guard<std::mutex> lock{self->stream_mu_};
        self->stream_closed_ = true;
      }
      self->pump_stream();
    });
    watch_disconnect();
    arm_keepalive();
  }

  // A stream client sends nothing; a read that ends means it went away. The
  // watch reads rather than waits for readability: a readiness report can come
  // late, for the request's own bytes read since (a reactor thread held up
  // between collecting it and acting on it), and a wait would take it for the
  // client's departure. Stray bytes are read and dropped, up to a bound.
  void watch_disconnect() {
    stream_.async_read_some(net::buffer(stray_), [self = shared_from_this()](beast::error_code ec, size_t n) {
      self->stray_bytes_ += n;
      if (ec || self->stray_bytes_ > stray_bytes_max) return self->close_stream();
      self->watch_disconnect();
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
    bool finish = false;
    {
      std::lock_guard<std::mutex> lock{stream_mu_};
      if (stream_closed_ || (stream_ending_ && pending_.empty())) {
        finish = true;
      } else {
        // Every frame queued meanwhile goes out in one write (up to
        // stream_write_bytes_max): whole frames, in order, so their boundaries hold.
        while (!pending_.empty() &&
               (next.empty() || next.size() + pending_.front().size() <= stream_write_bytes_max)) {
          std::string& frame = pending_.front();
          queued_bytes_ -= frame.size();
          pending_sizes_.erase(pending_sizes_.find(frame.size()));
          if (next.empty()) next = std::move(frame);
          else next += frame;
          pending_.pop_front();
        }
      }
    }
    if (finish) return finish_stream();
    if (next.empty()) return;
    writing_ = true;
    auto buf = std::make_shared<std::string>(std::move(next));
    net::async_write(stream_, net::buffer(*buf), [self = shared_from_this(), buf](beast::error_code ec, size_t) {
      self->writing_ = false;
      {
        std::lock_guard<std::mutex> lock{self->stream_mu_};
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
      stream_closed_ = true;
      callbacks.swap(close_callbacks_);
      pending_.clear();
      pending_sizes_.clear();
      queued_bytes_ = 0;
    }
    server_->streams.fetch_sub(1, std::memory_order_relaxed);
    if (keepalive_) keepalive_->cancel();
    close_socket();
    for (auto& fn : callbacks) fn();
  }

  void close_socket() {
    if (socket_closed_) return;
    socket_closed_ = true;
    release_reserved();
    release_in_flight();
    beast::error_code ec;
    stream_.shutdown(tcp::socket::shutdown_both, ec);
    stream_.close(ec);
    if (streaming_) {
      {
        std::lock_guard<std::mutex> lock{stream_mu_};
        stream_closed_ = true;
      }
      if (!writing_) pump_stream();
    }
    server_->forget(shared_from_this());
  }

  // Frames queued for a stream are coalesced into writes of at most this much
  // (a lone larger frame goes alone).
  static constexpr size_t stream_write_bytes_max = 256 << 10;

  // A refused client may go on sending its body; this much is read and dropped
  // before the socket closes.
  static constexpr size_t linger_bytes_max = 256 << 10;

  // What a stream client may send (nothing is expected) before it is cut off.
  static constexpr size_t stray_bytes_max = 64 << 10;
  static constexpr std::chrono::milliseconds linger_ms{1000};
  static constexpr std::chrono::seconds write_timeout{30};  // a response, from its first byte to its last
  static constexpr int64_t no_deadline_ns = std::numeric_limits<int64_t>::max();

  // First, so destroyed last: the socket and timers below use its io_context's
  // services, and a session a handler keeps (a stream) may be the server's
  // last owner.
  std::shared_ptr<server::impl> server_;
  tcp::socket stream_;  // on the session's strand
  std::atomic<int64_t> deadline_ns_{no_deadline_ns};  // steady clock; the sweeper closes the connection past it
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  std::optional<net::steady_timer> keepalive_;
  request req_;                   // the request being read
  bool keep_alive_ = false;
  unsigned version_ = 11;
  bool import_ = false;           // the body is read under import_body_bytes_max
  bool body_pending_ = false;     // body bytes of this request are unread
  bool holds_in_flight_ = false;  // this session, not an exchange, owes the in-flight slot back
  uint64_t reserved_bytes_ = 0;   // taken from body_bytes_buffered
  size_t drained_bytes_ = 0;
  bool streaming_ = false;
  bool writing_ = false;
  bool socket_closed_ = false;

  std::array<char, 512> stray_;  // what a stream client sends, dropped (watch_disconnect)
  size_t stray_bytes_ = 0;
  std::mutex stream_mu_;  // guards the fields below: producers push from any thread
  std::deque<std::string> pending_;
  std::multiset<size_t> pending_sizes_;  // of the frames in pending_, for the largest
  size_t queued_bytes_ = 0;              // in pending_
  bool stream_closed_ = false;
  bool stream_ending_ = false;
  bool stream_finished_ = false;
  std::vector<std::function<void()>> close_callbacks_;
};

namespace {

bool session_stream::send(std::string bytes) { return session_->push(std::move(bytes)); }
void session_stream::close() { session_->end_stream(); }
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
      // Answers go out whole in one write; without Nagle a small one never
      // waits for the client's ack of the last.
      beast::error_code ignored;
      socket.set_option(tcp::no_delay(true), ignored);
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

void server::impl::sweep() {
  sweeper.expires_after(sweep_period);
  sweeper.async_wait([self = shared_from_this()](beast::error_code ec) {
    if (ec || self->stopped.load()) return;
    int64_t now = steady_now_ns();
    {
      std::lock_guard<std::mutex> lock{self->sessions_mu};
      for (const auto& s : self->sessions) s->expire_if_due(now);  // posts only: nothing runs under the lock
    }
    self->sweep();
  });
}

void server::impl::forget(const std::shared_ptr<session>& s) {
  std::lock_guard<std::mutex> lock{sessions_mu};
  if (sessions.erase(s) > 0) connections.fetch_sub(1, std::memory_order_relaxed);
}

server::server(std::shared_ptr<impl> p) : impl_(std::move(p)) {}

server::~server() { stop(); }

status server::start(const std::string& host, uint16_t port, server_limits limits, service svc, size_t threads,
                     std::unique_ptr<server>* out) {
  if (limits.body_bytes_buffered_max < std::max(limits.body_bytes_max, limits.import_body_bytes_max))
    return status::invalid_input("body_bytes_buffered_max (" + std::to_string(limits.body_bytes_buffered_max) +
                                 ") is below body_bytes_max or import_body_bytes_max: such bodies could never be read")
        .with_limit("body_bytes_buffered_max");
  auto p = std::make_shared<impl>(limits);
  p->on_request = std::move(svc.on_request);
  p->admit = std::move(svc.admit);
  p->runs_inline = std::move(svc.runs_inline);
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
  net::post(p->sweep_strand, [p] { p->sweep(); });
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
  c.body_bytes_buffered = impl_->body_bytes_buffered.load();
  c.requests = impl_->requests.load();
  c.rejected = impl_->rejected.load();
  c.slow_clients = impl_->slow_clients.load();
  c.responses_2xx = impl_->r2xx.load();
  c.responses_4xx = impl_->r4xx.load();
  c.responses_5xx = impl_->r5xx.load();
  auto pool = impl_->pool.counters();
  c.handler_threads = pool.threads;
  c.handlers_busy = pool.busy;
  c.handlers_queued = pool.queued;
  return c;
}

void server::stop() {
  if (impl_->stopped.exchange(true)) return;
  net::post(impl_->ioc, [p = impl_] {
    beast::error_code ec;
    p->acceptor.close(ec);
    net::post(p->sweep_strand, [p] { p->sweeper.cancel(); });
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
  impl_->drained = true;
  // Handlers under way finish (their answers go nowhere now): none runs after stop().
  impl_->pool.stop();
}

}  // namespace skein::http
