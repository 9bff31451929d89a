// The event log's side of moving a thread between cluster nodes: every row of a
// thread read from one snapshot, the same rows written on another node in one
// batch, the claims handed over beside them, and a node's own meta rows.
#include <algorithm>
#include <set>
#include <rocksdb/write_batch.h>

#include "persistence/event_log_internal.hpp"
#include "persistence/keys.hpp"
#include "persistence/work_rows.hpp"
#include "runtime/model/cluster.hpp"
#include "runtime/model/schedule.hpp"
#include "runtime/model/ids.hpp"

namespace skein {

using namespace detail;

namespace {

static_assert(log_row_inbox_family == cf_inbox, "event_log.hpp names the inbox family by its number");
static_assert(log_row_embeddings_family == cf_embeddings, "event_log.hpp names the embeddings family by its number");

constexpr std::string_view node_prefix = "node/";

// The families whose keys for a thread are "thread 0x00 …" (event_key's shape).
constexpr cf_id ranged[] = {cf_events, cf_inbox, cf_usage, cf_embeddings};

bool is_ranged(uint8_t family) {
  return std::find(std::begin(ranged), std::end(ranged), static_cast<cf_id>(family)) != std::end(ranged);
}

// Whether `t` names thread `id` (every triple names exactly one thread: the
// item whose transition wrote it).
bool names_thread(const work_triple& t, std::string_view id) {
  std::string node = "thread:" + std::string{id};
  return t.subject == node || t.object == node;
}

// Another node's bytes are checked like a client's: row `i` of a handoff of
// `what` ("thread t", "schedule s", "agent a's work") is not what it must be.
status handoff_row_error(const std::string& what, size_t i, size_t rows, const std::string& why) {
  return status::invalid_input("handoff of " + what + ": row " + std::to_string(i + 1) + " of " +
                               std::to_string(rows) + " " + why)
      .with_field("rows");
}

bool is_key_of_triple(std::string_view key, const work_triple& t) {
  for (const auto& k : triple_keys(t))
    if (k == key) return true;
  return false;
}

// "effect 0x00 thread" with a non-empty effect name.
bool is_effect_key_of(std::string_view key, std::string_view thread) {
  size_t zero = key.find('\0');
  return zero != std::string_view::npos && zero > 0 && key.substr(zero + 1) == thread;
}

}  // namespace

namespace detail {

std::string prefix_end(std::string prefix) {
  prefix.back() = static_cast<char>(prefix.back() + 1);
  return prefix;
}

status thread_triple_keys(rocksdb::Iterator* graph, std::string_view id, std::set<std::string>* keys,
                          std::vector<std::string>* undecodable) {
  std::string node = "thread:" + std::string{id};
  for (const auto& prefix : {keys::graph_subject_prefix(node), keys::graph_object_prefix(node)}) {
    for (graph->Seek(prefix); graph->Valid() && graph->key().starts_with(prefix); graph->Next()) {
      work_triple t;
      if (!decode_triple(graph->value().ToStringView(), &t)) {
        undecodable->push_back(graph->key().ToString());
        continue;
      }
      for (auto& k : triple_keys(t)) keys->insert(std::move(k));
    }
    SKEIN_TRY(from_rocks(graph->status(), "read graph of " + std::string{id}));
  }
  return status::ok();
}

}  // namespace detail

status event_log::thread_rows(std::string_view thread_id, std::vector<log_row>* out) const {
  SKEIN_TRY(validate_id(thread_id, "thread id"));
  out->clear();
  snapshot_guard snap{impl_->db.get()};
  rocksdb::ReadOptions ro = snap.read_options();
  std::string id{thread_id};
  std::string row;
  auto s = impl_->db->Get(ro, impl_->cf(cf_threads), id, &row);
  if (s.IsNotFound()) return status::not_found("thread " + id + " is not stored here");
  SKEIN_TRY(from_rocks(s, "read manifest of " + id));
  manifest m;
  if (status d = decode_manifest(row, &m, options_.limits); !d)
    return status::corruption("threads key " + id + ": " + d.message());
  out->push_back({static_cast<uint8_t>(cf_threads), id, std::move(row)});

  auto scan = [&](cf_id family, const std::string& begin, const std::string& end) -> status {
    rocksdb::Slice upper{end};
    rocksdb::ReadOptions r = ro;
    r.iterate_upper_bound = &upper;
    r.total_order_seek = family == cf_index;
    std::unique_ptr<rocksdb::Iterator> it{impl_->db->NewIterator(r, impl_->cf(family))};
    for (it->Seek(begin); it->Valid(); it->Next())
      out->push_back({static_cast<uint8_t>(family), it->key().ToString(), it->value().ToString()});
    return from_rocks(it->status(), std::string{"read "} + cf_names[family] + " of " + id);
  };
  for (cf_id family : ranged) SKEIN_TRY(scan(family, keys::event_prefix(id), keys::event_prefix_end(id)));
  std::string idem = keys::idempotency_prefix(id);
  SKEIN_TRY(scan(cf_index, idem, prefix_end(idem)));
  for (const auto& k : index_keys_of(m)) {
    std::string value;
    auto g = impl_->db->Get(ro, impl_->cf(cf_index), k, &value);
    if (g.IsNotFound()) continue;  // updated_at entries of a row behind its log
    SKEIN_TRY(from_rocks(g, "read index of " + id));
    out->push_back({static_cast<uint8_t>(cf_index), k, std::move(value)});
  }
  // A work item's row (keyed by its agent) and every graph triple naming it,
  // each under all three of its keys: its agent's work moves with it.
  if (m.work) {
    std::string key = keys::work_key(m.agent_id, id), value;
    auto g = impl_->db->Get(ro, impl_->cf(cf_work), key, &value);
    if (!g.IsNotFound()) {
      SKEIN_TRY(from_rocks(g, "read work row of " + id));
      out->push_back({static_cast<uint8_t>(cf_work), key, std::move(value)});
    }
    std::set<std::string> triples;
    std::vector<std::string> undecodable;
    std::unique_ptr<rocksdb::Iterator> graph{impl_->db->NewIterator(ro, impl_->cf(cf_graph))};
    SKEIN_TRY(thread_triple_keys(graph.get(), id, &triples, &undecodable));
    if (!undecodable.empty())
      return status::corruption("graph key " + printable_key(undecodable.front()) + " of thread " + id +
                                " does not decode, so the item cannot move: repair or delete it");
    for (const auto& k : triples) {
      std::string value;
      auto t = impl_->db->Get(ro, impl_->cf(cf_graph), k, &value);
      if (t.IsNotFound()) continue;
      SKEIN_TRY(from_rocks(t, "read graph of " + id));
      out->push_back({static_cast<uint8_t>(cf_graph), k, std::move(value)});
    }
  }
  // Effect cursors lead with the effect's name: visit each name once.
  std::unique_ptr<rocksdb::Iterator> it{impl_->db->NewIterator(ro, impl_->cf(cf_effects))};
  for (it->SeekToFirst(); it->Valid();) {
    std::string effect{it->key().ToStringView().substr(0, it->key().ToStringView().find('\0'))};
    std::string target = keys::effect_key(effect, id);
    it->Seek(target);
    if (it->Valid() && it->key().ToStringView() == target)
      out->push_back({static_cast<uint8_t>(cf_effects), target, it->value().ToString()});
    effect.push_back('\1');
    it->Seek(effect);
  }
  return from_rocks(it->status(), "read effects of " + id);
}

status event_log::adopt_thread(std::string_view thread_id, const std::vector<log_row>& rows, bool* adopted) {
  SKEIN_TRY(validate_id(thread_id, "thread id"));
  if (!writable()) return refusal();
  *adopted = false;
  std::string id{thread_id};
  // Every row must be the thread's own.
  auto row_error = [&](size_t i, const std::string& why) {
    return handoff_row_error("thread " + id, i, rows.size(), why);
  };
  manifest m;
  size_t manifests = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].family != cf_threads) continue;
    if (rows[i].key != id) return row_error(i, "is the threads row of another thread");
    if (status d = decode_manifest(rows[i].value, &m, options_.limits); !d)
      return row_error(i, "does not decode as a manifest: " + d.message());
    if (m.id != id) return row_error(i, "holds the manifest of thread " + m.id);
    ++manifests;
  }
  if (manifests != 1) return status::invalid_input("handoff of thread " + id + ": " + std::to_string(manifests) +
                                                   " threads rows (one expected)").with_field("rows");
  std::vector<std::string> index = index_keys_of(m);
  const std::string prefix = keys::event_prefix(id), idem = keys::idempotency_prefix(id);
  for (size_t i = 0; i < rows.size(); ++i) {
    const log_row& r = rows[i];
    std::string_view seq_of;
    uint64_t seq = 0;
    bool ok = false;
    if (r.family == cf_threads) ok = true;
    else if (is_ranged(r.family)) ok = keys::parse_event_key(r.key, &seq_of, &seq) && seq_of == id;
    else if (r.family == cf_index)
      ok = r.key.starts_with(idem) || std::find(index.begin(), index.end(), r.key) != index.end();
    else if (r.family == cf_effects) ok = is_effect_key_of(r.key, id);
    else if (r.family == cf_work && m.work) {
      work_row w;
      ok = r.key == keys::work_key(m.agent_id, id) && decode_work_row(r.value, &w).is_ok() && w.thread_id == id &&
           w.agent_id == m.agent_id;
    } else if (r.family == cf_graph && m.work) {
      work_triple t;
      ok = decode_triple(r.value, &t).is_ok() && names_thread(t, id) && is_key_of_triple(r.key, t);
    }
    if (!ok) return row_error(i, "is no row of the thread (family " + std::to_string(r.family) + ", key " +
                                     printable_key(r.key) + ")");
  }

  std::string existing;
  auto g = impl_->db->Get(rocksdb::ReadOptions(), impl_->cf(cf_threads), id, &existing);
  if (g.ok()) return status::ok();  // stored here already: an earlier handoff got through
  if (!g.IsNotFound()) return from_rocks(g, "read manifest of " + id);

  rocksdb::WriteBatch batch;
  for (const auto& r : rows) batch.Put(impl_->cf(static_cast<cf_id>(r.family)), r.key, r.value);
  SKEIN_TRY(write_whole_thread(&batch, threads_.load(std::memory_order_relaxed) + 1, id));
  *adopted = true;
  return status::ok();
}

status event_log::schedule_rows(std::string_view schedule_id, std::vector<log_row>* out) const {
  SKEIN_TRY(validate_id(schedule_id, "schedule id"));
  out->clear();
  snapshot_guard snap{impl_->db.get()};
  rocksdb::ReadOptions ro = snap.read_options();
  std::string id{schedule_id}, key = keys::schedule_key(id), row;
  auto s = impl_->db->Get(ro, impl_->cf(cf_schedules), key, &row);
  if (s.IsNotFound()) return status::not_found("schedule " + id + " is not stored here");
  SKEIN_TRY(from_rocks(s, "read schedule " + id));
  out->push_back({static_cast<uint8_t>(cf_schedules), key, std::move(row)});
  std::string end = keys::schedule_history_end(id);
  rocksdb::Slice upper{end};
  ro.iterate_upper_bound = &upper;
  std::unique_ptr<rocksdb::Iterator> it{impl_->db->NewIterator(ro, impl_->cf(cf_schedules))};
  for (it->Seek(keys::schedule_history_prefix(id)); it->Valid(); it->Next())
    out->push_back({static_cast<uint8_t>(cf_schedules), it->key().ToString(), it->value().ToString()});
  return from_rocks(it->status(), "read history of schedule " + id);
}

status event_log::adopt_schedule(std::string_view schedule_id, const std::vector<log_row>& rows, bool* adopted) {
  SKEIN_TRY(validate_id(schedule_id, "schedule id"));
  if (!writable()) return refusal();
  *adopted = false;
  std::string id{schedule_id}, key = keys::schedule_key(id), history = keys::schedule_history_prefix(id);
  // Every row must be the schedule's own.
  auto row_error = [&](size_t i, const std::string& why) {
    return handoff_row_error("schedule " + id, i, rows.size(), why);
  };
  size_t definitions = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const log_row& r = rows[i];
    if (r.family != cf_schedules)
      return row_error(i, "is no schedules row (family " + std::to_string(r.family) + ")");
    if (r.key == key) {
      schedule sc;
      if (status d = decode_schedule(r.value, &sc, options_.limits); !d)
        return row_error(i, "does not decode as a schedule: " + d.message());
      if (sc.id != id) return row_error(i, "holds schedule " + sc.id);
      ++definitions;
      continue;
    }
    schedule_firing f;
    if (!r.key.starts_with(history) || r.key.size() != history.size() + 8)
      return row_error(i, "is no row of the schedule (key " + printable_key(r.key) + ")");
    if (status d = decode_firing(r.value, &f, options_.limits); !d)
      return row_error(i, "does not decode as a firing: " + d.message());
  }
  if (definitions != 1)
    return status::invalid_input("handoff of schedule " + id + ": " + std::to_string(definitions) +
                                 " definition rows (one expected)")
        .with_field("rows");
  std::string existing;
  auto g = impl_->db->Get(rocksdb::ReadOptions(), impl_->cf(cf_schedules), key, &existing);
  if (g.ok()) return status::ok();  // stored here already: an earlier handoff got through
  if (!g.IsNotFound()) return from_rocks(g, "read schedule " + id);
  rocksdb::WriteBatch batch;
  for (const auto& r : rows) batch.Put(impl_->cf(cf_schedules), r.key, r.value);
  auto routes = whole(batch, id);
  SKEIN_TRY(write(&batch, 0, &routes));
  *adopted = true;
  return status::ok();
}

status event_log::erase_schedule(std::string_view schedule_id) {
  SKEIN_TRY(validate_id(schedule_id, "schedule id"));
  if (!writable()) return refusal();
  rocksdb::WriteBatch batch;
  batch.Delete(impl_->cf(cf_schedules), keys::schedule_key(schedule_id));
  batch.DeleteRange(impl_->cf(cf_schedules), keys::schedule_history_prefix(schedule_id),
                    keys::schedule_history_end(schedule_id));
  auto routes = whole(batch, std::string{schedule_id});
  return write(&batch, 0, &routes);
}

status event_log::work_agents(std::vector<std::string>* out) const {
  out->clear();
  std::set<std::string> agents;
  // Keys lead with "<agent>/": one seek per agent, past its rows.
  for (cf_id family : {cf_work, cf_sessions, cf_suggestions}) {
    std::unique_ptr<rocksdb::Iterator> it{impl_->db->NewIterator(rocksdb::ReadOptions(), impl_->cf(family))};
    for (it->SeekToFirst(); it->Valid();) {
      std::string_view key = it->key().ToStringView();
      size_t slash = key.find('/');
      if (slash == std::string_view::npos || slash == 0)
        return status::corruption(std::string{cf_names[family]} + " key " + printable_key(std::string{key}) +
                                  " names no agent");
      std::string agent{key.substr(0, slash)};
      agents.insert(agent);
      agent.push_back('/' + 1);
      it->Seek(agent);
    }
    SKEIN_TRY(from_rocks(it->status(), std::string{"read "} + cf_names[family]));
  }
  out->assign(agents.begin(), agents.end());
  return status::ok();
}

status event_log::agent_work_rows(std::string_view agent_id, std::vector<log_row>* out) const {
  SKEIN_TRY(validate_id(agent_id, "agent_id"));
  out->clear();
  snapshot_guard snap{impl_->db.get()};
  std::string prefix = keys::work_prefix(agent_id), end = prefix_end(prefix);
  for (cf_id family : {cf_sessions, cf_suggestions}) {
    rocksdb::Slice upper{end};
    rocksdb::ReadOptions ro = snap.read_options();
    ro.iterate_upper_bound = &upper;
    std::unique_ptr<rocksdb::Iterator> it{impl_->db->NewIterator(ro, impl_->cf(family))};
    for (it->Seek(prefix); it->Valid(); it->Next())
      out->push_back({static_cast<uint8_t>(family), it->key().ToString(), it->value().ToString()});
    SKEIN_TRY(from_rocks(it->status(), std::string{"read "} + cf_names[family] + " of agent " + std::string{agent_id}));
  }
  return status::ok();
}

status event_log::adopt_agent_work(std::string_view agent_id, const std::vector<log_row>& rows) {
  SKEIN_TRY(validate_id(agent_id, "agent_id"));
  if (!writable()) return refusal();
  std::string agent{agent_id};
  // Every row must be the agent's own.
  auto row_error = [&](size_t i, const std::string& why) {
    return handoff_row_error("agent " + agent + "'s work", i, rows.size(), why);
  };
  rocksdb::WriteBatch batch;
  for (size_t i = 0; i < rows.size(); ++i) {
    const log_row& r = rows[i];
    if (r.family == cf_sessions) {
      work_session_row w;
      if (status d = decode_session_row(r.value, &w); !d) return row_error(i, "does not decode as a session: " + d.message());
      if (w.agent_id != agent || r.key != keys::session_key(agent, w.id))
        return row_error(i, "is no session row of the agent (key " + printable_key(r.key) + ")");
    } else if (r.family == cf_suggestions) {
      work_suggestion w;
      if (status d = decode_suggestion(r.value, &w); !d)
        return row_error(i, "does not decode as a suggestion: " + d.message());
      if (w.agent_id != agent || r.key != keys::suggestion_key(agent, w.id))
        return row_error(i, "is no suggestion row of the agent (key " + printable_key(r.key) + ")");
    } else {
      return row_error(i, "is no session or suggestion row (family " + std::to_string(r.family) + ")");
    }
    batch.Put(impl_->cf(static_cast<cf_id>(r.family)), r.key, r.value);
  }
  if (batch.Count() == 0) return status::ok();
  auto routes = whole(batch, work_home_key(agent_id));
  return write(&batch, 0, &routes);
}

status event_log::erase_agent_work(std::string_view agent_id) {
  SKEIN_TRY(validate_id(agent_id, "agent_id"));
  if (!writable()) return refusal();
  std::string prefix = keys::work_prefix(agent_id), end = prefix_end(prefix);
  rocksdb::WriteBatch batch;
  batch.DeleteRange(impl_->cf(cf_sessions), prefix, end);
  batch.DeleteRange(impl_->cf(cf_suggestions), prefix, end);
  auto routes = whole(batch, work_home_key(agent_id));
  return write(&batch, 0, &routes);
}

status event_log::claim_rows(std::vector<log_row>* out) const {
  out->clear();
  std::string begin = "c/", end = "c0";  // '0' follows '/'
  rocksdb::Slice upper{end};
  rocksdb::ReadOptions ro;
  ro.iterate_upper_bound = &upper;
  ro.total_order_seek = true;
  std::unique_ptr<rocksdb::Iterator> it{impl_->db->NewIterator(ro, impl_->cf(cf_index))};
  for (it->Seek(begin); it->Valid(); it->Next())
    out->push_back({static_cast<uint8_t>(cf_index), it->key().ToString(), it->value().ToString()});
  return from_rocks(it->status(), "read claims");
}

status event_log::put_claims(const std::vector<log_row>& rows) {
  if (!writable()) return refusal();
  rocksdb::WriteBatch batch;
  for (size_t i = 0; i < rows.size(); ++i) {
    const log_row& r = rows[i];
    if (r.family != cf_index || !r.key.starts_with("c/") || !validate_id(r.value, "thread id").is_ok())
      return status::invalid_input("claim " + std::to_string(i + 1) + " of " + std::to_string(rows.size()) +
                                   ": not a claim row (" + printable_key(r.key) + ")")
          .with_field("claims");
    std::string holder;
    auto g = impl_->db->Get(rocksdb::ReadOptions(), impl_->cf(cf_index), r.key, &holder);
    if (g.ok()) {
      if (holder != r.value)
        return status::conflict("claim " + printable_key(r.key) + " names thread " + holder + " here, not " + r.value);
      continue;
    }
    if (!g.IsNotFound()) return from_rocks(g, "read claim");
    batch.Put(impl_->cf(cf_index), r.key, r.value);
  }
  if (batch.Count() == 0) return status::ok();
  const route_marks unrouted;  // a handoff of the static cluster: a replicated log refuses it
  return write(&batch, 0, &unrouted);
}

status event_log::erase_claims(const std::vector<std::string>& keys) {
  if (!writable()) return refusal();
  rocksdb::WriteBatch batch;
  for (const auto& k : keys) {
    if (!k.starts_with("c/")) return status::invalid_input("not a claim key: " + printable_key(k));
    batch.Delete(impl_->cf(cf_index), k);
  }
  if (batch.Count() == 0) return status::ok();
  const route_marks unrouted;  // as put_claims()
  return write(&batch, 0, &unrouted);
}

status event_log::read_node_rows(std::string_view prefix, std::vector<std::pair<std::string, std::string>>* out) const {
  out->clear();
  if (!prefix.starts_with(node_prefix)) return status::invalid_input("node rows live under \"node/\"");
  std::string begin{prefix};
  std::unique_ptr<rocksdb::Iterator> it{impl_->db->NewIterator(rocksdb::ReadOptions(), impl_->cf(cf_meta))};
  for (it->Seek(begin); it->Valid() && it->key().ToStringView().starts_with(begin); it->Next())
    out->emplace_back(it->key().ToString(), it->value().ToString());
  return from_rocks(it->status(), "read node rows");
}

status event_log::write_node_rows(const std::vector<std::pair<std::string, std::string>>& puts,
                                  const std::vector<std::string>& deletes) {
  if (!writable()) return refusal();
  rocksdb::WriteBatch batch;
  for (const auto& [k, v] : puts) {
    if (!std::string_view{k}.starts_with(node_prefix)) return status::invalid_input("node rows live under \"node/\"");
    batch.Put(impl_->cf(cf_meta), k, v);
  }
  for (const auto& k : deletes) {
    if (!std::string_view{k}.starts_with(node_prefix)) return status::invalid_input("node rows live under \"node/\"");
    batch.Delete(impl_->cf(cf_meta), k);
  }
  return write(&batch, 0, nullptr);  // this node's own rows
}

}  // namespace skein
