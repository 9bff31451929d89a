// An api served over HTTP on an ephemeral loopback port, the part the in-process
// server fixtures share (server_fixture.hpp serves one runtime,
// namespace_server.hpp a namespace set). The holder opens what the api serves,
// then calls serve(); it stops `srv` before it closes what was served, and the
// api must not outlive that.
#pragma once

#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <string>

#include "tools/client/http_client.hpp"
#include "tools/server/api.hpp"
#include "tools/server/http_server.hpp"

namespace skein::test {

struct served_api {
  std::unique_ptr<server::api> api;
  std::unique_ptr<http::server> srv;

  // Serves `backend` (a runtime or a namespace set) to the holders of `store`'s
  // tokens; the test stops if the server does not start.
  template <class Backend>
  void serve(Backend& backend, const server::token_store& store, const http::server_limits& limits) {
    api = std::make_unique<server::api>(backend, store, server::api_options{},
                                        [this] { return srv ? srv->counters() : http::server_counters{}; });
    REQUIRE(http::server::start("127.0.0.1", 0, limits, api->service(), 2, &srv).is_ok());
  }

  http::endpoint endpoint() const { return {"127.0.0.1", srv->port()}; }

  // One request from a fresh client holding `token` (with the client's default
  // timeout unless one is given); the test stops if the transport fails.
  http::response request(const std::string& method, const std::string& target, const std::string& body,
                         const std::string& token, const http::header_list& extra,
                         std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
    http::client c{endpoint(), token, timeout};
    http::response r;
    auto s = c.call(method, target, body, &r, extra);
    INFO(method << " " << target << ": " << s.to_string());
    REQUIRE(s.is_ok());
    return r;
  }
};

}  // namespace skein::test
