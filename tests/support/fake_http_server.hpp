// A fake HTTP(S) server for the tests of HTTP clients (the openai embedder and
// engine): 127.0.0.1, an ephemeral port, one connection at a time on a thread of
// its own. It reads each request, records it, and writes what the test's handler
// answers, byte for byte; the test keeps its own scripting in the handler.
//
// Thread-safety: the handler runs on the server's thread; every accessor may be
// called from any thread. Destroying the server wakes its accept, ends a held
// connection's wait and joins the thread.
#pragma once

#include <netinet/in.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace skein::test {

// The https side of a fake_http_server: its certificate chain and key (PEM), and
// whether it completes handshakes at all (false: it accepts the TCP connection
// and never reads the ClientHello, holding the socket until the server stops).
struct tls_setup {
  std::string cert_pem;
  std::string key_pem;
  bool handshake = true;
};

// What the server does with one request: writes `pieces`, each by a write() of
// its own, then ends the connection as `after` says.
struct fake_reply {
  enum class end {
    close,                     // shut the connection down
    hold,                      // keep it open, unread, until the server stops; serve the next
    hold_until_client_closes,  // read until the client closes it (or the server stops), then serve the next
  };
  std::vector<std::string> pieces;
  end after = end::close;
};

class fake_http_server {
 public:
  using request = boost::beast::http::request<boost::beast::http::string_body>;
  // `n` is the request's number, from 1, over the server's life.
  using handler = std::function<fake_reply(const request&, int n)>;

  explicit fake_http_server(handler h, std::optional<tls_setup> tls = {})
      : handler_(std::move(h)), tls_(std::move(tls)), acceptor_(ioc_, {boost::asio::ip::make_address("127.0.0.1"), 0}) {
    if (tls_) {
      ssl_.emplace(boost::asio::ssl::context::tls_server);
      ssl_->use_certificate_chain(boost::asio::buffer(tls_->cert_pem));
      ssl_->use_private_key(boost::asio::buffer(tls_->key_pem), boost::asio::ssl::context::pem);
    }
    thread_ = std::thread([this] { loop(); });
  }
  ~fake_http_server() {
    stopping_ = true;
    if (int fd = held_fd_.load(); fd >= 0) ::shutdown(fd, SHUT_RDWR);  // a held connection: end its wait
    tcp::socket wake{ioc_};
    boost::beast::error_code ec;
    wake.connect({boost::asio::ip::make_address("127.0.0.1"), port()}, ec);
    thread_.join();
  }
  fake_http_server(const fake_http_server&) = delete;
  fake_http_server& operator=(const fake_http_server&) = delete;

  uint16_t port() const { return acceptor_.local_endpoint().port(); }
  // "http://host:port" or "https://host:port".
  std::string origin(const std::string& host = "127.0.0.1") const {
    return (tls_ ? "https://" : "http://") + host + ":" + std::to_string(port());
  }
  std::vector<request> seen() {
    std::lock_guard lock{mu_};
    return seen_;
  }
  // TCP connections accepted, whatever came of them.
  int accepted() const { return accepted_; }
  // The SNI host name of each completed handshake ("" when none was sent).
  std::vector<std::string> server_names() {
    std::lock_guard lock{mu_};
    return server_names_;
  }
  // Waits until `n` requests have come in.
  bool wait_requests(size_t n, std::chrono::seconds limit) {
    std::unique_lock lock{mu_};
    return cv_.wait_for(lock, limit, [&] { return seen_.size() >= n; });
  }
  // Waits until the client closed `n` connections held with hold_until_client_closes.
  bool wait_client_closed(int n, std::chrono::seconds limit) {
    std::unique_lock lock{mu_};
    return cv_.wait_for(lock, limit, [&] { return client_closed_ >= n; });
  }

 private:
  using tcp = boost::asio::ip::tcp;
  using tls_stream = boost::asio::ssl::stream<tcp::socket>;

  void loop() {
    std::vector<std::shared_ptr<void>> held;  // connections kept open until the server stops
    for (;;) {
      tcp::socket s{ioc_};
      boost::beast::error_code ec;
      acceptor_.accept(s, ec);
      if (stopping_ || ec) return;
      ++accepted_;
      s.set_option(tcp::no_delay(true), ec);  // each piece its own segment, as far as TCP allows
      if (!tls_) {
        auto plain = std::make_shared<tcp::socket>(std::move(s));
        if (!serve(*plain, *plain)) held.push_back(plain);
        continue;
      }
      auto secure = std::make_shared<tls_stream>(std::move(s), *ssl_);
      if (!tls_->handshake) {
        held.push_back(secure);
        continue;
      }
      secure->handshake(boost::asio::ssl::stream_base::server, ec);
      if (ec) continue;  // the client refused our certificate, or went away
      {
        const char* name = SSL_get_servername(secure->native_handle(), TLSEXT_NAMETYPE_host_name);
        std::lock_guard lock{mu_};
        server_names_.emplace_back(name ? name : "");
      }
      if (!serve(*secure, secure->next_layer())) held.push_back(secure);
    }
  }

  // One request and its answer; false: the reply said hold, keep the stream.
  template <class stream_type>
  bool serve(stream_type& s, tcp::socket& raw) {
    boost::beast::error_code ec;
    boost::beast::flat_buffer buf;
    request req;
    boost::beast::http::read(s, buf, req, ec);
    if (ec) return true;
    int n;
    {
      std::lock_guard lock{mu_};
      seen_.push_back(req);
      n = static_cast<int>(seen_.size());
    }
    cv_.notify_all();
    fake_reply reply = handler_(req, n);
    for (const auto& piece : reply.pieces) {
      boost::asio::write(s, boost::asio::buffer(piece), ec);
      if (ec) break;
    }
    if (reply.after == fake_reply::end::hold) return false;
    if (reply.after == fake_reply::end::hold_until_client_closes && !ec) {
      wait_client_close(s, raw);
      return true;
    }
    raw.shutdown(tcp::socket::shutdown_both, ec);
    return true;
  }

  template <class stream_type>
  void wait_client_close(stream_type& s, tcp::socket& raw) {
    held_fd_ = raw.native_handle();
    boost::beast::error_code ec;
    char byte;
    for (;;) {  // until the client closes (or the server stops)
      s.read_some(boost::asio::buffer(&byte, 1), ec);
      if (ec) break;
    }
    held_fd_ = -1;
    if (!stopping_) {
      std::lock_guard lock{mu_};
      ++client_closed_;
    }
    cv_.notify_all();
  }

  handler handler_;
  std::optional<tls_setup> tls_;
  std::optional<boost::asio::ssl::context> ssl_;
  boost::asio::io_context ioc_;
  tcp::acceptor acceptor_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> accepted_{0};
  std::atomic<int> held_fd_{-1};
  std::mutex mu_;  // guards seen_, server_names_ and client_closed_
  std::condition_variable cv_;
  std::vector<request> seen_;
  std::vector<std::string> server_names_;
  int client_closed_ = 0;
  std::thread thread_;
};

}  // namespace skein::test
