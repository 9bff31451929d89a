#include "bench/baselines/opennova_design.hpp"

#include <cassert>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace skein::bench {
namespace {

status os_error(const std::string& what, const std::string& path) {
  return status::io_error(what + " " + path + ": " + std::strerror(errno));
}

// Closes the descriptor it holds when it goes.
class fd_guard {
 public:
  explicit fd_guard(int fd) : fd_(fd) {}
  ~fd_guard() {
    if (fd_ >= 0) ::close(fd_);
  }
  fd_guard(const fd_guard&) = delete;
  fd_guard& operator=(const fd_guard&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

status write_all(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return os_error("write", path);
    data.remove_prefix(static_cast<size_t>(n));
  }
  return status::ok();
}

status read_all(const std::string& path, std::string* out) {
  fd_guard fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (fd.get() < 0) return os_error("open", path);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return os_error("stat", path);
  out->resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < out->size()) {
    ssize_t n = ::read(fd.get(), out->data() + done, out->size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return os_error("read", path);
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  // The per-thread mutex keeps writers out, so the size cannot change under us.
  if (done != out->size()) return status::corruption(path + ": shorter than its size");
  return status::ok();
}

// Writes `data` to a new file at `path` and fsyncs it.
status write_new_file(const std::string& path, std::string_view data) {
  fd_guard fd{::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)};
  if (fd.get() < 0) return os_error("create", path);
  SKEIN_TRY(write_all(fd.get(), data, path));
  if (::fsync(fd.get()) != 0) return os_error("fsync", path);
  return status::ok();
}

status check_line(std::string_view line, const char* what) {
  if (line.empty() || line.find('\n') != std::string_view::npos)
    return status::invalid_input(std::string{what} + ": one non-empty line of JSON expected");
  return status::ok();
}

}  // namespace

opennova_store::opennova_store(std::string dir) : dir_(std::move(dir)) {}

status opennova_store::find(const std::string& thread, thread_file** out) {
  std::lock_guard lock{threads_mutex_};
  auto it = threads_.find(thread);
  if (it == threads_.end()) return status::not_found("opennova thread " + thread);
  *out = it->second.get();
  return status::ok();
}

status opennova_store::create_thread(const std::string& thread, std::string_view manifest_json) {
  SKEIN_TRY(check_line(manifest_json, "manifest"));
  auto file = std::make_unique<thread_file>();
  file->path = dir_ + "/" + thread + ".jsonl";
  thread_file* f = file.get();
  {
    std::lock_guard lock{threads_mutex_};
    if (!threads_.emplace(thread, std::move(file)).second)
      return status::conflict("opennova thread " + thread + " exists");
  }
  std::lock_guard lock{f->mutex};
  std::string line{manifest_json};
  line.push_back('\n');
  return write_new_file(f->path, line);
}

status opennova_store::append_event(const std::string& thread, std::string_view json_line) {
  SKEIN_TRY(check_line(json_line, "event"));
  thread_file* f = nullptr;
  SKEIN_TRY(find(thread, &f));
  std::string line{json_line};
  line.push_back('\n');
  std::lock_guard lock{f->mutex};
  fd_guard fd{::open(f->path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC)};
  if (fd.get() < 0) return os_error("open", f->path);
  SKEIN_TRY(write_all(fd.get(), line, f->path));
  if (::fdatasync(fd.get()) != 0) return os_error("fdatasync", f->path);
  return status::ok();
}

status opennova_store::end_run(const std::string& thread, std::string_view manifest_json) {
  SKEIN_TRY(check_line(manifest_json, "manifest"));
  thread_file* f = nullptr;
  SKEIN_TRY(find(thread, &f));
  std::lock_guard lock{f->mutex};
  std::string old_body;
  SKEIN_TRY(read_all(f->path, &old_body));
  size_t end_of_manifest = old_body.find('\n');
  if (end_of_manifest == std::string::npos)
    return status::corruption(f->path + ": no manifest line");
  std::string body;
  body.reserve(manifest_json.size() + old_body.size() - end_of_manifest);
  body.append(manifest_json);
  body.append(old_body, end_of_manifest, std::string::npos);  // from its "\n" on
  std::string tmp = f->path + ".tmp";
  SKEIN_TRY(write_new_file(tmp, body));
  if (::rename(tmp.c_str(), f->path.c_str()) != 0) return os_error("rename to", f->path);
  return status::ok();
}

status opennova_store::read_thread(const std::string& thread, std::string* manifest_json,
                                   std::vector<std::string>* events) {
  thread_file* f = nullptr;
  SKEIN_TRY(find(thread, &f));
  std::string body;
  {
    std::lock_guard lock{f->mutex};
    SKEIN_TRY(read_all(f->path, &body));
  }
  if (body.empty() || body.back() != '\n')
    return status::corruption(f->path + ": empty or a torn last line");
  events->clear();
  size_t begin = body.find('\n');
  manifest_json->assign(body, 0, begin);
  for (++begin; begin < body.size();) {
    size_t end = body.find('\n', begin);
    assert(end != std::string::npos);  // the body ends in "\n", checked above
    events->emplace_back(body, begin, end - begin);
    begin = end + 1;
  }
  return status::ok();
}

}  // namespace skein::bench
