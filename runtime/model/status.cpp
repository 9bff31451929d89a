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

}  // namespace skein
