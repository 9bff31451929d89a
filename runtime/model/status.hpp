// status: the outcome of an operation that can fail for expected reasons.
//
// One error vocabulary for all of skein. Expected failures are values, never
// exceptions: a function that can fail returns a [[nodiscard]] status and writes
// its result through an out-parameter. Cheap to copy when ok (no allocation).
// Not thread-safe to share a single instance across threads while mutating it.
//
// A failure may name the limit it hit (`limit()`, e.g. "json_depth_max") and the
// field it concerns (`field()`, e.g. "from_seq"). They travel as values to the
// HTTP body and the CLI's exit code; nothing downstream re-parses the message.
// Messages quote client input through quote_input(), so an error never grows
// with the input that caused it.
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
  budget_exceeded = 8,  // an agent's daily budget is spent (agent.hpp, run_budgets)
  quota_exceeded = 9,   // a database's quota is reached (event_log.hpp, log_quota)
  unavailable = 10,     // the cluster node that owns the thread cannot be reached (cluster.hpp)
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
  static status budget_exceeded(std::string msg) { return {errc::budget_exceeded, std::move(msg)}; }
  static status quota_exceeded(std::string msg) { return {errc::quota_exceeded, std::move(msg)}; }
  static status unavailable(std::string msg) { return {errc::unavailable, std::move(msg)}; }

  status(errc code, std::string message) : code_(code), message_(std::move(message)) {}

  // Names the limit that was hit: `status::invalid_input(msg).with_limit("json_depth_max")`.
  status with_limit(std::string limit) && {
    limit_ = std::move(limit);
    return std::move(*this);
  }
  status with_limit(std::string limit) const& { return status{*this}.with_limit(std::move(limit)); }
  // Names the input field at fault: `.with_field("from_seq")`.
  status with_field(std::string field) && {
    field_ = std::move(field);
    return std::move(*this);
  }
  status with_field(std::string field) const& { return status{*this}.with_field(std::move(field)); }

  bool is_ok() const { return code_ == errc::ok; }
  explicit operator bool() const { return is_ok(); }
  errc code() const { return code_; }
  const std::string& message() const { return message_; }
  const std::string& limit() const { return limit_; }  // "" when no limit was hit
  const std::string& field() const { return field_; }  // "" when no one field is at fault

  // "invalid_input: thread id: longer than 128 characters"
  std::string to_string() const;

  // Explicitly drop a status the caller has decided not to handle.
  void ignore() const {}

 private:
  errc code_ = errc::ok;
  std::string message_;
  std::string limit_;
  std::string field_;
};

// Bytes of client input an error message quotes at most.
inline constexpr size_t quoted_input_bytes_max = 200;

// `text` for an error message: cut at quoted_input_bytes_max (on a UTF-8
// boundary) with "..." and the full size appended, so a message stays small
// whatever the input was.
std::string quote_input(std::string_view text, size_t bytes_max = quoted_input_bytes_max);

}  // namespace skein

// Returns early from the enclosing function when `expr` yields a failed status.
#define SKEIN_TRY(expr)                   \
  do {                                    \
    ::skein::status skein_try_s_ = (expr); \
    if (!skein_try_s_.is_ok()) return skein_try_s_; \
  } while (0)
