#include "tools/server/ui.hpp"

namespace skein::server {
namespace {

constexpr std::string_view ui_root = "/ui";

// No inline script or style anywhere: an event's text that slipped into the DOM
// as markup still could not run. connect-src covers the page's fetch() calls to
// the API of this same origin; nothing may frame the page or post a form.
constexpr const char* content_security_policy =
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

std::string_view content_type_of(std::string_view name) {
  auto ends_with = [&](std::string_view ext) { return name.ends_with(ext); };
  if (ends_with(".html")) return "text/html; charset=utf-8";
  if (ends_with(".js")) return "text/javascript; charset=utf-8";
  if (ends_with(".css")) return "text/css; charset=utf-8";
  return "application/octet-stream";
}

// If-None-Match: "*" or a comma-separated list of (possibly weak) etags.
bool etag_matches(std::string_view header, std::string_view etag) {
  if (header == "*") return true;
  while (!header.empty()) {
    size_t comma = header.find(',');
    std::string_view one = header.substr(0, comma);
    while (!one.empty() && one.front() == ' ') one.remove_prefix(1);
    while (!one.empty() && one.back() == ' ') one.remove_suffix(1);
    if (one.starts_with("W/")) one.remove_prefix(2);
    if (one == etag) return true;
    if (comma == std::string_view::npos) break;
    header.remove_prefix(comma + 1);
  }
  return false;
}

}  // namespace

bool is_ui_path(std::string_view path) {
  return path == ui_root || (path.starts_with(ui_root) && path.size() > ui_root.size() && path[ui_root.size()] == '/');
}

const embedded_file* find_ui_file(std::string_view path) {
  if (!is_ui_path(path)) return nullptr;
  std::string_view name = path.substr(ui_root.size());
  if (!name.empty()) name.remove_prefix(1);  // the '/'
  if (name.empty()) name = "index.html";
  for (const embedded_file& f : ui_files())
    if (f.name == name) return &f;
  return nullptr;
}

http::response ui_file_response(const embedded_file& file, const http::request& req) {
  http::response r;
  r.content_type = std::string{content_type_of(file.name)};
  r.headers = {{"Content-Security-Policy", content_security_policy},
               {"X-Content-Type-Options", "nosniff"},
               {"Referrer-Policy", "no-referrer"},
               // Revalidated on every load: a new binary's files show at once, an
               // unchanged one costs a 304.
               {"Cache-Control", "no-cache"},
               {"ETag", std::string{file.etag}}};
  if (etag_matches(req.header("if-none-match"), file.etag)) {
    r.status = 304;
    return r;
  }
  r.body = std::string{file.bytes};
  return r;
}

}  // namespace skein::server
