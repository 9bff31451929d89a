// eventually: polls a condition until it holds or a limit passes, for states
// that raise no event a test could wait on (timers inside the runtime, a
// server's files, a cluster's election). Returns whether it held.
#pragma once

#include <chrono>
#include <thread>

namespace skein::test {

template <class F>
bool eventually(F done, std::chrono::milliseconds limit = std::chrono::seconds(30)) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

}  // namespace skein::test
