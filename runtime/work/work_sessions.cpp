// The work service's graph lenses, sessions and suggestions (work_service.hpp).
//
// Suggestions: at a session's close its texts (summary, open items, topics) are
// embedded and compared with the texts of the sessions of its agent and project
// closed before it: the latest work_sessions_compared_max of them, closed within
// work_sessions_compared_ms of now (the seed's window, so a topic of last
// quarter or of long ago does not count as recurring). A text found (similarity
// >= work_suggest_similarity) in enough sessions, this one included, becomes a
// pending suggestion — unless an open item of the project covers it (>=
// work_suggest_covered), or a suggestion of the project already matches it: a
// pending one gains the session as evidence, a dismissed one returns to pending
// with it, a suppressed one (three dismissals) keeps the topic out for good.
#include <algorithm>
#include <set>

#include "persistence/work_rows.hpp"
#include "runtime/model/cluster.hpp"
#include "runtime/model/ids.hpp"
#include "runtime/work/work_service.hpp"

namespace skein {
namespace {

double cosine(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.empty() || a.size() != b.size()) return 0;
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += static_cast<double>(a[i]) * b[i];
  return s;
}

status check_limit(size_t limit) {
  if (limit == 0 || limit > work_list_limit_max)
    return status::invalid_input("limit: must be 1.." + std::to_string(work_list_limit_max))
        .with_field("limit")
        .with_limit("work_list_limit_max");
  return status::ok();
}

status check_node(const std::string& node) {
  size_t colon = node.find(':');
  if (colon == std::string::npos || colon == 0 || node.find('\0') != std::string::npos || node.size() > 300)
    return status::invalid_input("node: '" + quote_input(node) + "' is not a typed node (agent:, thread:, session:, issue:)")
        .with_field("node");
  return status::ok();
}

// Bounded, as a node is: a filter crosses nodes in a cluster.
status check_filter(const work_graph_filter& f) {
  if (f.predicate.size() > work_predicate_bytes_max)
    return status::invalid_input("predicate: longer than work_predicate_bytes_max (" +
                                 std::to_string(work_predicate_bytes_max) + ")")
        .with_field("predicate")
        .with_limit("work_predicate_bytes_max");
  if (!f.project.empty()) SKEIN_TRY(validate_work_project(f.project, "project"));
  return status::ok();
}

std::string new_prefixed_id(std::string_view prefix) { return std::string{prefix} + new_run_id().substr(4); }

status check_texts(const std::vector<std::string>& texts, std::string_view field) {
  if (texts.size() > work_session_texts_max)
    return status::invalid_input(std::string{field} + ": " + std::to_string(texts.size()) +
                                 " texts, more than work_session_texts_max (" + std::to_string(work_session_texts_max) + ")")
        .with_field(std::string{field})
        .with_limit("work_session_texts_max");
  for (size_t i = 0; i < texts.size(); ++i)
    SKEIN_TRY(validate_work_text(texts[i], std::string{field} + "[" + std::to_string(i) + "]"));
  return status::ok();
}

}  // namespace

status work_service::scan_triples(const std::string& prefix, size_t limit, std::vector<work_triple>* out,
                                  const work_graph_filter& filter) {
  return log_.scan_side(side_cf::graph, prefix, [&](std::string_view, std::string_view value) {
    work_triple t;
    if (decode_triple(value, &t) && filter.matches(t)) out->push_back(std::move(t));
    return out->size() < limit;
  });
}

status work_service::graph_connected_to(const std::string& node, size_t limit, std::vector<work_triple>* out,
                                        const work_graph_filter& filter) {
  SKEIN_TRY(check_node(node));
  SKEIN_TRY(check_limit(limit));
  SKEIN_TRY(check_filter(filter));
  out->clear();
  SKEIN_TRY(scan_triples(keys::graph_subject_prefix(node), limit, out, filter));
  if (out->size() < limit) SKEIN_TRY(scan_triples(keys::graph_object_prefix(node), limit, out, filter));
  return status::ok();
}

status work_service::graph_produced_by(const std::string& agent_id, size_t limit, std::vector<work_triple>* out,
                                       const work_graph_filter& filter) {
  SKEIN_TRY(validate_id(agent_id, "agent_id"));
  SKEIN_TRY(check_limit(limit));
  SKEIN_TRY(check_filter(filter));
  out->clear();
  return scan_triples(keys::graph_agent_prefix(agent_id), limit, out, filter);
}

status work_service::graph_into(const std::string& node, size_t limit, std::vector<work_triple>* out,
                                const work_graph_filter& filter) {
  SKEIN_TRY(check_node(node));
  SKEIN_TRY(check_limit(limit));
  SKEIN_TRY(check_filter(filter));
  out->clear();
  return scan_triples(keys::graph_object_prefix(node), limit, out, filter);
}

status work_service::graph_provenance(const std::string& node, size_t depth, size_t limit,
                                      std::vector<work_triple>* out, const work_graph_filter& filter,
                                      const graph_hop& read_hop) {
  SKEIN_TRY(check_node(node));
  SKEIN_TRY(check_limit(limit));
  SKEIN_TRY(check_filter(filter));
  if (depth == 0 || depth > work_graph_depth_max)
    return status::invalid_input("depth: must be 1.." + std::to_string(work_graph_depth_max))
        .with_field("depth")
        .with_limit("work_graph_depth_max");
  out->clear();
  std::set<std::string> seen{node};
  std::vector<std::string> frontier{node};
  for (size_t hop = 0; hop < depth && !frontier.empty() && out->size() < limit; ++hop) {
    std::vector<std::string> next;
    for (const auto& n : frontier) {
      std::vector<work_triple> in;
      if (read_hop) SKEIN_TRY(read_hop(n, limit - out->size(), &in));
      else SKEIN_TRY(scan_triples(keys::graph_object_prefix(n), limit - out->size(), &in, filter));
      for (auto& t : in) {
        if (seen.insert(t.subject).second) next.push_back(t.subject);
        out->push_back(std::move(t));
        if (out->size() >= limit) break;
      }
      if (out->size() >= limit) break;
    }
    frontier = std::move(next);
  }
  return status::ok();
}

status work_service::graph_stats(work_graph_stats* out, const std::string& project, work_graph_shared* shared) {
  work_graph_filter filter;
  filter.project = project;
  SKEIN_TRY(check_filter(filter));
  work_graph_tally tally;
  SKEIN_TRY(log_.scan_side(side_cf::graph, "s/", [&](std::string_view, std::string_view value) {
    work_triple t;
    if (decode_triple(value, &t) && filter.matches(t)) tally.add(t);
    return true;
  }));
  *out = tally.stats();
  if (shared != nullptr) *shared = tally.shared();
  return status::ok();
}

status work_service::list_suggestions(const std::string& agent_id, bool all, std::vector<work_suggestion>* out) {
  SKEIN_TRY(validate_id(agent_id, "agent_id"));
  out->clear();
  return log_.scan_side(side_cf::suggestions, keys::work_prefix(agent_id), [&](std::string_view, std::string_view v) {
    work_suggestion s;
    if (decode_suggestion(v, &s) && (all || s.status == suggestion_status::pending)) out->push_back(std::move(s));
    return true;
  });
}

status work_service::find_suggestion(const std::string& suggestion_id, work_suggestion* out) {
  SKEIN_TRY(validate_id(suggestion_id, "suggestion_id"));
  bool found = false;
  // Keys lead with the agent: the id alone is found by one scan of the (small) family.
  SKEIN_TRY(log_.scan_side(side_cf::suggestions, "", [&](std::string_view key, std::string_view v) {
    if (!key.ends_with("/" + suggestion_id)) return true;
    found = decode_suggestion(v, out).is_ok();
    return !found;
  }));
  if (!found) return status::not_found("suggestion " + suggestion_id + " does not exist").with_field("suggestion_id");
  return status::ok();
}

status work_service::promote_suggestion(const std::string& suggestion_id, const std::string& project,
                                        work_create_result* out) {
  if (!project.empty()) SKEIN_TRY(validate_work_project(project, "project"));
  work_suggestion s;
  SKEIN_TRY(find_suggestion(suggestion_id, &s));
  if (s.status != suggestion_status::pending)
    return status::conflict("suggestion " + suggestion_id + " is " + std::string{to_string(s.status)} + ", not pending");
  work_create c;
  c.agent_id = s.agent_id;
  c.text = s.text;
  c.project = project.empty() ? s.project : project;
  SKEIN_TRY(create_item(c, out));
  s.status = suggestion_status::promoted;
  s.promoted_thread = out->thread.id;
  s.updated_at_ms = hooks_.clock();
  return hooks_.write_rows({suggestion_row_put(s)});
}

status work_service::dismiss_suggestion(const std::string& suggestion_id, work_suggestion* out) {
  work_suggestion s;
  SKEIN_TRY(find_suggestion(suggestion_id, &s));
  if (s.status != suggestion_status::pending)
    return status::conflict("suggestion " + suggestion_id + " is " + std::string{to_string(s.status)} + ", not pending");
  ++s.dismissals;
  s.status = s.dismissals >= work_suggest_dismissals_max ? suggestion_status::suppressed : suggestion_status::dismissed;
  s.updated_at_ms = hooks_.clock();
  SKEIN_TRY(hooks_.write_rows({suggestion_row_put(s)}));
  *out = std::move(s);
  return status::ok();
}

status work_service::session_start(const work_session_start& in, work_session_started* out) {
  SKEIN_TRY(validate_id(in.agent_id, "agent_id"));
  if (!in.session_id.empty()) SKEIN_TRY(validate_id(in.session_id, "session_id"));
  if (!in.project.empty()) SKEIN_TRY(validate_work_project(in.project, "project"));
  agent_config agent;
  SKEIN_TRY(log_.read_agent(in.agent_id, &agent));
  *out = {};
  out->session_id = in.session_id.empty() ? new_prefixed_id("ses_") : in.session_id;
  out->project = in.project.empty() ? std::string{work_default_project} : in.project;
  work_sweep_options so;
  so.agent_id = in.agent_id;
  so.auto_archive = in.auto_archive;
  so.project = out->project;
  SKEIN_TRY(sweep_items(so, &out->sweep));
  work_session_row row;
  std::string existing;
  if (log_.read_side(side_cf::sessions, keys::session_key(in.agent_id, out->session_id), &existing).is_ok())
    SKEIN_TRY(decode_session_row(existing, &row));  // a session started again keeps its texts
  row.agent_id = in.agent_id;
  row.id = out->session_id;
  row.project = out->project;
  if (row.started_at_ms == 0) row.started_at_ms = hooks_.clock();
  SKEIN_TRY(hooks_.write_rows({session_row_put(row)}));
  for (bool ps : {false, true}) {
    work_list_query q;
    q.agent_id = in.agent_id;
    q.project_state = ps;
    q.project = out->project;
    q.totals = false;
    q.limit = work_list_limit_max;
    auto& into = ps ? out->project_state : out->items;
    do {
      work_list_page page;
      SKEIN_TRY(list_items(q, &page));
      for (auto& e : page.items) into.push_back(std::move(e));
      q.cursor = page.next_cursor;
    } while (!q.cursor.empty());
  }
  SKEIN_TRY(list_suggestions(in.agent_id, false, &out->suggestions));
  std::erase_if(out->suggestions, [&](const work_suggestion& s) { return s.project != out->project; });
  return status::ok();
}

status work_service::session_close(const work_session_close& in, work_session_closed* out) {
  SKEIN_TRY(validate_id(in.agent_id, "agent_id"));
  SKEIN_TRY(validate_id(in.session_id, "session_id"));
  if (!in.summary.empty()) SKEIN_TRY(validate_work_text(in.summary, "summary"));
  SKEIN_TRY(check_texts(in.open_items, "open_items"));
  SKEIN_TRY(check_texts(in.topics, "topics"));
  if (!in.project.empty()) SKEIN_TRY(validate_work_project(in.project, "project"));
  agent_config agent;
  SKEIN_TRY(log_.read_agent(in.agent_id, &agent));
  *out = {};
  work_session_row row;
  std::string existing;
  if (log_.read_side(side_cf::sessions, keys::session_key(in.agent_id, in.session_id), &existing).is_ok())
    SKEIN_TRY(decode_session_row(existing, &row));  // its project, from its start
  if (!in.project.empty()) row.project = in.project;
  for (const auto& text : in.open_items) {
    work_create c;
    c.agent_id = in.agent_id;
    c.text = text;
    c.session_id = in.session_id;
    c.project = row.project;
    work_create_result r;
    SKEIN_TRY(create_item(c, &r));
    out->items.push_back(std::move(r));
  }
  row.agent_id = in.agent_id;
  row.id = in.session_id;
  int64_t now = hooks_.clock();
  if (row.started_at_ms == 0) row.started_at_ms = now;
  row.closed_at_ms = now;
  row.texts.clear();
  if (!in.summary.empty()) row.texts.push_back(in.summary);
  for (const auto& t : in.open_items) row.texts.push_back(t);
  for (const auto& t : in.topics) row.texts.push_back(t);
  row.vectors = embed(in.agent_id, row.texts);
  std::vector<work_suggestion> changed;
  if (!row.vectors.empty()) SKEIN_TRY(compute_suggestions(row, &changed));
  std::vector<side_row> rows{session_row_put(row)};
  for (const auto& s : changed) rows.push_back(suggestion_row_put(s));
  SKEIN_TRY(hooks_.write_rows(std::move(rows)));
  out->suggestions = std::move(changed);
  return status::ok();
}

status work_service::compute_suggestions(const work_session_row& session, std::vector<work_suggestion>* changed) {
  const std::string& agent_id = session.agent_id;
  const std::string& session_id = session.id;
  const std::vector<std::string>& texts = session.texts;
  const std::vector<std::vector<float>>& vecs = session.vectors;
  // The sessions of the project closed before this one, latest first: the
  // window counts each of them (embedded or not), then drops those too old.
  std::vector<work_session_row> earlier;
  SKEIN_TRY(log_.scan_side(side_cf::sessions, keys::work_prefix(agent_id), [&](std::string_view, std::string_view v) {
    work_session_row s;
    if (decode_session_row(v, &s) && s.closed_at_ms != 0 && s.id != session_id && s.project == session.project)
      earlier.push_back(std::move(s));
    return true;
  }));
  std::sort(earlier.begin(), earlier.end(), [](const auto& a, const auto& b) {
    return a.closed_at_ms != b.closed_at_ms ? a.closed_at_ms > b.closed_at_ms : a.id > b.id;
  });
  if (earlier.size() > work_sessions_compared_max) earlier.resize(work_sessions_compared_max);
  int64_t now = hooks_.clock();
  std::erase_if(earlier, [&](const work_session_row& s) { return now - s.closed_at_ms > work_sessions_compared_ms; });
  std::vector<work_suggestion> known;
  SKEIN_TRY(list_suggestions(agent_id, true, &known));
  std::erase_if(known, [&](const work_suggestion& s) { return s.project != session.project; });
  auto known_vecs = embed(agent_id, [&] {
    std::vector<std::string> t;
    for (const auto& s : known) t.push_back(s.text);
    return t;
  }());
  if (known_vecs.size() != known.size()) return status::ok();  // the embedder failed: no suggestions this time
  std::vector<bool> touched(known.size(), false);
  for (size_t i = 0; i < texts.size(); ++i) {
    std::vector<std::string> sessions;
    for (const auto& s : earlier)
      for (const auto& v : s.vectors)
        if (cosine(vecs[i], v) >= work_suggest_similarity) {
          sessions.push_back(s.id);
          break;
        }
    if (sessions.size() + 1 < work_suggest_sessions_min) continue;
    std::reverse(sessions.begin(), sessions.end());  // oldest first
    sessions.push_back(session_id);
    bool covered = false;
    {
      auto& ix = index_of(agent_id);
      std::lock_guard lock{ix.mu};
      for (size_t r = 0; r < ix.items.size() && !covered; ++r)
        if (const float* v = vector_of(ix, r);
            v != nullptr && vecs[i].size() == ix.dims && ix.items[r].item.project == session.project) {
          double s = 0;
          for (size_t d = 0; d < ix.dims; ++d) s += static_cast<double>(vecs[i][d]) * v[d];
          covered = s >= work_suggest_covered;
        }
    }
    if (covered) continue;
    bool matched = false;
    for (size_t k = 0; k < known.size() && !matched; ++k) {
      if (cosine(vecs[i], known_vecs[k]) < work_suggest_similarity) continue;
      matched = true;
      auto& s = known[k];
      if (s.status == suggestion_status::suppressed || s.status == suggestion_status::promoted) continue;
      if (std::find(s.sessions.begin(), s.sessions.end(), session_id) == s.sessions.end()) s.sessions.push_back(session_id);
      s.status = suggestion_status::pending;  // a dismissed topic that recurs returns
      s.updated_at_ms = now;
      touched[k] = true;
    }
    if (matched) continue;
    work_suggestion s;
    s.id = work_suggestion_id(agent_id);  // found on the agent's work home by its id alone
    s.agent_id = agent_id;
    s.text = texts[i];
    s.sessions = std::move(sessions);
    s.created_at_ms = s.updated_at_ms = now;
    s.project = session.project;
    known.push_back(s);
    known_vecs.push_back(vecs[i]);
    touched.push_back(true);
  }
  for (size_t k = 0; k < known.size(); ++k)
    if (touched[k]) changed->push_back(known[k]);
  return status::ok();
}

}  // namespace skein
