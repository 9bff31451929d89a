// The server's own routes: /healthz, which needs no token, and /metrics, the
// Prometheus figures of the runtime (and, for the server's admin, of the HTTP
// server across every namespace).
#include <cstdio>

#include "tools/server/routes/routes.hpp"

namespace skein::server {
namespace {

void healthz(route_call& c) { c.reply_json(200, R"({"status":"ok"})"); }

// A per-effect family that is one count of effect_stats (labels effect="...").
struct effect_count_family {
  const char* name;
  const char* type;
  const char* help;
  uint64_t effect_stats::*count;
};

constexpr effect_count_family effect_backlog = {"skein_effect_backlog", "gauge",
                                                "Threads an effect has work pending for.", &effect_stats::backlog};
// Written after the lag quantiles, in this order.
constexpr effect_count_family effect_totals[] = {
    {"skein_effect_done_total", "counter", "Effect jobs written (output and cursor).", &effect_stats::done},
    {"skein_effect_failed_total", "counter", "Effect jobs failed (each is retried).", &effect_stats::failed},
    {"skein_effect_retries_total", "counter", "Effect retries scheduled.", &effect_stats::retries},
    {"skein_effect_discarded_total", "counter", "Titles generated but not set: the thread had one by then.",
     &effect_stats::discarded},
};

void family_header(std::string& out, const char* name, const char* type, const char* help) {
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void metric(std::string& out, const char* name, const char* type, const char* help, uint64_t value,
            const char* labels = "") {
  family_header(out, name, type, help);
  out += std::string(name) + labels + " " + std::to_string(value) + "\n";
}

void effect_counts(std::string& out, const effect_count_family& f, const std::vector<effect_stats>& effects) {
  family_header(out, f.name, f.type, f.help);
  for (const auto& e : effects)
    out += std::string(f.name) + "{effect=\"" + e.effect + "\"} " + std::to_string(e.*f.count) + "\n";
}

// Per effect (labels effect="titles"|"embeddings"): backlog, lag quantiles, done and failed counts.
void effect_metrics(std::string& out, const std::vector<effect_stats>& effects) {
  if (effects.empty()) return;
  effect_counts(out, effect_backlog, effects);
  family_header(out, "skein_effect_lag_seconds", "summary", "Seconds from commit to the effect's output, recent jobs.");
  for (const auto& e : effects) {
    char line[256];
    std::snprintf(line, sizeof line, "skein_effect_lag_seconds{effect=\"%s\",quantile=\"0.5\"} %.6f\n",
                  e.effect.c_str(), e.lag_p50_s);
    out += line;
    std::snprintf(line, sizeof line, "skein_effect_lag_seconds{effect=\"%s\",quantile=\"0.99\"} %.6f\n",
                  e.effect.c_str(), e.lag_p99_s);
    out += line;
  }
  for (const auto& f : effect_totals) effect_counts(out, f, effects);
}

// A replicated cluster's node: its partitions and the partition manager's counters.
void replication_metrics(std::string& out, const replication_status& r) {
  uint64_t led = 0, followed = 0, leaderless = 0;
  for (const auto& p : r.views) {
    led += p.leading ? 1 : 0;
    followed += p.following ? 1 : 0;
    leaderless += p.leader.empty() ? 1 : 0;
  }
  metric(out, "skein_cluster_partitions", "gauge", "Partitions of the replicated cluster.", r.partitions);
  metric(out, "skein_cluster_partitions_led", "gauge", "Partitions this node leads and serves.", led);
  metric(out, "skein_cluster_partitions_followed", "gauge", "Partitions this node follows (a warm replica).",
         followed);
  metric(out, "skein_cluster_partitions_leaderless", "gauge", "Partitions with no lease holder as this node sees them.",
         leaderless);
  metric(out, "skein_cluster_lease_takes_total", "counter", "Partition leases this node took (failovers, first takes).",
         r.took);
  metric(out, "skein_cluster_depositions_total", "counter",
         "Partitions this node stopped leading: a renewal refused, a writer fenced off, no renewal for a lease's ttl.",
         r.deposed);
  metric(out, "skein_cluster_lease_releases_total", "counter", "Leases given up to a new placement (a join, a drain).",
         r.released);
  metric(out, "skein_cluster_follower_restarts_total", "counter", "Followers started again, found stuck.", r.restarts);
  metric(out, "skein_cluster_errors_total", "counter", "Partition manager steps that failed (retried next round).",
         r.errors);
  family_header(out, "skein_cluster_applied_seq", "gauge",
                "The stream sequence this node's disk applied, by partition (a replica's lag: the leader's less it).");
  for (const auto& p : r.views)
    out += "skein_cluster_applied_seq{partition=\"" + std::to_string(p.partition) + "\"} " + std::to_string(p.applied) +
           "\n";
}

void metrics(route_call& c) {
  runtime_stats rs;
  if (status s = c.rt().stats(&rs); !s) return c.fail(s);
  std::string out;
  metric(out, "skein_threads_active", "gauge", "Thread actors alive now.", rs.active_threads);
  metric(out, "skein_thread_activations_total", "counter", "Thread actors activated.", rs.activations);
  metric(out, "skein_thread_passivations_total", "counter", "Thread actors passivated.", rs.passivations);
  metric(out, "skein_agents", "gauge", "Agents loaded.", rs.agents);
  metric(out, "skein_log_writes_total", "counter", "RocksDB batch writes.", rs.log.writes);
  metric(out, "skein_log_commits_total", "counter", "Ticks committed.", rs.log.commits);
  metric(out, "skein_log_events_total", "counter", "Events committed.", rs.log.events);
  metric(out, "skein_log_bytes_total", "counter", "Bytes written in batches.", rs.log.bytes);
  metric(out, "skein_log_failed_total", "counter", "Ticks failed by storage errors.", rs.log.failed);
  metric(out, "skein_log_keys_total", "counter", "Batch entries written (puts, deletes, range deletes).",
         rs.log.keys);
  metric(out, "skein_log_manifests_total", "counter",
         "Manifest rows written by ticks (a tick that only appends leaves the row behind the log).",
         rs.log.manifests);
  metric(out, "skein_compactions_total", "counter", "Compaction events written.", rs.compactions);
  metric(out, "skein_compactions_failed_total", "counter", "Compactions that failed (thread.compaction_failed).",
         rs.compactions_failed);
  metric(out, "skein_compaction_tokens_saved_total", "counter",
         "Estimated tokens removed from working views by compactions.",
         rs.compaction_tokens_before - rs.compaction_tokens_after);
  metric(out, "skein_memory_rows", "gauge", "Embedded messages in the memory index.", rs.memory.rows);
  metric(out, "skein_memory_bytes", "gauge", "Bytes the memory index holds.", rs.memory.bytes);
  metric(out, "skein_memory_rebuild_skipped", "gauge", "Stored embeddings the rebuild at open skipped.",
         rs.memory_rebuild.skipped);
  metric(out, "skein_quota_threads", "gauge", "Threads stored (quota threads_max).", rs.quota_usage.threads);
  metric(out, "skein_quota_threads_max", "gauge", "Quota: threads stored at most; 0 unlimited.",
         rs.quota.threads_max);
  metric(out, "skein_quota_events_today", "gauge", "Events committed this UTC day (quota events_per_day_max).",
         rs.quota_usage.events_today);
  metric(out, "skein_quota_events_per_day_max", "gauge", "Quota: events per UTC day at most; 0 unlimited.",
         rs.quota.events_per_day_max);
  metric(out, "skein_quota_storage_bytes", "gauge",
         "Approximate bytes on disk: SST, memtables, live WAL (quota storage_bytes_max).",
         rs.quota_usage.storage_bytes);
  metric(out, "skein_quota_storage_bytes_max", "gauge", "Quota: approximate bytes on disk at most; 0 unlimited.",
         rs.quota.storage_bytes_max);
  effect_metrics(out, rs.effects);
  if (replication_status r; c.rt().replication(&r)) replication_metrics(out, r);
  if (c.env.counters && c.scope.server_admin) {  // the server's own figures span every namespace
    auto hc = c.env.counters();
    metric(out, "skein_http_requests_total", "counter", "HTTP requests read.", hc.requests);
    metric(out, "skein_http_requests_in_flight", "gauge", "HTTP requests being answered.", hc.in_flight);
    metric(out, "skein_http_body_bytes_buffered", "gauge", "Request body bytes held now.", hc.body_bytes_buffered);
    metric(out, "skein_http_rejected_total", "counter", "Requests answered before the handler.", hc.rejected);
    metric(out, "skein_http_connections", "gauge", "Open HTTP connections.", hc.connections);
    metric(out, "skein_sse_streams", "gauge", "Open event streams.", hc.streams);
    metric(out, "skein_sse_slow_clients_total", "counter", "Streams closed for falling behind.", hc.slow_clients);
    metric(out, "skein_http_handler_threads", "gauge", "Threads running admission and handlers now.",
           hc.handler_threads);
    metric(out, "skein_http_handlers_busy", "gauge", "Requests whose admission or handler runs now.",
           hc.handlers_busy);
    metric(out, "skein_http_handlers_queued", "gauge", "Requests waiting for a handler thread.",
           hc.handlers_queued);
    out += "# HELP skein_http_responses_total HTTP responses by status class.\n# TYPE skein_http_responses_total counter\n";
    out += "skein_http_responses_total{class=\"2xx\"} " + std::to_string(hc.responses_2xx) + "\n";
    out += "skein_http_responses_total{class=\"4xx\"} " + std::to_string(hc.responses_4xx) + "\n";
    out += "skein_http_responses_total{class=\"5xx\"} " + std::to_string(hc.responses_5xx) + "\n";
  }
  c.reply(http::response{200, "text/plain; version=0.0.4", out, {}});
}

constexpr route rows[] = {
    {.method = "GET", .pattern = "/healthz", .scope = route_scope::open, .handler = healthz},
    {.method = "GET", .pattern = "/metrics", .scope = route_scope::admin, .denied = "read metrics (admin only)",
     .handler = metrics},
};

}  // namespace

std::span<const route> health_routes() { return rows; }

}  // namespace skein::server
