// The /ui viewer's files (tools/server/ui.hpp) through real HTTP: served without
// a token, with their content types, a strict CSP and revalidation; nothing
// else under /ui exists, and the API around it still wants its token.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cctype>
#include <fstream>
#include <sstream>

#include "tests/support/server_fixture.hpp"

using namespace skein;
using namespace skein::test;

namespace {

constexpr const char* admin_token = "ui-test-admin-token-0123456789";

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::string header(const http::response& r, const std::string& name) {
  for (const auto& [k, v] : r.headers)
    if (lower(k) == lower(name)) return v;
  return "";
}

std::string source_file(const std::string& name) {
  std::ifstream in{std::string{SKEIN_UI_DIR} + "/" + name, std::ios::binary};
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("ui: the viewer's files are served without a token, typed, under a strict CSP") {
  server_fixture f{{}, {}, std::string{admin_token} + " admin\n"};
  struct expected_file {
    const char* path;
    const char* file;
    const char* content_type;
  };
  for (auto [path, file, type] : {expected_file{"/ui", "index.html", "text/html; charset=utf-8"},
                                  expected_file{"/ui/", "index.html", "text/html; charset=utf-8"},
                                  expected_file{"/ui/app.js", "app.js", "text/javascript; charset=utf-8"},
                                  expected_file{"/ui/style.css", "style.css", "text/css; charset=utf-8"}}) {
    INFO(path);
    auto r = f.call("GET", path);
    REQUIRE(r.status == 200);
    CHECK(r.content_type == type);
    // The build embeds the files as they are in the source tree.
    CHECK(r.body == source_file(file));
    CHECK_FALSE(r.body.empty());
    std::string csp = header(r, "Content-Security-Policy");
    CHECK(csp.find("default-src 'self'") != std::string::npos);
    CHECK(csp.find("script-src 'self'") != std::string::npos);
    CHECK(csp.find("object-src 'none'") != std::string::npos);
    CHECK(csp.find("frame-ancestors 'none'") != std::string::npos);
    CHECK(csp.find("unsafe") == std::string::npos);
    CHECK(header(r, "X-Content-Type-Options") == "nosniff");
    CHECK(header(r, "Cache-Control") == "no-cache");
    CHECK(header(r, "ETag").size() == 18);  // a quoted 16-hex-digit digest
  }
}

TEST_CASE("ui: the page holds no inline script or style for the CSP to refuse") {
  server_fixture f;
  std::string html = f.call("GET", "/ui").body;
  size_t scripts = 0;
  for (size_t at = html.find("<script"); at != std::string::npos; at = html.find("<script", at + 1)) {
    ++scripts;
    std::string tag = html.substr(at, html.find('>', at) - at);
    INFO(tag);
    CHECK(tag.find("src=\"/ui/app.js\"") != std::string::npos);  // absolute: the page is also at /ui
  }
  CHECK(scripts == 1);
  CHECK(html.find("<style") == std::string::npos);
  CHECK(html.find(" style=") == std::string::npos);
  CHECK(html.find(" onclick=") == std::string::npos);
  CHECK(html.find("href=\"/ui/style.css\"") != std::string::npos);
  // The script puts the server's text in as text only.
  std::string js = f.call("GET", "/ui/app.js").body;
  CHECK(js.find(".innerHTML") == std::string::npos);
  CHECK(js.find("insertAdjacentHTML") == std::string::npos);
  CHECK(js.find("document.write") == std::string::npos);
}

TEST_CASE("ui: an unchanged file revalidates to a 304 without a body") {
  server_fixture f;
  auto first = f.call("GET", "/ui/app.js");
  std::string etag = header(first, "ETag");
  REQUIRE_FALSE(etag.empty());
  auto again = f.call("GET", "/ui/app.js", "", "", {{"If-None-Match", etag}});
  CHECK(again.status == 304);
  CHECK(again.body.empty());
  CHECK(header(again, "ETag") == etag);
  auto weak = f.call("GET", "/ui/app.js", "", "", {{"If-None-Match", "\"other\", W/" + etag}});
  CHECK(weak.status == 304);
  auto other = f.call("GET", "/ui/app.js", "", "", {{"If-None-Match", "\"0000000000000000\""}});
  CHECK(other.status == 200);
  CHECK(other.body == first.body);
  CHECK(header(f.call("GET", "/ui/style.css"), "ETag") != etag);
}

TEST_CASE("ui: nothing else under /ui, and the API still wants its token") {
  server_fixture f{{}, {}, std::string{admin_token} + " admin\n"};
  for (const char* path : {"/ui/x", "/ui/app.js/", "/ui/../v1/threads", "/ui/ui/app.js", "/ui//app.js"}) {
    INFO(path);
    auto r = f.call("GET", path);
    CHECK(r.status == 404);
    CHECK(error_code(r.body) == "not_found");
    CHECK(header(r, "Content-Security-Policy").empty());
  }
  auto post = f.call("POST", "/ui", "{}");
  CHECK(post.status == 405);
  CHECK(header(post, "Allow") == "GET");
  // A body to /ui is refused from the head: without a token it is never read.
  auto big = f.call("PUT", "/ui/app.js", std::string(64 << 10, 'x'));
  CHECK(big.status == 405);
  CHECK(f.srv->counters().rejected >= 2);
  // Only /ui and what is under /ui/ go without a token.
  CHECK(f.call("GET", "/uix").status == 401);
  CHECK(f.call("GET", "/v1/threads").status == 401);
  CHECK(f.call("GET", "/v1/threads", "", admin_token).status == 200);
}
