#include "runtime/model/ids.hpp"

#include <cassert>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <random>

namespace skein {
namespace {

constexpr char base32_alphabet[] = "0123456789abcdefghjkmnpqrstvwxyz";

bool id_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
         c == '_' || c == '.' || c == ':' || c == '-';
}

void append_base32(std::string& out, uint64_t bits, int chars) {
  for (int i = chars - 1; i >= 0; --i) out += base32_alphabet[(bits >> (5 * i)) & 31];
}

uint64_t random_u64() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return rng();
}

}  // namespace

status validate_id(std::string_view id, std::string_view field) {
  std::string name{field};
  if (id.empty()) return status::invalid_input(name + ": must not be empty");
  if (id.size() > id_bytes_max)
    return status::invalid_input(name + ": longer than id_bytes_max (" +
                                 std::to_string(id_bytes_max) + " characters)")
        .with_limit("id_bytes_max")
        .with_field(name);
  for (char c : id) {
    if (!id_char(c))
      return status::invalid_input(name + ": characters must be in [A-Za-z0-9_.:-]");
  }
  if (id.front() == '.') return status::invalid_input(name + ": must not start with '.'");
  if (id.find("..") != std::string_view::npos)
    return status::invalid_input(name + ": must not contain '..'");
  return status::ok();
}

status validate_namespace(std::string_view name, std::string_view field) {
  std::string f{field};
  if (name.empty()) return status::invalid_input(f + ": must not be empty").with_field(f);
  if (name.size() > namespace_name_bytes_max)
    return status::invalid_input(f + ": longer than namespace_name_bytes_max (" +
                                  std::to_string(namespace_name_bytes_max) + " characters)")
        .with_limit("namespace_name_bytes_max")
        .with_field(f);
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (!ok) return status::invalid_input(f + ": characters must be in [a-z0-9_-]").with_field(f);
  }
  if (name.front() == '_' || name.front() == '-')
    return status::invalid_input(f + ": must start with a letter or a digit").with_field(f);
  return status::ok();
}

std::string new_thread_id(int64_t now_ms) { return new_thread_id(now_ms, random_u64()); }

std::string new_thread_id(int64_t now_ms, uint64_t random_bits) {
  std::time_t secs = static_cast<std::time_t>(now_ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char day[48];
  std::snprintf(day, sizeof day, "%04d%02d%02d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday);
  std::string id = "th_";
  id += day;
  id += '_';
  append_base32(id, random_bits, 12);
  assert(validate_id(id, "thread id").is_ok());  // minted ids must pass our own check
  return id;
}

std::string child_thread_id(std::string_view parent, uint64_t n) {
  assert(n >= 1);  // children are numbered from 1
  std::string id{parent};
  id += '.';
  id += std::to_string(n);
  return id;
}

std::string new_run_id() {
  std::string id = "run_";
  uint64_t bits = random_u64();
  append_base32(id, bits, 12);
  append_base32(id, random_u64(), 4);
  return id;
}

int64_t now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

}  // namespace skein
