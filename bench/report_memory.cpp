// Table and JSON of the memory workload. Shared formatting: report_format.hpp.
#include "bench/report.hpp"
#include "bench/report_format.hpp"

namespace skein::bench {

using namespace detail;

const char* to_string(vector_kind k) { return k == vector_kind::hashing ? "hashing" : "random"; }

double memory_row::speedup() const { return p50_us > 0 ? baseline_p50_us / p50_us : 0; }

double memory_figures::rebuild_ms_per_100k() const {
  return rebuild_rows > 0 ? rebuild_ms * 100'000.0 / static_cast<double>(rebuild_rows) : 0;
}

void print_memory(const memory_figures& f, std::FILE* out) {
  std::fprintf(out, "memory: brute-force search, %zu dims, k = %zu\n\n", f.dims, f.k);
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"vectors", "rows", "build s", "index MB", "queries", "p50 ms", "p99 ms", "naive queries", "naive p50 ms",
                  "naive p99 ms", "speedup"});
  for (const auto& r : f.rows)
    rows.push_back({to_string(r.vectors), with_commas(r.rows), fixed(r.build_seconds, 2), mb(r.index_bytes), with_commas(r.queries),
                    ms(r.p50_us), ms(r.p99_us), with_commas(r.baseline_queries), ms(r.baseline_p50_us),
                    ms(r.baseline_p99_us), fixed(r.speedup(), 1) + "x"});
  print_table(rows, out, 1);
  std::fprintf(out,
               "\nvectors: hashing = the hashing embedder's vectors of generated messages (6-30 words of 20,000),\n"
               "queried with generated 3-8 word queries; random = dense random unit vectors (the worst case).\n"
               "search: memory_index::search, a float32 matrix stored column by column in chunks of 4096 rows;\n"
               "each non-zero query dimension adds one column to the chunk's scores, then a k-heap.\n"
               "naive: the same vectors as vector<vector<float>>, a scalar dot per row and a partial_sort of\n"
               "every score, in the same process; its top hit is checked equal.\n"
               "rebuild at open: runtime::open over %s stored embeddings: %s ms (%s ms per 100k rows; "
               "the whole open %s ms)\n",
               with_commas(f.rebuild_rows).c_str(), fixed(f.rebuild_ms, 1).c_str(),
               fixed(f.rebuild_ms_per_100k(), 1).c_str(), fixed(f.open_ms, 1).c_str());
  for (const auto& r : f.rows) {
    if (r.rows != f.target_rows || r.vectors != vector_kind::hashing) continue;
    double p50_ms = r.p50_us / 1000;
    std::fprintf(out, "p50 at %s hashing rows: %s ms  (target <= %s ms: %s)\n", with_commas(r.rows).c_str(),
                 fixed(p50_ms, 2).c_str(), fixed(memory_p50_ms_max, 0).c_str(),
                 verdict(p50_ms <= memory_p50_ms_max));
  }
}

void write_memory_json(const memory_figures& f, json_writer& w) {
  w.begin_object();
  w.field_uint("dims", f.dims);
  w.field_uint("k", f.k);
  w.key("indexes");
  w.begin_array();
  for (const auto& r : f.rows) {
    w.begin_object();
    w.field("vectors", to_string(r.vectors));
    w.field_uint("rows", r.rows);
    write_number(w, "build_seconds", r.build_seconds);
    w.field_uint("index_bytes", r.index_bytes);
    w.field_uint("queries", r.queries);
    write_number(w, "p50_us", r.p50_us);
    write_number(w, "p99_us", r.p99_us);
    w.field_uint("baseline_queries", r.baseline_queries);
    write_number(w, "baseline_p50_us", r.baseline_p50_us);
    write_number(w, "baseline_p99_us", r.baseline_p99_us);
    write_number(w, "speedup", r.speedup());
    w.end_object();
  }
  w.end_array();
  w.key("rebuild");
  w.begin_object();
  w.field_uint("rows", f.rebuild_rows);
  write_number(w, "ms", f.rebuild_ms);
  write_number(w, "ms_per_100k", f.rebuild_ms_per_100k());
  write_number(w, "open_ms", f.open_ms);
  w.end_object();
  w.key("targets");
  w.begin_object();
  for (const auto& r : f.rows)
    if (r.rows == f.target_rows && r.vectors == vector_kind::hashing)
      write_target(w, "p50_ms_at_target_rows", r.p50_us / 1000, memory_p50_ms_max, r.p50_us / 1000 <= memory_p50_ms_max);
  w.end_object();
  w.end_object();
}

}  // namespace skein::bench
