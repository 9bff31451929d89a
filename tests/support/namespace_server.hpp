// skein serve's setup with namespaces, in process: a namespace_set behind the
// API on an ephemeral loopback port, with real HTTP clients, for integration
// tests of the routes that need a namespace set (/v1/namespaces).
#pragma once

#include <catch2/catch.hpp>

#include "runtime/namespaces/namespaces.hpp"
#include "tests/support/server_fixture.hpp"

namespace skein::test {

struct namespace_server {
  temp_dir dir;
  std::unique_ptr<namespace_set> set;
  std::unique_ptr<server::api> api;
  std::unique_ptr<http::server> srv;

  explicit namespace_server(const std::string& tokens, http::server_limits limits = {}) {
    namespace_set_options o;
    o.data_dir = dir.str("data");
    o.runtime.mode = durability::flush;
    REQUIRE(namespace_set::open(std::move(o), &set).is_ok());
    server::token_store store;
    REQUIRE(server::token_store::parse(tokens, &store).is_ok());
    api = std::make_unique<server::api>(*set, store, server::api_options{},
                                        [this] { return srv ? srv->counters() : http::server_counters{}; });
    REQUIRE(http::server::start("127.0.0.1", 0, limits, api->service(), 2, &srv).is_ok());
  }
  ~namespace_server() {
    srv->stop();
    set->close().ignore();
  }

  http::response call(const std::string& method, const std::string& target, const std::string& body,
                      const std::string& token, const http::header_list& extra = {}) {
    http::client c{{"127.0.0.1", srv->port()}, token, std::chrono::seconds(10)};
    http::response r;
    auto s = c.call(method, target, body, &r, extra);
    INFO(method << " " << target << ": " << s.to_string());
    REQUIRE(s.is_ok());
    return r;
  }

  // The same request straight to the api's handler, with no admission (as a
  // caller in process may), answered within 10 s.
  http::response handle(const std::string& method, const std::string& target, const std::string& body,
                        const std::string& token) {
    http::request req;
    req.method = method;
    req.target = target;
    REQUIRE(http::parse_target(target, &req.path, &req.query));
    if (!token.empty()) req.headers["authorization"] = "Bearer " + token;
    req.body = body;
    req.may_wait = true;
    auto ex = std::make_shared<http::captured_reply>();
    api->handle(req, ex);
    http::response r;
    REQUIRE(ex->wait_for(std::chrono::seconds(10), &r));
    return r;
  }
};

}  // namespace skein::test
