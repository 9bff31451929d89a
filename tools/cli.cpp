// The skein CLI: thread, entries and agent commands against a running
// `skein serve`, over HTTP. Exit codes are listed in cli_usage. A response the
// CLI cannot decode is an error with its own exit code (7), never an empty
// success: every command decodes what it prints or relies on.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>
#include <vector>

#include "runtime/model/agent.hpp"
#include "runtime/model/ids.hpp"
#include "runtime/model/json_codec.hpp"
#include "runtime/model/json_reader.hpp"
#include "runtime/model/json_writer.hpp"
#include "runtime/model/schedule.hpp"
#include "tools/client/http_client.hpp"
#include "tools/tool_util.hpp"

namespace skein::tools {

extern const char* cli_usage;

namespace {

enum exit_code : int { ok = 0, failed = 1, run_failed = 2, stalled = 3, not_found = 4, denied = 5, conflict = 6,
                       unreadable = 7, budget = 8, quota = 9, usage = 64 };

// Responses hold stored values (events, manifests) up to two levels down
// ({"events":[...]}) and many of them: deeper and larger than one stored value.
constexpr size_t response_depth_max = json_limits{}.json_depth_max + 4;
constexpr size_t response_bytes_max = size_t{256} << 20;
const json_limits response_limits{response_bytes_max, response_depth_max};

struct args {
  std::vector<std::string> positional;
  std::map<std::string, std::vector<std::string>> options;  // --name value (repeatable)
  std::map<std::string, bool> flags;                        // --name

  std::string opt(const std::string& name, const std::string& fallback = "") const {
    auto it = options.find(name);
    return it == options.end() || it->second.empty() ? fallback : it->second.back();
  }
  bool flag(const std::string& name) const { return flags.count(name) > 0; }
};

const std::map<std::string, bool> known_flags = {{"json", true}, {"wait", true}, {"follow", true}, {"help", true},
                                                 {"archived", true}, {"delegate-self", true}};

bool parse_args(int argc, char** argv, args* out, std::string* error) {
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h") {
      out->flags["help"] = true;
      continue;
    }
    if (a == "-k") a = "--k";  // memory search's short form
    if (a.rfind("--", 0) != 0) {
      out->positional.push_back(a);
      continue;
    }
    std::string name = a.substr(2);
    if (known_flags.count(name)) {
      out->flags[name] = true;
      continue;
    }
    if (i + 1 >= argc) {
      *error = "option --" + name + " needs a value";
      return false;
    }
    out->options[name].push_back(argv[++i]);
  }
  return true;
}

struct cli {
  http::client client;
  bool json;
  std::string last_request;  // "GET /v1/threads/x": names the response in errors
  http::header_list headers;  // Skein-Namespace when --namespace (SKEIN_NAMESPACE) names one

  int code_for(int http_status) {
    if (http_status == 404) return not_found;
    if (http_status == 401 || http_status == 403) return denied;
    if (http_status == 409) return conflict;
    if (http_status == 402) return budget;  // the agent's daily budget is spent
    return failed;
  }
  // code_for() with the error body: a 429 is a quota of the database when its
  // error code says so (a passing overload stays `failed`, worth a retry).
  int code_for(int http_status, const std::string& body);

  // Sends a request; on an HTTP error prints the server's message and sets *code.
  bool call(const std::string& method, const std::string& target, const std::string& body, http::response* r, int* code) {
    last_request = method + " " + target;
    if (status s = client.call(method, target, body, r, headers); !s) {
      std::fprintf(stderr, "skein: %s\n", s.to_string().c_str());
      *code = failed;
      return false;
    }
    if (r->status >= 300) {
      std::fprintf(stderr, "skein: %s %s: HTTP %d %s\n", method.c_str(), target.c_str(), r->status, r->body.c_str());
      *code = code_for(r->status, r->body);
      return false;
    }
    return true;
  }

  // A success the CLI cannot read: says which response and why.
  int unreadable_response(const status& why) {
    std::fprintf(stderr, "skein: cannot decode the response to %s: %s\n", last_request.c_str(), why.message().c_str());
    return unreadable;
  }

  // Prints a JSON body as it came, once it parses.
  int print_json(const http::response& r) {
    json::document doc;
    if (status s = json::parse(r.body, response_limits, "response", &doc); !s) return unreadable_response(s);
    std::fwrite(r.body.data(), 1, r.body.size(), stdout);
    if (!r.body.empty() && r.body.back() != '\n') std::fputc('\n', stdout);
    return ok;
  }
};

std::string q(const std::string& s) { return http::percent_encode(s); }

// The object a response body holds; `doc` owns what `out` reads.
status open_response(const std::string& body, json::document* doc, json::object_reader* out) {
  SKEIN_TRY(json::parse(body, response_limits, "response", doc));
  return json::object_reader::open(doc->root(), "response", out);
}

// The items of array `field` of a response, minified.
status json_items(const std::string& body, const char* field, std::vector<std::string>* out) {
  json::document doc;
  json::dom::element items;
  json::object_reader o;
  json::dom::array arr;
  SKEIN_TRY(open_response(body, &doc, &o));
  SKEIN_TRY(o.element(field, &items));
  if (items.get(arr) != simdjson::SUCCESS) return status::invalid_input(o.name(field) + ": expected an array");
  out->clear();
  for (json::dom::element e : arr) out->push_back(simdjson::minify(e));
  return status::ok();
}

status string_field(const std::string& body, const char* field, bool required, std::string* out) {
  json::document doc;
  json::object_reader o;
  SKEIN_TRY(open_response(body, &doc, &o));
  return o.string(field, out, required);
}

status uint_field(const std::string& body, const char* field, uint64_t* out) {
  json::document doc;
  json::object_reader o;
  SKEIN_TRY(open_response(body, &doc, &o));
  return o.uint(field, out);
}

int cli::code_for(int http_status, const std::string& body) {
  if (http_status != 429) return code_for(http_status);
  json::document doc;
  json::object_reader o, e;
  json::dom::element error;
  std::string code;
  status s = open_response(body, &doc, &o);
  if (s) s = o.element("error", &error);
  if (s) s = json::object_reader::open(error, "error", &e);
  if (s) s = e.string("code", &code);
  return s && code == "quota_exceeded" ? quota : failed;
}

void print_thread_row(const manifest& m) {
  std::printf("%-32s %-16s %-10s %8llu  %s\n", m.id.c_str(), m.agent_id.c_str(), std::string{to_string(m.status)}.c_str(),
              static_cast<unsigned long long>(m.last_seq), m.title.c_str());
}

void print_event_line(const event& e) {
  std::string what;
  switch (e.type) {
    case event_type::message: what = std::string{to_string(e.role)} + ": " + e.text; break;
    case event_type::tool_call: what = e.name + " " + e.json; break;
    case event_type::tool_result: what = e.name + " -> " + e.text + (e.is_error ? " (error)" : ""); break;
    case event_type::signal: what = e.name + " " + e.json; break;
    case event_type::result:
      what = e.outcome + ", " + std::to_string(e.usage.input_tokens) + " in / " + std::to_string(e.usage.output_tokens) +
             " out tokens, " + std::to_string(e.duration_ms) + " ms";
      break;
    case event_type::compaction: what = e.name + " " + std::to_string(e.from_seq) + ".." + std::to_string(e.to_seq); break;
    default: what = e.text;
  }
  std::printf("%6llu  %-20s %s\n", static_cast<unsigned long long>(e.seq), std::string{to_string(e.type)}.c_str(),
              what.c_str());
}

// Prints the command's usage to stderr; returns the usage exit code (below the table).
int misuse(const args& a);

// --- thread -----------------------------------------------------------------

int print_manifest_id(cli& c, const http::response& r) {
  manifest m;
  if (status s = decode_manifest(r.body, &m); !s) return c.unreadable_response(s);
  if (c.json) return c.print_json(r);
  std::printf("%s\n", m.id.c_str());
  return ok;
}

int thread_create(cli& c, const args& a) {
  if (a.positional.size() != 3) return misuse(a);
  std::string body;
  json_writer w{&body};
  w.begin_object();
  w.field("agent_id", a.positional[2]);
  if (!a.opt("title").empty()) w.field("title", a.opt("title"));
  if (!a.opt("name").empty()) w.field("name", a.opt("name"));
  if (!a.opt("parent").empty()) w.field("parent_thread_id", a.opt("parent"));
  if (!a.opt("task").empty()) w.field("task_id", a.opt("task"));
  if (!a.opt("policy").empty()) w.field("policy", a.opt("policy"));
  if (a.options.count("tag")) {
    w.key("tags");
    w.begin_array();
    for (const auto& t : a.options.at("tag")) w.string(t);
    w.end_array();
  }
  // The server checks the patch (an object, its size and depth); sent as given.
  if (!a.opt("engine-config").empty()) {
    w.key("engine_config");
    std::string patch = a.opt("engine-config");
    json::document doc;
    if (status s = json::parse(patch, json_limits{}, "--engine-config", &doc); !s)
      return std::fprintf(stderr, "skein: %s\n", s.to_string().c_str()), usage;
    w.raw(simdjson::minify(doc.root()));
  }
  // --member AGENT[:on_mention]: a house member, `always` unless :on_mention.
  if (a.options.count("member")) {
    w.key("members");
    w.begin_array();
    for (const auto& spec : a.options.at("member")) {
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
  if (!c.call("POST", "/v1/threads", body, &r, &code)) return code;
  return print_manifest_id(c, r);
}

int thread_list(cli& c, const args& a) {
  if (a.positional.size() != 2) return misuse(a);
  std::string base = "/v1/threads?limit=" + q(a.opt("limit", "100"));
  for (const char* f : {"agent", "status", "tag", "parent"})
    if (!a.opt(f).empty()) base += std::string("&") + f + "=" + q(a.opt(f));
  if (a.flag("archived")) base += "&archived=only";  // the threads retention archived
  std::string cursor;
  std::vector<manifest> rows;  // printed once every page decoded: no half table
  std::string all = "[";
  do {
    http::response r;
    int code = ok;
    if (!c.call("GET", base + (cursor.empty() ? "" : "&cursor=" + q(cursor)), "", &r, &code)) return code;
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

// skein usage: GET /v1/usage as a table (or the response with --json).
int usage_show(cli& c, const args& a) {
  if (a.positional.size() != 1) return misuse(a);
  std::string target = "/v1/usage?";
  for (const char* f : {"agent", "thread", "since", "until", "group-by"}) {
    if (a.opt(f).empty()) continue;
    std::string name = f;
    if (name == "group-by") name = "group_by";
    target += name + "=" + q(a.opt(f)) + "&";
  }
  target.pop_back();
  http::response r;
  int code = ok;
  if (!c.call("GET", target, "", &r, &code)) return code;
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

int show_manifest(cli& c, const std::string& path);

int thread_show(cli& c, const args& a) {
  if (a.positional.size() != 3) return misuse(a);
  return show_manifest(c, "/v1/threads/" + q(a.positional[2]));
}

// house add <thread> <agent> [--trigger always|on_mention] / house remove <thread> <agent>
int house_member(cli& c, const args& a) {
  if (a.positional.size() != 4) return misuse(a);
  const std::string& thread = a.positional[2];
  const std::string& agent = a.positional[3];
  http::response r;
  int code = ok;
  if (a.positional[1] == "add") {
    std::string body;
    json_writer w{&body};
    w.begin_object();
    w.field("agent", agent);
    w.field("trigger", a.opt("trigger", "always"));
    w.end_object();
    if (!c.call("POST", "/v1/threads/" + q(thread) + "/members", body, &r, &code)) return code;
  } else if (!c.call("DELETE", "/v1/threads/" + q(thread) + "/members/" + q(agent), "", &r, &code)) {
    return code;
  }
  return print_manifest_id(c, r);
}

// task show <task id>: the task's dedicated thread.
int task_show(cli& c, const args& a) {
  if (a.positional.size() != 3) return misuse(a);
  return show_manifest(c, "/v1/tasks/" + q(a.positional[2]));
}

int show_manifest(cli& c, const std::string& path) {
  http::response r;
  int code = ok;
  if (!c.call("GET", path, "", &r, &code)) return code;
  manifest m;
  if (status s = decode_manifest(r.body, &m); !s) return c.unreadable_response(s);
  if (c.json) return c.print_json(r);
  std::printf("id        %s\nagent     %s\nstatus    %s\ntitle     %s\nevents    %llu\nsession   %s\ntokens    %llu in / %llu out\n",
              m.id.c_str(), m.agent_id.c_str(), std::string{to_string(m.status)}.c_str(), m.title.c_str(),
              static_cast<unsigned long long>(m.last_seq), m.session_id.c_str(),
              static_cast<unsigned long long>(m.usage.input_tokens), static_cast<unsigned long long>(m.usage.output_tokens));
  if (!m.parent_id.empty()) std::printf("parent    %s %s\n", std::string{to_string(m.parent)}.c_str(), m.parent_id.c_str());
  if (!m.task_id.empty()) std::printf("task      %s\n", m.task_id.c_str());
  for (const auto& member : m.members)
    std::printf("member    %s %s\n", member.agent_id.c_str(), std::string{to_string(member.trigger)}.c_str());
  return ok;
}

// thread title <id> <text>: a user's title (the titles effect never replaces it).
int thread_title(cli& c, const args& a) {
  if (a.positional.size() != 4) return misuse(a);
  std::string body;
  json_writer w{&body};
  w.begin_object();
  w.field("title", a.positional[3]);
  w.end_object();
  http::response r;
  int code = ok;
  if (!c.call("PATCH", "/v1/threads/" + q(a.positional[2]), body, &r, &code)) return code;
  manifest m;
  if (status s = decode_manifest(r.body, &m); !s) return c.unreadable_response(s);
  if (c.json) return c.print_json(r);
  std::printf("%s %s\n", m.id.c_str(), m.title.c_str());
  return ok;
}

int thread_delete(cli& c, const args& a) {
  if (a.positional.size() != 3) return misuse(a);
  http::response r;
  int code = ok;
  if (!c.call("DELETE", "/v1/threads/" + q(a.positional[2]), "", &r, &code)) return code;
  if (r.status != 204 && !r.body.empty()) return c.print_json(r);
  if (!c.json) std::printf("deleted %s\n", a.positional[2].c_str());
  return ok;
}

int thread_reconcile(cli& c, const args& a) {
  if (a.positional.size() != 3) return misuse(a);
  http::response r;
  int code = ok;
  if (!c.call("POST", "/v1/threads/" + q(a.positional[2]) + "/reconcile", "", &r, &code)) return code;
  json::document doc;
  json::object_reader o;
  bool reconciled = false;
  status s = open_response(r.body, &doc, &o);
  if (s) s = o.boolean("reconciled", &reconciled);
  if (!s) return c.unreadable_response(s);
  return c.print_json(r);
}

// thread compact <id> [--stages a,b] [--keep-turns N] [--tool-result-bytes-max N]:
// exit 0 compacted or nothing to compact, 1 failed (thread.compaction_failed).
int thread_compact(cli& c, const args& a) {
  if (a.positional.size() != 3) return misuse(a);
  std::string body;
  json_writer w{&body};
  w.begin_object();
  if (!a.opt("stages").empty()) {
    w.key("stages");
    w.begin_array();
    std::stringstream list{a.opt("stages")};
    for (std::string stage; std::getline(list, stage, ',');)
      if (!stage.empty()) w.string(stage);
    w.end_array();
  }
  for (const auto& [flag, field] : {std::pair{"keep-turns", "keep_turns"}, std::pair{"tool-result-bytes-max", "tool_result_bytes_max"}}) {
    std::string v = a.opt(flag);
    if (v.empty()) continue;
    char* end = nullptr;
    unsigned long long n = std::strtoull(v.c_str(), &end, 10);
    if (end == v.c_str() || *end != '\0' || v[0] == '-')
      return std::fprintf(stderr, "skein: --%s must be an unsigned integer\n", flag), usage;
    w.field_uint(field, n);
  }
  w.end_object();
  http::response r;
  int code = ok;
  if (!c.call("POST", "/v1/threads/" + q(a.positional[2]) + "/compact", body, &r, &code)) return code;
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

int thread_diagnose(cli& c, const args& a) {
  if (a.positional.size() != 3) return misuse(a);
  http::response r;
  int code = ok;
  if (!c.call("GET", "/v1/threads/" + q(a.positional[2]) + "/diagnose", "", &r, &code)) return code;
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

int thread_prune(cli& c, const args& a) {
  if (a.positional.size() != 2) return misuse(a);
  http::response r;
  int code = ok;
  if (!c.call("POST", "/v1/prune", "", &r, &code)) return code;
  std::vector<std::string> ids;
  if (status s = json_items(r.body, "reconciled", &ids); !s) return c.unreadable_response(s);
  return c.print_json(r);
}

int cluster_show(cli& c, const args& a) {
  if (a.positional.size() != 2) return misuse(a);
  http::response r;
  int code = ok;
  if (!c.call("GET", "/v1/cluster", "", &r, &code)) return code;
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

// Starts a rebalance on the server's node and follows it until it ends:
// exit 0 once committed, 1 when it failed (its error on stderr).
int cluster_rebalance(cli& c, const args& a) {
  if (a.positional.size() != 2) return misuse(a);
  http::response r;
  int code = ok;
  if (!c.call("POST", "/v1/cluster/rebalance", "", &r, &code)) return code;
  std::string last;
  for (;;) {
    if (!c.call("GET", "/v1/cluster", "", &r, &code)) return code;
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

int thread_export(cli& c, const args& a) {
  if (a.positional.size() != 3) return misuse(a);
  http::response r;
  int code = ok;
  if (!c.call("GET", "/v1/threads/" + q(a.positional[2]) + "/export", "", &r, &code)) return code;
  // The export is skein JSONL: a manifest line first. Anything else is no export.
  std::string_view first{r.body};
  first = first.substr(0, first.find('\n'));
  manifest m;
  if (status s = decode_manifest(first, &m); !s) return c.unreadable_response(s);
  std::string path = a.opt("output");
  if (path.empty()) {
    std::fwrite(r.body.data(), 1, r.body.size(), stdout);
    return ok;
  }
  std::ofstream out{path, std::ios::binary};
  out << r.body;
  return out ? ok : (std::fprintf(stderr, "skein: cannot write %s\n", path.c_str()), failed);
}

int thread_import(cli& c, const args& a) {
  if (a.positional.size() != 3) return misuse(a);
  std::ifstream in{a.positional[2], std::ios::binary};
  if (!in) return std::fprintf(stderr, "skein: cannot read %s\n", a.positional[2].c_str()), failed;
  std::stringstream body;
  body << in.rdbuf();
  std::string target = "/v1/import?format=" + q(a.opt("format", "auto"));
  if (!a.opt("agent").empty()) target += "&agent=" + q(a.opt("agent"));
  http::response r;
  int code = ok;
  if (!c.call("POST", target, body.str(), &r, &code)) return code;
  std::vector<std::string> threads;
  if (status s = json_items(r.body, "threads", &threads); !s) return c.unreadable_response(s);
  for (const auto& text : threads) {
    manifest m;
    if (status s = decode_manifest(text, &m); !s) return c.unreadable_response(s);
  }
  return c.print_json(r);
}

int thread_fork(cli& c, const args& a) {
  if (a.positional.size() != 3 || a.opt("at").empty()) return misuse(a);
  uint64_t at = 0;
  if (!parse_u64(a.opt("at"), &at)) return std::fprintf(stderr, "skein: --at expects a number\n"), usage;
  http::response r;
  int code = ok;
  if (!c.call("POST", "/v1/threads/" + q(a.positional[2]) + "/fork", "{\"at_seq\":" + std::to_string(at) + "}", &r, &code))
    return code;
  return print_manifest_id(c, r);
}

// --- entries ----------------------------------------------------------------

// Where an entry for `ref` goes: the thread's entries when `ref` names a thread
// the token sees, else the agent's DM route, which reuses or creates the agent's
// one DM thread on the server, atomically.
std::string entry_path(cli& c, const std::string& ref) {
  http::response r;
  if (c.client.call("GET", "/v1/threads/" + q(ref), "", &r, c.headers).is_ok() && r.status == 200)
    return "/v1/threads/" + q(ref) + "/entries";
  return "/v1/agents/" + q(ref) + "/dm";
}

// {"run":{..., "outcome", "text"}} of a send that waited.
status decode_run(const std::string& body, std::string* text, std::string* outcome) {
  json::document doc;
  json::dom::element run_el;
  json::object_reader o, run;
  SKEIN_TRY(open_response(body, &doc, &o));
  SKEIN_TRY(o.element("run", &run_el));
  SKEIN_TRY(json::object_reader::open(run_el, "response.run", &run));
  SKEIN_TRY(run.string("outcome", outcome));
  if (outcome->empty()) return status::invalid_input("response.run.outcome: empty");
  return run.string("text", text, false);
}

int entries_create(cli& c, const args& a) {
  if (a.positional.size() != 4) return misuse(a);
  int code = ok;
  std::string path = entry_path(c, a.positional[2]);
  std::string body;
  json_writer w{&body};
  w.begin_object();
  w.field("text", a.positional[3]);
  if (!a.opt("key").empty()) w.field("idempotency_key", a.opt("key"));
  if (!a.opt("role").empty()) w.field("role", a.opt("role"));
  w.key("wait");
  w.boolean(a.flag("wait"));
  w.end_object();
  http::response r;
  if (!c.call("POST", path, body, &r, &code)) return code;
  if (!a.flag("wait")) {
    std::string run_id, thread;
    status s = string_field(r.body, "run_id", true, &run_id);
    if (s) s = string_field(r.body, "thread_id", true, &thread);
    if (s && run_id.empty()) s = status::invalid_input("response.run_id: empty");
    if (!s) return c.unreadable_response(s);
    if (c.json) return c.print_json(r);
    std::printf("%s %s\n", thread.c_str(), run_id.c_str());
    return ok;
  }
  std::string text, outcome;
  if (status s = decode_run(r.body, &text, &outcome); !s) return c.unreadable_response(s);
  if (c.json) c.print_json(r);
  else std::printf("%s\n", text.c_str());
  return outcome == "completed" ? ok : run_failed;
}

// Decodes an event of a listing or a stream; prints it.
status print_event(const cli& c, const std::string& text, event* ev) {
  SKEIN_TRY(decode_event(text, ev));
  if (c.json) std::printf("%s\n", text.c_str());
  else print_event_line(*ev);
  return status::ok();
}

int entries_list(cli& c, const args& a) {
  if (a.positional.size() != 3) return misuse(a);
  std::string id = a.positional[2];
  uint64_t from = 1;
  if (!a.opt("from").empty() && !parse_u64(a.opt("from"), &from)) return std::fprintf(stderr, "skein: --from expects a number\n"), usage;
  constexpr size_t page_events_max = 1000;
  std::string group = a.opt("group").empty() ? "" : "&group=" + q(a.opt("group"));
  int code = ok;
  for (;;) {
    const uint64_t page_from = from;
    http::response r;
    if (!c.call("GET", "/v1/threads/" + q(id) + "/entries?limit=" + std::to_string(page_events_max) +
                           "&from_seq=" + std::to_string(from) + group,
                "", &r, &code))
      return code;
    std::vector<std::string> items;
    if (status s = json_items(r.body, "events", &items); !s) return c.unreadable_response(s);
    for (const auto& text : items) {
      event ev;
      if (status s = print_event(c, text, &ev); !s) return c.unreadable_response(s);
      from = ev.seq + 1;
    }
    if (group.empty()) {
      if (items.size() < page_events_max) break;
      continue;
    }
    // A filtered page may hold fewer events than it read: next_seq says where
    // the read stopped, and a read that found nothing is the end.
    uint64_t next = 0;
    if (status s = uint_field(r.body, "next_seq", &next); !s) return c.unreadable_response(s);
    if (next <= page_from) break;
    from = next;
  }
  std::fflush(stdout);
  if (!a.flag("follow")) return ok;
  int http_status = 0;
  status bad;
  bool deleted = false;
  c.last_request = "GET /v1/threads/" + id + "/stream";
  status s = c.client.stream("/v1/threads/" + q(id) + "/stream?from_seq=" + std::to_string(from) + group, c.headers,
                             [&](const http::sse_event& e) {
                               if (e.event == "delta") return true;
                               if (e.event == "deleted") {  // the server's last frame: the thread is gone
                                 deleted = true;
                                 return false;
                               }
                               event ev;
                               bad = print_event(c, e.data, &ev);
                               std::fflush(stdout);
                               return bad.is_ok();
                             },
                             &http_status);
  if (!s) return std::fprintf(stderr, "skein: %s\n", s.to_string().c_str()), failed;
  if (!bad) return c.unreadable_response(bad);
  if (deleted) return std::fprintf(stderr, "skein: thread %s was deleted\n", id.c_str()), not_found;
  return http_status == 200 ? ok : c.code_for(http_status);
}

// Renders the current (or next) run's text as it streams; exits when it ends.
int entries_read(cli& c, const args& a) {
  if (a.positional.size() != 3) return misuse(a);
  std::string id = a.positional[2];
  http::response r;
  int code = ok;
  if (!c.call("GET", "/v1/threads/" + q(id), "", &r, &code)) return code;
  manifest m;
  if (status s = decode_manifest(r.body, &m); !s) return c.unreadable_response(s);
  // From the start of the last run if one is going, so its whole text shows.
  uint64_t from = m.last_seq + 1;
  if (m.status == thread_status::running) from = m.last_seq > 32 ? m.last_seq - 31 : 1;
  int result = ok;
  bool printed_delta = false;
  bool stopped = false;
  bool deleted = false;
  status bad;
  int http_status = 0;
  c.last_request = "GET /v1/threads/" + id + "/stream";
  status s = c.client.stream(
      "/v1/threads/" + q(id) + "/stream?from_seq=" + std::to_string(from), c.headers,
      [&](const http::sse_event& e) {
        if (e.event == "deleted") {  // the server's last frame: the thread is gone
          deleted = true;
          return false;
        }
        if (e.event == "delta") {
          std::string text;
          bad = string_field(e.data, "text", true, &text);
          std::fputs(text.c_str(), stdout);
          std::fflush(stdout);
          printed_delta = true;
          return bad.is_ok();
        }
        event ev;
        bad = decode_event(e.data, &ev);
        if (!bad) return false;
        if (ev.type == event_type::message && ev.role == message_role::assistant) {
          if (!printed_delta) std::printf("%s", ev.text.c_str());
          std::printf("\n");
        }
        if (ev.type == event_type::signal && ev.name == "thread.stop") {
          if (ev.json.find("\"completed\"") == std::string::npos) result = run_failed;
          stopped = true;
          return false;
        }
        if (ev.type == event_type::signal && ev.name == "thread.start") printed_delta = false;
        return true;
      },
      &http_status);
  if (!s) return std::fprintf(stderr, "skein: %s\n", s.to_string().c_str()), failed;
  if (!bad) return c.unreadable_response(bad);
  if (http_status != 200) return c.code_for(http_status);
  if (deleted) return std::fprintf(stderr, "skein: thread %s was deleted\n", id.c_str()), not_found;
  if (!stopped)  // the server closed the stream before the run ended: no outcome to report
    return std::fprintf(stderr, "skein: the stream of %s ended before its run did\n", id.c_str()), failed;
  return result;
}

// --- agent ------------------------------------------------------------------

int agent_create(cli& c, const args& a) {
  if (a.positional.size() != 3) return misuse(a);
  agent_config ag;
  ag.id = a.positional[2];
  ag.system_prompt = a.opt("prompt");
  ag.engine = a.opt("engine", "scripted");
  ag.engine_config = a.opt("engine-config", "{}");
  if (a.options.count("tool")) ag.tools = a.options.at("tool");
  if (!a.opt("policy").empty()) {
    auto p = parse_mid_run_policy(a.opt("policy"));
    if (!p) return std::fprintf(stderr, "skein: --policy must be queue, reject or interrupt\n"), usage;
    ag.policy = *p;
  }
  // Delegation: --delegate-to a,b (repeatable), --depth-max N, --delegate-self.
  if (a.options.count("delegate-to"))
    for (const auto& list : a.options.at("delegate-to"))
      for (size_t at = 0; at <= list.size();) {
        size_t comma = std::min(list.find(',', at), list.size());
        if (comma > at) ag.delegation.agents.push_back(list.substr(at, comma - at));
        at = comma + 1;
      }
  if (!a.opt("depth-max").empty()) {
    const std::string text = a.opt("depth-max");
    if (text.size() > 3 || text.find_first_not_of("0123456789") != std::string::npos)
      return std::fprintf(stderr, "skein: --depth-max must be a small whole number\n"), usage;
    ag.delegation.depth_max = static_cast<uint32_t>(std::stoul(text));
  }
  ag.delegation.self_allowed = a.flag("delegate-self");
  std::string body;
  if (status s = encode_agent(ag, &body); !s) return std::fprintf(stderr, "skein: %s\n", s.to_string().c_str()), usage;
  http::response r;
  int code = ok;
  if (!c.call("POST", "/v1/agents", body, &r, &code)) return code;
  agent_config stored;
  if (status s = decode_agent(r.body, &stored); !s) return c.unreadable_response(s);
  if (c.json) return c.print_json(r);
  std::printf("%s\n", stored.id.c_str());
  return ok;
}

int agent_list(cli& c, const args& a) {
  if (a.positional.size() != 2) return misuse(a);
  http::response r;
  int code = ok;
  if (!c.call("GET", "/v1/agents", "", &r, &code)) return code;
  std::vector<std::string> items;
  if (status s = json_items(r.body, "agents", &items); !s) return c.unreadable_response(s);
  std::vector<agent_config> agents;
  for (const auto& text : items) {
    if (status s = decode_agent(text, &agents.emplace_back()); !s) return c.unreadable_response(s);
  }
  if (c.json) return c.print_json(r);
  std::printf("%-24s %-10s %-10s %s\n", "ID", "ENGINE", "POLICY", "TOOLS");
  for (const auto& ag : agents) {
    std::string tools;
    for (const auto& t : ag.tools) tools += (tools.empty() ? "" : ",") + t;
    std::printf("%-24s %-10s %-10s %s\n", ag.id.c_str(), ag.engine.c_str(), std::string{to_string(ag.policy)}.c_str(), tools.c_str());
  }
  return ok;
}

int agent_show(cli& c, const args& a) {
  if (a.positional.size() != 3) return misuse(a);
  http::response r;
  int code = ok;
  if (!c.call("GET", "/v1/agents/" + q(a.positional[2]), "", &r, &code)) return code;
  agent_config ag;
  if (status s = decode_agent(r.body, &ag); !s) return c.unreadable_response(s);
  return c.print_json(r);
}

// --- schedule ---------------------------------------------------------------
// Responses are the stored schedule and firing JSON (runtime/model/schedule.cpp),
// decoded before anything is printed.

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

// A number option, or `fallback`; false (after a message) when it is not one.
bool uint_opt(const args& a, const std::string& name, uint64_t fallback, uint64_t* out) {
  std::string v = a.opt(name);
  if (v.empty()) {
    *out = fallback;
    return true;
  }
  char* end = nullptr;
  *out = std::strtoull(v.c_str(), &end, 10);
  if (end == v.c_str() || *end != '\0' || v[0] == '-') {
    std::fprintf(stderr, "skein: --%s: expected an unsigned integer, got '%s'\n", name.c_str(), v.c_str());
    return false;
  }
  return true;
}

int print_schedule_id(cli& c, const http::response& r, const char* verb) {
  schedule s;
  if (status st = decode_schedule(r.body, &s); !st) return c.unreadable_response(st);
  if (c.json) return c.print_json(r);
  if (verb == nullptr) std::printf("%s\n", s.id.c_str());
  else std::printf("%s %s\n", verb, s.id.c_str());
  return ok;
}

// schedule create <agent> (--cron EXPR [--zone Z] | --every MS [--anchor MS] | --at MS) --input TEXT ...
int schedule_create(cli& c, const args& a) {
  if (a.positional.size() != 3 || a.opt("input").empty()) return misuse(a);
  int kinds = !a.opt("cron").empty() + !a.opt("every").empty() + !a.opt("at").empty();
  if (kinds != 1) {
    std::fprintf(stderr, "skein: give exactly one of --cron, --every or --at\n");
    return misuse(a);
  }
  uint64_t every = 0, anchor = 0, at = 0;
  if (!uint_opt(a, "every", 0, &every) || !uint_opt(a, "anchor", 0, &anchor) || !uint_opt(a, "at", 0, &at))
    return usage;
  std::string body;
  json_writer w{&body};
  w.begin_object();
  if (!a.opt("id").empty()) w.field("id", a.opt("id"));
  w.field("agent_id", a.positional[2]);
  if (!a.opt("cron").empty()) {
    w.field("kind", "cron");
    w.field("cron", a.opt("cron"));
    w.field("time_zone", a.opt("zone", "UTC"));
  } else if (every != 0) {
    w.field("kind", "interval");
    w.field_uint("interval_ms", every);
    w.field_uint("anchor_ms", anchor);
  } else {
    w.field("kind", "once");
    w.field_uint("at_ms", at);
  }
  w.key("input");
  w.begin_object();
  w.field("text", a.opt("input"));
  w.field("role", a.opt("role", "user"));
  w.end_object();
  if (!a.opt("thread").empty()) w.field("thread_id", a.opt("thread"));
  if (!a.opt("title-prefix").empty()) w.field("title_prefix", a.opt("title-prefix"));
  if (auto it = a.options.find("tag"); it != a.options.end()) {
    w.key("tags");
    w.begin_array();
    for (const auto& t : it->second) w.string(t);
    w.end_array();
  }
  w.field("missed", a.opt("missed", "skip"));
  w.end_object();
  http::response r;
  int code = ok;
  if (!c.call("POST", "/v1/schedules", body, &r, &code)) return code;
  return print_schedule_id(c, r, nullptr);
}

int schedule_list(cli& c, const args& a) {
  if (a.positional.size() != 2) return misuse(a);
  std::string target = "/v1/schedules?limit=" + q(a.opt("limit", "100"));
  if (!a.opt("agent").empty()) target += "&agent=" + q(a.opt("agent"));
  if (!a.opt("cursor").empty()) target += "&cursor=" + q(a.opt("cursor"));
  http::response r;
  int code = ok;
  if (!c.call("GET", target, "", &r, &code)) return code;
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

int schedule_show(cli& c, const args& a) {
  if (a.positional.size() != 3) return misuse(a);
  http::response r;
  int code = ok;
  if (!c.call("GET", "/v1/schedules/" + q(a.positional[2]), "", &r, &code)) return code;
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

int schedule_pause(cli& c, const args& a) {
  if (a.positional.size() != 3) return misuse(a);
  bool pause = a.positional[1] == "pause";
  http::response r;
  int code = ok;
  if (!c.call("POST", "/v1/schedules/" + q(a.positional[2]) + (pause ? "/pause" : "/resume"), "", &r, &code))
    return code;
  return print_schedule_id(c, r, pause ? "paused" : "resumed");
}

int schedule_delete(cli& c, const args& a) {
  if (a.positional.size() != 3) return misuse(a);
  http::response r;
  int code = ok;
  if (!c.call("DELETE", "/v1/schedules/" + q(a.positional[2]), "", &r, &code)) return code;
  if (!c.json) std::printf("deleted %s\n", a.positional[2].c_str());
  return ok;
}

int schedule_history(cli& c, const args& a) {
  if (a.positional.size() != 3) return misuse(a);
  std::string target = "/v1/schedules/" + q(a.positional[2]) + "/history?limit=" + q(a.opt("limit", "100"));
  if (!a.opt("before").empty()) target += "&before=" + q(a.opt("before"));
  http::response r;
  int code = ok;
  if (!c.call("GET", target, "", &r, &code)) return code;
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

int schedule_preview(cli& c, const args& a) {
  if (a.positional.size() != 3) return misuse(a);
  http::response r;
  int code = ok;
  if (!c.call("GET", "/v1/schedules/" + q(a.positional[2]) + "/preview?n=" + q(a.opt("n", "10")), "", &r, &code))
    return code;
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

// memory search <agent> <query...> [-k N]: the words after the agent are the query.
int memory_search(cli& c, const args& a) {
  if (a.positional.size() < 4) return misuse(a);
  std::string query;
  for (size_t i = 3; i < a.positional.size(); ++i) query += (i > 3 ? " " : "") + a.positional[i];
  uint64_t k = 10;
  if (!a.opt("k").empty() && !parse_u64(a.opt("k"), &k)) return std::fprintf(stderr, "skein: -k expects a number\n"), usage;
  http::response r;
  int code = ok;
  if (!c.call("GET", "/v1/agents/" + q(a.positional[2]) + "/memory?q=" + q(query) + "&k=" + std::to_string(k), "", &r,
              &code))
    return code;
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

// --- namespace ----------------------------------------------------------------
// The server's admin manages namespaces (tools/API.md, Namespaces); a
// namespace's own token may list and show its own.

// The quota options given, as a JSON object; false (after a message) on a bad number.
bool quota_json(const args& a, std::string* out) {
  std::string body;
  json_writer w{&body};
  w.begin_object();
  for (const char* name : {"threads_max", "events_per_day_max", "storage_bytes_max"}) {
    std::string flag = name;
    for (auto& ch : flag)
      if (ch == '_') ch = '-';
    std::string v = a.opt(flag);
    if (v.empty()) continue;
    uint64_t n = 0;
    if (!parse_u64(v, &n)) {
      std::fprintf(stderr, "skein: --%s: expected a number (0: unlimited), got '%s'\n", flag.c_str(), v.c_str());
      return false;
    }
    w.field_uint(name, n);
  }
  w.end_object();
  *out = body;
  return true;
}

int namespace_create(cli& c, const args& a) {
  if (a.positional.size() != 3) return misuse(a);
  std::string quota;
  if (!quota_json(a, &quota)) return usage;
  std::string body;
  json_writer w{&body};
  w.begin_object();
  w.field("name", a.positional[2]);
  w.key("quota");
  w.raw(quota);
  w.end_object();
  http::response r;
  int code = ok;
  if (!c.call("POST", "/v1/namespaces", body, &r, &code)) return code;
  return c.print_json(r);
}

int namespace_list(cli& c, const args& a) {
  if (a.positional.size() != 2) return misuse(a);
  http::response r;
  int code = ok;
  if (!c.call("GET", "/v1/namespaces", "", &r, &code)) return code;
  if (c.json) return c.print_json(r);
  std::vector<std::string> items;
  if (status s = json_items(r.body, "namespaces", &items); !s) return c.unreadable_response(s);
  std::printf("%-24s %14s %18s %18s\n", "NAME", "THREADS_MAX", "EVENTS_PER_DAY_MAX", "STORAGE_BYTES_MAX");
  for (const auto& text : items) {
    json::document doc;
    json::object_reader o, quota;
    std::string name;
    uint64_t threads = 0, events = 0, bytes = 0;
    json::dom::element qel;
    status s = open_response(text, &doc, &o);
    if (s) s = o.string("name", &name);
    if (s) s = o.element("quota", &qel);
    if (s) s = json::object_reader::open(qel, "quota", &quota);
    if (s) s = quota.uint("threads_max", &threads);
    if (s) s = quota.uint("events_per_day_max", &events);
    if (s) s = quota.uint("storage_bytes_max", &bytes);
    if (!s) return c.unreadable_response(s);
    auto shown = [](uint64_t v) { return v == 0 ? std::string("-") : std::to_string(v); };
    std::printf("%-24s %14s %18s %18s\n", name.c_str(), shown(threads).c_str(), shown(events).c_str(),
                shown(bytes).c_str());
  }
  return ok;
}

int namespace_show(cli& c, const args& a) {
  if (a.positional.size() != 3) return misuse(a);
  http::response r;
  int code = ok;
  if (!c.call("GET", "/v1/namespaces/" + q(a.positional[2]), "", &r, &code)) return code;
  return c.print_json(r);
}

int namespace_quota(cli& c, const args& a) {
  if (a.positional.size() != 3) return misuse(a);
  std::string quota;
  if (!quota_json(a, &quota)) return usage;
  http::response r;
  int code = ok;
  if (!c.call("PATCH", "/v1/namespaces/" + q(a.positional[2]), "{\"quota\":" + quota + "}", &r, &code)) return code;
  return c.print_json(r);
}

int namespace_delete(cli& c, const args& a) {
  if (a.positional.size() != 3) return misuse(a);
  http::response r;
  int code = ok;
  if (!c.call("DELETE", "/v1/namespaces/" + q(a.positional[2]), "", &r, &code)) return code;
  if (!c.json) std::printf("namespace %s deleted\n", a.positional[2].c_str());
  return ok;
}

// Every command: its usage (after "usage: skein ") and what runs it.
struct command {
  const char* noun;
  const char* verb;
  const char* usage;
  int (*run)(cli&, const args&);
};

const command commands[] = {
    {"thread", "create",
     "thread create <agent> [--title T] [--name N] [--tag X]... [--parent ID] [--task ID] [--policy P]\n"
     "        [--engine-config JSON] [--member AGENT[:always|:on_mention]]...",
     thread_create},
    {"thread", "list", "thread list [--agent A] [--status S] [--tag T] [--parent ID] [--limit N] [--archived]", thread_list},
    {"thread", "show", "thread show <id>", thread_show},
    {"thread", "delete", "thread delete <id>", thread_delete},
    {"thread", "title", "thread title <id> <text>     set the title (never replaced by a generated one)", thread_title},
    {"thread", "reconcile", "thread reconcile <id>", thread_reconcile},
    {"thread", "compact", "thread compact <id> [--stages a,b] [--keep-turns N] [--tool-result-bytes-max N]  exit 1 failed",
     thread_compact},
    {"thread", "diagnose", "thread diagnose <id>     exit 0 idle or running, 2 failed, 3 stalled", thread_diagnose},
    {"thread", "prune", "thread prune", thread_prune},
    {"thread", "export", "thread export <id> [--output FILE]", thread_export},
    {"thread", "import", "thread import <file> [--format auto|skein|opennova|lace|gitmem] [--agent A]", thread_import},
    {"thread", "fork", "thread fork <id> --at N", thread_fork},
    {"entries", "create", "entries create <thread|agent> \"<msg>\" [--wait] [--key IDEMPOTENCY-KEY] [--role R]",
     entries_create},
    {"entries", "list", "entries list <id> [--from N] [--follow] [--group chat,model,signal]", entries_list},
    {"entries", "read", "entries read <id>        prints the run's text as it streams; exits when the run ends",
     entries_read},
    {"task", "show", "task show <task id>      the task's dedicated thread", task_show},
    {"house", "add", "house add <thread> <agent> [--trigger always|on_mention]   add (or re-trigger) a member",
     house_member},
    {"house", "remove", "house remove <thread> <agent>", house_member},
    {"agent", "create", "agent create <id> [--prompt P] [--engine E] [--engine-config JSON] [--tool T]... [--policy P]"
     " [--delegate-to A,B]... [--depth-max N] [--delegate-self]",
     agent_create},
    {"agent", "list", "agent list", agent_list},
    {"agent", "show", "agent show <id>", agent_show},
    {"usage", "", "usage [--agent A] [--thread T] [--since S] [--until U] [--group-by agent|thread|day]", usage_show},
    {"memory", "search", "memory search <agent> <query> [-k N]   the agent's messages closest to the query",
     memory_search},
    {"schedule", "create",
     "schedule create <agent> (--cron EXPR [--zone Z] | --every MS [--anchor MS] | --at MS) --input TEXT\n"
     "        [--role R] [--thread ID] [--title-prefix P] [--tag X]... [--missed skip|run_once] [--id ID]",
     schedule_create},
    {"schedule", "list", "schedule list [--agent A] [--limit N] [--cursor C]", schedule_list},
    {"schedule", "show", "schedule show <id>", schedule_show},
    {"schedule", "pause", "schedule pause <id>", schedule_pause},
    {"schedule", "resume", "schedule resume <id>     the next fire counts from now: missed while paused are skipped",
     schedule_pause},
    {"schedule", "delete", "schedule delete <id>", schedule_delete},
    {"schedule", "history", "schedule history <id> [--limit N] [--before SEQ]   newest first", schedule_history},
    {"schedule", "preview", "schedule preview <id> [--n N]   the next due times", schedule_preview},
    {"cluster", "show", "cluster show             the members, their state and counts, the last rebalance (admin)",
     cluster_show},
    {"cluster", "rebalance",
     "cluster rebalance        after every node got the new cluster file (SIGHUP): move the threads\n"
     "        whose owner changes, then commit the new members; exit 0 done, 1 failed (admin)",
     cluster_rebalance},
    {"namespace", "create",
     "namespace create <name> [--threads-max N] [--events-per-day-max N] [--storage-bytes-max N]   (server admin)",
     namespace_create},
    {"namespace", "list", "namespace list", namespace_list},
    {"namespace", "show", "namespace show <name>    its quota and what it holds now", namespace_show},
    {"namespace", "quota",
     "namespace quota <name> [--threads-max N] [--events-per-day-max N] [--storage-bytes-max N]   0: unlimited",
     namespace_quota},
    {"namespace", "delete", "namespace delete <name>  erases all of its data (server admin)", namespace_delete},
};

const command* find_command(const std::string& noun, const std::string& verb) {
  for (const auto& cmd : commands)
    if (noun == cmd.noun && verb == cmd.verb) return &cmd;
  return nullptr;
}

const char* client_options =
    "client options: --server URL (SKEIN_SERVER, default http://127.0.0.1:7411),\n"
    "                --token T (SKEIN_TOKEN), --json (machine-readable output),\n"
    "                --namespace NS (SKEIN_NAMESPACE: the server's admin acts in NS)\n";

// The usage of every command of `noun` (or of one), to `out`.
void print_usage(std::FILE* out, const std::string& noun, const command* only) {
  for (const auto& cmd : commands)
    if (only == &cmd || (only == nullptr && noun == cmd.noun)) std::fprintf(out, "usage: skein %s\n", cmd.usage);
  if (out == stdout) std::fprintf(out, "\n%s", client_options);
}

int misuse(const args& a) {
  print_usage(stderr, a.positional[0], find_command(a.positional[0], a.positional.size() > 1 ? a.positional[1] : ""));
  return usage;
}

bool known_noun(const std::string& noun) {
  for (const auto& cmd : commands)
    if (noun == cmd.noun) return true;
  return false;
}

}  // namespace

int run_cli(int argc, char** argv) {
  args a;
  std::string error;
  if (!parse_args(argc, argv, &a, &error)) return std::fprintf(stderr, "skein: %s\n%s", error.c_str(), cli_usage), usage;
  if (a.flag("help")) {  // usage on stdout, exit 0: for the noun alone or one command
    if (a.positional.size() == 1 && known_noun(a.positional[0])) return print_usage(stdout, a.positional[0], nullptr), ok;
    const command* cmd = a.positional.size() >= 2 ? find_command(a.positional[0], a.positional[1]) : nullptr;
    if (cmd != nullptr) return print_usage(stdout, cmd->noun, cmd), ok;
    if (a.positional.empty()) return std::fputs(cli_usage, stdout), ok;
    std::string name = a.positional[0] + (a.positional.size() > 1 ? " " + a.positional[1] : "");
    std::fprintf(stderr, "skein: unknown command '%s'\n%s", name.c_str(), cli_usage);
    return usage;
  }
  // A command of one word (usage) takes no verb.
  const bool one_word = !a.positional.empty() && find_command(a.positional[0], "") != nullptr;
  if (a.positional.size() < 2 && !one_word) return std::fprintf(stderr, "%s", cli_usage), usage;
  std::string server = a.opt("server");
  if (server.empty()) server = std::getenv("SKEIN_SERVER") ? std::getenv("SKEIN_SERVER") : "http://127.0.0.1:7411";
  std::string token = a.opt("token");
  if (token.empty() && std::getenv("SKEIN_TOKEN")) token = std::getenv("SKEIN_TOKEN");
  http::endpoint ep;
  if (status s = http::parse_server_url(server, &ep); !s) return fail("skein", s, usage);
  cli c{http::client{ep, token}, a.flag("json"), "", {}};
  std::string ns = a.opt("namespace");
  if (ns.empty() && std::getenv("SKEIN_NAMESPACE")) ns = std::getenv("SKEIN_NAMESPACE");
  if (!ns.empty()) {
    if (status s = validate_namespace(ns, "--namespace"); !s) return fail("skein", s, usage);
    c.headers.emplace_back("Skein-Namespace", ns);
  }
  const command* cmd = one_word ? find_command(a.positional[0], "") : find_command(a.positional[0], a.positional[1]);
  if (cmd == nullptr) {
    std::fprintf(stderr, "skein: unknown command '%s %s'\n%s", a.positional[0].c_str(), a.positional[1].c_str(), cli_usage);
    return usage;
  }
  return cmd->run(c, a);
}

}  // namespace skein::tools
