#include "tools/server/http.hpp"

namespace skein::http {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool decode(std::string_view in, bool plus_is_space, std::string* out) {
  out->clear();
  for (size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '%') {
      if (i + 2 >= in.size()) return false;
      int hi = hex_value(in[i + 1]), lo = hex_value(in[i + 2]);
      if (hi < 0 || lo < 0) return false;
      out->push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out->push_back(' ');
    } else {
      out->push_back(c);
    }
  }
  return true;
}

}  // namespace

std::string request::header(const std::string& lower_name) const {
  auto it = headers.find(lower_name);
  return it == headers.end() ? std::string{} : it->second;
}

bool parse_target(std::string_view target, std::string* path, std::map<std::string, std::string>* query) {
  size_t q = target.find('?');
  if (!decode(target.substr(0, q), false, path)) return false;
  query->clear();
  if (q == std::string_view::npos) return true;
  std::string_view rest = target.substr(q + 1);
  while (!rest.empty()) {
    size_t amp = rest.find('&');
    std::string_view pair = rest.substr(0, amp);
    size_t eq = pair.find('=');
    std::string key, value;
    if (!decode(pair.substr(0, eq), true, &key)) return false;
    if (eq != std::string_view::npos && !decode(pair.substr(eq + 1), true, &value)) return false;
    if (!key.empty()) (*query)[key] = value;
    if (amp == std::string_view::npos) break;
    rest = rest.substr(amp + 1);
  }
  return true;
}

std::string percent_encode(std::string_view s) {
  static constexpr char digits[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    bool plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
                 c == '_' || c == '.' || c == '~' || c == ':';
    if (plain) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(digits[c >> 4]);
      out.push_back(digits[c & 15]);
    }
  }
  return out;
}

void captured_reply::reply(response r) {
  std::lock_guard lock{mu_};
  if (done_) return;
  r_ = std::move(r);
  done_ = true;
  cv_.notify_all();
}

std::shared_ptr<event_stream> captured_reply::stream(header_list) {
  reply(response{500, "application/json", R"({"error":{"code":"internal","message":"no streams here"}})", {}});
  return nullptr;
}

response captured_reply::wait() {
  std::unique_lock lock{mu_};
  cv_.wait(lock, [&] { return done_; });
  return r_;
}

bool captured_reply::wait_for(std::chrono::milliseconds timeout, response* out) {
  std::unique_lock lock{mu_};
  if (!cv_.wait_for(lock, timeout, [&] { return done_; })) return false;
  *out = r_;
  return true;
}

}  // namespace skein::http
