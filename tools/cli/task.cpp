// task: the `skein task` command (show: a task's dedicated thread), its row
// with the route it calls.
#include "tools/cli/command.hpp"

namespace skein::tools::cli {
namespace {

int task_show(client& c, const invocation& in) {
  http::response r;
  int code = ok;
  if (!c.call(in, 0, "", "", &r, &code)) return code;
  return print_manifest(c, r);
}

}  // namespace

const std::vector<command>& task_commands() {
  static const std::vector<command> rows = {
      {"task", "show", {"GET /v1/tasks/{task}"}, "the task's dedicated thread", {pos("task", "the task's id")},
       task_show},
  };
  return rows;
}

}  // namespace skein::tools::cli
