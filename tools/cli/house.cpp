// house: the `skein house` commands (add, remove): the members of a house, a
// thread several agents answer in. Each row with the route it calls.
#include "runtime/model/json_writer.hpp"
#include "tools/cli/command.hpp"

namespace skein::tools::cli {
namespace {

int house_add(client& c, const invocation& in) {
  std::string body;
  json_writer w{&body};
  w.begin_object();
  w.field("agent", in.a.get("agent"));
  w.field("trigger", in.a.get("trigger", "always"));
  w.end_object();
  http::response r;
  int code = ok;
  if (!c.call(in, 0, "", body, &r, &code)) return code;
  return print_manifest_id(c, r);
}

int house_remove(client& c, const invocation& in) {
  http::response r;
  int code = ok;
  if (!c.call(in, 0, "", "", &r, &code)) return code;
  return print_manifest_id(c, r);
}

constexpr arg thread = pos("thread", "the house");
constexpr arg agent = pos("agent", "the member");

}  // namespace

const std::vector<command>& house_commands() {
  static const std::vector<command> rows = {
      {"house", "add", {"POST /v1/threads/{thread}/members"}, "adds (or re-triggers) a member",
       {thread, agent, opt("--trigger", "always|on_mention", "when it answers (default always)")}, house_add},
      {"house", "remove", {"DELETE /v1/threads/{thread}/members/{agent}"}, "removes a member", {thread, agent},
       house_remove},
  };
  return rows;
}

}  // namespace skein::tools::cli
