// http_server: HTTP/1.1 with keep-alive on Boost.Beast, and server-sent event
// streams with a bounded buffer per client.
//
// Each connection runs on its own strand. The service's admission and handler
// run on a handler thread (handler_pool.hpp), never on an I/O thread, since
// they may wait on actors, the disk or another node; a handler may answer at
// once or later from any thread. A request's head is read first: the
// in-flight limit, the service's admission (auth, route, scope) and the route's
// body limit are decided from it, and a Content-Length past that limit is refused
// before any body byte is read. Body bytes buffered across all connections are
// capped by body_bytes_buffered_max (a Content-Length is reserved whole up
// front; a chunked body as its bytes arrive). Past requests_in_flight_max or
// body_bytes_buffered_max the server answers 429 without calling the handler.
// A stream client with more than stream_buffer_bytes_max queued, not counting its
// largest queued frame, is disconnected (it resumes by Last-Event-ID).
// start() binds and runs the I/O threads; stop() (or the destructor) closes the
// listener and every connection and joins the threads.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "runtime/model/status.hpp"
#include "tools/server/http.hpp"

namespace skein::http {

struct server_limits {
  size_t body_bytes_max = 1 << 20;            // a request body
  size_t import_body_bytes_max = 64 << 20;    // a request body to /v1/import
  size_t header_bytes_max = 16 << 10;
  size_t requests_in_flight_max = 1024;       // across all connections
  // Threads running admission and handlers (handler_pool.hpp), which may wait
  // on actors, the disk or another node; past it requests queue for one.
  size_t handler_threads_max = 256;
  size_t body_bytes_buffered_max = 128 << 20; // request bodies held across all connections
  size_t connections_max = 4096;
  size_t stream_buffer_bytes_max = 1 << 20;   // queued for one slow stream client
  std::chrono::milliseconds stream_keepalive{15000};  // comment lines on idle streams
  std::chrono::seconds idle_timeout{120};     // a keep-alive connection with no request
  std::chrono::seconds body_timeout{30};      // a request body, from its head to its last byte
};

struct server_counters {
  uint64_t connections = 0;      // open now
  uint64_t streams = 0;          // open event streams now
  uint64_t in_flight = 0;        // requests being answered now
  uint64_t body_bytes_buffered = 0;  // request body bytes reserved now
  uint64_t requests = 0;         // since start
  uint64_t rejected = 0;         // answered before the handler: by the server (413/429/431/400) or at admission
  uint64_t slow_clients = 0;     // streams closed because the client fell behind
  uint64_t responses_2xx = 0, responses_4xx = 0, responses_5xx = 0;
  uint64_t handler_threads = 0;  // alive now (handler_pool.hpp)
  uint64_t handlers_busy = 0;    // running a request's admission or handler now
  uint64_t handlers_queued = 0;  // waiting for a handler thread now
};

class server {
 public:
  // Binds host:port (port 0: an ephemeral one) and starts `threads` I/O threads.
  // invalid_input when body_bytes_buffered_max is below a route's body limit.
  static status start(const std::string& host, uint16_t port, server_limits limits, service svc,
                      size_t threads, std::unique_ptr<server>* out);
  // A service that admits every request with a standard body.
  static status start(const std::string& host, uint16_t port, server_limits limits, handler h,
                      size_t threads, std::unique_ptr<server>* out) {
    return start(host, port, limits, service{std::move(h), {}, {}}, threads, out);
  }
  ~server();
  server(const server&) = delete;
  server& operator=(const server&) = delete;

  uint16_t port() const;
  server_counters counters() const;
  void stop();

  struct impl;

 private:
  explicit server(std::shared_ptr<impl> p);
  std::shared_ptr<impl> impl_;
};

}  // namespace skein::http
