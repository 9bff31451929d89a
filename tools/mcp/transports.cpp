// The transports of server.hpp: over HTTP to skein serve, or in-process to an
// api handler.
#include "tools/mcp/server.hpp"

namespace skein::mcp {

status remote_transport::call(const http_call& c, http::response* out) {
  return client_.call(c.method, c.target, c.body, out);
}

status embedded_transport::call(const http_call& c, http::response* out) {
  http::request req;
  req.method = c.method;
  req.target = c.target;
  if (!http::parse_target(c.target, &req.path, &req.query))
    return status::invalid_input("target " + quote_input(c.target) + ": malformed");
  req.may_wait = true;  // the session's own thread: admission may wait here
  auto a = api_.admit(req);
  if (a.refuse) {
    *out = *a.refuse;
    return status::ok();
  }
  req.admitted_thread = std::move(a.visible_thread);
  req.body = c.body;
  auto ex = std::make_shared<http::captured_reply>();
  api_.handle(req, ex);
  *out = ex->wait();
  return status::ok();
}

}  // namespace skein::mcp
