// GET /v1/usage: the totals of the usage rows (runtime::usage), grouped by
// agent, thread or UTC day, over a time range.
#include <ctime>
#include <limits>

#include "runtime/model/ids.hpp"
#include "runtime/model/json_codec.hpp"
#include "runtime/model/json_writer.hpp"
#include "tools/server/routes/routes.hpp"

namespace skein::server {
namespace {

// A time parameter: ms since the epoch, or an RFC 3339 UTC date or date-time
// ("2026-11-23", "2026-11-23T10:00:00Z", with optional fractional seconds).
status parse_time_ms(const std::string& text, const std::string& field, int64_t* out) {
  if (!text.empty() && text.find_first_not_of("0123456789") == std::string::npos) {
    uint64_t v = 0;
    SKEIN_TRY(parse_uint(text, field, &v));
    if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return status::invalid_input(field + ": out of range").with_field(field);
    *out = static_cast<int64_t>(v);
    return status::ok();
  }
  auto bad = [&] {
    return status::invalid_input(field + ": expected ms since the epoch or an RFC 3339 UTC time like 2026-11-23 or 2026-11-23T10:00:00Z, got " +
                                 quote_input(text))
        .with_field(field);
  };
  auto digits = [&](size_t at, size_t n, int* v) {
    if (at + n > text.size()) return false;
    *v = 0;
    for (size_t i = at; i < at + n; ++i) {
      if (text[i] < '0' || text[i] > '9') return false;
      *v = *v * 10 + (text[i] - '0');
    }
    return true;
  };
  tm t{};
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0, ms = 0;
  if (!digits(0, 4, &year) || text.size() < 10 || text[4] != '-' || !digits(5, 2, &month) || text[7] != '-' ||
      !digits(8, 2, &day))
    return bad();
  size_t i = 10;
  if (i < text.size()) {
    if ((text[i] != 'T' && text[i] != 't') || !digits(i + 1, 2, &hour) || text.size() < i + 9 || text[i + 3] != ':' ||
        !digits(i + 4, 2, &minute) || text[i + 6] != ':' || !digits(i + 7, 2, &second))
      return bad();
    i += 9;
    if (i < text.size() && text[i] == '.') {  // fractional seconds: ms kept, the rest dropped
      size_t j = i + 1, n = 0;
      for (; j < text.size() && text[j] >= '0' && text[j] <= '9'; ++j, ++n)
        if (n < 3) ms = ms * 10 + (text[j] - '0');
      if (n == 0) return bad();
      for (; n < 3; ++n) ms *= 10;
      i = j;
    }
    std::string_view zone = std::string_view{text}.substr(i);
    if (zone != "Z" && zone != "z" && zone != "+00:00") return bad();
  }
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) return bad();
  t.tm_year = year - 1900;
  t.tm_mon = month - 1;
  t.tm_mday = day;
  t.tm_hour = hour;
  t.tm_min = minute;
  t.tm_sec = second;
  time_t secs = ::timegm(&t);
  if (t.tm_mday != day) return bad();  // 2026-02-30 normalizes to another day
  *out = static_cast<int64_t>(secs) * 1000 + ms;
  return status::ok();
}

// GET /v1/usage: totals of the usage rows. A scoped token sees its agents only:
// the scope (agent_query) refused another agent already, and another agent's
// thread answers as a missing one.
void usage(route_call& c) {
  usage_query q;
  q.agent_id = c.query("agent");
  q.thread_id = c.query("thread");
  if (!q.thread_id.empty()) {
    manifest m;
    if (status s = visible_thread(c.rt(), c.scope, q.thread_id, "thread", &m); !s) return c.fail(s);
  }
  if (q.agent_id.empty() && q.thread_id.empty() && !c.scope.admin) {
    if (c.scope.agents.size() != 1)
      return c.fail(status::invalid_input("agent: required for a token scoped to several agents").with_field("agent"));
    q.agent_id = *c.scope.agents.begin();
  }
  if (!q.agent_id.empty())
    if (status s = validate_id(q.agent_id, "agent"); !s) return c.fail(std::move(s).with_field("agent"));
  for (auto [name, out] : {std::pair{"since", &q.since_ms}, std::pair{"until", &q.until_ms}}) {
    std::string v = c.query(name);
    if (v.empty()) continue;
    if (status s = parse_time_ms(v, name, out); !s) return c.fail(s);
  }
  if (q.since_ms > q.until_ms) return c.fail(status::invalid_input("since: after until").with_field("since"));
  std::string group = c.query("group_by");
  if (!group.empty()) {
    auto g = parse_usage_group(group);
    if (!g) return c.fail(status::invalid_input("group_by: must be none, agent, thread or day").with_field("group_by"));
    q.group_by = *g;
  }
  usage_report r;
  if (status s = c.rt().usage(q, &r); !s) return c.fail(s);
  std::string body;
  json_writer w{&body};
  w.begin_object();
  w.field("group_by", to_string(q.group_by));
  w.key("groups");
  w.begin_array();
  for (const auto& g : r.groups) {
    w.begin_object();
    w.field("key", g.key);
    write_spend(w, g.usage, g.cost_usd);
    w.field_uint("runs", g.runs);
    w.field_uint("duration_ms", g.duration_ms);
    w.end_object();
  }
  w.end_array();
  w.field_uint("rows", r.rows);
  w.field_uint("unreadable", r.unreadable);
  w.end_object();
  c.reply_json(200, body);
}

constexpr route rows[] = {
    {.method = "GET", .pattern = "/v1/usage", .scope = route_scope::agent_query, .denied = "read the usage of agent",
     .handler = usage},
};

}  // namespace

std::span<const route> usage_routes() { return rows; }

}  // namespace skein::server
