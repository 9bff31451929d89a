// The viewer's routes: GET /ui (and /ui/) and the files under it (ui.hpp),
// open to any caller, since they hold no data. Any other path under /ui is a
// 404 without a token (api.cpp).
#include "tools/server/routes/routes.hpp"
#include "tools/server/ui.hpp"

namespace skein::server {
namespace {

// The file the request's path names ("/ui/" and "/ui" name index.html): the
// decoded path, so "/ui//app.js" and "/ui/app.js/" name none.
void ui_file(route_call& c) {
  const embedded_file* file = find_ui_file(c.req.path);
  if (!file) return c.fail(status::not_found("no route " + quote_input(c.req.path)));
  c.reply(ui_file_response(*file, c.req));
}

constexpr route rows[] = {
    {.method = "GET", .pattern = "/ui", .scope = route_scope::open, .handler = ui_file},
    {.method = "GET", .pattern = "/ui/{file}", .scope = route_scope::open, .handler = ui_file},
};

}  // namespace

std::span<const route> ui_routes() { return rows; }

}  // namespace skein::server
