// Fuzz target: raw bytes from a socket through Beast's request parser, with the
// server's limits, then into a request value as the server builds it
// (http_server.cpp): where untrusted bytes first meet skein. Checks that the
// target's path decodes to something percent_encode gives back.
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cstdint>
#include <string>

#include "tests/fuzz/fuzz_check.hpp"
#include "tools/server/http.hpp"
#include "tools/server/http_server.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace beast = boost::beast;
  namespace bhttp = boost::beast::http;
  static const skein::http::server_limits limits{};

  bhttp::request_parser<bhttp::string_body> parser;
  parser.header_limit(static_cast<std::uint32_t>(limits.header_bytes_max));
  parser.body_limit(limits.body_bytes_max);
  parser.eager(true);
  beast::error_code ec;
  size_t used = parser.put(boost::asio::buffer(data, size), ec);
  SKEIN_FUZZ_CHECK(used <= size, "the parser consumes at most what it is given");
  if (!ec && !parser.is_done()) parser.put_eof(ec);
  if (ec || !parser.is_done()) return 0;

  auto msg = parser.release();
  skein::http::request req;
  req.method = std::string{msg.method_string()};
  req.target = std::string{msg.target()};
  if (!skein::http::parse_target(req.target, &req.path, &req.query)) return 0;
  for (const auto& field : msg) {
    std::string name{field.name_string()};
    for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    req.headers[name] = std::string{field.value()};
  }
  req.body = std::move(msg.body());

  std::string path_again;
  std::map<std::string, std::string> query_again;
  SKEIN_FUZZ_CHECK(skein::http::parse_target(skein::http::percent_encode(req.path), &path_again, &query_again),
                   "an encoded path parses");
  SKEIN_FUZZ_CHECK(path_again == req.path, "a path round-trips through percent_encode");
  SKEIN_FUZZ_CHECK(query_again.empty(), "an encoded path has no query");
  return 0;
}
