// Agent routes: create (the namespace's admin), list (the token's agents),
// read one, and search its memory. An agent's DM thread is an entry route
// (entries.cpp), its work items work routes (work_items.cpp).
#include "runtime/model/json_codec.hpp"
#include "runtime/model/json_writer.hpp"
#include "tools/server/routes/routes.hpp"

namespace skein::server {
namespace {

constexpr uint64_t memory_k_default = 10;  // hits of a memory search without k

std::string agent_json(const agent_config& a) {
  std::string out;
  encode_agent(a, &out).ignore();
  return out;
}

// POST /v1/agents: the body is an agent (the model's codec names its fields).
void create_agent(route_call& c) {
  agent_config a;
  if (status s = decode_agent(c.req.body, &a, c.limits()); !s) return c.fail(s);
  agent_config out;
  if (status s = c.rt().create_agent(a, &out); !s) return c.fail(s);
  c.reply_json(201, agent_json(out));
}

void list_agents(route_call& c) {
  std::vector<agent_config> all;
  if (status s = c.rt().list_agents(&all); !s) return c.fail(s);
  std::string body;
  json_writer w{&body};
  w.begin_object();
  w.key("agents");
  w.begin_array();
  for (const auto& a : all)
    if (c.scope.allows(a.id)) w.raw(agent_json(a));
  w.end_array();
  w.end_object();
  c.reply_json(200, body);
}

void get_agent(route_call& c) {
  agent_config a;
  if (status s = c.rt().get_agent(c.param("agent"), &a); !s) return c.fail(s);
  c.reply_json(200, agent_json(a));
}

// GET /v1/agents/{agent}/memory?q=&k=: memory search over the agent's threads.
void memory_search(route_call& c) {
  uint64_t k = 0;
  if (status s = query_uint(c.req, "k", memory_k_default, &k); !s) return c.fail(s);
  std::string q = c.query("q");
  if (q.empty()) return c.fail(status::invalid_input("q: the query is required").with_field("q"));
  std::vector<memory_hit> hits;
  if (status s = c.rt().memory_search(c.param("agent"), q, static_cast<size_t>(k), &hits); !s) return c.fail(s);
  c.reply_json(200, memory_hits_json(hits));
}

constexpr route rows[] = {
    {.method = "POST", .pattern = "/v1/agents", .scope = route_scope::admin, .denied = "create agents (admin only)",
     .handler = create_agent},
    {.method = "GET", .pattern = "/v1/agents", .scope = route_scope::ns, .handler = list_agents},
    {.method = "GET", .pattern = "/v1/agents/{agent}", .scope = route_scope::agent, .denied = "read agent",
     .handler = get_agent},
    {.method = "GET", .pattern = "/v1/agents/{agent}/memory", .scope = route_scope::agent,
     .denied = "search the memory of agent", .handler = memory_search},
};

}  // namespace

std::span<const route> agent_routes() { return rows; }

}  // namespace skein::server
