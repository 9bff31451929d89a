#include "tools/server/http.hpp"

#include <boost/url/encode.hpp>
#include <boost/url/grammar/lut_chars.hpp>
#include <boost/url/params_view.hpp>
#include <boost/url/parse_path.hpp>
#include <boost/url/parse_query.hpp>
#include <boost/url/pct_string_view.hpp>
#include <boost/url/rfc/pchars.hpp>
#include <boost/url/rfc/unreserved_chars.hpp>

namespace skein::http {
namespace {

namespace urls = boost::urls;

// What a target's path and query may hold as they are: RFC 3986's pchar, '/',
// and the query's '?'. A '%' starts an escape, which the grammars check.
constexpr urls::grammar::lut_chars path_chars = urls::pchars + '/';
constexpr urls::grammar::lut_chars query_chars = urls::pchars + urls::grammar::lut_chars("/?");

// `part` with every byte outside `allowed` and '%' escaped, so that the grammar
// takes it as the byte it is; `part` itself when there is none (the usual case).
std::string_view escaped(std::string_view part, const urls::grammar::lut_chars& allowed, std::string* storage) {
  const urls::grammar::lut_chars as_is = allowed + '%';
  if (urls::grammar::find_if_not(part.data(), part.data() + part.size(), as_is) == part.data() + part.size())
    return part;
  storage->clear();
  for (size_t at = 0;;) {  // the pieces between escapes, each encoded; the '%'s kept
    size_t pct = part.find('%', at);
    *storage += urls::encode(part.substr(at, pct == std::string_view::npos ? pct : pct - at), allowed);
    if (pct == std::string_view::npos) return *storage;
    *storage += '%';
    at = pct + 1;
  }
}

// The path part of a target (before its first '?'), parsed.
urls::result<urls::segments_encoded_view> parsed_path(std::string_view target, std::string* storage) {
  return urls::parse_path(escaped(target.substr(0, target.find('?')), path_chars, storage));
}

}  // namespace

std::string request::header(const std::string& lower_name) const {
  auto it = headers.find(lower_name);
  return it == headers.end() ? std::string{} : it->second;
}

bool parse_target(std::string_view target, std::string* path, std::map<std::string, std::string>* query) {
  std::string storage;
  auto segments = parsed_path(target, &storage);
  if (!segments) return false;
  *path = segments->buffer().decode();
  query->clear();
  size_t q = target.find('?');
  if (q == std::string_view::npos) return true;
  auto params = urls::parse_query(escaped(target.substr(q + 1), query_chars, &storage));
  if (!params) return false;
  urls::encoding_opts plus_is_space;
  plus_is_space.space_as_plus = true;
  for (auto param : urls::params_view(*params, plus_is_space))
    if (!param.key.empty()) (*query)[std::string{param.key}] = std::string{param.value};
  return true;
}

// Each piece between the path's '/'s, decoded. Not segments_view's segments:
// it keeps a leading "/." as a prefix, no segment, and so would route
// "/./healthz" as "/healthz" while the request's path says otherwise.
bool target_segments(std::string_view target, std::vector<std::string>* out) {
  std::string storage;
  auto segments = parsed_path(target, &storage);
  if (!segments) return false;
  out->clear();
  std::string_view path = segments->buffer();
  if (path.empty()) return true;
  if (path.front() == '/') path.remove_prefix(1);
  for (size_t at = 0;;) {
    size_t slash = path.find('/', at);
    auto segment = urls::make_pct_string_view(path.substr(at, slash == std::string_view::npos ? slash : slash - at));
    if (!segment) return false;  // parse_path checked every escape already
    out->push_back(segment->decode());
    if (slash == std::string_view::npos) return true;
    at = slash + 1;
  }
}

std::string percent_encode(std::string_view s) {
  constexpr urls::grammar::lut_chars plain = urls::unreserved_chars + ':';
  return urls::encode(s, plain);
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
