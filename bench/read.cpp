// read: a thread's whole history read back after a restart. Threads of 10,000 and
// 100,000 events are built into the event log (log_builder) and compacted into SST
// files; then runtimes are opened over the database and the complete history read
// once (cold: a new block cache) and again (warm), embedded (runtime::read) and
// through the HTTP API in this process, page after page. Every read is checked
// after the clock stops: every event, seqs 1..N in order.
#include <algorithm>
#include <charconv>
#include <memory>

#include "bench/log_builder.hpp"
#include "bench/workloads.hpp"
#include "runtime/model/json_reader.hpp"
#include "tools/client/http_client.hpp"
#include "tools/server/http_server.hpp"

namespace skein::bench {
namespace {

// Reopens per thread and path: each gives one cold read.
constexpr size_t cold_rounds = 3;
// Reads after the cold one in each round; the warm figure is their median.
constexpr size_t warm_reads = 3;
// The server's default entries_limit_max: the largest page a client may ask for.
constexpr size_t page_events = 1000;

struct length_row {
  uint64_t events = 0;
  std::string id;
  uint64_t http_bytes = 0;          // response bodies of one whole read through HTTP
  std::vector<int64_t> cold_ns[2];  // embedded, http
  std::vector<int64_t> warm_ns[2];
};

// Reads the whole thread page by page into *pages. The page's next_seq and
// last_seq are the uints after `"key":` in its tail, where the server writes them
// after the events (inside a string a quote is escaped, so the key cannot match
// there): read so that the timed loop does not parse the page.
status http_read_all(http::client& client, const std::string& id, std::vector<std::string>* pages) {
  auto tail_uint = [](const std::string& body, const std::string& key, uint64_t* out) {
    size_t at = body.rfind("\"" + key + "\":");
    if (at == std::string::npos) return false;
    const char* p = body.data() + at + key.size() + 3;
    return std::from_chars(p, body.data() + body.size(), *out).ec == std::errc{};
  };
  for (uint64_t from = 1;;) {
    std::string where = "GET entries from " + std::to_string(from) + ": ";
    http::response res;
    SKEIN_TRY(client.call("GET",
                          "/v1/threads/" + id + "/entries?view=complete&limit=" + std::to_string(page_events) +
                              "&from_seq=" + std::to_string(from),
                          "", &res));
    if (res.status != 200)
      return status::io_error(where + "HTTP " + std::to_string(res.status) + ": " + res.body.substr(0, 512));
    uint64_t next = 0, last = 0;
    if (!tail_uint(res.body, "next_seq", &next) || !tail_uint(res.body, "last_seq", &last))
      return status::corruption(where + "no next_seq and last_seq");
    pages->push_back(std::move(res.body));
    if (next > last) return status::ok();
    if (next <= from)
      return status::corruption(where + "next_seq " + std::to_string(next) + " before last_seq " +
                                std::to_string(last));
    from = next;
  }
}

// One read of the whole thread through `client`, or embedded when it is null:
// timed into *ns, then checked. *bytes: of the HTTP responses.
status timed_read(runtime& rt, http::client* client, const length_row& row, int64_t* ns, uint64_t* bytes) {
  std::string where = std::string{client ? "http" : "embedded"} + " read of thread " + row.id + ": ";
  std::vector<event> events;
  std::vector<std::string> pages;
  auto start = bench_clock::now();
  status s = client ? http_read_all(*client, row.id, &pages) : rt.read(row.id, history_view::complete, 1, 0, &events);
  *ns = (bench_clock::now() - start).count();
  if (!s) return status{s.code(), where + s.message()};
  std::vector<uint64_t> seqs;
  for (const auto& e : events) seqs.push_back(e.seq);
  json_limits limits;
  limits.json_bytes_max = 64 << 20;  // a page of page_events events, whatever their size
  if (client) *bytes = 0;
  for (const auto& body : pages) {
    *bytes += body.size();
    json::document doc;
    json::object_reader top;
    json::dom::element list;
    json::dom::array array;
    SKEIN_TRY(json::parse(body, limits, "entries page", &doc));
    SKEIN_TRY(json::object_reader::open(doc.root(), "page", &top));
    SKEIN_TRY(top.element("events", &list));
    if (list.get_array().get(array) != simdjson::SUCCESS) return status::corruption("page.events: not an array");
    for (json::dom::element e : array) {
      json::object_reader r;
      SKEIN_TRY(json::object_reader::open(e, "page.events[]", &r));
      SKEIN_TRY(r.uint("seq", &seqs.emplace_back()));
    }
  }
  if (seqs.size() != row.events)
    return status::corruption(where + std::to_string(seqs.size()) + " events read, expected " +
                              std::to_string(row.events));
  for (size_t i = 0; i < seqs.size(); ++i) {
    if (seqs[i] != i + 1)
      return status::corruption(where + "seq " + std::to_string(seqs[i]) + " at position " + std::to_string(i) +
                                ", expected " + std::to_string(i + 1));
  }
  return status::ok();
}

}  // namespace

status run_read(const bench_options& options, result* out) {
  constexpr uint64_t lengths_at_scale_1[] = {10'000, 100'000};
  // At a small scale the threads stay long enough for a read to be more than a lookup.
  constexpr uint64_t lengths_min[] = {1'000, 10'000};
  std::vector<length_row> rows(std::size(lengths_at_scale_1));
  const std::string path = options.dir + "/read";
  build_stats stats;
  {
    // One thread per length, then compacted: the reads find SST files only, as
    // after a restart of a database written long before.
    std::unique_ptr<event_log> log;
    SKEIN_TRY(open_build_log(path, true, &log));
    SKEIN_TRY(log->put_agent(bench_agent_config()));
    std::vector<std::string> ids = bench_thread_ids(rows.size(), 1);
    for (size_t k = 0; k < rows.size(); ++k) {
      rows[k].events = buildable_length(std::max(lengths_min[k], scaled_count(lengths_at_scale_1[k], options.scale)));
      rows[k].id = ids[k];
      SKEIN_TRY(build_threads(*log, bench_agent_id, {ids[k]}, rows[k].events, options.quiet, &stats));
    }
    SKEIN_TRY(log->compact_all());
  }
  {
    progress bar{"reading", rows.size() * cold_rounds * 2, options.quiet};
    // Round after round, the paths and lengths taking turns, so that whatever the
    // machine does meanwhile falls on all of them alike. Each turn: open, the cold
    // read, the warm ones, close.
    for (size_t round = 0; round < cold_rounds; ++round) {
      for (auto& row : rows) {
        for (size_t k : {0, 1}) {
          std::unique_ptr<runtime> rt;
          SKEIN_TRY(open_built_runtime(path, &rt));
          std::unique_ptr<bench_server> srv;
          std::unique_ptr<http::client> client;
          if (k == 1) {
            SKEIN_TRY(bench_server::start(*rt, http::server_limits{}, 2, &srv));
            client = std::make_unique<http::client>(http::endpoint{"127.0.0.1", srv->listener->port()});
          }
          SKEIN_TRY(timed_read(*rt, client.get(), row, &row.cold_ns[k].emplace_back(), &row.http_bytes));
          for (size_t i = 0; i < warm_reads; ++i)
            SKEIN_TRY(timed_read(*rt, client.get(), row, &row.warm_ns[k].emplace_back(), &row.http_bytes));
          client.reset();
          srv.reset();
          SKEIN_TRY(rt->close());
          bar.advance();
        }
      }
    }
  }

  table& t = add_table(out,
                       "read: the complete history of one thread after a reopen (cold) and again (warm), embedded "
                       "and through HTTP",
                       {col("thread"), col("path"), col("bytes", "MB", 1), col("cold p50", "ms", 2),
                        col("cold max", "ms", 2), col("warm p50", "ms", 2), col("warm", "events/s")});
  for (const auto& row : rows) {
    for (size_t k : {0, 1}) {
      double warm_ms = ms_at(row.warm_ns[k], 0.50);
      t.rows.push_back({text(with_commas(row.events) + " events"), text(k == 0 ? "embedded" : "http"),
                        k == 1 ? num(row.http_bytes / double(1 << 20)) : cell{}, num(ms_at(row.cold_ns[k], 0.50)),
                        num(ms_at(row.cold_ns[k], 1.0)), num(warm_ms),
                        num(warm_ms > 0 ? row.events / (warm_ms / 1000) : 0)});
    }
  }
  t.notes = {
      "cold: the first read after runtime::open over the database (" + std::to_string(cold_rounds) +
          " opens per thread and path, a new RocksDB block cache each); the OS page cache is not dropped, so "
          "the SST files are read from memory, not from the disk",
      "warm: the median of the " + std::to_string(warm_reads * cold_rounds) + " reads that follow a cold one",
      "http: GET /v1/threads/{id}/entries?view=complete&limit=" + std::to_string(page_events) +
          " (entries_limit_max) from one keep-alive client, page after page until next_seq passes last_seq; "
          "the time is the requests and the response bodies, the client's JSON parsing is not in it",
      "built: " + with_commas(stats.events) + " events straight into the event log in " + fixed(stats.seconds, 1) +
          " s, then flushed and compacted into SST files; every read checked: every event, seqs 1..N"};
  // Issue 12: a cold read of a 10,000-event thread.
  std::string name = "cold read of a " + with_commas(rows[0].events) + "-event thread, ";
  add_target(out, name + "embedded", ms_at(rows[0].cold_ns[0], 0.50), 10, "ms", better::lower);
  add_target(out, name + "http", ms_at(rows[0].cold_ns[1], 0.50), 20, "ms", better::lower);
  return status::ok();
}

}  // namespace skein::bench
