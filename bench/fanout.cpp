// fanout: one thread's events streamed (SSE) to many subscribers at once. S
// subscribers hold GET /v1/threads/{id}/stream?from_seq=N on the server in this
// process, N the thread's next seq so that only new events count; then one
// producer runs R runs on the thread. The figure is the events delivered per
// second over all subscribers, until every subscriber has every event.
//
// The subscribers are raw non-blocking sockets that one reader thread serves
// with poll(): S OS threads blocked in read() would measure the OS scheduler,
// not skein. A subscriber counts the frames that carry an id (durable events),
// not delta frames or keep-alive comments, and checks that their ids run on
// without a gap or a repeat.
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cassert>
#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string_view>
#include <thread>

#include "bench/workloads.hpp"
#include "tools/server/http_server.hpp"

namespace skein::bench {
namespace {

// One pass of the workload, with one stream buffer limit.
struct fanout_row {
  uint64_t stream_buffer_bytes_max = 0;
  bool default_buffer = true;
  uint64_t events = 0;         // produced on the thread: its last_seq delta
  uint64_t expected = 0;       // subscribers x events
  uint64_t delivered = 0;      // frames with an id, counted over all subscribers
  uint64_t bytes = 0;          // stream bytes after the headers, all subscribers
  uint64_t disconnected = 0;   // the server's slow_clients: streams closed for falling behind
  double subscribe_seconds = 0;  // first connect until every stream was open
  double produce_seconds = 0;  // first send to the last run's completion
  double seconds = 0;          // first send to the last event at the last subscriber

  double events_per_s() const { return seconds > 0 ? static_cast<double>(delivered) / seconds : 0; }
};

struct fanout_figures {
  size_t subscribers = 0;
  size_t runs = 0;
  uint64_t from_seq = 0;       // where every subscription starts: the thread's next seq
  uint64_t nofile_limit = 0;   // RLIMIT_NOFILE (soft) during the workload
  uint64_t nofile_before = 0;  // the same before it; lower when the workload raised it
  std::vector<fanout_row> rows;  // the default buffer; then a raised one if it disconnected clients
};

constexpr size_t subscribers_at_scale_1 = 1000;
constexpr size_t runs_at_scale_1 = 200;
// skein serve's default http_threads.
constexpr size_t io_threads = 2;
// Both ends of every subscriber's connection are in this process.
constexpr uint64_t fds_per_subscriber = 2;
// RocksDB's files, the listener, the eventfd, stdio.
constexpr uint64_t fds_spare = 256;
// Connections opened whose stream is not open yet: keeps the server's accept
// backlog short whatever the kernel's somaxconn.
constexpr size_t connects_in_flight_max = 64;
constexpr auto subscribe_timeout = std::chrono::seconds(60);
constexpr auto delivery_timeout = std::chrono::seconds(60);
constexpr size_t read_chunk_bytes = 64 << 10;
constexpr size_t head_bytes_max = 16 << 10;
// The raised stream buffer, tried only when the default disconnected subscribers.
constexpr uint64_t raised_buffer_factor = 16;
constexpr const char* engine_config = R"({"default":{"reply":"ok","latency_ms":0}})";

// Counts the events of one SSE stream fed in pieces of any size: frames (ended
// by an empty line) that hold an `id:` line. The server ends lines with '\n'.
class frame_counter {
 public:
  explicit frame_counter(uint64_t first_id) : next_id_(first_id) {}

  void feed(const char* p, size_t n) {
    while (n > 0) {
      // memchr skips the long data lines; only the start of a line is kept.
      const char* nl = static_cast<const char*>(std::memchr(p, '\n', n));
      size_t len = nl != nullptr ? static_cast<size_t>(nl - p) : n;
      if (line_bytes_ < prefix_.size())
        std::memcpy(prefix_.data() + line_bytes_, p, std::min(len, prefix_.size() - line_bytes_));
      line_bytes_ += len;
      if (nl == nullptr) return;
      end_line();
      p = nl + 1;
      n -= len + 1;
    }
  }

  uint64_t events() const { return events_; }
  const std::string& error() const { return error_; }  // "" while the ids run on

 private:
  // An empty line ends a frame, which counts when it had an id; the id must be
  // the one due.
  void end_line() {
    std::string_view line{prefix_.data(), std::min(line_bytes_, prefix_.size())};
    if (line_bytes_ == 0 && frame_has_id_) {
      if (frame_id_ != next_id_ && error_.empty())
        error_ = "event id " + std::to_string(frame_id_) + " where " + std::to_string(next_id_) + " was due";
      next_id_ = frame_id_ + 1;
      ++events_;
      frame_has_id_ = false;
    } else if (line_bytes_ <= prefix_.size() && line.starts_with("id:")) {
      std::string_view digits = line.substr(line.starts_with("id: ") ? 4 : 3);
      auto r = std::from_chars(digits.data(), digits.data() + digits.size(), frame_id_);
      frame_has_id_ = true;
      if ((r.ec != std::errc{} || r.ptr != digits.data() + digits.size()) && error_.empty())
        error_ = "id line 'id: " + std::string{digits} + "' is not a seq";
    }
    line_bytes_ = 0;
  }

  std::array<char, 32> prefix_{};  // the start of the current line: "id: " and 20 digits fit
  size_t line_bytes_ = 0;
  bool frame_has_id_ = false;
  uint64_t frame_id_ = 0;
  uint64_t next_id_;
  uint64_t events_ = 0;
  std::string error_;
};

struct subscriber {
  explicit subscriber(uint64_t first_id) : frames(first_id) {}

  int fd = -1;
  size_t request_sent = 0;  // bytes of the GET written
  std::string head;         // the response header, while it is read
  bool streaming = false;   // the header said 200 and is read
  bool ended = false;       // the server closed the stream
  uint64_t bytes = 0;       // stream bytes after the header
  frame_counter frames;
};

// S subscribers and the one thread that serves them. The caller start()s it,
// waits until every stream is open, produces, tells it how many events each
// subscriber must get, and join()s it. Owns the sockets and closes them when
// destroyed; the counts are the reader's until join() returns.
class subscriber_pool {
 public:
  subscriber_pool(uint16_t port, const std::string& target, size_t n, uint64_t first_id)
      : port_(port),
        request_("GET " + target +
                 " HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n") {
    subs_.reserve(n);
    for (size_t i = 0; i < n; ++i) subs_.emplace_back(first_id);
    // The eventfd, last, wakes the reader when it is told what to expect.
    pfds_.assign(n + 1, pollfd{-1, 0, 0});
  }

  ~subscriber_pool() {
    stop_ = true;
    wake();
    if (reader_.joinable()) reader_.join();
    for (auto& s : subs_)
      if (s.fd >= 0) ::close(s.fd);
    if (wake_fd_ >= 0) ::close(wake_fd_);
  }

  subscriber_pool(const subscriber_pool&) = delete;
  subscriber_pool& operator=(const subscriber_pool&) = delete;

  status start() {
    wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd_ < 0) return status::io_error(std::string{"eventfd: "} + std::strerror(errno));
    pfds_.back() = pollfd{wake_fd_, POLLIN, 0};
    reader_ = std::thread([this] { read_all(); });
    return status::ok();
  }

  // Blocks until every stream is open, or the reader failed.
  status wait_streaming() {
    std::unique_lock<std::mutex> lock{mu_};
    cv_.wait(lock, [this] { return streaming_ == subs_.size() || finished_; });
    return finished_ ? outcome_ : status::ok();
  }

  void expect(uint64_t events_per_subscriber) {
    expected_ = events_per_subscriber;
    wake();
  }

  status join() {
    if (reader_.joinable()) reader_.join();
    return outcome_;
  }

  // After join():
  const std::vector<subscriber>& subscribers() const { return subs_; }
  bench_clock::time_point last_event_at() const { return last_event_at_; }

 private:
  static constexpr uint64_t no_expectation = UINT64_MAX;

  void wake() {
    uint64_t one = 1;
    if (wake_fd_ >= 0) (void)!::write(wake_fd_, &one, sizeof one);
  }

  void read_all() {
    status s = serve();
    std::lock_guard<std::mutex> lock{mu_};
    outcome_ = std::move(s);
    finished_ = true;
    cv_.notify_all();
  }

  // The reader's loop: opens connections, writes the GETs, reads the streams,
  // until every subscriber has what it must get or the server closed it. The
  // streams must open within subscribe_timeout and, once the producer is done,
  // deliver within delivery_timeout; the production in between has no limit
  // here (the producer's own runs would fail first).
  status serve() {
    auto deadline = bench_clock::now() + subscribe_timeout;
    bool expecting = false;
    std::vector<char> chunk(read_chunk_bytes);
    for (;;) {
      if (stop_) return status::io_error("fanout reader stopped before the end");
      SKEIN_TRY(open_more());
      if (!expecting && expected_ != no_expectation) {
        expecting = true;
        deadline = bench_clock::now() + delivery_timeout;
      }
      if (expecting && all_done()) return status::ok();
      int timeout_ms = -1;
      if (expecting || streaming_ < subs_.size()) {
        auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - bench_clock::now());
        if (left.count() <= 0) return timed_out(expecting);
        timeout_ms = static_cast<int>(left.count());
      }
      int ready = ::poll(pfds_.data(), pfds_.size(), timeout_ms);
      if (ready < 0 && errno != EINTR)
        return status::io_error(std::string{"poll: "} + std::strerror(errno));
      if (ready <= 0) continue;
      if (pfds_.back().revents != 0) {
        uint64_t count = 0;
        (void)!::read(wake_fd_, &count, sizeof count);
      }
      for (size_t i = 0; i < subs_.size(); ++i) {
        if (pfds_[i].revents != 0) SKEIN_TRY(service(i, chunk));
      }
    }
  }

  status open_more() {
    while (opened_ < subs_.size() && opened_ - streaming_ < connects_in_flight_max) {
      size_t i = opened_++;
      int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      if (fd < 0) return failure(i, std::string{"socket: "} + std::strerror(errno));
      subs_[i].fd = fd;
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_port = htons(port_);
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 &&
          errno != EINPROGRESS)
        return failure(i, std::string{"connect: "} + std::strerror(errno));
      pfds_[i] = pollfd{fd, POLLOUT, 0};
    }
    return status::ok();
  }

  status service(size_t i, std::vector<char>& chunk) {
    subscriber& s = subs_[i];
    if (s.request_sent < request_.size()) return write_request(i);
    ssize_t n = ::read(s.fd, chunk.data(), chunk.size());
    if (n > 0) return consume(i, chunk.data(), static_cast<size_t>(n));
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return status::ok();
    if (n < 0 && errno != ECONNRESET)
      return failure(i, std::string{"read: "} + std::strerror(errno));
    if (!s.streaming)
      return failure(i,
                     "the server closed the connection before the stream opened: '" + s.head + "'");
    s.ended = true;  // the server closed it: it fell behind (checked against slow_clients)
    pfds_[i].fd = -1;
    return status::ok();
  }

  // Once connected, the GET; the stream is read from then on.
  status write_request(size_t i) {
    subscriber& s = subs_[i];
    if (s.request_sent == 0) {
      int error = 0;
      socklen_t len = sizeof error;
      if (::getsockopt(s.fd, SOL_SOCKET, SO_ERROR, &error, &len) != 0) error = errno;
      if (error != 0) return failure(i, std::string{"connect: "} + std::strerror(error));
    }
    ssize_t n = ::send(s.fd, request_.data() + s.request_sent, request_.size() - s.request_sent,
                       MSG_NOSIGNAL);
    if (n < 0 && errno != EAGAIN && errno != EINTR)
      return failure(i, std::string{"send: "} + std::strerror(errno));
    if (n > 0) s.request_sent += static_cast<size_t>(n);
    if (s.request_sent == request_.size()) pfds_[i].events = POLLIN;
    return status::ok();
  }

  status consume(size_t i, const char* p, size_t n) {
    subscriber& s = subs_[i];
    if (!s.streaming) {
      size_t old = s.head.size();
      s.head.append(p, n);
      size_t end = s.head.find("\r\n\r\n");
      if (end == std::string::npos) {
        if (s.head.size() > head_bytes_max) return failure(i, "response header past 16 KiB");
        return status::ok();
      }
      if (!s.head.starts_with("HTTP/1.1 200 "))
        return failure(i, "the stream answered '" + s.head + "'");
      // The head so far had no empty line, so this one ends in the new bytes.
      assert(end + 4 > old && end + 4 - old <= n);
      size_t body = end + 4 - old;  // where the stream starts in p
      s.head.clear();
      open_stream(s);
      p += body;
      n -= body;
    }
    uint64_t before = s.frames.events();
    s.frames.feed(p, n);
    s.bytes += n;
    if (s.frames.events() != before) last_event_at_ = bench_clock::now();
    return status::ok();
  }

  void open_stream(subscriber& s) {
    s.streaming = true;
    std::lock_guard<std::mutex> lock{mu_};
    if (++streaming_ == subs_.size()) cv_.notify_all();
  }

  bool all_done() const {
    uint64_t expected = expected_;
    return std::all_of(subs_.begin(), subs_.end(), [expected](const subscriber& s) {
      return s.ended || s.frames.events() >= expected;
    });
  }

  status timed_out(bool expecting) const {
    if (!expecting)
      return status::io_error(std::to_string(streaming_) + " of " + std::to_string(subs_.size()) +
                              " streams open after " + std::to_string(subscribe_timeout.count()) +
                              " s");
    size_t behind = 0;
    for (const auto& s : subs_) behind += !s.ended && s.frames.events() < expected_;
    return status::io_error(std::to_string(behind) + " of " + std::to_string(subs_.size()) +
                            " subscribers still lacked events " +
                            std::to_string(delivery_timeout.count()) + " s after the expectation");
  }

  status failure(size_t i, const std::string& what) const {
    return status::io_error("subscriber " + std::to_string(i) + ": " + what);
  }

  const uint16_t port_;
  const std::string request_;
  std::vector<subscriber> subs_;
  std::vector<pollfd> pfds_;  // one per subscriber (fd -1: not polled), then the eventfd
  size_t opened_ = 0;
  bench_clock::time_point last_event_at_{};
  std::atomic<uint64_t> expected_{no_expectation};
  std::atomic<bool> stop_{false};
  int wake_fd_ = -1;
  std::thread reader_;

  // Guards the fields below, shared with the caller's thread. The reader, their
  // only writer, reads streaming_ without it.
  std::mutex mu_;
  std::condition_variable cv_;
  size_t streaming_ = 0;
  bool finished_ = false;
  status outcome_;
};

// Raises RLIMIT_NOFILE (soft) to what `subscribers` need, up to the hard limit.
status raise_nofile(size_t subscribers, fanout_figures* f) {
  uint64_t needed = subscribers * fds_per_subscriber + fds_spare;
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0)
    return status::io_error(std::string{"getrlimit(RLIMIT_NOFILE): "} + std::strerror(errno));
  f->nofile_before = rl.rlim_cur;
  f->nofile_limit = rl.rlim_cur;
  if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= needed) return status::ok();
  if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < needed)
    return status::io_error(
        std::to_string(subscribers) + " subscribers need " + std::to_string(needed) +
        " open files (" + std::to_string(fds_per_subscriber) + " a subscriber, " +
        std::to_string(fds_spare) + " spare), but RLIMIT_NOFILE's hard " + "limit is " +
        std::to_string(rl.rlim_max) + ": raise it (ulimit -Hn) or lower --scale");
  rl.rlim_cur = needed;
  if (::setrlimit(RLIMIT_NOFILE, &rl) != 0)
    return status::io_error("setrlimit(RLIMIT_NOFILE, " + std::to_string(needed) +
                            "): " + std::strerror(errno));
  f->nofile_limit = needed;
  return status::ok();
}

// `runs` runs on `id` one after another, each checked. The first, on a fresh
// thread, warms it: its system prompt is written and its actor active, so every
// later run writes scripted_events_per_run events.
status produce(runtime& rt, const std::string& id, size_t runs) {
  for (size_t n = 0; n < runs; ++n) {
    run_input in;
    in.text = "run " + std::to_string(n);
    run_handle h = rt.send(id, std::move(in));
    run_result r;
    status waited = h.wait(&r);
    SKEIN_TRY(check_waited_run(h, waited, r));
  }
  return status::ok();
}

// Every subscriber the server kept got every event, in order, once; the ones it
// closed are exactly its slow clients, and got a prefix.
status check_delivery(const std::vector<subscriber>& subs, const fanout_row& row) {
  uint64_t ended = 0;
  for (size_t i = 0; i < subs.size(); ++i) {
    const subscriber& s = subs[i];
    std::string who = "subscriber " + std::to_string(i) + ": ";
    if (!s.frames.error().empty()) return status::corruption(who + s.frames.error());
    ended += s.ended;
    uint64_t got = s.frames.events();
    if (got > row.events || (!s.ended && got != row.events))
      return status::corruption(who + std::to_string(got) + " events, expected " +
                                std::to_string(row.events));
  }
  if (ended != row.disconnected)
    return status::corruption(std::to_string(ended) + " streams ended early, but the server " +
                              "closed " + std::to_string(row.disconnected) + " slow clients");
  return status::ok();
}

// One pass: a fresh thread, the server with this stream buffer, S subscribers,
// R runs; the row of what was delivered.
status fanout_pass(runtime& rt, size_t subscribers, size_t runs, uint64_t buffer_bytes,
                   fanout_figures* f, fanout_row* row) {
  thread_options o;
  o.agent_id = bench_agent_id;
  manifest m;
  SKEIN_TRY(rt.create_thread(o, &m));
  SKEIN_TRY(produce(rt, m.id, 1));  // the warm-up run
  SKEIN_TRY(rt.get_thread(m.id, &m));
  f->from_seq = m.last_seq + 1;
  http::server_limits limits;
  row->default_buffer = buffer_bytes == limits.stream_buffer_bytes_max;
  row->stream_buffer_bytes_max = buffer_bytes;
  limits.stream_buffer_bytes_max = buffer_bytes;
  // The subscribers are the load under test, not the flood connections_max guards against.
  limits.connections_max = std::max(limits.connections_max, subscribers + 64);
  std::unique_ptr<bench_server> srv;
  SKEIN_TRY(bench_server::start(rt, limits, io_threads, &srv));

  std::string target = "/v1/threads/" + m.id + "/stream?from_seq=" + std::to_string(f->from_seq);
  subscriber_pool pool{srv->port(), target, subscribers, f->from_seq};
  auto connect_start = bench_clock::now();
  SKEIN_TRY(pool.start());
  // The server writes a stream's header after its handler subscribed: an open
  // stream is a registered subscription.
  SKEIN_TRY(pool.wait_streaming());
  auto first_send = bench_clock::now();
  row->subscribe_seconds = seconds_since(connect_start, first_send);
  SKEIN_TRY(produce(rt, m.id, runs));
  row->produce_seconds = seconds_since(first_send, bench_clock::now());
  manifest after;
  SKEIN_TRY(rt.get_thread(m.id, &after));
  row->events = after.last_seq - m.last_seq;
  pool.expect(row->events);
  SKEIN_TRY(pool.join());

  // No event at all (every subscriber closed first) leaves last_event_at() unset.
  row->seconds = seconds_since(first_send, std::max(first_send, pool.last_event_at()));
  row->expected = row->events * subscribers;
  for (const auto& s : pool.subscribers()) {
    row->delivered += s.frames.events();
    row->bytes += s.bytes;
  }
  row->disconnected = srv->http().counters().slow_clients;
  return check_delivery(pool.subscribers(), *row);
}

// "1 MiB", "64 KiB", "1,000 B": a limit as it would be written.
std::string binary_size(uint64_t bytes) {
  if (bytes > 0 && bytes % (1 << 20) == 0) return with_commas(bytes >> 20) + " MiB";
  if (bytes > 0 && bytes % (1 << 10) == 0) return with_commas(bytes >> 10) + " KiB";
  return with_commas(bytes) + " B";
}

void report(const fanout_figures& f, bool plot, result* out) {
  std::string nofile = with_commas(f.nofile_limit);
  if (f.nofile_limit != f.nofile_before) nofile += " (raised from " + with_commas(f.nofile_before) + ")";
  table& t = add_table(
      out,
      "fanout: " + with_commas(f.subscribers) + " subscribers on one thread's event stream (GET "
          "/v1/threads/{id}/stream?from_seq=" + with_commas(f.from_seq) + "),\n" + with_commas(f.runs) +
          " runs from one producer (runtime::send().wait()), scripted engine at 0 ms, durability sync;\n"
          "server in this process on 127.0.0.1 (" + std::to_string(io_threads) +
          " I/O threads); subscribers: non-blocking sockets on one poll() thread\nRLIMIT_NOFILE: " + nofile,
      {col("stream_buffer_bytes_max"), col("events"), col("expected"), col("delivered"), col("", "MB", 1),
       col("subscribe", "s", 2), col("produce", "s", 2), col("deliver", "s", 2), col("events/s", "events/s"),
       col("disconnected")});
  for (const auto& r : f.rows) {
    std::string buffer = r.default_buffer ? "default" : "raised";
    t.rows.push_back({text(binary_size(r.stream_buffer_bytes_max) + " (" + buffer + ")"), num(r.events),
                      num(r.expected), num(r.delivered), num(static_cast<double>(r.bytes) / (1 << 20)),
                      num(r.subscribe_seconds), num(r.produce_seconds), num(r.seconds), num(r.events_per_s()),
                      num(r.disconnected)});
    if (plot)
      add_bar(out, "throughput-fanout", "fanout: throughput (events delivered/s, higher is better)",
              "events delivered/s", "skein SSE, " + buffer + " stream buffer", r.events_per_s());
  }
  t.notes.push_back(
      "events: the thread's last_seq delta; expected: subscribers x events; delivered: frames with an id:\n"
      "line counted over all subscribers (deltas and keep-alives are not). produce: first send to the last\n"
      "run's end; deliver: first send to the last event at the last subscriber; events/s = delivered / deliver.\n"
      "disconnected: streams the server closed for falling behind (its slow_clients counter).");
  const fanout_row& first = f.rows.front();
  std::string size = binary_size(first.stream_buffer_bytes_max);
  t.notes.push_back(f.rows.size() == 1
                        ? "stream_buffer_bytes_max: the default " + size +
                              " disconnected no subscriber at this load; not raised"
                        : "stream_buffer_bytes_max: the default " + size + " disconnected " +
                              with_commas(first.disconnected) + " of " + with_commas(f.subscribers) +
                              " subscribers at this load, so the\nsecond row raises it to " +
                              binary_size(f.rows.back().stream_buffer_bytes_max));
}

}  // namespace

status run_fanout(const bench_options& options, result* out) {
  fanout_figures f;
  f.subscribers = scaled_count(subscribers_at_scale_1, options.scale);
  f.runs = scaled_count(runs_at_scale_1, options.scale);
  SKEIN_TRY(raise_nofile(f.subscribers, &f));
  runtime_options ro;
  ro.mode = durability::sync;
  agent_config agent = bench_agent(engine_config);
  std::unique_ptr<runtime> rt;
  SKEIN_TRY(open_bench_runtime(options, "fanout", ro, agent, &rt));

  uint64_t buffer = http::server_limits{}.stream_buffer_bytes_max;
  SKEIN_TRY(fanout_pass(*rt, f.subscribers, f.runs, buffer, &f, &f.rows.emplace_back()));
  // Raised only when the default disconnected subscribers at this load.
  if (f.rows.back().disconnected > 0)
    SKEIN_TRY(fanout_pass(*rt, f.subscribers, f.runs, buffer * raised_buffer_factor, &f,
                          &f.rows.emplace_back()));
  SKEIN_TRY(rt->close());
  report(f, options.plot, out);
  return status::ok();
}

}  // namespace skein::bench
