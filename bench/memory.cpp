// memory: brute-force memory search. Indexes of 100k and 1M vectors of the
// hashing embedder's dims, twice: the hashing embedder's vectors of generated
// messages searched with short generated queries (what the latency target is
// for), and random dense L2-normalized vectors (the worst case: a dense query
// reads the whole matrix). Query latency of memory_index::search against a naive
// scan of the same vectors in the same process; the index build; and the
// rebuild of the index from the embeddings column family at runtime::open.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include "bench/workloads.hpp"
#include "persistence/keys.hpp"
#include "runtime/model/hashing_embedder.hpp"
#include "runtime/model/memory_index.hpp"

namespace skein::bench {
namespace {

// hashing: the hashing embedder's vectors of generated messages, queried with
// short generated queries (sparse). random: dense random unit vectors.
enum class vector_kind { hashing, random };

constexpr double memory_p50_ms_max = 20;  // at target_rows (1M), hashing vectors
constexpr size_t sizes_at_scale_1[] = {100'000, 1'000'000};
constexpr uint64_t target_rows = 1'000'000;
constexpr size_t queries = 200;
constexpr size_t baseline_queries_max = 50;  // the naive scan at 1M takes ~1 s a query
constexpr size_t k = 10;
constexpr size_t rows_per_thread = 100;
constexpr size_t rebuild_rows_at_scale_1 = 100'000;
constexpr size_t rebuild_batch_rows = 10'000;

// The rebuild at open: rows found, runtime_stats::memory_rebuild.ms, the whole open.
struct memory_figures {
  uint64_t rebuild_rows = 0;
  double rebuild_ms = 0, open_ms = 0;
};

// xorshift64*: fast enough for 400M floats, and reproducible.
struct fast_rng {
  uint64_t s;
  float next_signed() {  // uniform in [-1, 1)
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    uint64_t x = s * 2685821657736338717ull;
    return static_cast<float>(static_cast<double>(x >> 40) / double(1ull << 23) - 1.0);
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

// Messages of 6-30 words and queries of 3-8 from a vocabulary of 20,000 made-up
// words, the frequent ones far more often (a Zipf-like square law).
constexpr size_t vocabulary_words = 20'000;

std::string generated_text(fast_rng& rng, size_t words_min, size_t words_max) {
  auto uniform = [&] { return (rng.next_signed() + 1.0f) / 2.0f; };  // [0, 1)
  auto words = words_min + static_cast<size_t>(uniform() * static_cast<float>(words_max - words_min + 1));
  std::string s;
  for (size_t i = 0; i < words; ++i) {
    float u = uniform();
    auto w = static_cast<size_t>(u * u * vocabulary_words);
    if (i) s += ' ';
    s += 'w';
    s += std::to_string(w);
  }
  return s;
}

void fill_vectors(vector_kind kind, fast_rng& rng, float* v, size_t dims, bool query) {
  if (kind == vector_kind::random) return random_unit(rng, v, dims);
  std::vector<float> h = hash_embed(query ? generated_text(rng, 3, 8) : generated_text(rng, 6, 30), dims);
  std::copy(h.begin(), h.end(), v);
}

std::string thread_of(size_t row) { return std::string("t").append(std::to_string(row / rows_per_thread)); }

// The naive top-1 and the time of a whole top-k: every score, then a partial_sort.
size_t naive_search(const std::vector<std::vector<float>>& rows, const std::vector<float>& q,
                    std::vector<std::pair<float, size_t>>* scored) {
  scored->clear();
  for (size_t r = 0; r < rows.size(); ++r) {
    float s = 0;
    for (size_t i = 0; i < q.size(); ++i) s += rows[r][i] * q[i];
    scored->emplace_back(s, r);
  }
  size_t top = std::min(k, scored->size());
  std::partial_sort(scored->begin(), scored->begin() + static_cast<ptrdiff_t>(top), scored->end(),
                    [](const auto& a, const auto& b) { return a.first > b.first; });
  return (*scored)[0].second;
}

// One index size: build, search, the naive scan; *p50_us: the index's search p50.
status measure_size(vector_kind kind, size_t n, size_t dims, fast_rng& rng, table* t, double* p50_us) {
  std::vector<float> flat(n * dims);
  for (size_t r = 0; r < n; ++r) fill_vectors(kind, rng, flat.data() + r * dims, dims, false);
  memory_index ix;
  embedding_record rec;
  rec.agent_id = bench_agent_id;
  auto start = bench_clock::now();
  for (size_t r = 0; r < n; ++r) {
    rec.vector.assign(flat.begin() + static_cast<ptrdiff_t>(r * dims), flat.begin() + static_cast<ptrdiff_t>((r + 1) * dims));
    rec.assistant = r % 2 == 1;
    SKEIN_TRY(ix.add(thread_of(r), r % rows_per_thread + 1, rec));
  }
  double build_seconds = seconds_since(start, bench_clock::now());

  std::vector<std::vector<float>> qs(queries, std::vector<float>(dims));
  for (auto& q : qs) fill_vectors(kind, rng, q.data(), dims, true);
  std::vector<int64_t> ns;
  std::vector<std::vector<memory_match>> answers(queries);
  for (size_t i = 0; i < queries; ++i) {
    auto t0 = bench_clock::now();
    SKEIN_TRY(ix.search(bench_agent_id, qs[i], k, &answers[i]));
    ns.push_back((bench_clock::now() - t0).count());
    if (answers[i].size() != k)
      return status::corruption("memory search gave " + std::to_string(answers[i].size()) + " hits, not " +
                                std::to_string(k));
  }
  *p50_us = quantile_us(ns, 0.50);
  double p99_us = quantile_us(ns, 0.99);
  size_t baseline_queries = std::min(queries, baseline_queries_max);

  {  // the baseline owns its own copy, row by row, as a naive program would
    std::vector<std::vector<float>> rows(n);
    for (size_t r = 0; r < n; ++r)
      rows[r].assign(flat.begin() + static_cast<ptrdiff_t>(r * dims), flat.begin() + static_cast<ptrdiff_t>((r + 1) * dims));
    flat = {};
    std::vector<std::pair<float, size_t>> scored;
    scored.reserve(n);
    ns.clear();
    for (size_t i = 0; i < baseline_queries; ++i) {
      auto t0 = bench_clock::now();
      size_t top = naive_search(rows, qs[i], &scored);
      ns.push_back((bench_clock::now() - t0).count());
      // Rows of equal score come in either order (hashing vectors of the same
      // words are equal): the index's top hit must score what the naive one does.
      const memory_match& m = answers[i][0];
      size_t row = std::stoull(m.thread_id.substr(1)) * rows_per_thread + (m.seq - 1);
      float naive_best = scored[0].first;
      float index_best = row < n ? memory_dot(rows[row].data(), qs[i].data(), dims) : -2.0f;
      if (std::fabs(index_best - naive_best) > 1e-5f)
        return status::corruption("query " + std::to_string(i) + ": the index's top hit " + m.thread_id + "/" +
                                  std::to_string(m.seq) + " scores " + std::to_string(index_best) +
                                  ", the naive scan's (row " + std::to_string(top) + ") " + std::to_string(naive_best));
    }
  }
  double naive_p50 = quantile_us(ns, 0.50);
  t->rows.push_back({text(kind == vector_kind::hashing ? "hashing" : "random"), num(n), num(build_seconds),
                     num(ix.stats().bytes / double{1 << 20}), num(queries), num(*p50_us / 1000), num(p99_us / 1000),
                     num(baseline_queries), num(naive_p50 / 1000), num(quantile_us(ns, 0.99) / 1000),
                     num(*p50_us > 0 ? naive_p50 / *p50_us : 0)});
  return status::ok();
}

status from_rocks(const rocksdb::Status& s, const std::string& what) {
  if (s.ok()) return status::ok();
  return status::io_error(what + ": " + s.ToString());
}

// Writes `n` embedding rows straight into the embeddings column family of a
// database the runtime created, then times runtime::open over it.
status measure_rebuild(const bench_options& options, size_t n, size_t dims, fast_rng& rng, memory_figures* f) {
  std::string path = options.dir + "/memory";
  {
    std::unique_ptr<runtime> rt;
    agent_config agent = bench_agent();
    SKEIN_TRY(open_bench_runtime(options, "memory", {}, agent, &rt));
    SKEIN_TRY(rt->close());
  }
  {
    std::vector<std::string> names;
    SKEIN_TRY(from_rocks(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), path, &names), "list column families"));
    std::vector<rocksdb::ColumnFamilyDescriptor> cfs;
    for (const auto& name : names) cfs.emplace_back(name, rocksdb::ColumnFamilyOptions());
    std::vector<rocksdb::ColumnFamilyHandle*> handles;
    rocksdb::DB* raw = nullptr;
    SKEIN_TRY(from_rocks(rocksdb::DB::Open(rocksdb::DBOptions(), path, cfs, &handles, &raw), "open"));
    std::unique_ptr<rocksdb::DB> db{raw};
    auto at = std::find(names.begin(), names.end(), "embeddings");
    if (at == names.end()) return status::corruption("the database has no embeddings column family");
    rocksdb::ColumnFamilyHandle* cf = handles[static_cast<size_t>(at - names.begin())];
    embedding_record rec;
    rec.agent_id = bench_agent_id;
    rec.vector.resize(dims);
    std::string value;
    status written;
    for (size_t base = 0; base < n && written; base += rebuild_batch_rows) {
      rocksdb::WriteBatch batch;
      for (size_t r = base; r < std::min(n, base + rebuild_batch_rows); ++r) {
        random_unit(rng, rec.vector.data(), dims);
        SKEIN_TRY(encode_embedding(rec, &value));
        batch.Put(cf, keys::event_key(thread_of(r), r % rows_per_thread + 1), value);
      }
      written = from_rocks(db->Write(rocksdb::WriteOptions(), &batch), "write embeddings");
    }
    if (written) written = from_rocks(db->Flush(rocksdb::FlushOptions(), handles), "flush");
    for (auto* h : handles) db->DestroyColumnFamilyHandle(h).PermitUncheckedError();
    SKEIN_TRY(written);
  }
  runtime_options ro;
  ro.data_dir = path;
  std::unique_ptr<runtime> rt;
  auto start = bench_clock::now();
  SKEIN_TRY(runtime::open(ro, &rt));
  f->open_ms = seconds_since(start, bench_clock::now()) * 1000;
  runtime_stats st;
  SKEIN_TRY(rt->stats(&st));
  if (st.memory_rebuild.rows != n)
    return status::corruption("the rebuild at open found " + std::to_string(st.memory_rebuild.rows) + " rows, not " +
                              std::to_string(n));
  f->rebuild_rows = st.memory_rebuild.rows;
  f->rebuild_ms = st.memory_rebuild.ms;
  return rt->close();
}

}  // namespace

status run_memory(const bench_options& options, result* out) {
  memory_figures f;
  size_t dims = hashing_dims_default;
  uint64_t target = scaled_count(target_rows, options.scale);
  fast_rng rng{0x5eed5eedULL};
  table& t = add_table(out, "memory: brute-force search, " + std::to_string(dims) + " dims, k = " + std::to_string(k),
                       {col("vectors"), col("rows"), col("build", "s", 2), col("index", "MB", 1), col("queries"),
                        col("p50", "ms", 3), col("p99", "ms", 3), col("naive queries"), col("naive p50", "ms", 3),
                        col("naive p99", "ms", 3), col("speedup", "x", 1)});
  for (vector_kind kind : {vector_kind::hashing, vector_kind::random})
    for (size_t n : sizes_at_scale_1) {
      size_t rows = scaled_count(n, options.scale);
      double p50_us = 0;
      SKEIN_TRY(measure_size(kind, rows, dims, rng, &t, &p50_us));
      if (rows == target && kind == vector_kind::hashing)
        add_target(out, "search p50 at " + with_commas(rows) + " hashing rows", p50_us / 1000, memory_p50_ms_max,
                   "ms", better::lower);
    }
  SKEIN_TRY(measure_rebuild(options, scaled_count(rebuild_rows_at_scale_1, options.scale), dims, rng, &f));
  t.notes.push_back(
      "vectors: hashing = the hashing embedder's vectors of generated messages (6-30 words of 20,000),\n"
      "queried with generated 3-8 word queries; random = dense random unit vectors (the worst case).\n"
      "search: memory_index::search, a float32 matrix stored column by column in chunks of 4096 rows;\n"
      "each non-zero query dimension adds one column to the chunk's scores, then a k-heap.\n"
      "naive: the same vectors as vector<vector<float>>, a scalar dot per row and a partial_sort of\n"
      "every score, in the same process; its top hit is checked equal.\n"
      "rebuild at open: runtime::open over " + with_commas(f.rebuild_rows) + " stored embeddings: " +
      fixed(f.rebuild_ms, 1) + " ms (" + fixed(f.rebuild_ms * 100'000.0 / f.rebuild_rows, 1) +
      " ms per 100k rows; the whole open " + fixed(f.open_ms, 1) + " ms)");
  return status::ok();
}

}  // namespace skein::bench
