// A thread's erasure: its threads row, events, embeddings, inbox, usage,
// index entries, idempotency keys, effect cursors, work rows and graph triples,
// in one batch; its claims too unless kept (a handoff keeps them). And the
// write that stores or removes one whole thread (erase, adopt).
#include <map>
#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>
#include <set>

#include "persistence/event_log.hpp"
#include "persistence/event_log_internal.hpp"
#include "persistence/keys.hpp"
#include "persistence/work_rows.hpp"
#include "runtime/model/ids.hpp"

namespace skein {

using namespace detail;

status event_log::erase_thread(std::string_view thread_id, bool keep_claims) {
  SKEIN_TRY(validate_id(thread_id, "thread id"));
  if (!writable()) return refusal();
  std::string id{thread_id};
  auto* db = impl_->db.get();
  rocksdb::WriteBatch batch;

  projection p;
  bool found = false;
  status loaded = load_projection(id, &p, &found);
  // A manifest that cannot be read names no index entries: find them by a scan.
  const bool stored = found || loaded.code() == errc::corruption;  // its threads row exists
  if (loaded.code() == errc::corruption) loaded = find_index_keys(id, &p.index_keys);
  SKEIN_TRY(loaded);
  for (const auto& k : p.index_keys) batch.Delete(impl_->cf(cf_index), k);
  // Claims (keys.cpp) free with their thread; one that names another thread stays.
  for (const auto& k : p.claim_keys) {
    if (keep_claims) break;
    std::string holder;
    auto c = db->Get(rocksdb::ReadOptions(), impl_->cf(cf_index), k, &holder);
    if (c.IsNotFound()) continue;
    SKEIN_TRY(from_rocks(c, "read claim"));
    if (holder == id) batch.Delete(impl_->cf(cf_index), k);
  }
  batch.Delete(impl_->cf(cf_threads), id);

  auto begin = keys::event_prefix(id), end = keys::event_prefix_end(id);
  batch.DeleteRange(impl_->cf(cf_events), begin, end);
  batch.DeleteRange(impl_->cf(cf_embeddings), begin, end);
  batch.DeleteRange(impl_->cf(cf_inbox), begin, end);
  batch.DeleteRange(impl_->cf(cf_usage), begin, end);  // usage keys share the event key shape
  std::string idem_begin = keys::idempotency_prefix(id), idem_end = idem_begin;
  idem_end.back() = static_cast<char>(idem_end.back() + 1);
  batch.DeleteRange(impl_->cf(cf_index), idem_begin, idem_end);

  // effects keys lead with the effect name: visit each name once.
  std::unique_ptr<rocksdb::Iterator> it{db->NewIterator(rocksdb::ReadOptions(), impl_->cf(cf_effects))};
  for (it->SeekToFirst(); it->Valid();) {
    std::string_view key = it->key().ToStringView();
    // A copy: the key's bytes belong to the iterator and change at the next Seek.
    std::string effect{key.substr(0, key.find('\0'))};
    std::string target = keys::effect_key(effect, id);
    it->Seek(target);
    if (it->Valid() && it->key().ToStringView() == target) batch.Delete(impl_->cf(cf_effects), target);
    std::string next_effect = effect;
    next_effect.push_back('\1');
    it->Seek(next_effect);
  }
  SKEIN_TRY(from_rocks(it->status(), "scan effects"));
  SKEIN_TRY(erase_work_rows(id, p.index_keys, &batch));
  uint64_t threads = threads_.load(std::memory_order_relaxed);
  if (stored && threads > 0) --threads;
  return write_whole_thread(&batch, threads, id);
}

status event_log::write_whole_thread(rocksdb::WriteBatch* batch, uint64_t threads, const std::string& thread_id) {
  SKEIN_TRY(write_counted(batch, 0, threads, {}, whole(*batch, thread_id)));
  cache_.erase(thread_id);
  return status::ok();
}

status event_log::erase_work_rows(const std::string& id, const std::vector<std::string>& index_keys,
                                  rocksdb::WriteBatch* batch) const {
  // The item's row is keyed by its agent, which the agent index entry names.
  for (const auto& k : index_keys) {
    if (!k.starts_with("a/")) continue;
    std::string_view agent = std::string_view{k}.substr(2, k.size() - 2 - id.size() - 1);
    batch->Delete(impl_->cf(cf_work), keys::work_key(agent, id));
  }
  // Every triple naming the thread, as subject or object, with all three of its
  // keys; a row that does not decode cannot name its twin keys: it goes by its own.
  std::set<std::string> triples;
  std::vector<std::string> undecodable;
  std::unique_ptr<rocksdb::Iterator> graph{impl_->db->NewIterator(rocksdb::ReadOptions(), impl_->cf(cf_graph))};
  SKEIN_TRY(thread_triple_keys(graph.get(), id, &triples, &undecodable));
  for (const auto& k : triples) batch->Delete(impl_->cf(cf_graph), k);
  for (const auto& k : undecodable) batch->Delete(impl_->cf(cf_graph), k);
  return status::ok();
}

}  // namespace skein
