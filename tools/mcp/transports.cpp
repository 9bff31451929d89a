// The transports of server.hpp: over HTTP to skein serve, or in-process to an
// api handler.
#include <condition_variable>
#include <mutex>

#include "tools/mcp/server.hpp"

namespace skein::mcp {
namespace {

// Captures one reply of the api handler, which may come later from another thread.
class capture : public http::exchange {
 public:
  void reply(http::response r) override {
    std::lock_guard lock{mu_};
    if (done_) return;
    r_ = std::move(r);
    done_ = true;
    cv_.notify_all();
  }
  std::shared_ptr<http::event_stream> stream(http::header_list) override {
    reply(http::response{500, "application/json", R"({"error":{"code":"internal","message":"no streams here"}})", {}});
    return nullptr;
  }
  http::response wait() {
    std::unique_lock lock{mu_};
    cv_.wait(lock, [&] { return done_; });  // every route replies exactly once
    return r_;
  }

 private:
  std::mutex mu_;  // guards done_ and r_
  std::condition_variable cv_;
  bool done_ = false;
  http::response r_;
};

}  // namespace

status remote_transport::call(const http_call& c, http::response* out) {
  return client_.call(c.method, c.target, c.body, out);
}

status embedded_transport::call(const http_call& c, http::response* out) {
  http::request req;
  req.method = c.method;
  req.target = c.target;
  if (!http::parse_target(c.target, &req.path, &req.query))
    return status::invalid_input("target " + quote_input(c.target) + ": malformed");
  auto a = api_.admit(req);
  if (a.refuse) {
    *out = *a.refuse;
    return status::ok();
  }
  req.admitted_thread = std::move(a.visible_thread);
  req.body = c.body;
  auto ex = std::make_shared<capture>();
  api_.handle(req, ex);
  *out = ex->wait();
  return status::ok();
}

}  // namespace skein::mcp
