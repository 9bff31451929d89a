// read: a thread's whole history read back after a restart. Threads of 10,000 and
// 100,000 events are built straight into the event log (log_builder) and compacted
// into SST files, as a long-lived database holds them; then, for each thread, a
// runtime is opened over that database and the complete history read once (cold:
// the runtime's RocksDB block cache is new) and again (warm). Embedded through
// runtime::read, and through the HTTP API in this process, GET
// /v1/threads/{id}/entries?view=complete, page after page (entries_limit_max
// events each) until next_seq passes the last_seq the page reports. Every read is
// checked after the clock stops: every event, seqs 1..N in order.
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

constexpr uint64_t lengths_at_scale_1[] = {10'000, 100'000};
// At a small scale the threads stay long enough for a read to be more than a lookup.
constexpr uint64_t lengths_min[] = {1'000, 10'000};
// Reopens per thread and path: each gives one cold read.
constexpr size_t cold_rounds = 3;
// Reads after the cold one in each round; the warm figure is their median.
constexpr size_t warm_reads = 3;
// The server's default entries_limit_max: the largest page a client may ask for.
constexpr size_t page_events = 1000;
constexpr size_t io_threads = 2;
// Issue 12: a cold read of a 10,000-event thread.
constexpr double cold_embedded_ms_max = 10;
constexpr double cold_http_ms_max = 20;

enum class read_path { embedded, http };

const char* to_string(read_path p) { return p == read_path::embedded ? "embedded" : "http"; }

struct length_row {
  uint64_t events = 0;
  std::string id;
  uint64_t http_bytes = 0;   // response bodies of one whole read through HTTP
  size_t http_pages = 0;
  std::vector<int64_t> cold_ns[2];  // by read_path
  std::vector<int64_t> warm_ns[2];
};

// --- checks, after the clock ------------------------------------------------------

status check_seqs(const std::string& where, const std::vector<uint64_t>& seqs, uint64_t events) {
  if (seqs.size() != events)
    return status::corruption(where + std::to_string(seqs.size()) + " events read, expected " + std::to_string(events));
  for (size_t i = 0; i < seqs.size(); ++i) {
    if (seqs[i] != i + 1)
      return status::corruption(where + "seq " + std::to_string(seqs[i]) + " at position " + std::to_string(i) +
                                ", expected " + std::to_string(i + 1));
  }
  return status::ok();
}

status check_events(const std::string& where, const std::vector<event>& events, uint64_t want) {
  std::vector<uint64_t> seqs;
  seqs.reserve(events.size());
  for (const auto& e : events) seqs.push_back(e.seq);
  return check_seqs(where, seqs, want);
}

// The seqs of every event of every page, in order.
status page_seqs(const std::vector<std::string>& pages, std::vector<uint64_t>* out) {
  json_limits limits;
  limits.json_bytes_max = 64 << 20;  // a page of page_events events, whatever their size
  for (const auto& body : pages) {
    json::document doc;
    json::object_reader top;
    json::dom::element events;
    json::dom::array list;
    SKEIN_TRY(json::parse(body, limits, "entries page", &doc));
    SKEIN_TRY(json::object_reader::open(doc.root(), "page", &top));
    SKEIN_TRY(top.element("events", &events));
    if (events.get_array().get(list) != simdjson::SUCCESS) return status::corruption("page.events: not an array");
    for (json::dom::element e : list) {
      json::object_reader r;
      uint64_t seq = 0;
      SKEIN_TRY(json::object_reader::open(e, "page.events[]", &r));
      SKEIN_TRY(r.uint("seq", &seq));
      out->push_back(seq);
    }
  }
  return status::ok();
}

// --- the reads ----------------------------------------------------------------------

// The uint after `"key":` in the page's tail, where the server writes next_seq and
// last_seq after the events (inside a string a quote is escaped, so the key cannot
// match there). Read this way so that the timed loop does not parse the page.
bool tail_uint(const std::string& body, std::string_view key, uint64_t* out) {
  std::string pattern;
  pattern.append(1, '"').append(key).append("\":");
  size_t at = body.rfind(pattern);
  if (at == std::string::npos) return false;
  const char* p = body.data() + at + pattern.size();
  auto r = std::from_chars(p, body.data() + body.size(), *out);
  return r.ec == std::errc{};
}

// Reads the whole thread page by page; *pages gets the response bodies.
status http_read_all(http::client& client, const std::string& id, std::vector<std::string>* pages) {
  uint64_t from = 1;
  for (;;) {
    http::response res;
    SKEIN_TRY(client.call("GET",
                          "/v1/threads/" + id + "/entries?view=complete&limit=" + std::to_string(page_events) +
                              "&from_seq=" + std::to_string(from),
                          "", &res));
    if (res.status != 200)
      return status::io_error("GET entries from " + std::to_string(from) + ": HTTP " + std::to_string(res.status) +
                              ": " + res.body.substr(0, 512));
    uint64_t next = 0, last = 0;
    if (!tail_uint(res.body, "next_seq", &next) || !tail_uint(res.body, "last_seq", &last))
      return status::corruption("GET entries from " + std::to_string(from) + ": no next_seq and last_seq");
    pages->push_back(std::move(res.body));
    if (next > last) return status::ok();
    if (next <= from)
      return status::corruption("GET entries from " + std::to_string(from) + ": next_seq " + std::to_string(next) +
                                " before last_seq " + std::to_string(last));
    from = next;
  }
}

// One read, timed; checked afterwards. *bytes and *pages_out: of the HTTP read.
status timed_read(read_path path, runtime& rt, http::client* client, const length_row& row, int64_t* ns,
                  uint64_t* bytes, size_t* pages_out) {
  std::string where = std::string{to_string(path)} + " read of thread " + row.id + ": ";
  if (path == read_path::embedded) {
    std::vector<event> events;
    auto start = bench_clock::now();
    status s = rt.read(row.id, history_view::complete, 1, 0, &events);
    *ns = (bench_clock::now() - start).count();
    if (!s) return status{s.code(), where + s.message()};
    return check_events(where, events, row.events);
  }
  std::vector<std::string> pages;
  auto start = bench_clock::now();
  status s = http_read_all(*client, row.id, &pages);
  *ns = (bench_clock::now() - start).count();
  if (!s) return status{s.code(), where + s.message()};
  *bytes = 0;
  for (const auto& p : pages) *bytes += p.size();
  *pages_out = pages.size();
  std::vector<uint64_t> seqs;
  SKEIN_TRY(page_seqs(pages, &seqs));
  return check_seqs(where, seqs, row.events);
}

// One round of one path on one thread: open, the cold read, the warm ones, close.
status round(const std::string& path, read_path how, length_row* row) {
  std::unique_ptr<runtime> rt;
  SKEIN_TRY(open_built_runtime(path, &rt));
  std::unique_ptr<bench_server> srv;
  std::unique_ptr<http::client> client;
  if (how == read_path::http) {
    SKEIN_TRY(bench_server::start(*rt, http::server_limits{}, io_threads, &srv));
    client = std::make_unique<http::client>(http::endpoint{"127.0.0.1", srv->port()});
  }
  auto k = static_cast<size_t>(how);
  SKEIN_TRY(timed_read(how, *rt, client.get(), *row, &row->cold_ns[k].emplace_back(), &row->http_bytes,
                       &row->http_pages));
  for (size_t i = 0; i < warm_reads; ++i)
    SKEIN_TRY(timed_read(how, *rt, client.get(), *row, &row->warm_ns[k].emplace_back(), &row->http_bytes,
                         &row->http_pages));
  client.reset();
  srv.reset();
  return rt->close();
}

// Builds one thread per length, then compacts: the reads find SST files only,
// as after a restart of a database written long before.
status build(const std::string& path, std::vector<length_row>& rows, bool quiet, build_stats* stats) {
  std::unique_ptr<event_log> log;
  SKEIN_TRY(open_build_log(path, true, &log));
  SKEIN_TRY(log->put_agent(bench_agent_config()));
  std::vector<std::string> ids = bench_thread_ids(rows.size(), 1);
  for (size_t k = 0; k < rows.size(); ++k) {
    rows[k].id = ids[k];
    SKEIN_TRY(build_threads(*log, bench_agent_id, {ids[k]}, rows[k].events, quiet, stats));
  }
  return log->compact_all();
}

double ms_of(std::vector<int64_t> ns, double q) { return quantile_us(ns, q) / 1000; }

double max_ms(const std::vector<int64_t>& ns) {
  return ns.empty() ? 0 : static_cast<double>(*std::max_element(ns.begin(), ns.end())) / 1e6;
}

void fill_result(const std::vector<length_row>& rows, const build_stats& stats, result* out) {
  out->workload = "read";
  table& t = out->tables.emplace_back();
  t.title = "read: the complete history of one thread after a reopen (cold) and again (warm), embedded "
            "and through HTTP";
  t.columns = {{"thread", ""},         {"path", ""},           {"bytes", "MB", 1},
               {"cold p50", "ms", 2},  {"cold max", "ms", 2},  {"warm p50", "ms", 2}, {"warm", "events/s"}};
  for (const auto& row : rows) {
    for (read_path how : {read_path::embedded, read_path::http}) {
      auto k = static_cast<size_t>(how);
      double warm_ms = ms_of(row.warm_ns[k], 0.50);
      cell bytes = how == read_path::http ? cell{static_cast<double>(row.http_bytes) / (1 << 20)} : cell{};
      t.rows.push_back({with_commas(row.events) + " events", std::string{to_string(how)}, bytes, ms_of(row.cold_ns[k], 0.50), max_ms(row.cold_ns[k]), warm_ms,
                        warm_ms > 0 ? static_cast<double>(row.events) / (warm_ms / 1000) : 0.0});
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
      "built: " + with_commas(stats.events) + " events straight into the event log in " +
          fixed(stats.seconds, 1) + " s" + ", then flushed and compacted into SST files; every read checked: " +
          "every event, seqs 1..N"};
  const length_row& first = rows.front();
  std::string name = "cold read of a " + with_commas(first.events) + "-event thread, ";
  out->targets.push_back({name + "embedded", ms_of(first.cold_ns[0], 0.50), cold_embedded_ms_max, "ms",
                          better::lower, ""});
  out->targets.push_back({name + "http", ms_of(first.cold_ns[1], 0.50), cold_http_ms_max, "ms", better::lower, ""});
}

}  // namespace

status run_read(const bench_options& options, result* out) {
  std::vector<length_row> rows;
  for (size_t k = 0; k < std::size(lengths_at_scale_1); ++k)
    rows.emplace_back().events =
        buildable_length(std::max(lengths_min[k], scaled_count(lengths_at_scale_1[k], options.scale)));
  const std::string path = options.dir + "/read";
  build_stats stats;
  SKEIN_TRY(build(path, rows, options.quiet, &stats));
  {
    progress bar{"reading", rows.size() * cold_rounds * 2, progress_wanted(options.quiet)};
    // Round after round, the paths and lengths taking turns, so that whatever the
    // machine does meanwhile falls on all of them alike.
    for (size_t r = 0; r < cold_rounds; ++r) {
      for (auto& row : rows) {
        for (read_path how : {read_path::embedded, read_path::http}) {
          SKEIN_TRY(round(path, how, &row));
          bar.advance();
        }
      }
    }
  }
  fill_result(rows, stats, out);
  return status::ok();
}

}  // namespace skein::bench
