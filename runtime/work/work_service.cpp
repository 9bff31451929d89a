// The work service's items: the per-agent index, dedup, creation, transitions,
// listings and the sweep. Graph lenses, sessions and suggestions are in
// work_sessions.cpp.
#include "runtime/work/work_service.hpp"

#include <algorithm>
#include <cassert>
#include <charconv>
#include <future>

#include "persistence/work_rows.hpp"
#include "runtime/model/cluster.hpp"
#include "runtime/model/ids.hpp"
#include "runtime/model/json_writer.hpp"
#include "runtime/model/text.hpp"

namespace skein {
namespace {

// Eight float lanes: the loop vectorizes (a double sum in order would not), and
// the vectors are unit length, so float sums lose nothing a threshold can see.
double dot(const float* a, const float* b, size_t n) {
  float lanes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (size_t k = 0; k < 8; ++k) lanes[k] += a[i + k] * b[i + k];
  float s = 0;
  for (; i < n; ++i) s += a[i] * b[i];
  for (float l : lanes) s += l;
  return s;
}

// The title of an item: its text, cut to the title limit on a character boundary.
std::string title_of(const std::string& text) {
  if (text.size() <= title_bytes_max) return text;
  size_t cut = title_bytes_max;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut);
}

bool open_stage(work_stage s) {
  return s == work_stage::emerging || s == work_stage::active || s == work_stage::cooling || s == work_stage::dormant;
}

}  // namespace

work_service::work_service(event_log& log, work_hooks hooks) : log_(log), hooks_(std::move(hooks)) {}

work_service::~work_service() { stop(); }

work_service::agent_index& work_service::index_of(const std::string& agent_id) {
  std::lock_guard lock{agents_mu_};
  auto& slot = agents_[agent_id];
  if (!slot) slot = std::make_unique<agent_index>();
  return *slot;
}

status work_service::rebuild(size_t* skipped) {
  size_t bad = 0;
  SKEIN_TRY(log_.scan_side(side_cf::work, "", [&](std::string_view, std::string_view value) {
    work_row r;
    if (!decode_work_row(value, &r)) {
      ++bad;
      return true;
    }
    if (r.item.status != work_status::open) return true;
    auto& ix = index_of(r.agent_id);
    std::lock_guard lock{ix.mu};
    put_open(ix, r.thread_id, r.item, r.vector);
    return true;
  }));
  if (skipped != nullptr) *skipped = bad;
  return status::ok();
}

void work_service::start_sweeps(uint64_t interval_ms, bool auto_archive) {
  if (interval_ms == 0 || sweeper_.joinable()) return;
  sweeper_ = std::thread([this, interval_ms, auto_archive] {
    std::unique_lock lock{sweep_mu_};
    while (!sweep_cv_.wait_for(lock, std::chrono::milliseconds(interval_ms), [this] { return stopping_; })) {
      lock.unlock();
      work_sweep_options o;
      o.auto_archive = auto_archive;
      work_sweep_result r;
      sweep_items(o, &r).ignore();  // a failed sweep is retried at the next interval
      lock.lock();
    }
  });
}

void work_service::stop() {
  {
    std::lock_guard lock{sweep_mu_};
    stopping_ = true;
  }
  sweep_cv_.notify_all();
  if (sweeper_.joinable()) sweeper_.join();
}

void work_service::forget(const std::string& thread_id) {
  std::vector<agent_index*> all;
  {
    std::lock_guard lock{agents_mu_};
    for (auto& [id, ix] : agents_) all.push_back(ix.get());
  }
  for (auto* ix : all) {
    std::lock_guard lock{ix->mu};
    drop_open(*ix, thread_id);
  }
}

void work_service::adopt_item(const std::string& agent_id, const std::string& thread_id) {
  std::string value;
  work_row r;
  if (!log_.read_side(side_cf::work, keys::work_key(agent_id, thread_id), &value).is_ok() ||
      !decode_work_row(value, &r).is_ok() || r.item.status != work_status::open)
    return;
  auto& ix = index_of(agent_id);
  std::lock_guard lock{ix.mu};
  put_open(ix, r.thread_id, r.item, r.vector);
}

std::vector<std::vector<float>> work_service::embed(const std::string& agent_id, std::vector<std::string> texts) {
  std::shared_ptr<embedder> e;
  if (texts.empty() || !hooks_.embedder_of || !hooks_.embedder_of(agent_id, &e) || !e) return {};
  std::vector<std::vector<float>> out;
  size_t batch = std::max<size_t>(1, e->batch_max());
  for (size_t from = 0; from < texts.size(); from += batch) {
    std::vector<std::string> part(texts.begin() + from, texts.begin() + std::min(texts.size(), from + batch));
    size_t n = part.size();
    // Shared: an answer after the timeout finds the promise alive and no one waiting.
    auto done = std::make_shared<std::promise<embed_reply>>();
    auto fut = done->get_future();
    try {  // host code
      e->embed(std::move(part), [done](embed_reply r) { done->set_value(std::move(r)); });
    } catch (...) {
      return {};
    }
    if (fut.wait_for(std::chrono::milliseconds(work_embed_timeout_ms)) != std::future_status::ready) return {};
    embed_reply r = fut.get();
    if (!r.result || r.vectors.size() != n) return {};
    for (auto& v : r.vectors) out.push_back(std::move(v));
  }
  return out;
}

void work_service::put_open(agent_index& ix, const std::string& thread_id, const work_item& w,
                            const std::vector<float>& vec) {
  if (ix.dims == 0 && !vec.empty()) {
    ix.dims = vec.size();
    ix.matrix.assign(ix.items.size() * ix.dims, 0.0f);
  }
  bool fits = !vec.empty() && vec.size() == ix.dims;
  size_t row;
  if (auto it = ix.at.find(thread_id); it != ix.at.end()) {
    row = it->second;
  } else {
    row = ix.items.size();
    ix.items.push_back({});
    ix.at.emplace(thread_id, row);
    ix.matrix.resize(ix.items.size() * ix.dims, 0.0f);
  }
  open_item& o = ix.items[row];
  o.thread_id = thread_id;
  o.normalized = normalize_work_text(w.text);
  o.item = w;
  if (fits) {
    std::copy(vec.begin(), vec.end(), ix.matrix.begin() + static_cast<ptrdiff_t>(row * ix.dims));
    o.has_vector = true;
  }
}

void work_service::drop_open(agent_index& ix, const std::string& thread_id) {
  auto it = ix.at.find(thread_id);
  if (it == ix.at.end()) return;
  size_t row = it->second, last = ix.items.size() - 1;
  ix.at.erase(it);
  if (row != last) {  // the last row moves into the hole: the matrix stays contiguous
    ix.items[row] = std::move(ix.items[last]);
    ix.at[ix.items[row].thread_id] = row;
    std::copy_n(ix.matrix.begin() + static_cast<ptrdiff_t>(last * ix.dims), ix.dims,
                ix.matrix.begin() + static_cast<ptrdiff_t>(row * ix.dims));
  }
  ix.items.pop_back();
  ix.matrix.resize(ix.items.size() * ix.dims);
}

const float* work_service::vector_of(const agent_index& ix, size_t row) const {
  if (!ix.items[row].has_vector) return nullptr;
  return ix.matrix.data() + row * ix.dims;
}

bool work_service::find_duplicate(const agent_index& ix, const std::string& normalized, bool project_state,
                                  const std::string& project, const std::vector<float>& vec, size_t* row,
                                  std::string* by, double* similarity) const {
  double best = work_dedup_similarity;
  bool found = false;
  auto other_kind = [&](const work_item& w) { return w.project_state != project_state || w.project != project; };
  if (!vec.empty() && vec.size() == ix.dims) {
    for (size_t r = 0; r < ix.items.size(); ++r) {
      if (!ix.items[r].has_vector || other_kind(ix.items[r].item)) continue;
      double s = dot(vec.data(), ix.matrix.data() + r * ix.dims, ix.dims);
      if (s > best) {
        best = s;
        *row = r;
        found = true;
      }
    }
  }
  if (found) {
    *by = "embedding";
    *similarity = best;
    return true;
  }
  for (size_t r = 0; r < ix.items.size(); ++r) {
    if (other_kind(ix.items[r].item) || ix.items[r].normalized != normalized) continue;
    *row = r;
    *by = "text";
    *similarity = 1.0;
    return true;
  }
  return false;
}

status work_service::create_item(const work_create& in, work_create_result* out) {
  SKEIN_TRY(validate_id(in.agent_id, "agent_id"));
  SKEIN_TRY(validate_work_text(in.text, "text"));
  if (!in.session_id.empty()) SKEIN_TRY(validate_id(in.session_id, "session_id"));
  if (in.relates_to.size() > work_relates_max)
    return status::invalid_input("relates_to: " + std::to_string(in.relates_to.size()) +
                                 " issues, more than work_relates_max (" + std::to_string(work_relates_max) + ")")
        .with_field("relates_to")
        .with_limit("work_relates_max");
  for (size_t i = 0; i < in.relates_to.size(); ++i)
    SKEIN_TRY(validate_id(in.relates_to[i], "relates_to[" + std::to_string(i) + "]"));
  if (!in.project.empty()) SKEIN_TRY(validate_work_project(in.project, "project"));
  if (!in.linear_issue.empty()) SKEIN_TRY(validate_id(in.linear_issue, "linear_issue").with_field("linear_issue"));
  agent_config agent;
  SKEIN_TRY(log_.read_agent(in.agent_id, &agent));
  auto vecs = embed(in.agent_id, {in.text});  // outside the lock: it may wait
  std::vector<float> vec = vecs.empty() ? std::vector<float>{} : std::move(vecs[0]);
  auto& ix = index_of(in.agent_id);
  std::lock_guard lock{ix.mu};
  return create_locked(ix, in, vec, out);
}

status work_service::create_locked(agent_index& ix, const work_create& in, const std::vector<float>& vec,
                                   work_create_result* out) {
  bool ps = is_project_state(in.text);
  std::string normalized = normalize_work_text(in.text);
  std::string project = in.project.empty() ? std::string{work_default_project} : in.project;
  size_t row = 0;
  std::string by;
  double sim = 0;
  while (find_duplicate(ix, normalized, ps, project, vec, &row, &by, &sim)) {
    std::string thread_id = ix.items[row].thread_id;
    work_op op;
    op.kind = work_op_kind::touch;
    work_entry e;
    status s = transition_locked(ix, in.agent_id, thread_id, std::move(op), {}, &e);
    if (s.code() == errc::not_found) {  // deleted since it was indexed: it leaves the index
      drop_open(ix, thread_id);
      continue;
    }
    SKEIN_TRY(s);
    out->thread = std::move(e.thread);
    out->deduplicated = true;
    out->matched_by = by;
    out->similarity = sim;
    return status::ok();
  }
  if (ix.items.size() >= work_items_per_agent_max)
    return status::overloaded("agent " + in.agent_id + " has " + std::to_string(ix.items.size()) +
                              " open items: work_items_per_agent_max (" + std::to_string(work_items_per_agent_max) + ")")
        .with_limit("work_items_per_agent_max");
  int64_t now = hooks_.clock();
  work_birth b;
  b.thread_id = work_item_id(in.agent_id, now);  // lives with the agent's other items
  b.options.agent_id = in.agent_id;
  b.options.title = title_of(in.text);
  b.options.tags = in.tags;
  b.item.text = in.text;
  b.item.cls = classify_work(in.text);
  b.item.project_state = ps;
  b.item.created_at_ms = b.item.last_touched_at_ms = now;
  b.item.project = project;
  b.item.linear_issue = in.linear_issue;
  std::vector<std::string> issues = in.relates_to;
  if (!in.linear_issue.empty() && std::find(issues.begin(), issues.end(), in.linear_issue) == issues.end())
    issues.push_back(in.linear_issue);
  json_writer j(&b.signal_data);
  j.begin_object();
  j.field("text", in.text);
  j.field("class", to_string(b.item.cls));
  if (!in.session_id.empty()) j.field("session_id", in.session_id);
  if (!issues.empty()) {
    j.key("relates_to");
    j.begin_array();
    for (const auto& r : issues) j.string(r);
    j.end_array();
  }
  if (project != work_default_project) j.field("project", project);
  if (!in.linear_issue.empty()) j.field("linear_issue", in.linear_issue);
  j.end_object();
  std::string agent = in.agent_id, creator = in.session_id.empty() ? "agent:" + in.agent_id : "session:" + in.session_id;
  b.rows = [agent, creator, issues, vec, now](const manifest& m, uint64_t seq) {
    std::vector<side_row> rows;
    rows.push_back(work_row_put({agent, m.id, *m.work, vec}));
    auto add = [&](std::string s, std::string p, std::string o) {
      work_triple t{std::move(s), std::move(p), std::move(o), agent, m.id, seq, now};
      t.project = m.work->project;
      for (auto& r : triple_rows(t)) rows.push_back(std::move(r));
    };
    add(creator, "created_thread", "thread:" + m.id);
    for (const auto& issue : issues) add("thread:" + m.id, "relates_to_thread", "issue:" + issue);
    return rows;
  };
  manifest m;
  SKEIN_TRY(hooks_.create(std::move(b), &m));
  put_open(ix, m.id, *m.work, vec);
  out->thread = std::move(m);
  out->deduplicated = false;
  out->matched_by.clear();
  out->similarity = 0;
  return status::ok();
}

status work_service::transition(const std::string& thread_id, work_op op, std::vector<work_triple> triples,
                                work_entry* out) {
  SKEIN_TRY(validate_id(thread_id, "thread_id"));
  manifest m;
  SKEIN_TRY(log_.read_manifest(thread_id, &m));
  if (!m.work)
    return status::invalid_input("thread_id: thread " + thread_id + " is not a work item").with_field("thread_id");
  auto& ix = index_of(m.agent_id);
  std::lock_guard lock{ix.mu};
  return transition_locked(ix, m.agent_id, thread_id, std::move(op), std::move(triples), out);
}

work_op work_service::prepare_op(const agent_index& ix, const std::string& agent_id, const std::string& thread_id,
                                 work_op op, std::vector<work_triple> triples, std::vector<float>* vec) {
  std::string text;
  if (auto it = ix.at.find(thread_id); it != ix.at.end()) {
    if (const float* v = vector_of(ix, it->second)) vec->assign(v, v + ix.dims);
    text = ix.items[it->second].item.text;
  }
  // An item stored without a vector (its embedder failed) is embedded again at its touch.
  if (vec->empty() && !text.empty() && op.kind == work_op_kind::touch) {
    auto vecs = embed(agent_id, {text});
    if (!vecs.empty()) *vec = std::move(vecs[0]);
  }
  int64_t now = hooks_.clock();
  op.at_ms = now;
  op.rows = [agent_id, vec = *vec, triples = std::move(triples), now](const manifest& after, uint64_t seq) mutable {
    std::vector<side_row> rows;
    rows.push_back(work_row_put({agent_id, after.id, *after.work, vec}));
    for (auto& t : triples) {
      t.thread_id = after.id;
      t.agent_id = agent_id;
      t.seq = seq;
      t.at_ms = now;
      t.project = after.work->project;
      for (auto& r : triple_rows(t)) rows.push_back(std::move(r));
    }
    return rows;
  };
  return op;
}

void work_service::apply_after(agent_index& ix, const manifest& after, const std::vector<float>& vec) {
  assert(after.work.has_value());  // the thread actor refuses a thread that is no item
  if (after.work->status == work_status::open) put_open(ix, after.id, *after.work, vec);
  else drop_open(ix, after.id);
}

status work_service::transition_locked(agent_index& ix, const std::string& agent_id, const std::string& thread_id,
                                       work_op op, std::vector<work_triple> triples, work_entry* out) {
  std::vector<float> vec;
  op = prepare_op(ix, agent_id, thread_id, std::move(op), std::move(triples), &vec);
  int64_t now = op.at_ms;
  manifest after;
  SKEIN_TRY(hooks_.transition(thread_id, std::move(op), &after));
  apply_after(ix, after, vec);
  out->vitality = assess_work(*after.work, now);
  out->thread = std::move(after);
  return status::ok();
}

status work_service::touch_item(const std::string& thread_id, work_entry* out) {
  work_op op;
  op.kind = work_op_kind::touch;
  return transition(thread_id, std::move(op), {}, out);
}

status work_service::relate_item(const std::string& thread_id, const std::string& issue_id, work_entry* out) {
  SKEIN_TRY(validate_id(issue_id, "issue_id"));
  work_op op;
  op.kind = work_op_kind::relate;
  op.issue_id = issue_id;
  work_triple t;
  t.subject = "thread:" + thread_id;
  t.predicate = "relates_to_thread";
  t.object = "issue:" + issue_id;
  return transition(thread_id, std::move(op), {t}, out);
}

status work_service::resolve_item(const work_resolve& in, work_entry* out) {
  if (in.note.size() > work_note_bytes_max)
    return status::invalid_input("note: " + std::to_string(in.note.size()) + " bytes, more than work_note_bytes_max (" +
                                 std::to_string(work_note_bytes_max) + ")")
        .with_field("note")
        .with_limit("work_note_bytes_max");
  if (!valid_utf8(in.note)) return status::invalid_input("note: not valid UTF-8").with_field("note");
  if (!in.session_id.empty()) SKEIN_TRY(validate_id(in.session_id, "session_id"));
  if (in.thread_id.empty() == in.text_match.empty())
    return status::invalid_input("thread_id, text_match: give exactly one").with_field("thread_id");
  if (!in.project.empty()) SKEIN_TRY(validate_work_project(in.project, "project"));
  std::string thread_id = in.thread_id;
  if (thread_id.empty()) {
    SKEIN_TRY(validate_id(in.agent_id, "agent_id"));
    SKEIN_TRY(validate_work_text(in.text_match, "text_match"));
    std::string needle;
    for (char c : in.text_match) needle.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    std::vector<std::pair<std::string, std::string>> hits;
    {
      auto& ix = index_of(in.agent_id);
      std::lock_guard lock{ix.mu};
      for (const auto& o : ix.items) {
        if (!in.project.empty() && o.item.project != in.project) continue;
        std::string hay;
        for (char c : o.item.text) hay.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
        if (hay.find(needle) != std::string::npos) hits.emplace_back(o.thread_id, o.item.text);
      }
    }
    std::sort(hits.begin(), hits.end());
    if (hits.empty())
      return status::not_found("text_match: no open item of agent " + in.agent_id +
                               (in.project.empty() ? std::string{} : " in project '" + quote_input(in.project) + "'") +
                               " contains '" + quote_input(in.text_match) + "'")
          .with_field("text_match");
    if (hits.size() > 1) {
      std::string list;
      for (size_t i = 0; i < hits.size() && i < 20; ++i)
        list += (i ? "; " : "") + hits[i].first + " \"" + quote_input(hits[i].second, 80) + "\"";
      if (hits.size() > 20) list += "; ... (" + std::to_string(hits.size()) + " in all)";
      return status::conflict("text_match: " + std::to_string(hits.size()) + " open items match '" +
                              quote_input(in.text_match) + "': " + list)
          .with_field("text_match");
    }
    thread_id = hits[0].first;
  }
  SKEIN_TRY(validate_id(thread_id, "thread_id"));
  manifest m;
  SKEIN_TRY(log_.read_manifest(thread_id, &m));
  if (!in.agent_id.empty() && m.agent_id != in.agent_id)
    return status::invalid_input("thread_id: thread " + thread_id + " belongs to agent " + m.agent_id + ", not " + in.agent_id)
        .with_field("thread_id");
  // As the seed: an item is not resolved from another project's scope.
  if (!in.project.empty() && m.work && m.work->project != in.project)
    return status::invalid_input("project: thread " + thread_id + " belongs to project '" +
                                 quote_input(m.work->project) + "', not '" + quote_input(in.project) + "'")
        .with_field("project");
  work_op op;
  op.kind = work_op_kind::resolve;
  op.note = in.note;
  op.session_id = in.session_id;
  work_triple t;
  t.subject = in.session_id.empty() ? "agent:" + m.agent_id : "session:" + in.session_id;
  t.predicate = "resolves_thread";
  t.object = "thread:" + thread_id;
  return transition(thread_id, std::move(op), {t}, out);
}

status work_service::read_entry(const std::string& thread_id, work_entry* out) {
  SKEIN_TRY(validate_id(thread_id, "thread_id"));
  manifest m;
  SKEIN_TRY(log_.read_manifest(thread_id, &m));
  if (!m.work)
    return status::invalid_input("thread_id: thread " + thread_id + " is not a work item").with_field("thread_id");
  out->vitality = assess_work(*m.work, hooks_.clock());
  out->thread = std::move(m);
  return status::ok();
}

status work_service::get_item(const std::string& thread_id, work_entry* out) { return read_entry(thread_id, out); }

status work_service::list_items(const work_list_query& q, work_list_page* out) {
  SKEIN_TRY(validate_id(q.agent_id, "agent_id"));
  if (!q.project.empty()) SKEIN_TRY(validate_work_project(q.project, "project"));
  if (q.limit == 0 || q.limit > work_list_limit_max)
    return status::invalid_input("limit: must be 1.." + std::to_string(work_list_limit_max))
        .with_field("limit")
        .with_limit("work_list_limit_max");
  size_t offset = 0;
  if (!q.cursor.empty()) {
    auto r = std::from_chars(q.cursor.data(), q.cursor.data() + q.cursor.size(), offset);
    if (r.ec != std::errc{} || r.ptr != q.cursor.data() + q.cursor.size())
      return status::invalid_input("cursor: not a cursor of this listing").with_field("cursor");
  }
  std::vector<work_stage> stages = q.stages;
  if (stages.empty()) stages = {work_stage::emerging, work_stage::active, work_stage::cooling, work_stage::dormant};
  bool only_open = std::all_of(stages.begin(), stages.end(), open_stage);
  int64_t now = hooks_.clock();
  struct ranked {
    std::string thread_id;
    work_vitality v;
  };
  std::vector<ranked> all;
  uint64_t open = 0, resolved = 0;
  auto in_scope = [&](const work_item& w) {
    return w.project_state == q.project_state && (q.project.empty() || w.project == q.project);
  };
  auto consider = [&](const std::string& id, const work_item& w) {
    if (!in_scope(w)) return;
    open += w.status == work_status::open;
    resolved += w.status == work_status::resolved;
    auto v = assess_work(w, now);
    if (std::find(stages.begin(), stages.end(), v.stage) != stages.end()) all.push_back({id, v});
  };
  if (only_open) {
    {
      auto& ix = index_of(q.agent_id);
      std::lock_guard lock{ix.mu};
      for (const auto& o : ix.items) consider(o.thread_id, o.item);
    }
    // The index holds open items only: the resolved ones are counted from their
    // rows, and a row that does not say "resolved" is not decoded (a quote in
    // a text is escaped, so the pattern cannot come from one).
    auto count_resolved = [&](std::string_view, std::string_view value) {
      if (value.find(R"("status":"resolved")") == std::string_view::npos) return true;
      work_row r;
      if (decode_work_row(value, &r) && r.item.status == work_status::resolved && in_scope(r.item)) ++resolved;
      return true;
    };
    if (q.totals) SKEIN_TRY(log_.scan_side(side_cf::work, keys::work_prefix(q.agent_id), count_resolved));
  } else {
    SKEIN_TRY(log_.scan_side(side_cf::work, keys::work_prefix(q.agent_id), [&](std::string_view, std::string_view value) {
      work_row r;
      if (decode_work_row(value, &r)) consider(r.thread_id, r.item);
      return true;
    }));
  }
  out->total_open = q.totals ? open : 0;
  out->total_resolved = q.totals ? resolved : 0;
  std::sort(all.begin(), all.end(), [](const ranked& a, const ranked& b) {
    if (a.v.vitality != b.v.vitality) return a.v.vitality > b.v.vitality;
    return a.thread_id < b.thread_id;
  });
  out->items.clear();
  out->next_cursor.clear();
  for (size_t i = offset; i < all.size() && out->items.size() < q.limit; ++i) {
    work_entry e;
    if (log_.read_manifest(all[i].thread_id, &e.thread).code() == errc::not_found) continue;  // deleted meanwhile
    e.vitality = all[i].v;
    out->items.push_back(std::move(e));
  }
  if (offset + q.limit < all.size()) out->next_cursor = std::to_string(offset + q.limit);
  return status::ok();
}

status work_service::sweep_items(const work_sweep_options& o, work_sweep_result* out) {
  if (!o.agent_id.empty()) SKEIN_TRY(validate_id(o.agent_id, "agent_id"));
  if (!o.project.empty()) SKEIN_TRY(validate_work_project(o.project, "project"));
  *out = {};
  std::vector<std::string> agents;
  {
    std::lock_guard lock{agents_mu_};
    for (const auto& [id, ix] : agents_)
      if (o.agent_id.empty() || id == o.agent_id) agents.push_back(id);
  }
  for (const auto& agent : agents) {
    auto& ix = index_of(agent);
    std::lock_guard lock{ix.mu};
    int64_t now = hooks_.clock();
    struct due {
      std::string thread_id;
      work_op_kind kind;
      int64_t since;
    };
    std::vector<due> todo;
    for (const auto& it : ix.items) {
      if (!o.project.empty() && it.item.project != o.project) continue;
      ++out->examined;
      auto v = assess_work(it.item, now);
      if (v.stage == work_stage::archived && o.auto_archive) todo.push_back({it.thread_id, work_op_kind::archive, v.dormant_since_ms});
      else if ((v.stage == work_stage::dormant || v.stage == work_stage::archived) && it.item.dormant_since_ms == 0)
        todo.push_back({it.thread_id, work_op_kind::dormant, v.dormant_since_ms});
    }
    // The transitions go to their thread actors from several host threads at once,
    // so that the journal groups their commits; the index is updated after, here.
    struct job {
      std::string thread_id;
      work_op op;
      std::vector<float> vec;
      manifest after;
      status result;
    };
    std::vector<job> jobs(todo.size());
    for (size_t i = 0; i < todo.size(); ++i) {
      work_op op;
      op.kind = todo[i].kind;
      op.dormant_since_ms = todo[i].since;
      jobs[i].thread_id = todo[i].thread_id;
      jobs[i].op = prepare_op(ix, agent, todo[i].thread_id, std::move(op), {}, &jobs[i].vec);
    }
    size_t hosts = std::min(jobs.size(), work_sweep_hosts);
    std::vector<std::thread> workers;
    for (size_t h = 0; h < hosts; ++h)
      workers.emplace_back([&, h] {
        for (size_t i = h; i < jobs.size(); i += hosts)
          jobs[i].result = hooks_.transition(jobs[i].thread_id, std::move(jobs[i].op), &jobs[i].after);
      });
    for (auto& w : workers) w.join();
    status failed = status::ok();
    for (size_t i = 0; i < jobs.size(); ++i) {
      const status& s = jobs[i].result;
      if (s.code() == errc::not_found) drop_open(ix, jobs[i].thread_id);
      // Resolved (or deleted) meanwhile: nothing to record.
      if (s.code() == errc::conflict || s.code() == errc::not_found) continue;
      if (!s) {
        if (failed.is_ok()) failed = s;
        continue;
      }
      apply_after(ix, jobs[i].after, jobs[i].vec);
      (todo[i].kind == work_op_kind::archive ? out->archived : out->dormant).push_back(jobs[i].thread_id);
    }
    SKEIN_TRY(failed);
  }
  return status::ok();
}

}  // namespace skein
