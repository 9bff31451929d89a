// free_port: a TCP port on loopback reserved for this process, for a test that
// must name ports before its servers listen (a cluster file).
//
// Reserved, not just free now: the probe socket stays bound for the rest of the
// process, with SO_REUSEADDR set after its bind. A server that listens with
// SO_REUSEADDR (CAF's publish with reuse, as the cluster link does; a child
// process alike) binds beside it, while another process's probe, which binds
// without it, is refused. Before, the probe was closed at once, and two test
// processes of a parallel ctest could pick the same port: one node then failed
// to open ("cannot listen on 127.0.0.1:30662"), about once in a few full runs.
//
// Picked at random below the kernel's ephemeral range (read from
// /proc/sys/net/ipv4/ip_local_port_range; 32768 when unreadable), not by
// binding port 0: an ephemeral port is what every outgoing connection and
// every server on port 0 takes next, so the suite's own clients could grab it
// between the pick and the listen (seen as a cluster serve test failing at
// start when run beside the others).
#pragma once

#include <arpa/inet.h>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <netinet/in.h>
#include <random>
#include <set>
#include <sys/socket.h>
#include <unistd.h>

namespace skein::test {

inline uint16_t free_port() {
  static thread_local std::mt19937 rng{static_cast<uint32_t>(::getpid()) * 2654435761u ^
                                       static_cast<uint32_t>(std::chrono::steady_clock::now().time_since_epoch().count())};
  uint32_t low = 32768;
  {
    std::ifstream range{"/proc/sys/net/ipv4/ip_local_port_range"};
    uint32_t from = 0;
    if (range >> from && from > 12000) low = from;
  }
  std::uniform_int_distribution<uint32_t> pick{10000, low - 1};
  static thread_local std::set<uint16_t> given;  // never the same port twice in one process
  for (int attempt = 0; attempt < 200; ++attempt) {
    uint16_t port = static_cast<uint16_t>(pick(rng));
    if (given.count(port)) continue;
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      ::close(fd);
      continue;
    }
    int on = 1;
    REQUIRE(::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) == 0);
    given.insert(port);  // the socket stays open: the process's reservation
    return port;
  }
  FAIL("no free loopback port below " << low << " in 200 tries");
  return 0;
}

}  // namespace skein::test
