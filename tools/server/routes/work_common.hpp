// work_common: what the work routes (work_items.cpp, work_sessions.cpp,
// work_graph.cpp; docs/api.md, "Work items") share: the seed's (gitmem's)
// project default, bounded query numbers, the agent's request body and the
// create answer.
#pragma once

#include <string>
#include <string_view>

#include "runtime/model/work_api.hpp"
#include "tools/server/routes/route.hpp"

namespace skein::server {

inline constexpr size_t work_list_limit_default = 100;

// The seed's `project`: absent (or "") is its default project ("default"),
// never "every project" (the runtime's "" for a query).
status project_of(std::string text, std::string* out);
// The body's `project`, as project_of reads it; present and empty is a 400.
status body_project(const json::object_reader& r, std::string* out);
// A bounded count from the query: `fallback` when absent, else 1..max.
status query_count(const http::request& req, const std::string& name, size_t fallback, size_t max,
                   std::string_view limit, size_t* out);
// A query flag: "true" or "false" (absent: false).
status query_bool(const http::request& req, const std::string& name, bool* out);
// Opens a work route's body into *doc and *r, and sets in->agent_id to the
// path's agent: the body of every work request made for one agent.
template <class In>
status agent_body(const route_call& c, json::document* doc, json::object_reader* r, In* in) {
  in->agent_id = c.param("agent");
  return c.body(doc, r);
}
// A create result's answer: the item with its vitality, read back through
// get_item (the clock's view now).
std::string created_answer(runtime& rt, const work_create_result& r);

}  // namespace skein::server
