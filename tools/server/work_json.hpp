// work_json: the JSON answers of the work routes (docs/api.md, "Work items"):
// one encoder per value, used by HTTP and so by `skein mcp`. Each answer holds
// skein's fields and, beside them, the names the seed (gitmem) answers with, so
// that a client written for the seed reads it unchanged. Plain functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "runtime/model/json_writer.hpp"
#include "runtime/model/work_api.hpp"

namespace skein::server {

// An item: the thread's id, agent, title and tags, the work fields (project and
// linear_issue among them), vitality, recency, frequency and stage; and the
// seed's names for what it has (created_at, last_touched_at and resolved_at as
// ISO 8601, resolution_note, resolved_by_session).
std::string work_item_json(const work_entry& e);
void write_item_fields(json_writer& w, const work_entry& e);
// The seed's ThreadSummary of cleanup_threads: thread_id, text,
// lifecycle_status, vitality_score, thread_class, days_since_touch[,
// dormant_days] (days at `now_ms`), with skein's id and project.
std::string item_summary_json(const work_entry& e, int64_t now_ms);
std::string suggestion_json(const work_suggestion& s);
// A sweep's examined, dormant and archived, into the open object (the triage
// answer and a session start's `sweep`).
void write_sweep_fields(json_writer& w, const work_sweep_result& r);
// {item, thread, success, deduplicated, matched_by, similarity[, dedup_details, dedup]}:
// `thread` is the seed's name for `item`; dedup_details (the seed's docs) and
// dedup (its code) are {method, similarity, matched_thread_id} when deduplicated.
std::string created_json(const work_create_result& r, const work_vitality& v);
void write_created_fields(json_writer& w, const work_create_result& r, const work_vitality& v);
void write_triple(json_writer& w, const work_triple& t);
// {triples, nodes, by_predicate, top_subjects, top_objects,
// issues_by_learning_count, agents_by_contribution, stats: the seed's object}
std::string graph_stats_json(const work_graph_stats& st);
void write_entries(json_writer& w, std::string_view key, const std::vector<work_entry>& items);
// ms since the epoch as the seed's ISO 8601 (2024-01-02T03:04:05.678Z).
std::string iso8601(int64_t ms);

}  // namespace skein::server
