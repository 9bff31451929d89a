// http_client: a small synchronous HTTP/1.1 client for the skein CLI, tests and
// benchmarks — one keep-alive connection, reconnecting when the server closed
// it. Not thread-safe: one client per thread.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "runtime/model/status.hpp"
#include "tools/server/http.hpp"

namespace skein::http {

struct endpoint {
  std::string host = "127.0.0.1";
  uint16_t port = 7411;
};

// "http://host:port", "host:port" or "host" (port 7411).
status parse_server_url(const std::string& url, endpoint* out);

struct sse_event {
  std::string id;     // "" when the event had no id (deltas)
  std::string event;  // "message" when absent
  std::string data;
};

class client {
 public:
  explicit client(endpoint ep, std::string token = "",
                  std::chrono::milliseconds timeout = std::chrono::seconds(60));
  ~client();
  client(const client&) = delete;
  client& operator=(const client&) = delete;

  // A whole request and response. Connection failures are io_error; any HTTP
  // status is a success here (the caller reads out->status).
  status call(const std::string& method, const std::string& target, const std::string& body, response* out,
              const header_list& extra = {});

  // GETs an event stream and calls on_event for each event until the server
  // closes it, on_event returns false, or `limit` passes (0: none). The
  // response status is written to *http_status (200 when streaming).
  status stream(const std::string& target, const header_list& extra,
                const std::function<bool(const sse_event&)>& on_event, int* http_status,
                std::chrono::milliseconds limit = std::chrono::milliseconds(0));

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace skein::http
