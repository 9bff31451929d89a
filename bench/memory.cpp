// memory: memory_index::search over 100k and 1M vectors (the hashing embedder's of
// generated messages, queried with short generated queries, and dense random unit
// vectors, the worst case) against a naive scan in the same process; the index
// build; and the rebuild of the index from stored embeddings at runtime::open.
#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <cmath>

#include "bench/workloads.hpp"
#include "persistence/keys.hpp"
#include "runtime/model/hashing_embedder.hpp"
#include "runtime/model/memory_index.hpp"

namespace skein::bench {
namespace {

constexpr size_t queries = 200;
constexpr size_t k = 10;
constexpr size_t rows_per_thread = 100;

// xorshift64*: fast enough for 400M floats, and reproducible.
struct fast_rng {
  uint64_t s;
  float next_signed() {  // uniform in [-1, 1)
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return static_cast<float>(static_cast<double>((s * 2685821657736338717ull) >> 40) / double(1ull << 23) - 1.0);
  }
};

void random_unit(fast_rng& rng, float* v, size_t dims) {
  double n = 0;
  for (size_t i = 0; i < dims; ++i) {
    v[i] = rng.next_signed();
    n += double(v[i]) * v[i];
  }
  auto inv = static_cast<float>(1.0 / std::sqrt(n));
  for (size_t i = 0; i < dims; ++i) v[i] *= inv;
}

// hashing: the hashing embedder's vector of a message of 6-30 words (a query: 3-8)
// of a vocabulary of 20,000 made-up words, the frequent ones far more often (a
// Zipf-like square law). Else a dense random unit vector.
void fill_vector(bool hashing, fast_rng& rng, float* v, size_t dims, bool query) {
  if (!hashing) return random_unit(rng, v, dims);
  auto uniform = [&] { return (rng.next_signed() + 1.0f) / 2.0f; };  // [0, 1)
  size_t words_min = query ? 3 : 6, words_max = query ? 8 : 30;
  auto words = words_min + static_cast<size_t>(uniform() * static_cast<float>(words_max - words_min + 1));
  std::string s;
  for (size_t i = 0; i < words; ++i) {
    float u = uniform();
    s += (i ? " w" : "w") + std::to_string(static_cast<size_t>(u * u * 20'000));
  }
  std::vector<float> h = hash_embed(s, dims);
  std::copy(h.begin(), h.end(), v);
}

std::string thread_of(size_t row) { return "t" + std::to_string(row / rows_per_thread); }

// One index size: build, search, the naive scan; a row of `t`, and the index's search p50.
status measure_size(bool hashing, size_t n, size_t dims, fast_rng& rng, table* t, double* p50_us) {
  std::vector<float> flat(n * dims);
  for (size_t r = 0; r < n; ++r) fill_vector(hashing, rng, flat.data() + r * dims, dims, false);
  auto row_of = [&](size_t r, std::vector<float>* out) { out->assign(&flat[r * dims], &flat[r * dims] + dims); };
  memory_index ix;
  embedding_record rec;
  rec.agent_id = bench_agent_id;
  auto start = bench_clock::now();
  for (size_t r = 0; r < n; ++r) {
    row_of(r, &rec.vector);
    rec.assistant = r % 2 == 1;
    SKEIN_TRY(ix.add(thread_of(r), r % rows_per_thread + 1, rec));
  }
  double build_seconds = seconds_since(start, bench_clock::now());

  std::vector<std::vector<float>> qs(queries, std::vector<float>(dims));
  for (auto& q : qs) fill_vector(hashing, rng, q.data(), dims, true);
  std::vector<int64_t> ns, naive_ns;
  std::vector<std::vector<memory_match>> answers(queries);
  for (size_t i = 0; i < queries; ++i) {
    SKEIN_TRY(timed(&ns, [&] { return ix.search(bench_agent_id, qs[i], k, &answers[i]); }));
    if (answers[i].size() != k)
      return status::corruption("memory search gave " + std::to_string(answers[i].size()) + " hits, not " +
                                std::to_string(k));
  }
  // The naive scan owns its own copy, row by row, as a naive program would: a
  // scalar dot per row and a partial_sort of every score. At 1M it takes ~1 s a query.
  size_t naive_queries = std::min<size_t>(queries, 50);
  std::vector<std::vector<float>> rows(n);
  for (size_t r = 0; r < n; ++r) row_of(r, &rows[r]);
  flat = {};
  std::vector<std::pair<float, size_t>> scored;
  scored.reserve(n);
  for (size_t i = 0; i < naive_queries; ++i) {
    const std::vector<float>& q = qs[i];
    auto t0 = bench_clock::now();
    scored.clear();
    for (size_t r = 0; r < n; ++r) {
      const std::vector<float>& row = rows[r];
      float s = 0;
      for (size_t d = 0; d < dims; ++d) s += row[d] * q[d];
      scored.emplace_back(s, r);
    }
    std::partial_sort(scored.begin(), scored.begin() + std::min(k, n), scored.end(),
                      [](const auto& a, const auto& b) { return a.first > b.first; });
    naive_ns.push_back((bench_clock::now() - t0).count());
    // Rows of equal score come in either order (hashing vectors of the same words
    // are equal): the index's top hit must score what the naive one does.
    const memory_match& m = answers[i][0];
    size_t row = std::stoull(m.thread_id.substr(1)) * rows_per_thread + (m.seq - 1);
    float index_best = row < n ? memory_dot(rows[row].data(), q.data(), dims) : -2.0f;
    if (std::fabs(index_best - scored[0].first) > 1e-5f)
      return status::corruption("query " + std::to_string(i) + ": the index's top hit " + m.thread_id + "/" +
                                std::to_string(m.seq) + " scores " + std::to_string(index_best) +
                                ", the naive scan's (row " + std::to_string(scored[0].second) + ") " +
                                std::to_string(scored[0].first));
  }
  *p50_us = quantile_us(ns, 0.50);
  double naive_p50 = quantile_us(naive_ns, 0.50);
  t->rows.push_back({text(hashing ? "hashing" : "random"), num(n), num(build_seconds),
                     num(ix.stats().bytes / double{1 << 20}), num(queries), num(*p50_us / 1000),
                     num(ms_at(ns, 0.99)), num(naive_queries), num(naive_p50 / 1000),
                     num(ms_at(naive_ns, 0.99)), num(*p50_us > 0 ? naive_p50 / *p50_us : 0)});
  return status::ok();
}

status from_rocks(const rocksdb::Status& s, const std::string& what) {
  return s.ok() ? status::ok() : status::io_error(what + ": " + s.ToString());
}

// Writes `n` embedding rows straight into the embeddings column family of a
// database the runtime created, in batches of 10,000.
status write_embeddings(const std::string& path, size_t n, size_t dims, fast_rng& rng) {
  std::vector<std::string> names;
  SKEIN_TRY(from_rocks(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), path, &names), "list column families"));
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs;
  for (const auto& name : names) cfs.emplace_back(name, rocksdb::ColumnFamilyOptions());
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  SKEIN_TRY(from_rocks(rocksdb::DB::Open(rocksdb::DBOptions(), path, cfs, &handles, &raw), "open"));
  std::unique_ptr<rocksdb::DB> db{raw};
  size_t at = static_cast<size_t>(std::find(names.begin(), names.end(), "embeddings") - names.begin());
  status written = at == names.size() ? status::corruption("the database has no embeddings column family")
                                      : status::ok();
  embedding_record rec;
  rec.agent_id = bench_agent_id;
  rec.vector.resize(dims);
  std::string value;
  for (size_t base = 0; base < n && written; base += 10'000) {
    rocksdb::WriteBatch batch;
    for (size_t r = base; r < std::min(n, base + 10'000) && written; ++r) {
      random_unit(rng, rec.vector.data(), dims);
      written = encode_embedding(rec, &value);
      batch.Put(handles[at], keys::event_key(thread_of(r), r % rows_per_thread + 1), value);
    }
    if (written) written = from_rocks(db->Write(rocksdb::WriteOptions(), &batch), "write embeddings");
  }
  if (written) written = from_rocks(db->Flush(rocksdb::FlushOptions(), handles), "flush");
  for (auto* h : handles) db->DestroyColumnFamilyHandle(h).PermitUncheckedError();
  return written;
}

}  // namespace

status run_memory(const bench_options& options, result* out) {
  size_t dims = hashing_dims_default;
  fast_rng rng{0x5eed5eedULL};
  table& t = add_table(out, "memory: brute-force search, " + std::to_string(dims) + " dims, k = " + std::to_string(k),
                       {col("vectors"), col("rows"), col("build", "s", 2), col("index", "MB", 1), col("queries"),
                        col("p50", "ms", 3), col("p99", "ms", 3), col("naive queries"), col("naive p50", "ms", 3),
                        col("naive p99", "ms", 3), col("speedup", "x", 1)});
  for (bool hashing : {true, false})
    for (size_t n : {100'000, 1'000'000}) {
      size_t rows = scaled_count(n, options.scale);
      double p50_us = 0;
      SKEIN_TRY(measure_size(hashing, rows, dims, rng, &t, &p50_us));
      if (n == 1'000'000 && hashing)  // the target is set for 1M hashing rows
        add_target(out, "search p50 at " + with_commas(rows) + " hashing rows", p50_us / 1000, 20, "ms",
                   better::lower);
    }

  // The rebuild at open: rows found, runtime_stats::memory_rebuild.ms, the whole open.
  size_t rebuild_rows = scaled_count(100'000, options.scale);
  std::unique_ptr<runtime> rt;
  SKEIN_TRY(open_bench_runtime(options, "memory", {}, bench_agent(), &rt));
  SKEIN_TRY(rt->close());
  rt.reset();
  runtime_options ro;
  ro.data_dir = options.dir + "/memory";
  SKEIN_TRY(write_embeddings(ro.data_dir, rebuild_rows, dims, rng));
  auto start = bench_clock::now();
  SKEIN_TRY(runtime::open(ro, &rt));
  double open_ms = seconds_since(start, bench_clock::now()) * 1000;
  runtime_stats st;
  SKEIN_TRY(rt->stats(&st));
  if (st.memory_rebuild.rows != rebuild_rows)
    return status::corruption("the rebuild at open found " + std::to_string(st.memory_rebuild.rows) + " rows, not " +
                              std::to_string(rebuild_rows));
  double rebuild_ms = st.memory_rebuild.ms;
  t.notes.push_back(
      "vectors: hashing = the hashing embedder's vectors of generated messages (6-30 words of 20,000),\n"
      "queried with generated 3-8 word queries; random = dense random unit vectors (the worst case).\n"
      "search: memory_index::search, a float32 matrix stored column by column in chunks of 4096 rows;\n"
      "each non-zero query dimension adds one column to the chunk's scores, then a k-heap.\n"
      "naive: the same vectors as vector<vector<float>>, a scalar dot per row and a partial_sort of\n"
      "every score, in the same process; its top hit is checked equal.\n"
      "rebuild at open: runtime::open over " + with_commas(rebuild_rows) + " stored embeddings: " +
      fixed(rebuild_ms, 1) + " ms (" + fixed(rebuild_ms * 100'000.0 / rebuild_rows, 1) +
      " ms per 100k rows; the whole open " + fixed(open_ms, 1) + " ms)");
  return rt->close();
}

}  // namespace skein::bench
