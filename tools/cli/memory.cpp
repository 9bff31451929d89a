// memory: the `skein memory` command (search: an agent's messages closest to a
// query), its row with the route it calls.
#include <cstdio>

#include "tools/cli/command.hpp"

namespace skein::tools::cli {
namespace {

// The words after the agent are the query.
int memory_search(client& c, const invocation& in) {
  std::string query;
  for (const auto& word : in.a.all("query")) query += (query.empty() ? "" : " ") + word;
  http::response r;
  int code = ok;
  if (!c.call(in, 0, "?q=" + q(query) + "&k=" + std::to_string(in.a.number("k", 10)), "", &r, &code)) return code;
  std::vector<std::string> items;
  if (status s = json_items(r.body, "hits", &items); !s) return c.unreadable_response(s);
  struct hit {
    std::string thread, role, snippet;
    uint64_t seq = 0;
    double score = 0;
  };
  std::vector<hit> hits;
  for (const auto& text : items) {
    json::document doc;
    json::object_reader o;
    hit& h = hits.emplace_back();
    status s = open_response(text, &doc, &o);
    if (s) s = o.string("thread_id", &h.thread);
    if (s) s = o.uint("seq", &h.seq);
    if (s) s = o.string("role", &h.role);
    if (s) s = o.number("score", &h.score);
    if (s) s = o.string("snippet", &h.snippet);
    if (!s) return c.unreadable_response(s);
  }
  if (c.json) return c.print_json(r);
  std::printf("%-7s %-32s %6s  %-9s %s\n", "SCORE", "THREAD", "SEQ", "ROLE", "SNIPPET");
  for (const auto& h : hits)
    std::printf("%-7.4f %-32s %6llu  %-9s %s\n", h.score, h.thread.c_str(), static_cast<unsigned long long>(h.seq),
                h.role.c_str(), h.snippet.c_str());
  return ok;
}

}  // namespace

const std::vector<command>& memory_commands() {
  static const std::vector<command> rows = {
      {"memory", "search", {"GET /v1/agents/{agent}/memory"}, "the agent's messages closest to the query",
       {pos("agent", "the agent"), pos("query", "the words to look for").many(),
        opt("-k", "N", "hits at most (default 10)").num()},
       memory_search},
  };
  return rows;
}

}  // namespace skein::tools::cli
