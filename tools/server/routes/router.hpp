// router: finds a request's row among every row of the API (routes.hpp). The
// tables are compiled once, at the first match; a match reads the target's
// percent-decoded segments (http::target_segments) and compares them with each
// row's pattern: literal segments exactly, named ones taking any value. Where
// two rows of one method match a path, the one with more literal segments
// wins. Thread-safe: the compiled tables are constant.
#pragma once

#include <string>
#include <string_view>

#include "tools/server/http.hpp"
#include "tools/server/routes/route.hpp"

namespace skein::server {

struct route_match {
  const route* row = nullptr;  // the row of the path and the method; null when none
  route_params params;         // its named segments
  // No row of this method for the path: the methods of the rows that match
  // the path ("GET, POST", the Allow header of a 405); "" when none does (404).
  std::string allow;
  // The rows of `allow` are open ones: a 405 for them needs no token.
  bool open = false;
  bool malformed = false;  // the target does not parse (400)

  const std::string& param(std::string_view name) const;
};

route_match match_route(const http::request& req);

}  // namespace skein::server
