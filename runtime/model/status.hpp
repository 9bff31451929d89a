// status: the outcome of an operation that can fail for expected reasons.
//
// One error vocabulary for all of skein. Expected failures are values, never
// exceptions: a function that can fail returns a [[nodiscard]] status and writes
// its result through an out-parameter. Cheap to copy when ok (no allocation).
// Not thread-safe to share a single instance across threads while mutating it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace skein {

// Codes are stable: they cross process boundaries (HTTP bodies, CAF errors).
enum class errc : uint8_t {
  ok = 0,
  not_found = 1,
  invalid_input = 2,
  conflict = 3,
  corruption = 4,
  io_error = 5,
  no_space = 6,
  overloaded = 7,
};

// "not_found", "invalid_input", ...
std::string_view to_string(errc code);

class [[nodiscard]] status {
 public:
  status() = default;

  static status ok() { return status{}; }
  static status not_found(std::string msg) { return {errc::not_found, std::move(msg)}; }
  static status invalid_input(std::string msg) { return {errc::invalid_input, std::move(msg)}; }
  static status conflict(std::string msg) { return {errc::conflict, std::move(msg)}; }
  static status corruption(std::string msg) { return {errc::corruption, std::move(msg)}; }
  static status io_error(std::string msg) { return {errc::io_error, std::move(msg)}; }
  static status no_space(std::string msg) { return {errc::no_space, std::move(msg)}; }
  static status overloaded(std::string msg) { return {errc::overloaded, std::move(msg)}; }

  status(errc code, std::string message) : code_(code), message_(std::move(message)) {}

  bool is_ok() const { return code_ == errc::ok; }
  explicit operator bool() const { return is_ok(); }
  errc code() const { return code_; }
  const std::string& message() const { return message_; }

  // "invalid_input: thread id: longer than 128 characters"
  std::string to_string() const;

  // Explicitly drop a status the caller has decided not to handle.
  void ignore() const {}

 private:
  errc code_ = errc::ok;
  std::string message_;
};

}  // namespace skein

// Returns early from the enclosing function when `expr` yields a failed status.
#define SKEIN_TRY(expr)                   \
  do {                                    \
    ::skein::status skein_try_s_ = (expr); \
    if (!skein_try_s_.is_ok()) return skein_try_s_; \
  } while (0)
