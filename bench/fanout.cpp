// fanout: one thread's events streamed (SSE) to many subscribers at once, from the
// server in this process, while one producer runs R runs on the thread; the events
// delivered per second over all subscribers, until each has every event. The
// subscribers are non-blocking sockets served by poll() on this thread (S threads
// blocked in read() would measure the OS scheduler, not skein); each counts the frames
// with an id (durable events) and checks that the ids run on without a gap or repeat.
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <string_view>
#include <thread>

#include "bench/workloads.hpp"
#include "tools/server/http_server.hpp"

namespace skein::bench {
namespace {

constexpr size_t io_threads = 2;  // skein serve's default http_threads
constexpr auto timeout = std::chrono::seconds(60);  // to subscribe, and to deliver after the last run

// One subscriber: its connection, and the events of its stream, fed in pieces of
// any size: frames (ended by an empty line) that hold an `id:` line, whose ids must
// run on from the first.
struct subscriber {
  int fd = -1;
  size_t sent = 0;         // bytes of the GET written
  std::string head;        // the response header, while it is read
  bool streaming = false;  // the header said 200 and is read
  bool ended = false;      // the server closed the stream: it fell behind (its slow_clients)
  uint64_t bytes = 0;      // stream bytes after the header
  uint64_t events = 0;
  uint64_t next_id = 0;
  std::string error;            // "" while the ids run on
  std::array<char, 32> line{};  // the start of the current line: "id: " and 20 digits fit
  size_t line_bytes = 0;
  bool has_id = false;
  uint64_t id = 0;

  void feed(const char* p, size_t n) {
    while (n > 0) {
      // memchr skips the long data lines; only the start of a line is kept.
      const char* nl = static_cast<const char*>(std::memchr(p, '\n', n));
      size_t len = nl != nullptr ? static_cast<size_t>(nl - p) : n;
      if (line_bytes < line.size()) std::memcpy(line.data() + line_bytes, p, std::min(len, line.size() - line_bytes));
      line_bytes += len;
      if (nl == nullptr) return;
      std::string_view text{line.data(), std::min(line_bytes, line.size())};
      if (line_bytes == 0 && has_id) {
        if (id != next_id && error.empty())
          error = "event id " + std::to_string(id) + " where " + std::to_string(next_id) + " was due";
        next_id = id + 1;
        ++events;
        has_id = false;
      } else if (line_bytes <= line.size() && text.starts_with("id:")) {
        std::string_view digits = text.substr(text.starts_with("id: ") ? 4 : 3);
        auto r = std::from_chars(digits.data(), digits.data() + digits.size(), id);
        has_id = true;
        if ((r.ec != std::errc{} || r.ptr != digits.data() + digits.size()) && error.empty())
          error = "id line 'id: " + std::string{digits} + "' is not a seq";
      }
      line_bytes = 0;
      p = nl + 1;
      n -= len + 1;
    }
  }
};

// S subscribers, served by pump() on the calling thread. Owns the sockets.
class subscriber_pool {
 public:
  subscriber_pool(uint16_t port, const std::string& target, size_t n, uint64_t first_id)
      : subs(n), port_(port),
        request_("GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n"),
        pfds_(n, pollfd{-1, 0, 0}) {
    for (auto& s : subs) s.next_id = first_id;
  }
  ~subscriber_pool() {
    for (auto& s : subs)
      if (s.fd >= 0) ::close(s.fd);
  }
  subscriber_pool(const subscriber_pool&) = delete;
  subscriber_pool& operator=(const subscriber_pool&) = delete;

  // Opens connections, writes the GETs and reads the streams until done(), or
  // fails with timed_out() once deadline() passes.
  status pump(const std::function<bool()>& done, const std::function<bench_clock::time_point()>& deadline,
              const std::function<std::string()>& timed_out) {
    std::vector<char> chunk(64 << 10);
    for (;;) {
      // At most 64 connections opened whose stream is not open yet: keeps the
      // server's accept backlog short whatever the kernel's somaxconn.
      while (opened_ < subs.size() && opened_ - streaming < 64) {
        size_t i = opened_++;
        int fd = subs[i].fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) return failure(i, std::string{"socket: "} + std::strerror(errno));
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_port = htons(port_);
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 && errno != EINPROGRESS)
          return failure(i, std::string{"connect: "} + std::strerror(errno));
        pfds_[i] = pollfd{fd, POLLOUT, 0};
      }
      if (done()) return status::ok();
      if (bench_clock::now() >= deadline()) return status::io_error(timed_out());
      // 10 ms: how soon the reader sees that the producer is done.
      int ready = ::poll(pfds_.data(), pfds_.size(), 10);
      if (ready < 0 && errno != EINTR) return status::io_error(std::string{"poll: "} + std::strerror(errno));
      for (size_t i = 0; ready > 0 && i < subs.size(); ++i)
        if (pfds_[i].revents != 0) SKEIN_TRY(service(i, chunk));
    }
  }

  // Every subscriber the server kept has `events` events.
  bool delivered(uint64_t events) const {
    return std::all_of(subs.begin(), subs.end(), [&](const subscriber& s) { return s.ended || s.events >= events; });
  }

  std::vector<subscriber> subs;
  size_t streaming = 0;
  bench_clock::time_point last_event_at{};

 private:
  status service(size_t i, std::vector<char>& chunk) {
    subscriber& s = subs[i];
    if (s.sent < request_.size()) {  // once connected, the GET
      int error = 0;
      socklen_t len = sizeof error;
      if (s.sent == 0 && ::getsockopt(s.fd, SOL_SOCKET, SO_ERROR, &error, &len) == 0 && error != 0)
        return failure(i, std::string{"connect: "} + std::strerror(error));
      ssize_t n = ::send(s.fd, request_.data() + s.sent, request_.size() - s.sent, MSG_NOSIGNAL);
      if (n < 0 && errno != EAGAIN && errno != EINTR) return failure(i, std::string{"send: "} + std::strerror(errno));
      if (n > 0) s.sent += static_cast<size_t>(n);
      if (s.sent == request_.size()) pfds_[i].events = POLLIN;
      return status::ok();
    }
    ssize_t n = ::read(s.fd, chunk.data(), chunk.size());
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return status::ok();
    if (n < 0 && errno != ECONNRESET) return failure(i, std::string{"read: "} + std::strerror(errno));
    if (n <= 0) {
      if (!s.streaming)
        return failure(i, "the server closed the connection before the stream opened: '" + s.head + "'");
      s.ended = true;
      pfds_[i].fd = -1;
      return status::ok();
    }
    const char* p = chunk.data();
    auto left = static_cast<size_t>(n);
    if (!s.streaming) {
      size_t old = s.head.size();
      s.head.append(p, left);
      size_t end = s.head.find("\r\n\r\n");
      if (end == std::string::npos)
        return s.head.size() > (16 << 10) ? failure(i, "response header past 16 KiB") : status::ok();
      if (!s.head.starts_with("HTTP/1.1 200 ")) return failure(i, "the stream answered '" + s.head + "'");
      // The head so far had no empty line, so this one ends in the new bytes. The
      // server writes a stream's header after its handler subscribed: an open
      // stream is a registered subscription.
      size_t body = end + 4 - old;
      p += body;
      left -= body;
      s.head.clear();
      s.streaming = true;
      ++streaming;
    }
    uint64_t before = s.events;
    s.feed(p, left);
    s.bytes += left;
    if (s.events != before) last_event_at = bench_clock::now();
    return status::ok();
  }

  status failure(size_t i, const std::string& what) const {
    return status::io_error("subscriber " + std::to_string(i) + ": " + what);
  }

  const uint16_t port_;
  const std::string request_;
  std::vector<pollfd> pfds_;  // one per subscriber (fd -1: not polled)
  size_t opened_ = 0;
};

// "1 MiB", "64 KiB", "1,000 B": a limit as it would be written.
std::string binary_size(uint64_t bytes) {
  if (bytes > 0 && bytes % (1 << 20) == 0) return with_commas(bytes >> 20) + " MiB";
  if (bytes > 0 && bytes % (1 << 10) == 0) return with_commas(bytes >> 10) + " KiB";
  return with_commas(bytes) + " B";
}

// One pass: a fresh thread, the server with this stream buffer, S subscribers, R
// runs; a row of the table. *from_seq: where the subscriptions start;
// *disconnected: the subscribers the server closed.
status fanout_pass(runtime& rt, size_t subscribers, size_t runs, uint64_t buffer_bytes, bool plot, uint64_t* from_seq,
                   uint64_t* disconnected, table* t, result* out) {
  thread_options o;
  o.agent_id = bench_agent_id;
  manifest m;
  SKEIN_TRY(rt.create_thread(o, &m));
  // The warm-up run: the system prompt is written and the actor active, so every
  // later run writes scripted_events_per_run events.
  SKEIN_TRY(run_checked(rt, m.id, "warm-up"));
  SKEIN_TRY(rt.get_thread(m.id, &m));
  *from_seq = m.last_seq + 1;
  http::server_limits limits;
  std::string buffer = buffer_bytes != limits.stream_buffer_bytes_max ? "raised" : "default";
  limits.stream_buffer_bytes_max = buffer_bytes;
  // The subscribers are the load under test, not the flood connections_max guards against.
  limits.connections_max = std::max(limits.connections_max, subscribers + 64);
  std::unique_ptr<bench_server> srv;
  SKEIN_TRY(bench_server::start(rt, limits, io_threads, &srv));

  subscriber_pool pool{srv->listener->port(), "/v1/threads/" + m.id + "/stream?from_seq=" + std::to_string(*from_seq),
                       subscribers, *from_seq};
  auto connect_start = bench_clock::now();
  SKEIN_TRY(pool.pump([&] { return pool.streaming == subscribers; }, [&] { return connect_start + timeout; },
                      [&] {
                        return std::to_string(pool.streaming) + " of " + std::to_string(subscribers) +
                               " streams open after " + std::to_string(timeout.count()) + " s";
                      }));
  auto first_send = bench_clock::now();
  // The producer runs the runs, one after another, each checked; the reader serves
  // the subscribers meanwhile and, once the producer is done, until each has every event.
  std::atomic<bool> produced{false};
  status produce_status;
  uint64_t events = 0;
  bench_clock::time_point produced_at{};
  std::jthread producer{[&] {
    for (size_t n = 0; n < runs && produce_status; ++n)
      produce_status = run_checked(rt, m.id, "run " + std::to_string(n));
    manifest after;
    if (produce_status) produce_status = rt.get_thread(m.id, &after);
    events = after.last_seq - m.last_seq;
    produced_at = bench_clock::now();
    produced.store(true, std::memory_order_release);
  }};
  auto done = [&] { return produced.load(std::memory_order_acquire) && (!produce_status || pool.delivered(events)); };
  auto deadline = [&] {
    return produced.load(std::memory_order_acquire) ? produced_at + timeout : bench_clock::time_point::max();
  };
  SKEIN_TRY(pool.pump(done, deadline, [&] {
    size_t behind = 0;
    for (const auto& s : pool.subs) behind += !s.ended && s.events < events;
    return std::to_string(behind) + " of " + std::to_string(subscribers) + " subscribers still lacked events " +
           std::to_string(timeout.count()) + " s after the last run";
  }));
  producer.join();
  SKEIN_TRY(produce_status);

  // Every subscriber the server kept got every event, in order, once; the ones it
  // closed are exactly its slow clients, and got a prefix.
  uint64_t delivered = 0, bytes = 0, ended = 0;
  for (size_t i = 0; i < pool.subs.size(); ++i) {
    const subscriber& s = pool.subs[i];
    std::string who = "subscriber " + std::to_string(i) + ": ";
    if (!s.error.empty()) return status::corruption(who + s.error);
    if (s.events > events || (!s.ended && s.events != events))
      return status::corruption(who + std::to_string(s.events) + " events, expected " + std::to_string(events));
    delivered += s.events;
    bytes += s.bytes;
    ended += s.ended;
  }
  *disconnected = srv->listener->counters().slow_clients;
  if (ended != *disconnected)
    return status::corruption(std::to_string(ended) + " streams ended early, but the server closed " +
                              std::to_string(*disconnected) + " slow clients");
  // No event at all (every subscriber closed first) leaves last_event_at unset.
  double seconds = seconds_since(first_send, std::max(first_send, pool.last_event_at));
  double per_s = seconds > 0 ? static_cast<double>(delivered) / seconds : 0;
  t->rows.push_back({text(binary_size(buffer_bytes) + " (" + buffer + ")"), num(events), num(events * subscribers),
                     num(delivered), num(static_cast<double>(bytes) / (1 << 20)),
                     num(seconds_since(connect_start, first_send)), num(seconds_since(first_send, produced_at)),
                     num(seconds), num(per_s), num(*disconnected)});
  if (plot)
    add_bar(out, "throughput-fanout", "fanout: throughput (events delivered/s, higher is better)", "events delivered/s",
            "skein SSE, " + buffer + " stream buffer", per_s);
  return status::ok();
}

}  // namespace

status run_fanout(const bench_options& options, result* out) {
  size_t subscribers = scaled_count(1000, options.scale);
  size_t runs = scaled_count(200, options.scale);
  // Both ends of every subscriber's connection are in this process; the spare fds
  // are RocksDB's files, the listener, stdio. RLIMIT_NOFILE (soft) is raised to
  // what they need, up to the hard limit.
  uint64_t needed = subscribers * 2 + 256;
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0)
    return status::io_error(std::string{"getrlimit(RLIMIT_NOFILE): "} + std::strerror(errno));
  uint64_t nofile_before = rl.rlim_cur, nofile = rl.rlim_cur;
  if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < needed) {
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < needed)
      return status::io_error(std::to_string(subscribers) + " subscribers need " + std::to_string(needed) +
                              " open files (2 a subscriber, 256 spare), but RLIMIT_NOFILE's hard limit is " +
                              std::to_string(rl.rlim_max) + ": raise it (ulimit -Hn) or lower --scale");
    rl.rlim_cur = nofile = needed;
    if (::setrlimit(RLIMIT_NOFILE, &rl) != 0)
      return status::io_error("setrlimit(RLIMIT_NOFILE, " + std::to_string(needed) + "): " + std::strerror(errno));
  }
  std::unique_ptr<runtime> rt;  // durability sync, the default
  SKEIN_TRY(open_bench_runtime(options, "fanout", {}, bench_agent(), &rt));

  table t{"", {col("stream_buffer_bytes_max"), col("events"), col("expected"), col("delivered"), col("", "MB", 1),
               col("subscribe", "s", 2), col("produce", "s", 2), col("deliver", "s", 2), col("events/s", "events/s"),
               col("disconnected")}, {}, {}};
  uint64_t buffer = http::server_limits{}.stream_buffer_bytes_max, from_seq = 0, disconnected = 0, raised = 0;
  SKEIN_TRY(fanout_pass(*rt, subscribers, runs, buffer, options.plot, &from_seq, &disconnected, &t, out));
  // Raised (16 times) only when the default disconnected subscribers at this load.
  if (disconnected > 0)
    SKEIN_TRY(fanout_pass(*rt, subscribers, runs, buffer * 16, options.plot, &from_seq, &raised, &t, out));
  SKEIN_TRY(rt->close());
  std::string limit = with_commas(nofile);
  if (nofile != nofile_before) limit += " (raised from " + with_commas(nofile_before) + ")";
  t.title = "fanout: " + with_commas(subscribers) + " subscribers on one thread's event stream (GET "
            "/v1/threads/{id}/stream?from_seq=" + with_commas(from_seq) + "),\n" + with_commas(runs) +
            " runs from one producer (runtime::send().wait()), scripted engine at 0 ms, durability sync;\n"
            "server in this process on 127.0.0.1 (" + std::to_string(io_threads) +
            " I/O threads); subscribers: non-blocking sockets on one poll() thread\nRLIMIT_NOFILE: " + limit;
  t.notes.push_back(
      "events: the thread's last_seq delta; expected: subscribers x events; delivered: frames with an id:\n"
      "line counted over all subscribers (deltas and keep-alives are not). produce: first send to the last\n"
      "run's end; deliver: first send to the last event at the last subscriber; events/s = delivered / deliver.\n"
      "disconnected: streams the server closed for falling behind (its slow_clients counter).");
  t.notes.push_back(disconnected == 0
                        ? "stream_buffer_bytes_max: the default " + binary_size(buffer) +
                              " disconnected no subscriber at this load; not raised"
                        : "stream_buffer_bytes_max: the default " + binary_size(buffer) + " disconnected " +
                              with_commas(disconnected) + " of " + with_commas(subscribers) +
                              " subscribers at this load, so the\nsecond row raises it to " + binary_size(buffer * 16));
  out->tables.push_back(std::move(t));
  return status::ok();
}

}  // namespace skein::bench
