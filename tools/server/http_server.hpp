// http_server: HTTP/1.1 with keep-alive on Boost.Beast, and server-sent event
// streams with a bounded buffer per client.
//
// Each connection runs on its own strand; the handler is called there and may
// answer at once or later from any thread. A client whose stream falls more than
// stream_buffer_bytes_max behind is disconnected (it resumes by Last-Event-ID).
// Past requests_in_flight_max the server answers 429 without calling the handler.
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
  size_t connections_max = 4096;
  size_t stream_buffer_bytes_max = 1 << 20;   // queued for one slow stream client
  std::chrono::milliseconds stream_keepalive{15000};  // comment lines on idle streams
  std::chrono::seconds idle_timeout{120};     // a keep-alive connection with no request
};

struct server_counters {
  uint64_t connections = 0;      // open now
  uint64_t streams = 0;          // open event streams now
  uint64_t in_flight = 0;        // requests being answered now
  uint64_t requests = 0;         // since start
  uint64_t rejected = 0;         // 413/429/400 answered by the server itself
  uint64_t slow_clients = 0;     // streams closed because the client fell behind
  uint64_t responses_2xx = 0, responses_4xx = 0, responses_5xx = 0;
};

class server {
 public:
  // Binds host:port (port 0: an ephemeral one) and starts `threads` I/O threads.
  static status start(const std::string& host, uint16_t port, server_limits limits, handler h,
                      size_t threads, std::unique_ptr<server>* out);
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
