// work_routes: the HTTP routes of work items, suggestions, sessions and the
// knowledge graph (tools/API.md, "Work items"), on the runtime's work-item calls
// (runtime/model/work_api.hpp). api::handle hands every request to route_work
// first. Thread-safe as api is: no state of its own.
//
// Scope: an agent-scoped token reaches only its agents' items, suggestions,
// sessions and graph triples; another agent's id answers exactly as a missing
// one (404 not_found, the same bytes).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/model/json_reader.hpp"
#include "runtime/model/work_api.hpp"
#include "runtime/runtime.hpp"
#include "tools/server/auth.hpp"
#include "tools/server/http.hpp"

namespace skein::server {

// Answers the request and returns true when its path is a work route; false
// (nothing answered) otherwise. `seg` is the path's segments ("v1", ...).
bool route_work(runtime& rt, const token_scope& scope, const json_limits& limits, http::request& req,
                const std::shared_ptr<http::exchange>& ex, const std::vector<std::string>& seg);

// From a request's head: a refusal when a scoped token names another agent in
// an agent-scoped work route (the missing agent's answer, byte for byte), so
// its body is never read. nullopt otherwise; the handler checks again.
std::optional<http::response> admit_work(const token_scope& scope, const std::vector<std::string>& seg);

}  // namespace skein::server
