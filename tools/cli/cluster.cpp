// cluster: the `skein cluster` commands (show, rebalance; the server's admin),
// each row with the routes it calls.
#include <chrono>
#include <cstdio>
#include <thread>

#include "tools/cli/command.hpp"

namespace skein::tools::cli {
namespace {

int cluster_show(client& c, const invocation& in) {
  http::response r;
  int code = ok;
  if (!c.call(in, 0, "", "", &r, &code)) return code;
  return c.print_json(r);
}

// The rebalance a GET /v1/cluster reports.
status rebalance_of(const std::string& body, std::string* phase, uint64_t* moved, uint64_t* remaining,
                    std::string* error) {
  json::document doc;
  json::object_reader o, r;
  json::dom::element el;
  SKEIN_TRY(open_response(body, &doc, &o));
  SKEIN_TRY(o.element("rebalance", &el));
  SKEIN_TRY(json::object_reader::open(el, "response.rebalance", &r));
  SKEIN_TRY(r.string("phase", phase, true));
  SKEIN_TRY(r.uint("moved", moved));
  SKEIN_TRY(r.uint("remaining", remaining));
  return r.string("error", error, false);
}

// Starts a rebalance on the server's node (route 0) and follows it (route 1)
// until it ends: exit 0 once committed, 1 when it failed (its error on stderr).
int cluster_rebalance(client& c, const invocation& in) {
  http::response r;
  int code = ok;
  if (!c.call(in, 0, "", "", &r, &code)) return code;
  std::string last;
  for (;;) {
    if (!c.call(in, 1, "", "", &r, &code)) return code;
    std::string phase, error;
    uint64_t moved = 0, remaining = 0;
    if (status s = rebalance_of(r.body, &phase, &moved, &remaining, &error); !s) return c.unreadable_response(s);
    std::string line = phase + ": " + std::to_string(moved) + " threads moved, " + std::to_string(remaining) + " to go";
    if (line != last && !c.json) std::printf("%s\n", line.c_str());
    last = line;
    if (phase == "committed") return c.json ? c.print_json(r) : ok;
    if (phase == "failed") {
      std::fprintf(stderr, "skein: rebalance failed: %s\n", error.c_str());
      return failed;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the server reports; it does not push
  }
}

// Marks a node of a replicated cluster draining (route 0), or no longer
// (--undo, route 1).
int cluster_drain(client& c, const invocation& in) {
  http::response r;
  int code = ok;
  if (!c.call(in, in.a.has("undo") ? 1 : 0, "", "", &r, &code)) return code;
  if (c.json) return c.print_json(r);
  std::printf("%s: %s\n", in.a.get("node").c_str(),
              in.a.has("undo") ? "no longer draining" : "draining: its partitions' leads move to the others");
  return ok;
}

}  // namespace

const std::vector<command>& cluster_commands() {
  static const std::vector<command> rows = {
      {"cluster", "show", {"GET /v1/cluster"}, "the members, their state and counts, the last rebalance", {},
       cluster_show},
      {"cluster", "rebalance", {"POST /v1/cluster/rebalance", "GET /v1/cluster"},
       "after every node got the new cluster file (SIGHUP): moves the threads whose owner changes, then commits "
       "the new members",
       {}, cluster_rebalance, "exit 1: the rebalance failed"},
      {"cluster", "drain", {"POST /v1/cluster/nodes/{node}/drain", "DELETE /v1/cluster/nodes/{node}/drain"},
       "a replicated cluster: moves a node's partitions to the others before a planned stop (--undo: back)",
       {pos("node", "the node's id"), flag("--undo", "the node is no longer draining")}, cluster_drain,
       "exit 4: the node is not a live member"},
  };
  return rows;
}

}  // namespace skein::tools::cli
