// Import and export: a thread's log as JSONL out (GET .../export), and
// threads of any supported format in (POST /v1/import, under its own body
// limit, import_body_bytes_max), all or nothing.
#include "runtime/model/json_writer.hpp"
#include "tools/io/import_export.hpp"
#include "tools/server/routes/routes.hpp"

namespace skein::server {
namespace {

void export_thread(route_call& c) {
  const std::string& id = c.param("thread");
  manifest m;
  if (!c.thread_allowed(id, &m)) return;
  std::vector<raw_event> events;
  uint64_t next = 1;
  if (status s = c.rt().read_raw(id, 1, 0, group_filter{}, &events, &next); !s) return c.fail(s);
  m.last_seq = events.size();  // the log as read, even if a run appended meanwhile
  std::string body;
  if (status s = export_thread_raw(m, events, &body); !s) return c.fail(s);
  c.reply(http::response{200, "application/x-ndjson", std::move(body), {}});
}

bool imports_thread(const import_result& parsed, const std::string& id) {
  for (const auto& t : parsed.threads)
    if (t.manifest.id == id) return true;
  return false;
}

// POST /v1/import?format=&agent=: the scope (agent_query) refused another agent already.
void import_threads(route_call& c) {
  std::string format_name = c.query("format");
  auto format = parse_import_format(format_name.empty() ? "auto" : format_name);
  if (!format) return c.fail(status::invalid_input("format: must be auto, skein, opennova, lace or gitmem"));
  std::string agent = c.query("agent");
  if (agent.empty() && c.scope.agents.size() == 1 && !c.scope.admin) agent = *c.scope.agents.begin();
  import_result parsed;
  if (status s = parse_import(c.req.body, *format, agent.empty() ? "imported" : agent, &parsed); !s) return c.fail(s);
  // Check everything before writing anything: a refused import leaves no trace.
  for (const auto& t : parsed.threads) {
    if (!c.scope.allows(t.manifest.agent_id)) return c.forbidden("import threads of agent " + t.manifest.agent_id);
    // An imported thread is indexed under its parent: a scoped token names only
    // a parent it may see (or one in the same import). Missing and foreign
    // parents answer alike. Admin sees every thread, so nothing is foreign to it.
    if (!c.scope.admin && t.manifest.parent == parent_kind::thread && !t.manifest.parent_id.empty() &&
        !imports_thread(parsed, t.manifest.parent_id)) {
      manifest parent;
      if (status s = visible_thread(c.rt(), c.scope, t.manifest.parent_id, "manifest.parent_id", &parent); !s)
        return c.fail(s);
    }
    manifest existing;
    if (c.rt().get_thread(t.manifest.id, &existing).is_ok())
      return c.fail(status::conflict("thread " + t.manifest.id + " already exists"));
    agent_config a;
    if (status s = c.rt().get_agent(t.manifest.agent_id, &a); !s) return c.fail(s);
  }
  std::string body;
  json_writer w{&body};
  w.begin_object();
  w.field("format", to_string(parsed.format));
  w.key("threads");
  w.begin_array();
  std::vector<thread_import> threads;
  threads.reserve(parsed.threads.size());
  for (auto& t : parsed.threads) threads.push_back({std::move(t.manifest), std::move(t.events)});
  std::vector<manifest> stored;
  if (status s = c.rt().import_threads(std::move(threads), &stored); !s) return c.fail(s);  // all or nothing
  for (const auto& m : stored) w.raw(manifest_json(m));
  w.end_array();
  w.key("torn_last_line");
  w.boolean(parsed.torn_last_line);
  w.field("torn_detail", parsed.torn_detail);
  w.end_object();
  c.reply_json(201, body);
}

constexpr route rows[] = {
    {.method = "GET", .pattern = "/v1/threads/{thread}/export", .scope = route_scope::thread,
     .handler = export_thread},
    {.method = "POST", .pattern = "/v1/import", .scope = route_scope::agent_query, .denied = "import threads of agent",
     .body = http::body_class::import, .handler = import_threads},
};

}  // namespace

std::span<const route> transfer_routes() { return rows; }

}  // namespace skein::server
