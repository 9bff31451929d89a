// schedule: the `skein schedule` commands (create, list, show, pause, resume,
// delete, history, preview), each row with the route it calls. Responses are
// the stored schedule and firing JSON (runtime/model/schedule.cpp), decoded
// before anything is printed.
#include <cstdio>
#include <ctime>

#include "runtime/model/json_writer.hpp"
#include "runtime/model/schedule.hpp"
#include "tools/cli/command.hpp"

namespace skein::tools::cli {
namespace {

std::string utc_text(int64_t ms) {
  if (ms == 0) return "-";
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec);
  return buf;
}

int print_schedule_id(client& c, const http::response& r, const char* verb) {
  schedule s;
  if (status st = decode_schedule(r.body, &s); !st) return c.unreadable_response(st);
  if (c.json) return c.print_json(r);
  if (verb == nullptr) std::printf("%s\n", s.id.c_str());
  else std::printf("%s %s\n", verb, s.id.c_str());
  return ok;
}

// Exactly one of --cron, --every and --at: the parser checks it.
int schedule_create(client& c, const invocation& in) {
  const given& a = in.a;
  std::string body;
  json_writer w{&body};
  w.begin_object();
  if (!a.get("id").empty()) w.field("id", a.get("id"));
  w.field("agent_id", a.get("agent"));
  if (a.has("cron")) {
    w.field("kind", "cron");
    w.field("cron", a.get("cron"));
    w.field("time_zone", a.get("zone", "UTC"));
  } else if (a.has("every")) {
    w.field("kind", "interval");
    w.field_uint("interval_ms", a.number("every"));
    w.field_uint("anchor_ms", a.number("anchor"));
  } else {
    w.field("kind", "once");
    w.field_uint("at_ms", a.number("at"));
  }
  w.key("input");
  w.begin_object();
  w.field("text", a.get("input"));
  w.field("role", a.get("role", "user"));
  w.end_object();
  if (!a.get("thread").empty()) w.field("thread_id", a.get("thread"));
  if (!a.get("title-prefix").empty()) w.field("title_prefix", a.get("title-prefix"));
  if (a.has("tag")) {
    w.field_strings("tags", a.all("tag"));
  }
  w.field("missed", a.get("missed", "skip"));
  w.end_object();
  http::response r;
  int code = ok;
  if (!c.call(in, 0, "", body, &r, &code)) return code;
  return print_schedule_id(c, r, nullptr);
}

int schedule_list(client& c, const invocation& in) {
  http::response r;
  int code = ok;
  if (!c.call(in, 0, "?limit=" + q(in.a.get("limit", "100")) + query_params(in.a, {"agent", "cursor"}), "", &r, &code))
    return code;
  std::vector<std::string> items;
  if (status s = json_items(r.body, "schedules", &items); !s) return c.unreadable_response(s);
  std::vector<schedule> all;
  for (const auto& item : items) {
    schedule s;
    if (status st = decode_schedule(item, &s); !st) return c.unreadable_response(st);
    all.push_back(std::move(s));
  }
  std::string next;
  if (status s = string_field(r.body, "next_cursor", true, &next); !s) return c.unreadable_response(s);
  if (c.json) return c.print_json(r);
  for (const auto& s : all)
    std::printf("%-32s %-16s %-8s %-20s %s %llu\n", s.id.c_str(), s.agent_id.c_str(),
                std::string{to_string(s.kind)}.c_str(), utc_text(s.next_fire_at_ms).c_str(),
                s.paused ? "paused" : "active", static_cast<unsigned long long>(s.fire_count));
  if (!next.empty()) std::fprintf(stderr, "skein: more schedules follow: --cursor %s\n", next.c_str());
  return ok;
}

int schedule_show(client& c, const invocation& in) {
  http::response r;
  int code = ok;
  if (!c.call(in, 0, "", "", &r, &code)) return code;
  schedule s;
  if (status st = decode_schedule(r.body, &s); !st) return c.unreadable_response(st);
  if (c.json) return c.print_json(r);
  std::string when = s.kind == schedule_kind::cron       ? s.cron + " (" + s.time_zone + ")"
                     : s.kind == schedule_kind::interval ? "every " + std::to_string(s.interval_ms) + " ms"
                                                         : "at " + utc_text(s.at_ms);
  std::printf("id        %s\nagent     %s\nkind      %s\nwhen      %s\ntarget    %s\nmissed    %s\nstate     %s\n"
              "next      %s\nlast      %s\nfired     %llu\n",
              s.id.c_str(), s.agent_id.c_str(), std::string{to_string(s.kind)}.c_str(), when.c_str(),
              s.thread_id.empty() ? "new thread per firing" : s.thread_id.c_str(),
              std::string{to_string(s.missed)}.c_str(), s.paused ? "paused" : "active",
              utc_text(s.next_fire_at_ms).c_str(), utc_text(s.last_fire_at_ms).c_str(),
              static_cast<unsigned long long>(s.fire_count));
  return ok;
}

int schedule_pause(client& c, const invocation& in) {
  http::response r;
  int code = ok;
  if (!c.call(in, 0, "", "", &r, &code)) return code;
  return print_schedule_id(c, r, in.cmd.verb == "pause" ? "paused" : "resumed");
}

int schedule_delete(client& c, const invocation& in) {
  http::response r;
  int code = ok;
  if (!c.call(in, 0, "", "", &r, &code)) return code;
  if (!c.json) std::printf("deleted %s\n", in.a.get("id").c_str());
  return ok;
}

int schedule_history(client& c, const invocation& in) {
  http::response r;
  int code = ok;
  if (!c.call(in, 0, "?limit=" + q(in.a.get("limit", "100")) + query_params(in.a, {"before"}), "", &r, &code))
    return code;
  std::vector<std::string> items;
  if (status s = json_items(r.body, "firings", &items); !s) return c.unreadable_response(s);
  std::vector<schedule_firing> rows;
  for (const auto& item : items) {
    schedule_firing f;
    if (status st = decode_firing(item, &f); !st) return c.unreadable_response(st);
    rows.push_back(std::move(f));
  }
  if (c.json) return c.print_json(r);
  for (const auto& f : rows)
    std::printf("%6llu  %-20s %-8s %-32s %s\n", static_cast<unsigned long long>(f.seq),
                utc_text(f.scheduled_at_ms).c_str(), std::string{to_string(f.outcome)}.c_str(),
                f.thread_id.empty() ? "-" : f.thread_id.c_str(), f.reason.c_str());
  return ok;
}

int schedule_preview(client& c, const invocation& in) {
  http::response r;
  int code = ok;
  if (!c.call(in, 0, "?n=" + q(in.a.get("n", "10")), "", &r, &code)) return code;
  json::document doc;
  json::object_reader o;
  json::dom::element el;
  json::dom::array arr;
  if (status s = open_response(r.body, &doc, &o); !s) return c.unreadable_response(s);
  if (status s = o.element("fire_at_ms", &el); !s) return c.unreadable_response(s);
  if (el.get(arr) != simdjson::SUCCESS) return c.unreadable_response(status::invalid_input("fire_at_ms: expected an array"));
  std::vector<int64_t> times;
  for (json::dom::element e : arr) {
    int64_t t = 0;
    if (e.get(t) != simdjson::SUCCESS) return c.unreadable_response(status::invalid_input("fire_at_ms: expected integers"));
    times.push_back(t);
  }
  if (c.json) return c.print_json(r);
  for (int64_t t : times) std::printf("%s  %lld\n", utc_text(t).c_str(), static_cast<long long>(t));
  return ok;
}

constexpr arg id = pos("id", "the schedule");

}  // namespace

const std::vector<command>& schedule_commands() {
  static const std::vector<command> rows = {
      {"schedule", "create", {"POST /v1/schedules"}, "a schedule of <agent>; prints its id",
       {pos("agent", "the agent the input goes to"),
        opt("--cron", "EXPR", "on a cron expression (minute hour day month weekday)").group("when"),
        opt("--every", "MS", "every MS milliseconds").num().group("when"),
        opt("--at", "MS", "once, at this time (ms since the epoch)").num().group("when"),
        opt("--zone", "Z", "--cron's time zone (default UTC)"), opt("--anchor", "MS", "--every counts from here").num(),
        opt("--input", "TEXT", "the input sent at each firing").req(), opt("--role", "R", "its role (default user)"),
        opt("--thread", "ID", "send to this thread (default: a new thread per firing)"),
        opt("--title-prefix", "P", "the new threads' titles start with this"),
        opt("--tag", "X", "a tag of the new threads (again for more)").many(),
        opt("--missed", "skip|run_once", "firings missed while down (default skip)"),
        opt("--id", "ID", "its id (default: minted)")},
       schedule_create},
      {"schedule", "list", {"GET /v1/schedules"}, "schedules by id, one page",
       {opt("--agent", "A", "of this agent"), opt("--limit", "N", "schedules a page (default 100)"),
        opt("--cursor", "C", "the page after the previous one")},
       schedule_list},
      {"schedule", "show", {"GET /v1/schedules/{id}"}, "a schedule", {id}, schedule_show},
      {"schedule", "pause", {"POST /v1/schedules/{id}/pause"}, "pauses a schedule", {id}, schedule_pause},
      {"schedule", "resume", {"POST /v1/schedules/{id}/resume"},
       "resumes it: the next fire counts from now, missed while paused are skipped", {id}, schedule_pause},
      {"schedule", "delete", {"DELETE /v1/schedules/{id}"}, "deletes a schedule and its history", {id},
       schedule_delete},
      {"schedule", "history", {"GET /v1/schedules/{id}/history"}, "its firings, newest first",
       {id, opt("--limit", "N", "firings at most (default 100)"), opt("--before", "SEQ", "older than this firing")},
       schedule_history},
      {"schedule", "preview", {"GET /v1/schedules/{id}/preview"}, "its next due times",
       {id, opt("--n", "N", "how many (default 10)")}, schedule_preview},
  };
  return rows;
}

}  // namespace skein::tools::cli
