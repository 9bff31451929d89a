// JSON of the namespace routes (tools/API.md, "Namespaces").
#pragma once

#include <string>

#include "runtime/model/json_codec.hpp"
#include "runtime/namespaces/namespaces.hpp"

namespace skein::server {

// {"name":..,"created_at_ms":..,"quota":{..}[,"usage":{..}]}
std::string namespace_json(const namespace_info& info, const namespace_usage* usage = nullptr);
// A create body {"name":..,"quota":{..}} (quota optional) or, with name_required
// false, a patch body {"quota":{..}}. Unknown fields are refused by name; a quota
// field absent from a patch keeps its value in *quota.
status decode_namespace_body(const std::string& body, const json_limits& limits, bool name_required,
                             std::string* name, namespace_quota* quota);

}  // namespace skein::server
