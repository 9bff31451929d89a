// skein serve's setup with namespaces, in process: a namespace_set behind the
// API on an ephemeral loopback port, with real HTTP clients, for integration
// tests of the routes that need a namespace set (/v1/namespaces).
#pragma once

#include <catch2/catch.hpp>

#include "runtime/namespaces/namespaces.hpp"
#include "tests/support/server_fixture.hpp"

namespace skein::test {

struct namespace_server : served_api {
  temp_dir dir;
  std::unique_ptr<namespace_set> set;

  explicit namespace_server(const std::string& tokens, http::server_limits limits = {}) {
    namespace_set_options o;
    o.data_dir = dir.str("data");
    o.runtime.mode = durability::flush;
    REQUIRE(namespace_set::open(std::move(o), &set).is_ok());
    server::token_store store;
    REQUIRE(server::token_store::parse(tokens, &store).is_ok());
    serve(*set, store, limits);
  }
  ~namespace_server() {
    srv->stop();
    set->close().ignore();
    srv.reset();  // the server and the api go before the namespace set they served
    api.reset();
  }

  // A request answered within 10 s.
  http::response call(const std::string& method, const std::string& target, const std::string& body,
                      const std::string& token, const http::header_list& extra = {}) {
    return request(method, target, body, token, extra, std::chrono::seconds(10));
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
