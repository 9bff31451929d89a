// The skein CLI: thread, entries and agent commands against a running
// `skein serve`, over HTTP. Exit codes are listed in cli_usage.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "runtime/model/agent.hpp"
#include "runtime/model/json_codec.hpp"
#include "runtime/model/json_reader.hpp"
#include "runtime/model/json_writer.hpp"
#include "tools/client/http_client.hpp"
#include "tools/tool_util.hpp"

namespace skein::tools {

extern const char* cli_usage;

namespace {

enum exit_code : int { ok = 0, failed = 1, run_failed = 2, stalled = 3, not_found = 4, denied = 5, conflict = 6,
                       usage = 64 };

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

const std::map<std::string, bool> known_flags = {{"json", true}, {"wait", true}, {"follow", true}};

bool parse_args(int argc, char** argv, args* out, std::string* error) {
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
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

  int code_for(int http_status) {
    if (http_status == 404) return not_found;
    if (http_status == 401 || http_status == 403) return denied;
    if (http_status == 409) return conflict;
    return failed;
  }

  // Sends a request; on an HTTP error prints the server's message and sets *code.
  bool call(const std::string& method, const std::string& target, const std::string& body, http::response* r, int* code) {
    if (status s = client.call(method, target, body, r); !s) {
      std::fprintf(stderr, "skein: %s\n", s.to_string().c_str());
      *code = failed;
      return false;
    }
    if (r->status >= 300) {
      std::fprintf(stderr, "skein: %s %s: HTTP %d %s\n", method.c_str(), target.c_str(), r->status, r->body.c_str());
      *code = code_for(r->status);
      return false;
    }
    return true;
  }

  int print_raw(const http::response& r) {
    std::fwrite(r.body.data(), 1, r.body.size(), stdout);
    if (!r.body.empty() && r.body.back() != '\n') std::fputc('\n', stdout);
    return ok;
  }
};

std::string q(const std::string& s) { return http::percent_encode(s); }

// The items of array `field` in a JSON object, minified.
bool json_items(const std::string& body, const char* field, std::vector<std::string>* out) {
  json::document doc;
  json::dom::element items;
  json::object_reader o;
  json::dom::array arr;
  out->clear();
  if (!json::parse(body, {}, "response", &doc).is_ok() || !json::object_reader::open(doc.root(), "response", &o).is_ok() ||
      !o.element(field, &items).is_ok() || items.get(arr) != simdjson::SUCCESS)
    return false;
  for (json::dom::element e : arr) out->push_back(simdjson::minify(e));
  return true;
}

std::string json_string_field(const std::string& body, const char* field) {
  json::document doc;
  json::object_reader o;
  std::string value;
  if (json::parse(body, {}, "response", &doc).is_ok() && json::object_reader::open(doc.root(), "response", &o).is_ok())
    o.string(field, &value, false).ignore();
  return value;
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

// --- thread -----------------------------------------------------------------

int thread_create(cli& c, const args& a) {
  if (a.positional.size() != 3) return std::fprintf(stderr, "usage: skein thread create <agent> [--title T] [--tag X] [--parent ID] [--task ID]\n"), usage;
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
  w.end_object();
  http::response r;
  int code = ok;
  if (!c.call("POST", "/v1/threads", body, &r, &code)) return code;
  if (c.json) return c.print_raw(r);
  manifest m;
  decode_manifest(r.body, &m).ignore();
  std::printf("%s\n", m.id.c_str());
  return ok;
}

int thread_list(cli& c, const args& a) {
  std::string base = "/v1/threads?limit=" + a.opt("limit", "100");
  for (const char* f : {"agent", "status", "tag", "parent"})
    if (!a.opt(f).empty()) base += std::string("&") + f + "=" + q(a.opt(f));
  std::string cursor;
  if (!c.json) std::printf("%-32s %-16s %-10s %8s  %s\n", "ID", "AGENT", "STATUS", "EVENTS", "TITLE");
  std::string all = "[";
  do {
    http::response r;
    int code = ok;
    if (!c.call("GET", base + (cursor.empty() ? "" : "&cursor=" + q(cursor)), "", &r, &code)) return code;
    std::vector<std::string> items;
    if (!json_items(r.body, "threads", &items)) return std::fprintf(stderr, "skein: unreadable response\n"), failed;
    cursor = json_string_field(r.body, "next_cursor");
    for (const auto& text : items) {
      if (c.json) {
        if (all.size() > 1) all += ",";
        all += text;
        continue;
      }
      manifest m;
      if (decode_manifest(text, &m).is_ok()) print_thread_row(m);
    }
  } while (!cursor.empty());
  if (c.json) std::printf("%s]\n", all.c_str());
  return ok;
}

int thread_simple(cli& c, const args& a, const std::string& method, const std::string& suffix, const std::string& body = "") {
  if (a.positional.size() != 3) return std::fprintf(stderr, "usage: skein thread %s <id>\n", a.positional[1].c_str()), usage;
  http::response r;
  int code = ok;
  if (!c.call(method, "/v1/threads/" + q(a.positional[2]) + suffix, body, &r, &code)) return code;
  if (c.json || a.positional[1] != "show") {
    if (r.status == 204) {
      if (!c.json) std::printf("deleted %s\n", a.positional[2].c_str());
      return ok;
    }
    return c.print_raw(r);
  }
  manifest m;
  decode_manifest(r.body, &m).ignore();
  std::printf("id        %s\nagent     %s\nstatus    %s\ntitle     %s\nevents    %llu\nsession   %s\ntokens    %llu in / %llu out\n",
              m.id.c_str(), m.agent_id.c_str(), std::string{to_string(m.status)}.c_str(), m.title.c_str(),
              static_cast<unsigned long long>(m.last_seq), m.session_id.c_str(),
              static_cast<unsigned long long>(m.usage.input_tokens), static_cast<unsigned long long>(m.usage.output_tokens));
  if (!m.parent_id.empty()) std::printf("parent    %s %s\n", std::string{to_string(m.parent)}.c_str(), m.parent_id.c_str());
  return ok;
}

int thread_diagnose(cli& c, const args& a) {
  if (a.positional.size() != 3) return std::fprintf(stderr, "usage: skein thread diagnose <id>\n"), usage;
  http::response r;
  int code = ok;
  if (!c.call("GET", "/v1/threads/" + q(a.positional[2]) + "/diagnose", "", &r, &code)) return code;
  std::string stage = json_string_field(r.body, "stage"), error = json_string_field(r.body, "last_error");
  if (c.json) c.print_raw(r);
  else std::printf("%s%s\n", stage.c_str(), error.empty() ? "" : (": " + error).c_str());
  if (stage == "failed") return run_failed;
  if (stage == "stalled") return stalled;
  return ok;
}

int thread_prune(cli& c, const args&) {
  http::response r;
  int code = ok;
  if (!c.call("POST", "/v1/prune", "", &r, &code)) return code;
  return c.print_raw(r);
}

int thread_export(cli& c, const args& a) {
  if (a.positional.size() != 3) return std::fprintf(stderr, "usage: skein thread export <id> [--output FILE]\n"), usage;
  http::response r;
  int code = ok;
  if (!c.call("GET", "/v1/threads/" + q(a.positional[2]) + "/export", "", &r, &code)) return code;
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
  if (a.positional.size() != 3) return std::fprintf(stderr, "usage: skein thread import <file> [--format F] [--agent A]\n"), usage;
  std::ifstream in{a.positional[2], std::ios::binary};
  if (!in) return std::fprintf(stderr, "skein: cannot read %s\n", a.positional[2].c_str()), failed;
  std::stringstream body;
  body << in.rdbuf();
  std::string target = "/v1/import?format=" + q(a.opt("format", "auto"));
  if (!a.opt("agent").empty()) target += "&agent=" + q(a.opt("agent"));
  http::response r;
  int code = ok;
  if (!c.call("POST", target, body.str(), &r, &code)) return code;
  return c.print_raw(r);
}

int thread_fork(cli& c, const args& a) {
  if (a.positional.size() != 3 || a.opt("at").empty()) return std::fprintf(stderr, "usage: skein thread fork <id> --at N\n"), usage;
  uint64_t at = 0;
  if (!parse_u64(a.opt("at"), &at)) return std::fprintf(stderr, "skein: --at expects a number\n"), usage;
  http::response r;
  int code = ok;
  if (!c.call("POST", "/v1/threads/" + q(a.positional[2]) + "/fork", "{\"at_seq\":" + std::to_string(at) + "}", &r, &code))
    return code;
  if (c.json) return c.print_raw(r);
  manifest m;
  decode_manifest(r.body, &m).ignore();
  std::printf("%s\n", m.id.c_str());
  return ok;
}

// --- entries ----------------------------------------------------------------

// A thread id, or an agent id whose direct-message thread is reused or created.
bool resolve_target(cli& c, const std::string& ref, std::string* thread, int* code) {
  http::response r;
  if (c.client.call("GET", "/v1/threads/" + q(ref), "", &r).is_ok() && r.status == 200) {
    *thread = ref;
    return true;
  }
  if (!c.call("GET", "/v1/agents/" + q(ref), "", &r, code)) return false;
  if (!c.call("GET", "/v1/threads?agent=" + q(ref) + "&tag=dm&limit=1000", "", &r, code)) return false;
  std::vector<std::string> items;
  json_items(r.body, "threads", &items);
  for (const auto& text : items) {
    manifest m;
    if (decode_manifest(text, &m).is_ok()) {
      *thread = m.id;
      return true;
    }
  }
  std::string body = R"({"agent_id":")" + ref + R"(","name":"direct messages","tags":["dm"]})";
  if (!c.call("POST", "/v1/threads", body, &r, code)) return false;
  manifest m;
  decode_manifest(r.body, &m).ignore();
  *thread = m.id;
  return true;
}

int entries_create(cli& c, const args& a) {
  if (a.positional.size() != 4) return std::fprintf(stderr, "usage: skein entries create <thread|agent> \"<msg>\" [--wait] [--key K]\n"), usage;
  int code = ok;
  std::string thread;
  if (!resolve_target(c, a.positional[2], &thread, &code)) return code;
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
  if (!c.call("POST", "/v1/threads/" + q(thread) + "/entries", body, &r, &code)) return code;
  if (c.json) return c.print_raw(r);
  if (!a.flag("wait")) {
    std::printf("%s %s\n", thread.c_str(), json_string_field(r.body, "run_id").c_str());
    return ok;
  }
  json::document doc;
  json::dom::element run_el;
  json::object_reader o, run;
  std::string text, outcome;
  if (json::parse(r.body, {}, "response", &doc).is_ok() && json::object_reader::open(doc.root(), "response", &o).is_ok() &&
      o.element("run", &run_el).is_ok() && json::object_reader::open(run_el, "run", &run).is_ok()) {
    run.string("text", &text, false).ignore();
    run.string("outcome", &outcome, false).ignore();
  }
  std::printf("%s\n", text.c_str());
  return outcome == "completed" ? ok : run_failed;
}

int entries_list(cli& c, const args& a) {
  if (a.positional.size() != 3) return std::fprintf(stderr, "usage: skein entries list <id> [--from N] [--follow]\n"), usage;
  std::string id = a.positional[2];
  uint64_t from = 1;
  if (!a.opt("from").empty() && !parse_u64(a.opt("from"), &from)) return std::fprintf(stderr, "skein: --from expects a number\n"), usage;
  int code = ok;
  for (;;) {
    http::response r;
    if (!c.call("GET", "/v1/threads/" + q(id) + "/entries?limit=1000&from_seq=" + std::to_string(from), "", &r, &code)) return code;
    std::vector<std::string> items;
    if (!json_items(r.body, "events", &items)) return std::fprintf(stderr, "skein: unreadable response\n"), failed;
    uint64_t next = from;
    size_t n = 0;
    for (const auto& text : items) {
      event ev;
      if (!decode_event(text, &ev).is_ok()) continue;
      if (c.json) std::printf("%s\n", text.c_str());
      else print_event_line(ev);
      next = ev.seq + 1;
      ++n;
    }
    from = next;
    if (n < 1000) break;
  }
  std::fflush(stdout);
  if (!a.flag("follow")) return ok;
  int http_status = 0;
  status s = c.client.stream("/v1/threads/" + q(id) + "/stream?from_seq=" + std::to_string(from), {},
                             [&](const http::sse_event& e) {
                               if (e.event == "delta") return true;
                               event ev;
                               if (c.json) std::printf("%s\n", e.data.c_str());
                               else if (decode_event(e.data, &ev).is_ok()) print_event_line(ev);
                               std::fflush(stdout);
                               return true;
                             },
                             &http_status);
  if (!s) return std::fprintf(stderr, "skein: %s\n", s.to_string().c_str()), failed;
  return http_status == 200 ? ok : c.code_for(http_status);
}

// Renders the current (or next) run's text as it streams; exits when it ends.
int entries_read(cli& c, const args& a) {
  if (a.positional.size() != 3) return std::fprintf(stderr, "usage: skein entries read <id>\n"), usage;
  std::string id = a.positional[2];
  http::response r;
  int code = ok;
  if (!c.call("GET", "/v1/threads/" + q(id), "", &r, &code)) return code;
  manifest m;
  decode_manifest(r.body, &m).ignore();
  // From the start of the last run if one is going, so its whole text shows.
  uint64_t from = m.last_seq + 1;
  if (m.status == thread_status::running) from = m.last_seq > 32 ? m.last_seq - 31 : 1;
  int result = ok;
  bool printed_delta = false;
  int http_status = 0;
  status s = c.client.stream(
      "/v1/threads/" + q(id) + "/stream?from_seq=" + std::to_string(from), {},
      [&](const http::sse_event& e) {
        if (e.event == "delta") {
          std::fputs(json_string_field(e.data, "text").c_str(), stdout);
          std::fflush(stdout);
          printed_delta = true;
          return true;
        }
        event ev;
        if (!decode_event(e.data, &ev).is_ok()) return true;
        if (ev.type == event_type::message && ev.role == message_role::assistant) {
          if (!printed_delta) std::printf("%s", ev.text.c_str());
          std::printf("\n");
        }
        if (ev.type == event_type::signal && ev.name == "thread.stop") {
          if (ev.json.find("\"completed\"") == std::string::npos) result = run_failed;
          return false;
        }
        if (ev.type == event_type::signal && ev.name == "thread.start") printed_delta = false;
        return true;
      },
      &http_status);
  if (!s) return std::fprintf(stderr, "skein: %s\n", s.to_string().c_str()), failed;
  return http_status == 200 ? result : c.code_for(http_status);
}

// --- agent ------------------------------------------------------------------

int agent_create(cli& c, const args& a) {
  if (a.positional.size() != 3)
    return std::fprintf(stderr, "usage: skein agent create <id> [--prompt P] [--engine E] [--engine-config JSON] [--tool T] [--policy P]\n"), usage;
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
  std::string body;
  if (status s = encode_agent(ag, &body); !s) return std::fprintf(stderr, "skein: %s\n", s.to_string().c_str()), usage;
  http::response r;
  int code = ok;
  if (!c.call("POST", "/v1/agents", body, &r, &code)) return code;
  if (c.json) return c.print_raw(r);
  std::printf("%s\n", ag.id.c_str());
  return ok;
}

int agent_list(cli& c, const args& a) {
  http::response r;
  int code = ok;
  if (!c.call("GET", "/v1/agents", "", &r, &code)) return code;
  if (c.json) return c.print_raw(r);
  std::vector<std::string> items;
  json_items(r.body, "agents", &items);
  std::printf("%-24s %-10s %-10s %s\n", "ID", "ENGINE", "POLICY", "TOOLS");
  {
    for (const auto& text : items) {
      agent_config ag;
      if (!decode_agent(text, &ag).is_ok()) continue;
      std::string tools;
      for (const auto& t : ag.tools) tools += (tools.empty() ? "" : ",") + t;
      std::printf("%-24s %-10s %-10s %s\n", ag.id.c_str(), ag.engine.c_str(), std::string{to_string(ag.policy)}.c_str(), tools.c_str());
    }
  }
  return ok;
}

int agent_show(cli& c, const args& a) {
  if (a.positional.size() != 3) return std::fprintf(stderr, "usage: skein agent show <id>\n"), usage;
  http::response r;
  int code = ok;
  if (!c.call("GET", "/v1/agents/" + q(a.positional[2]), "", &r, &code)) return code;
  return c.print_raw(r);
}

}  // namespace

int run_cli(int argc, char** argv) {
  args a;
  std::string error;
  if (!parse_args(argc, argv, &a, &error)) return std::fprintf(stderr, "skein: %s\n%s", error.c_str(), cli_usage), usage;
  if (a.positional.size() < 2) return std::fprintf(stderr, "%s", cli_usage), usage;
  std::string server = a.opt("server");
  if (server.empty()) server = std::getenv("SKEIN_SERVER") ? std::getenv("SKEIN_SERVER") : "http://127.0.0.1:7411";
  std::string token = a.opt("token");
  if (token.empty() && std::getenv("SKEIN_TOKEN")) token = std::getenv("SKEIN_TOKEN");
  http::endpoint ep;
  if (status s = http::parse_server_url(server, &ep); !s) return fail("skein", s, usage);
  cli c{http::client{ep, token}, a.flag("json")};
  const std::string& noun = a.positional[0];
  const std::string& verb = a.positional[1];
  if (noun == "thread") {
    if (verb == "create") return thread_create(c, a);
    if (verb == "list") return thread_list(c, a);
    if (verb == "show") return thread_simple(c, a, "GET", "");
    if (verb == "delete") return thread_simple(c, a, "DELETE", "");
    if (verb == "diagnose") return thread_diagnose(c, a);
    if (verb == "reconcile") return thread_simple(c, a, "POST", "/reconcile");
    if (verb == "prune") return thread_prune(c, a);
    if (verb == "export") return thread_export(c, a);
    if (verb == "import") return thread_import(c, a);
    if (verb == "fork") return thread_fork(c, a);
  } else if (noun == "entries") {
    if (verb == "create") return entries_create(c, a);
    if (verb == "list") return entries_list(c, a);
    if (verb == "read") return entries_read(c, a);
  } else if (noun == "agent") {
    if (verb == "create") return agent_create(c, a);
    if (verb == "list") return agent_list(c, a);
    if (verb == "show") return agent_show(c, a);
  }
  std::fprintf(stderr, "skein: unknown command '%s %s'\n%s", noun.c_str(), verb.c_str(), cli_usage);
  return usage;
}

}  // namespace skein::tools
