// thread: the `skein thread` commands (create, list, show, delete, title,
// reconcile, compact, diagnose, prune, export, import, fork), each row with the
// route it calls.
#include <cstdio>
#include <fstream>
#include <sstream>

#include "runtime/model/json_codec.hpp"
#include "runtime/model/json_writer.hpp"
#include "tools/cli/command.hpp"

namespace skein::tools::cli {
namespace {

int thread_create(client& c, const invocation& in) {
  const given& a = in.a;
  std::string body;
  json_writer w{&body};
  w.begin_object();
  w.field("agent_id", a.get("agent"));
  for (auto [key, field] : {std::pair{"title", "title"}, std::pair{"name", "name"}, std::pair{"parent", "parent_thread_id"},
                            std::pair{"task", "task_id"}, std::pair{"policy", "policy"}})
    if (!a.get(key).empty()) w.field(field, a.get(key));
  if (a.has("tag")) {
    w.field_strings("tags", a.all("tag"));
  }
  // The server checks the patch (an object, its size and depth); sent as given.
  if (!a.get("engine-config").empty()) {
    w.key("engine_config");
    json::document doc;
    if (status s = json::parse(a.get("engine-config"), json_limits{}, "--engine-config", &doc); !s)
      return misuse(s.to_string());
    w.raw(simdjson::minify(doc.root()));
  }
  // --member AGENT[:on_mention]: a house member, `always` unless :on_mention.
  if (a.has("member")) {
    w.key("members");
    w.begin_array();
    for (const auto& spec : a.all("member")) {
      size_t colon = spec.rfind(':');
      bool mention = colon != std::string::npos && spec.substr(colon + 1) == "on_mention";
      bool always = colon != std::string::npos && spec.substr(colon + 1) == "always";
      w.begin_object();
      w.field("agent", mention || always ? spec.substr(0, colon) : spec);
      w.field("trigger", mention ? "on_mention" : "always");
      w.end_object();
    }
    w.end_array();
  }
  w.end_object();
  http::response r;
  int code = ok;
  if (!c.call(in, 0, "", body, &r, &code)) return code;
  return print_manifest_id(c, r);
}

void print_thread_row(const manifest& m) {
  std::printf("%-32s %-16s %-10s %8llu  %s\n", m.id.c_str(), m.agent_id.c_str(), std::string{to_string(m.status)}.c_str(),
              static_cast<unsigned long long>(m.last_seq), m.title.c_str());
}

int thread_list(client& c, const invocation& in) {
  const given& a = in.a;
  std::string query = "?limit=" + q(a.get("limit", "100")) + query_params(a, {"agent", "status", "tag", "parent"});
  if (a.has("archived")) query += "&archived=only";  // the threads retention archived
  std::string cursor;
  std::vector<manifest> rows;  // printed once every page decoded: no half table
  std::string all = "[";
  do {
    http::response r;
    int code = ok;
    if (!c.call(in, 0, query + (cursor.empty() ? "" : "&cursor=" + q(cursor)), "", &r, &code)) return code;
    std::vector<std::string> items;
    if (status s = json_items(r.body, "threads", &items); !s) return c.unreadable_response(s);
    cursor.clear();
    if (status s = string_field(r.body, "next_cursor", false, &cursor); !s) return c.unreadable_response(s);
    for (const auto& text : items) {
      manifest m;
      if (status s = decode_manifest(text, &m); !s) return c.unreadable_response(s);
      if (all.size() > 1) all += ",";
      all += text;
      rows.push_back(std::move(m));
    }
  } while (!cursor.empty());
  if (c.json) {
    std::printf("%s]\n", all.c_str());
    return ok;
  }
  std::printf("%-32s %-16s %-10s %8s  %s\n", "ID", "AGENT", "STATUS", "EVENTS", "TITLE");
  for (const auto& m : rows) print_thread_row(m);
  return ok;
}

int thread_show(client& c, const invocation& in) {
  http::response r;
  int code = ok;
  if (!c.call(in, 0, "", "", &r, &code)) return code;
  return print_manifest(c, r);
}

// A user's title (the titles effect never replaces it).
int thread_title(client& c, const invocation& in) {
  std::string body;
  json_writer w{&body};
  w.begin_object();
  w.field("title", in.a.get("text"));
  w.end_object();
  http::response r;
  int code = ok;
  if (!c.call(in, 0, "", body, &r, &code)) return code;
  manifest m;
  if (status s = decode_manifest(r.body, &m); !s) return c.unreadable_response(s);
  if (c.json) return c.print_json(r);
  std::printf("%s %s\n", m.id.c_str(), m.title.c_str());
  return ok;
}

int thread_delete(client& c, const invocation& in) {
  http::response r;
  int code = ok;
  if (!c.call(in, 0, "", "", &r, &code)) return code;
  if (r.status != 204 && !r.body.empty()) return c.print_json(r);
  if (!c.json) std::printf("deleted %s\n", in.a.get("id").c_str());
  return ok;
}

int thread_reconcile(client& c, const invocation& in) {
  http::response r;
  int code = ok;
  if (!c.call(in, 0, "", "", &r, &code)) return code;
  json::document doc;
  json::object_reader o;
  bool reconciled = false;
  status s = open_response(r.body, &doc, &o);
  if (s) s = o.boolean("reconciled", &reconciled);
  if (!s) return c.unreadable_response(s);
  return c.print_json(r);
}

// Exit 0 compacted or nothing to compact, 1 failed (thread.compaction_failed).
int thread_compact(client& c, const invocation& in) {
  const given& a = in.a;
  std::string body;
  json_writer w{&body};
  w.begin_object();
  if (!a.get("stages").empty()) {
    w.key("stages");
    w.begin_array();
    std::stringstream list{a.get("stages")};
    for (std::string stage; std::getline(list, stage, ',');)
      if (!stage.empty()) w.string(stage);
    w.end_array();
  }
  for (auto [key, field] : {std::pair{"keep-turns", "keep_turns"}, std::pair{"tool-result-bytes-max", "tool_result_bytes_max"}})
    if (a.has(key)) w.field_uint(field, a.number(key));
  w.end_object();
  http::response r;
  int code = ok;
  if (!c.call(in, 0, "", body, &r, &code)) return code;
  json::document doc;
  json::object_reader o;
  bool compacted = false, failed_ = false;
  std::string reason;
  uint64_t before = 0, after = 0, seq = 0;
  status s = open_response(r.body, &doc, &o);
  if (s) s = o.boolean("compacted", &compacted);
  if (s) s = o.boolean("failed", &failed_);
  if (s) s = o.string("reason", &reason);
  if (s) s = o.uint("tokens_before", &before);
  if (s) s = o.uint("tokens_after", &after);
  if (s) s = o.uint("seq", &seq);
  if (!s) return c.unreadable_response(s);
  if (c.json) c.print_json(r);
  else if (compacted)
    std::printf("compacted at seq %llu: %llu -> %llu estimated tokens\n", static_cast<unsigned long long>(seq),
                static_cast<unsigned long long>(before), static_cast<unsigned long long>(after));
  else std::printf("%s: %s\n", failed_ ? "failed" : "not compacted", reason.c_str());
  return failed_ ? failed : ok;
}

int thread_diagnose(client& c, const invocation& in) {
  http::response r;
  int code = ok;
  if (!c.call(in, 0, "", "", &r, &code)) return code;
  std::string stage, error;
  status s = string_field(r.body, "stage", true, &stage);
  if (s) s = string_field(r.body, "last_error", false, &error);
  if (s && stage.empty()) s = status::invalid_input("response.stage: empty");
  if (!s) return c.unreadable_response(s);
  if (c.json) c.print_json(r);
  else std::printf("%s%s\n", stage.c_str(), error.empty() ? "" : (": " + error).c_str());
  if (stage == "failed") return run_failed;
  if (stage == "stalled") return stalled;
  return ok;
}

int thread_prune(client& c, const invocation& in) {
  http::response r;
  int code = ok;
  if (!c.call(in, 0, "", "", &r, &code)) return code;
  std::vector<std::string> ids;
  if (status s = json_items(r.body, "reconciled", &ids); !s) return c.unreadable_response(s);
  return c.print_json(r);
}

int thread_export(client& c, const invocation& in) {
  http::response r;
  int code = ok;
  if (!c.call(in, 0, "", "", &r, &code)) return code;
  // The export is skein JSONL: a manifest line first. Anything else is no export.
  std::string_view first{r.body};
  first = first.substr(0, first.find('\n'));
  manifest m;
  if (status s = decode_manifest(first, &m); !s) return c.unreadable_response(s);
  std::string path = in.a.get("output");
  if (path.empty()) {
    std::fwrite(r.body.data(), 1, r.body.size(), stdout);
    return ok;
  }
  std::ofstream out{path, std::ios::binary};
  out << r.body;
  return out ? ok : (std::fprintf(stderr, "skein: cannot write %s\n", path.c_str()), failed);
}

int thread_import(client& c, const invocation& in) {
  const given& a = in.a;
  std::ifstream file{a.get("file"), std::ios::binary};
  if (!file) return std::fprintf(stderr, "skein: cannot read %s\n", a.get("file").c_str()), failed;
  std::stringstream body;
  body << file.rdbuf();
  std::string query = "?format=" + q(a.get("format", "auto"));
  if (!a.get("agent").empty()) query += "&agent=" + q(a.get("agent"));
  http::response r;
  int code = ok;
  if (!c.call(in, 0, query, body.str(), &r, &code)) return code;
  std::vector<std::string> threads;
  if (status s = json_items(r.body, "threads", &threads); !s) return c.unreadable_response(s);
  for (const auto& text : threads) {
    manifest m;
    if (status s = decode_manifest(text, &m); !s) return c.unreadable_response(s);
  }
  return c.print_json(r);
}

int thread_fork(client& c, const invocation& in) {
  http::response r;
  int code = ok;
  if (!c.call(in, 0, "", "{\"at_seq\":" + std::to_string(in.a.number("at")) + "}", &r, &code)) return code;
  return print_manifest_id(c, r);
}

constexpr arg id = pos("id", "the thread");

}  // namespace

const std::vector<command>& thread_commands() {
  static const std::vector<command> rows = {
      {"thread", "create", {"POST /v1/threads"}, "a new thread of <agent>; prints its id",
       {pos("agent", "the agent that answers in it"), opt("--title", "T", "its title"), opt("--name", "N", "its name"),
        opt("--tag", "X", "a tag (again for more)").many(), opt("--parent", "ID", "its parent thread"),
        opt("--task", "ID", "the task's one thread: a second create prints the first"),
        opt("--policy", "P", "input while a run goes on: queue, reject or interrupt"),
        opt("--engine-config", "JSON", "merge-patched onto the agent's engine config for this thread"),
        opt("--member", "AGENT[:always|:on_mention]", "a member: the thread is a house (again for more)").many()},
       thread_create},
      {"thread", "list", {"GET /v1/threads"}, "threads, every page",
       {opt("--agent", "A", "of this agent"), opt("--status", "S", "in this status"), opt("--tag", "T", "with this tag"),
        opt("--parent", "ID", "children of this thread (or agent)"), opt("--limit", "N", "threads a page (default 100)"),
        flag("--archived", "only the threads retention archived (they leave the default listing)")},
       thread_list},
      {"thread", "show", {"GET /v1/threads/{id}"}, "a thread's manifest", {id}, thread_show},
      {"thread", "delete", {"DELETE /v1/threads/{id}"}, "deletes a thread", {id}, thread_delete},
      {"thread", "title", {"PATCH /v1/threads/{id}"}, "sets the title (never replaced by a generated one)",
       {id, pos("text", "the title")}, thread_title},
      {"thread", "reconcile", {"POST /v1/threads/{id}/reconcile"}, "closes a stalled run", {id}, thread_reconcile},
      {"thread", "compact", {"POST /v1/threads/{id}/compact"}, "compacts the thread's context now",
       {id, opt("--stages", "a,b", "the stages to run (default: the agent's)"),
        opt("--keep-turns", "N", "turns kept whole").num(),
        opt("--tool-result-bytes-max", "N", "tool results longer than this are cut").num()},
       thread_compact, "exit 1: the compaction failed"},
      {"thread", "diagnose", {"GET /v1/threads/{id}/diagnose"}, "the stage of the thread's last run", {id},
       thread_diagnose, "exit 0 idle or running, 2 failed, 3 stalled"},
      {"thread", "prune", {"POST /v1/prune"}, "reconciles every stalled thread", {}, thread_prune},
      {"thread", "export", {"GET /v1/threads/{id}/export"}, "the thread as skein JSONL",
       {id, opt("--output", "FILE", "write it here (default: stdout)")}, thread_export},
      {"thread", "import", {"POST /v1/import"}, "threads from a JSONL or JSON file",
       {pos("file", "the file to import"), opt("--format", "F", "auto (default), skein, opennova, lace or gitmem"),
        opt("--agent", "A", "the agent of imported threads that name none")},
       thread_import},
      {"thread", "fork", {"POST /v1/threads/{id}/fork"}, "a copy of the thread's first N events; prints its id",
       {id, opt("--at", "N", "the last seq copied").req().num()}, thread_fork},
  };
  return rows;
}

}  // namespace skein::tools::cli
