#include "runtime/model/status.hpp"

namespace skein {

std::string_view to_string(errc code) {
  switch (code) {
    case errc::ok: return "ok";
    case errc::not_found: return "not_found";
    case errc::invalid_input: return "invalid_input";
    case errc::conflict: return "conflict";
    case errc::corruption: return "corruption";
    case errc::io_error: return "io_error";
    case errc::no_space: return "no_space";
    case errc::overloaded: return "overloaded";
    case errc::budget_exceeded: return "budget_exceeded";
    case errc::quota_exceeded: return "quota_exceeded";
    case errc::unavailable: return "unavailable";
  }
  return "unknown";
}

std::string status::to_string() const {
  if (is_ok()) return "ok";
  std::string out{skein::to_string(code_)};
  if (!message_.empty()) {
    out += ": ";
    out += message_;
  }
  return out;
}

std::string quote_input(std::string_view text, size_t bytes_max) {
  if (text.size() <= bytes_max) return std::string{text};
  size_t cut = bytes_max;
  // Back up over UTF-8 continuation bytes so the cut never splits a character.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return std::string{text.substr(0, cut)} + "... (" + std::to_string(text.size()) + " bytes)";
}

}  // namespace skein
