// Small helpers shared by the skein subcommands.
#pragma once

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <string>

#include "runtime/model/status.hpp"

namespace skein::tools {

inline bool parse_u64(const std::string& text, uint64_t* out) {
  auto r = std::from_chars(text.data(), text.data() + text.size(), *out);
  return !text.empty() && r.ec == std::errc{} && r.ptr == text.data() + text.size();
}

inline std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

// Prints "<who>: <status>" to stderr and returns `code`.
inline int fail(const char* who, const status& s, int code) {
  std::fprintf(stderr, "%s: %s\n", who, s.to_string().c_str());
  return code;
}

}  // namespace skein::tools
