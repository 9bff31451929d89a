// raw_conn: a blocking TCP connection to a server on loopback, with a receive
// timeout that bounds every wait, for tests that speak HTTP/1.1 by hand: what no
// well-behaved client sends (a head announcing a body that never comes, a body in
// pieces, pipelined requests) and what it reads back byte for byte.
#pragma once

#include <arpa/inet.h>
#include <catch2/catch.hpp>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace skein::test {

class raw_conn {
 public:
  explicit raw_conn(uint16_t port, std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd_ >= 0);
    timeval tv{static_cast<time_t>(timeout.count() / 1000), static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  }
  ~raw_conn() { ::close(fd_); }
  raw_conn(const raw_conn&) = delete;
  raw_conn& operator=(const raw_conn&) = delete;

  // All of `bytes`, or false when the connection broke first.
  bool send(const std::string& bytes) {
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return true;
  }

  // The status code of the next response (its body in *body), or 0 when none
  // came before the timeout or the server closed first.
  int read_response(std::string* body = nullptr) {
    std::string head, content;
    if (!next_response(&head, &content)) return 0;
    if (body != nullptr) *body = std::move(content);
    return std::stoi(head.substr(9, 3));
  }

  // Reads `count` more whole responses into *bodies; true when they came and
  // nothing after them.
  bool read_responses(size_t count, std::vector<std::string>* bodies) {
    for (size_t i = 0; i < count; ++i) {
      std::string head, body;
      if (!next_response(&head, &body)) return false;
      bodies->push_back(std::move(body));
    }
    return in_.empty();
  }

  // What arrives next, appended to *out; false when the server closed or the
  // receive timeout passed first.
  bool read_some(std::string* out) {
    if (!in_.empty()) {
      out->append(std::exchange(in_, {}));
      return true;
    }
    char buf[4096];
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) return false;
    out->append(buf, static_cast<size_t>(n));
    return true;
  }

  // Everything until the server closes the connection (true), or the receive
  // timeout passes first (false).
  bool read_until_closed(std::string* out) {
    out->append(std::exchange(in_, {}));
    char buf[4096];
    for (;;) {
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n == 0) return true;
      if (n < 0) return errno == ECONNRESET;
      out->append(buf, static_cast<size_t>(n));
    }
  }

 private:
  // One response with a Content-Length body (none: empty).
  bool next_response(std::string* head, std::string* body) {
    char buf[4096];
    for (;;) {
      size_t head_end = in_.find("\r\n\r\n");
      if (head_end != std::string::npos) {
        size_t length = 0;
        auto cl = in_.find("Content-Length: ");
        if (cl != std::string::npos && cl < head_end) length = std::stoul(in_.substr(cl + 16));
        if (in_.size() >= head_end + 4 + length) {
          *head = in_.substr(0, head_end);
          *body = in_.substr(head_end + 4, length);
          in_.erase(0, head_end + 4 + length);
          return true;
        }
      }
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return false;
      in_.append(buf, static_cast<size_t>(n));
    }
  }

  int fd_ = -1;
  std::string in_;  // read and not yet taken
};

}  // namespace skein::test
