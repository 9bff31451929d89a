// temp_dir: a fresh directory under the system temp dir, removed with everything
// in it when the object goes out of scope. One per test. memory_base() names a
// RAM-backed directory where one exists, for tests that sync a lot and measure
// logic, not the disk.
#pragma once

#include <filesystem>
#include <random>
#include <string>

namespace skein::test {

class temp_dir {
 public:
  // base: where to create it; empty: the system temp dir.
  explicit temp_dir(std::filesystem::path base = {}) {
    std::random_device rd;
    if (base.empty()) base = std::filesystem::temp_directory_path();
    for (;;) {
      path_ = base / ("skein-test-" + std::to_string(rd()) + std::to_string(rd()));
      if (std::filesystem::create_directory(path_)) break;
    }
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;

  static std::filesystem::path memory_base() {
    std::error_code ec;
    if (std::filesystem::is_directory("/dev/shm", ec)) return "/dev/shm";
    return {};
  }

  const std::filesystem::path& path() const { return path_; }
  std::string str(const std::string& sub = "db") const { return (path_ / sub).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace skein::test
