// usage: the `skein usage` command (a command of one word): token and cost
// totals as a table, its row with the route it calls.
#include <cstdio>

#include "runtime/model/json_codec.hpp"
#include "tools/cli/command.hpp"

namespace skein::tools::cli {
namespace {

int usage_show(client& c, const invocation& in) {
  std::string query = query_params(in.a, {"agent", "thread", "since", "until", "group-by"});
  if (!query.empty()) query[0] = '?';
  http::response r;
  int code = ok;
  if (!c.call(in, 0, query, "", &r, &code)) return code;
  std::vector<std::string> items;
  if (status s = json_items(r.body, "groups", &items); !s) return c.unreadable_response(s);
  struct row {
    std::string key;
    token_usage usage;
    double cost_usd = 0;
    uint64_t runs = 0, duration_ms = 0;
  };
  std::vector<row> rows;
  for (const auto& text : items) {
    json::document doc;
    json::object_reader o, u;
    json::dom::element ue;
    row x;
    status s = open_response(text, &doc, &o);
    if (s) s = o.string("key", &x.key);
    if (s) s = o.element("usage", &ue);
    if (s) s = json::object_reader::open(ue, "usage", &u);
    if (s) s = u.uint("input_tokens", &x.usage.input_tokens);
    if (s) s = u.uint("output_tokens", &x.usage.output_tokens);
    if (s) s = u.uint("cache_read_tokens", &x.usage.cache_read_tokens);
    if (s) s = u.uint("cache_write_tokens", &x.usage.cache_write_tokens);
    if (s) s = o.number("cost_usd", &x.cost_usd);
    if (s) s = o.uint("runs", &x.runs);
    if (s) s = o.uint("duration_ms", &x.duration_ms);
    if (!s) return c.unreadable_response(s);
    rows.push_back(std::move(x));
  }
  if (c.json) return c.print_json(r);
  std::printf("%-32s %8s %12s %12s %12s %12s %12s %12s\n", "GROUP", "RUNS", "INPUT", "OUTPUT", "CACHE_READ",
              "CACHE_WRITE", "COST_USD", "DURATION_MS");
  for (const auto& x : rows)
    std::printf("%-32s %8llu %12llu %12llu %12llu %12llu %12.4f %12llu\n", x.key.empty() ? "(all)" : x.key.c_str(),
                static_cast<unsigned long long>(x.runs), static_cast<unsigned long long>(x.usage.input_tokens),
                static_cast<unsigned long long>(x.usage.output_tokens),
                static_cast<unsigned long long>(x.usage.cache_read_tokens),
                static_cast<unsigned long long>(x.usage.cache_write_tokens), x.cost_usd,
                static_cast<unsigned long long>(x.duration_ms));
  json::document doc;
  json::object_reader o;
  uint64_t skipped = 0;
  if (open_response(r.body, &doc, &o).is_ok() && o.uint("unreadable", &skipped, false).is_ok() && skipped > 0)
    std::fprintf(stderr, "skein: %llu usage rows could not be read and were skipped\n",
                 static_cast<unsigned long long>(skipped));
  return ok;
}

}  // namespace

const std::vector<command>& usage_commands() {
  static const std::vector<command> rows = {
      {"usage", "", {"GET /v1/usage"}, "token and cost totals, [S, U)",
       {opt("--agent", "A", "of this agent"), opt("--thread", "T", "of this thread"),
        opt("--since", "S", "from: ms since the epoch or RFC 3339 UTC (2026-11-23, 2026-11-23T10:00:00Z)"),
        opt("--until", "U", "until (excluded), as --since"), opt("--group-by", "agent|thread|day", "one row per group")},
       usage_show},
  };
  return rows;
}

}  // namespace skein::tools::cli
