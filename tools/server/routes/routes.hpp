// routes: the route tables of the HTTP API, one per resource, each declared in
// routes/<resource>.cpp beside its handlers (docs/api.md lists the routes).
// A new route is a row in its resource's table and a handler beside it; the
// dispatcher (api.cpp), admission and tests/server/route_table_test.cpp read
// every row from api_routes().
#pragma once

#include <span>

#include "tools/server/routes/route.hpp"

namespace skein::server {

std::span<const route> health_routes();      // health.cpp: /healthz, /metrics
std::span<const route> agent_routes();       // agents.cpp: agents, their memory
std::span<const route> thread_routes();      // threads.cpp: threads, tasks, houses, prune
std::span<const route> entry_routes();       // entries.cpp: entries, streams, DMs
std::span<const route> transfer_routes();    // import_export.cpp: import, export
std::span<const route> schedule_routes();    // schedules.cpp
std::span<const route> usage_routes();       // usage.cpp
std::span<const route> cluster_routes();     // cluster.cpp
std::span<const route> work_item_routes();   // work_items.cpp: work items
std::span<const route> work_session_routes();  // work_sessions.cpp: sessions, suggestions
std::span<const route> work_graph_routes();  // work_graph.cpp: the knowledge graph
std::span<const route> namespace_routes();   // namespaces.cpp
std::span<const route> ui_routes();          // ui.cpp: the viewer's files

// Every row, in the order of the tables above.
std::span<const route> api_routes();

}  // namespace skein::server
