// Knowledge graph routes (runtime/model/work_graph.hpp): its lenses —
// connected_to (the seed's name; skein's is connected), produced_by,
// provenance — and its stats. A scoped token sees only the triples its agents
// wrote, and stats counts those.
#include "runtime/model/json_writer.hpp"
#include "runtime/model/work_graph.hpp"
#include "tools/server/routes/routes.hpp"
#include "tools/server/routes/work_common.hpp"
#include "tools/server/work_json.hpp"

namespace skein::server {
namespace {

constexpr size_t graph_limit_default = 100;
constexpr uint64_t graph_depth_default = 2;

// What every lens reads from the query: limit, predicate and project.
status graph_query(const route_call& c, size_t* limit, work_graph_filter* filter) {
  filter->predicate = c.query("predicate");
  SKEIN_TRY(query_count(c.req, "limit", graph_limit_default, work_list_limit_max, "work_list_limit_max", limit));
  return project_of(c.query("project"), &filter->project);
}

status required_query(const route_call& c, const std::string& name, std::string* out) {
  *out = c.query(name);
  if (out->empty()) return status::invalid_input(name + ": required").with_field(name);
  if (out->size() > work_text_bytes_max)
    return status::invalid_input(name + ": longer than " + std::to_string(work_text_bytes_max) + " bytes")
        .with_limit("work_text_bytes_max")
        .with_field(name);
  return status::ok();
}

void reply_triples(route_call& c, const status& s, const std::vector<work_triple>& triples) {
  if (!s) return c.fail(s);
  std::string body;
  json_writer w{&body};
  w.begin_object();
  w.key("triples");
  w.begin_array();
  for (const auto& t : triples)
    if (c.scope.allows(t.agent_id)) write_triple(w, t);
  w.end_array();
  w.end_object();
  c.reply_json(200, body);
}

void connected_to(route_call& c) {
  size_t limit = 0;
  work_graph_filter filter;
  std::string node;
  std::vector<work_triple> out;
  status s = graph_query(c, &limit, &filter);
  if (s) s = required_query(c, "node", &node);
  if (s) s = c.rt().graph_connected_to(node, limit, &out, filter);
  reply_triples(c, s, out);
}

// The agent: `agent`, or the seed's `node` (an id, or agent:id); another
// agent's answers as a missing one.
void produced_by(route_call& c) {
  size_t limit = 0;
  work_graph_filter filter;
  std::vector<work_triple> out;
  status s = graph_query(c, &limit, &filter);
  std::string agent = c.query("agent");
  if (agent.empty()) agent = c.query("node");
  if (agent.starts_with("agent:")) agent.erase(0, 6);
  if (s && agent.empty()) s = status::invalid_input("agent: required").with_field("agent");
  if (s) s = visible_agent(c.rt(), c.scope, agent);
  if (s) s = c.rt().graph_produced_by(agent, limit, &out, filter);
  reply_triples(c, s, out);
}

void provenance(route_call& c) {
  size_t limit = 0, depth = 0;
  work_graph_filter filter;
  std::string node;
  std::vector<work_triple> out;
  status s = graph_query(c, &limit, &filter);
  if (s) s = required_query(c, "node", &node);
  if (s) s = query_count(c.req, "depth", graph_depth_default, work_graph_depth_max, "work_graph_depth_max", &depth);
  if (s) s = c.rt().graph_provenance(node, depth, limit, &out, filter);
  reply_triples(c, s, out);
}

// Stats over what the scope may see: the runtime's own for admin; for a scoped
// token, counted from its agents' triples.
status scoped_stats(runtime& rt, const token_scope& scope, const std::string& project, work_graph_stats* out) {
  if (scope.admin) return rt.graph_stats(out, project);
  work_graph_filter filter;
  filter.project = project;
  work_graph_tally tally;
  for (const auto& agent : scope.agents) {
    std::vector<work_triple> ts;
    SKEIN_TRY(rt.graph_produced_by(agent, work_list_limit_max, &ts, filter));
    for (const auto& t : ts) tally.add(t);
  }
  *out = tally.stats();
  return status::ok();
}

void stats(route_call& c) {
  size_t limit = 0;
  work_graph_filter filter;
  work_graph_stats st;
  status s = graph_query(c, &limit, &filter);
  if (s) s = scoped_stats(c.rt(), c.scope, filter.project, &st);
  if (!s) return c.fail(s);
  c.reply_json(200, graph_stats_json(st));
}

constexpr auto ns = route_scope::ns;

constexpr route rows[] = {
    {.method = "GET", .pattern = "/v1/graph/connected_to", .scope = ns, .handler = connected_to},
    {.method = "GET", .pattern = "/v1/graph/connected", .scope = ns, .handler = connected_to},
    {.method = "GET", .pattern = "/v1/graph/produced_by", .scope = ns, .handler = produced_by},
    {.method = "GET", .pattern = "/v1/graph/provenance", .scope = ns, .handler = provenance},
    {.method = "GET", .pattern = "/v1/graph/stats", .scope = ns, .handler = stats},
};

}  // namespace

std::span<const route> work_graph_routes() { return rows; }

}  // namespace skein::server
