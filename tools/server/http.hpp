// HTTP values shared by the server, its API handlers and the client, without
// Beast: handlers see requests and answer through an `exchange`.
//
// A service has two parts: `admit` decides from a request's head alone (method,
// target, headers; no body yet) whether to read its body at all and under which
// size limit, so auth, routing and scope refuse a client before it can make the
// server buffer anything; `on_request` then answers the whole request.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace skein::http {

using header_list = std::vector<std::pair<std::string, std::string>>;

struct request {
  std::string method;                          // "GET", "POST", ...
  std::string target;                          // as sent: path and query
  std::string path;                            // percent-decoded, without the query
  std::map<std::string, std::string> query;    // percent-decoded; last one wins
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;
  // Set by the server from admission::visible_thread: a thread the admitter
  // found this request's credentials may see, so the handler need not read it
  // again. "" when none was checked.
  std::string admitted_thread;
  // Set by the server when it calls the admitter on a handler thread, where
  // it may wait (admission::defer).
  bool may_wait = false;

  std::string header(const std::string& lower_name) const;
};

struct response {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  header_list headers;
};

// A server-sent event stream to one client. Thread-safe.
class event_stream {
 public:
  virtual ~event_stream() = default;
  // Queues bytes for the client. False once the stream is closed — also when the
  // backlog (the queued frames but the largest) would pass the stream's buffer,
  // which closes it. One frame is never refused for its own size.
  virtual bool send(std::string bytes) = 0;
  // Ends the stream once what is queued has been written.
  virtual void close() = 0;
  // `fn` runs once when the stream ends, whatever ended it (at once if it has).
  virtual void on_close(std::function<void()> fn) = 0;
};

// One request's answer: reply() once, or stream() once. Thread-safe; may be
// answered later from any thread.
class exchange {
 public:
  virtual ~exchange() = default;
  virtual void reply(response r) = 0;
  virtual std::shared_ptr<event_stream> stream(header_list headers) = 0;
};

// An exchange that keeps the one reply a handler gives (a stream is refused with a
// 500), for callers that run a handler in process: the MCP server's embedded
// transport, tests. The reply may come later from any thread; a second is ignored.
class captured_reply : public exchange {
 public:
  void reply(response r) override;
  std::shared_ptr<event_stream> stream(header_list headers) override;
  // Waits for the reply (every route replies exactly once).
  response wait();
  // The same with a bound: false when no reply came within `timeout`.
  bool wait_for(std::chrono::milliseconds timeout, response* out);

 private:
  std::mutex mu_;  // guards done_ and r_
  std::condition_variable cv_;
  bool done_ = false;
  response r_;
};

using handler = std::function<void(request& req, std::shared_ptr<exchange> ex)>;

// Which size limit a request body is read under.
enum class body_class : uint8_t {
  standard,  // server_limits::body_bytes_max
  import,    // server_limits::import_body_bytes_max
};

// What a service decides from a request's head, before any body byte is read.
struct admission {
  std::optional<response> refuse;  // answered at once; the body is never read
  body_class body = body_class::standard;
  // The thread of the route the admitter checked visible to the request's
  // credentials (passed on as request::admitted_thread); "" when none.
  std::string visible_thread;
  // The admitter would have to wait (on another node) to decide, and
  // head.may_wait was false: the server calls it again on a handler thread
  // with may_wait set. The rest of this answer is ignored.
  bool defer = false;
};

// Sees `head` with an empty body. Called on an I/O thread (head.may_wait
// false), where it must not wait: it answers `defer` instead; or on a handler
// thread (handler_pool.hpp, head.may_wait true), where it may.
using admitter = std::function<admission(const request& head)>;

// Whether the handler answers `req` (read whole) without waiting on anything:
// called on an I/O thread, it must not wait itself. True runs the handler
// there, saving the hand-off to a handler thread; false (or none) runs it on a
// handler thread.
using inline_check = std::function<bool(const request& req)>;

struct service {
  handler on_request;
  admitter admit;  // empty: every request is admitted with a standard body
  inline_check runs_inline;  // empty: every handler runs on a handler thread
};

// Splits and percent-decodes a request target (Boost.URL's path and query
// grammars, http.cpp): the path, and the query's parameters ('+' is a space;
// the last of a repeated name wins; an empty name is dropped). A byte the
// grammars do not allow in a target (a space, '|', '{', a non-ASCII byte) is
// taken as itself, as clients send them; a '%' must start a valid escape.
// False when the target is malformed.
bool parse_target(std::string_view target, std::string* path, std::map<std::string, std::string>* query);
// The percent-decoded segments of a target's path, as parse_target reads it:
// "/v1/threads/a%2Fb" is {"v1", "threads", "a/b"} — an escaped '/' stays in its
// segment — and "/v1/threads/" ends with an empty one. False when malformed.
bool target_segments(std::string_view target, std::vector<std::string>* out);
std::string percent_encode(std::string_view s);

}  // namespace skein::http
