// Small helpers shared by the skein subcommands.
#pragma once

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "persistence/encryption.hpp"
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

// The master key named by --key-file PATH or --key-env NAME (never the key
// itself); *out stays null when both are empty. Both given: invalid_input with
// field "key" (a usage error).
inline status load_key_flags(const std::string& file, const std::string& env_name,
                             std::shared_ptr<const master_key>* out) {
  out->reset();
  if (!file.empty() && !env_name.empty())
    return status::invalid_input("give the key once: --key-file or --key-env, not both").with_field("key");
  if (file.empty() && env_name.empty()) return status::ok();
  auto key = std::make_shared<master_key>();
  SKEIN_TRY(load_master_key(file.empty() ? key_source::env(env_name) : key_source::file(file), key.get()));
  *out = std::move(key);
  return status::ok();
}

}  // namespace skein::tools
