// work_json: the JSON answers of the work routes (tools/API.md, "Work items"):
// one encoder per value, used by HTTP and so by `skein mcp`. Plain functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "runtime/model/json_writer.hpp"
#include "runtime/model/work_api.hpp"

namespace skein::server {

// An item: the thread's id, agent, title and tags, the work fields, vitality,
// recency, frequency and stage.
std::string work_item_json(const work_entry& e);
std::string suggestion_json(const work_suggestion& s);
// {item, deduplicated, matched_by, similarity}
std::string created_json(const work_create_result& r, const work_vitality& v);
void write_triple(json_writer& w, const work_triple& t);
void write_entries(json_writer& w, std::string_view key, const std::vector<work_entry>& items);
void write_strings(json_writer& w, std::string_view key, const std::vector<std::string>& v);

}  // namespace skein::server
