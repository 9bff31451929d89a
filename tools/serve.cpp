// skein serve: the HTTP API on an embedded runtime, until SIGINT or SIGTERM (SIGHUP:
// a cluster node reloads its cluster file).
//
// Settings come from defaults, then a config file (--config or SKEIN_CONFIG),
// then the environment (SKEIN_*), then flags; the later wins.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <pthread.h>
#include <sstream>

#include "runtime/namespaces/namespaces.hpp"
#include "tools/cli/args.hpp"
#include "tools/client/http_client.hpp"
#include "tools/server/api.hpp"
#include "tools/server/http_server.hpp"
#include "tools/tool_util.hpp"

namespace skein::tools {
namespace {

struct serve_config {
  std::string listen = "127.0.0.1:7411";
  std::string data = "./skein-data";
  std::string durability = "sync";
  std::string tokens;
  std::string port_file;  // written with the bound port once listening
  std::string key_file;   // encryption at rest: the master key's file (64 hex characters)
  std::string key_env;    // or the NAME of the environment variable holding it
  uint64_t http_threads = 2;
  uint64_t body_bytes_max = 1 << 20;
  uint64_t import_body_bytes_max = 64 << 20;
  uint64_t requests_in_flight_max = 1024;
  uint64_t handler_threads_max = 256;
  uint64_t body_bytes_buffered_max = 128 << 20;
  uint64_t stream_buffer_bytes_max = 1 << 20;
  uint64_t stream_keepalive_ms = 15000;
  uint64_t active_threads_max = 100000;
  uint64_t idle_passivate_ms = 60000;
  uint64_t thread_queue_max = 64;
  uint64_t heartbeat_interval_ms = 5000;
  uint64_t heartbeat_stale_ms = 90000;
  uint64_t start_stale_ms = 1800000;
  uint64_t work_sweep_interval_ms = 3600000;  // the work items' sweep
  std::string work_auto_archive = "false";    // the sweep archives items dormant 30 days
  std::string node_id;   // a cluster node: its id in the cluster file
  std::string cluster;   // the cluster file (runtime/model/cluster.hpp): every member's id and address
  uint64_t cluster_timeout_ms = 5000;  // a call forwarded to another node fails after this
  // TLS between nodes (PEM files; all three or none): this node's certificate
  // and key, and the cluster CA every member's certificate is signed by.
  std::string cluster_cert, cluster_key, cluster_ca;
  // A replicated cluster (cluster = nats://…): its servers' TLS CA and
  // credentials, this node's link address, and the cluster's shape.
  std::string cluster_listen = "127.0.0.1:0";
  std::string nats_ca, nats_user, nats_password, nats_creds;
  uint64_t cluster_partitions = 64, cluster_replicas = 3, cluster_log_replicas = 1;
  uint64_t cluster_lease_ttl_ms = 3000, cluster_member_ttl_ms = 3000;
  bool demo = false;
};

// Every setting by name; the names are the config file keys, the flags (with
// dashes) and the environment variables (SKEIN_ + upper case).
struct setting_fields {
  std::map<std::string, std::string*> text;
  std::map<std::string, uint64_t*> numbers;
};

setting_fields fields_of(serve_config& c) {
  setting_fields f;
  f.text = {
      {"listen", &c.listen}, {"data", &c.data}, {"durability", &c.durability},
      {"tokens", &c.tokens}, {"port_file", &c.port_file}, {"work_auto_archive", &c.work_auto_archive},
      {"key_file", &c.key_file}, {"key_env", &c.key_env}, {"node_id", &c.node_id}, {"cluster", &c.cluster},
      {"cluster_cert", &c.cluster_cert}, {"cluster_key", &c.cluster_key}, {"cluster_ca", &c.cluster_ca},
      {"cluster_listen", &c.cluster_listen}, {"nats_ca", &c.nats_ca}, {"nats_user", &c.nats_user},
      {"nats_password", &c.nats_password}, {"nats_creds", &c.nats_creds}};
  f.numbers = {
      {"http_threads", &c.http_threads},
      {"body_bytes_max", &c.body_bytes_max},
      {"import_body_bytes_max", &c.import_body_bytes_max},
      {"requests_in_flight_max", &c.requests_in_flight_max},
      {"handler_threads_max", &c.handler_threads_max},
      {"body_bytes_buffered_max", &c.body_bytes_buffered_max},
      {"stream_buffer_bytes_max", &c.stream_buffer_bytes_max},
      {"stream_keepalive_ms", &c.stream_keepalive_ms},
      {"active_threads_max", &c.active_threads_max},
      {"idle_passivate_ms", &c.idle_passivate_ms},
      {"thread_queue_max", &c.thread_queue_max},
      {"heartbeat_interval_ms", &c.heartbeat_interval_ms},
      {"heartbeat_stale_ms", &c.heartbeat_stale_ms},
      {"start_stale_ms", &c.start_stale_ms},
      {"work_sweep_interval_ms", &c.work_sweep_interval_ms},
      {"cluster_timeout_ms", &c.cluster_timeout_ms},
      {"cluster_partitions", &c.cluster_partitions},
      {"cluster_replicas", &c.cluster_replicas},
      {"cluster_log_replicas", &c.cluster_log_replicas},
      {"cluster_lease_ttl_ms", &c.cluster_lease_ttl_ms},
      {"cluster_member_ttl_ms", &c.cluster_member_ttl_ms}};
  return f;
}

// Applies one setting by name.
status apply(serve_config& c, const std::string& key, const std::string& value) {
  auto [text, numbers] = fields_of(c);
  if (auto it = text.find(key); it != text.end()) {
    if (key == "work_auto_archive" && value != "true" && value != "false")
      return status::invalid_input(key + ": expected true or false, got '" + value + "'");
    *it->second = value;
    return status::ok();
  }
  if (auto it = numbers.find(key); it != numbers.end()) {
    uint64_t v = 0;
    if (!parse_u64(value, &v) || v == 0) return status::invalid_input(key + ": expected a positive integer, got '" + value + "'");
    *it->second = v;
    return status::ok();
  }
  return status::invalid_input("unknown setting '" + key + "'");
}

const char* setting_names[] = {"listen", "data", "durability", "tokens", "port_file", "http_threads",
                               "body_bytes_max", "import_body_bytes_max", "requests_in_flight_max",
                               "handler_threads_max", "body_bytes_buffered_max", "stream_buffer_bytes_max", "stream_keepalive_ms",
                               "active_threads_max", "idle_passivate_ms", "thread_queue_max",
                               "heartbeat_interval_ms", "heartbeat_stale_ms", "start_stale_ms",
                               "work_sweep_interval_ms", "work_auto_archive", "key_file", "key_env",
                               "node_id", "cluster", "cluster_timeout_ms", "cluster_cert", "cluster_key",
                               "cluster_ca", "cluster_listen", "cluster_partitions", "cluster_replicas",
                               "cluster_log_replicas", "cluster_lease_ttl_ms", "cluster_member_ttl_ms", "nats_ca",
                               "nats_user", "nats_password", "nats_creds"};

status load_file(serve_config& c, const std::string& path) {
  std::ifstream in{path};
  if (!in) return status::not_found("config file " + path + ": cannot open");
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    auto hash = line.find('#');
    if (hash != std::string::npos) line.erase(hash);
    auto eq = line.find('=');
    std::string key = trim(line.substr(0, eq));
    if (key.empty()) continue;
    if (eq == std::string::npos) return status::invalid_input("config file " + path + " line " + std::to_string(n) + ": expected key = value");
    if (status s = apply(c, key, trim(line.substr(eq + 1))); !s)
      return status::invalid_input("config file " + path + " line " + std::to_string(n) + ": " + s.message());
  }
  return status::ok();
}

// The flag of setting `name`: its name with dashes (body_bytes_max: body-bytes-max).
std::string flag_of(std::string name) {
  for (auto& ch : name)
    if (ch == '_') ch = '-';
  return name;
}

status configure(const cli::given& a, serve_config* out) {
  serve_config c;
  std::string config_path;
  if (const char* env = std::getenv("SKEIN_CONFIG")) config_path = env;
  if (a.has("config")) config_path = a.get("config");
  if (!config_path.empty()) SKEIN_TRY(load_file(c, config_path));
  for (const char* name : setting_names) {
    std::string var = "SKEIN_";
    for (const char* p = name; *p; ++p) var += static_cast<char>(std::toupper(static_cast<unsigned char>(*p)));
    if (const char* v = std::getenv(var.c_str())) {
      status s = apply(c, name, v);
      if (!s) return status::invalid_input(var + ": " + s.message());
    }
  }
  for (const char* name : setting_names)
    if (std::string flag = flag_of(name); a.has(flag)) SKEIN_TRY(apply(c, name, a.get(flag)));
  c.demo = a.has("demo");
  *out = c;
  return status::ok();
}

status split_listen(const std::string& listen, std::string* host, uint16_t* port) {
  auto colon = listen.rfind(':');
  uint64_t p = 0;
  if (colon == std::string::npos || !parse_u64(listen.substr(colon + 1), &p) || p > 65535)
    return status::invalid_input("listen: expected host:port, got '" + listen + "'");
  *host = listen.substr(0, colon);
  if (host->size() > 2 && host->front() == '[' && host->back() == ']') *host = host->substr(1, host->size() - 2);
  if (*host == "localhost") *host = "127.0.0.1";
  *port = static_cast<uint16_t>(p);
  return status::ok();
}

bool loopback(const std::string& host) { return host.rfind("127.", 0) == 0 || host == "::1"; }

const char* demo_rules = R"({"rules": [
  {"match": "weather", "turn": 1, "tool_calls": [{"name": "weather", "arguments": {"city": "Lisbon"}}]},
  {"match": "weather", "turn": 2, "reply": "It is 18°C in Lisbon with a light northerly wind.", "deltas": ["It is 18°C ", "in Lisbon."], "latency_ms": 200}],
  "default": {"reply": "I am the skein demo agent. Ask me about the weather.", "latency_ms": 100}})";

// The program as it was started (argv[0], from /proc/self/cmdline: run_serve
// gets the arguments after "serve"), so that the commands the demo prints run as
// printed: `build/tools/skein` after `make run`, `skein` when found on PATH.
std::string invoked_as() {
  std::ifstream in{"/proc/self/cmdline", std::ios::binary};
  std::string argv0;
  if (!in || !std::getline(in, argv0, '\0') || argv0.empty()) return "skein";
  return argv0;
}

// Holds one conversation through the server's own HTTP API, as a client would:
// with `token` when the server has a tokens file (an admin one: it creates an agent).
void run_demo(uint16_t port, const std::string& token) {
  http::client c{{"127.0.0.1", port}, token};
  http::response r;
  agent_config a;
  a.id = "demo";
  a.system_prompt = "You are a concise weather assistant.";
  a.engine_config = demo_rules;
  a.tools = {"weather"};
  std::string agent_body;
  encode_agent(a, &agent_body).ignore();
  if (!c.call("POST", "/v1/agents", agent_body, &r).is_ok() || r.status >= 300) {
    std::fprintf(stderr, "skein serve --demo: creating the agent failed: %d %s\n", r.status, r.body.c_str());
    return;
  }
  if (!c.call("POST", "/v1/threads", R"({"agent_id":"demo","title":"Weather in Lisbon"})", &r).is_ok() || r.status != 201) {
    std::fprintf(stderr, "skein serve --demo: creating the thread failed: %d %s\n", r.status, r.body.c_str());
    return;
  }
  manifest m;
  decode_manifest(r.body, &m).ignore();
  std::printf("demo: thread %s created; sending \"What is the weather in Lisbon?\"\n", m.id.c_str());
  c.call("POST", "/v1/threads/" + m.id + "/entries", R"({"text":"What is the weather in Lisbon?","wait":true})", &r).ignore();
  std::printf("demo: %s\n\n", r.body.c_str());
  std::string base = "http://127.0.0.1:" + std::to_string(port);
  std::string skein = invoked_as();
  // With a tokens file every call needs a token: the commands read it from SKEIN_TOKEN.
  std::string auth = token.empty() ? "" : " -H \"Authorization: Bearer $SKEIN_TOKEN\"";
  std::printf("Go on from here:\n");
  if (!token.empty()) std::printf("  export SKEIN_TOKEN=...  (a token of the tokens file)\n");
  std::printf("  %s/ui#thread=%s  (the live thread viewer: open it in a browser)\n", base.c_str(), m.id.c_str());
  std::printf("  curl -s%s %s/v1/threads/%s/entries\n", auth.c_str(), base.c_str(), m.id.c_str());
  std::printf("  curl -N%s %s/v1/threads/%s/stream  (live: Ctrl-C ends it)\n", auth.c_str(), base.c_str(), m.id.c_str());
  std::printf("  curl -s%s -X POST %s/v1/threads/%s/entries -d '{\"text\":\"hello\",\"wait\":true}'\n", auth.c_str(),
              base.c_str(), m.id.c_str());
  std::printf("  %s --server %s entries create %s \"What is the weather in Lisbon?\" --wait\n", skein.c_str(),
              base.c_str(), m.id.c_str());
  std::printf("  %s --server %s entries read %s  (waits for the next run, prints its text as it streams)\n",
              skein.c_str(), base.c_str(), m.id.c_str());
  std::printf("  %s --server %s thread list --agent demo\n\n", skein.c_str(), base.c_str());
  std::fflush(stdout);
}

std::shared_ptr<tool> weather_tool() {
  return make_function_tool({"weather", "Current weather for a city", R"({"type":"object","properties":{"city":{"type":"string"}}})"},
                            [](const tool_invocation&) { return tool_output{"18°C, light wind from the north", false}; });
}

// The settings and their defaults, for --help.
std::string settings_text() {
  std::string out = "settings (default):\n";
  serve_config defaults;
  auto [text, numbers] = fields_of(defaults);
  char line[160];
  for (const char* name : setting_names) {
    std::string value;
    if (auto it = text.find(name); it != text.end()) value = it->second->empty() ? "none" : *it->second;
    if (auto it = numbers.find(name); it != numbers.end()) value = std::to_string(*it->second);
    std::snprintf(line, sizeof line, "  %-26s %s\n", name, value.c_str());
    out += line;
  }
  std::snprintf(line, sizeof line, "  %-26s %s", "demo", "off: --demo creates a scripted demo agent at start");
  return out + line;
}

// A setting's value in --help.
const char* metavar_of(const std::string& name) {
  static const std::map<std::string, const char*> named = {
      {"listen", "HOST:PORT"}, {"data", "DIR"}, {"durability", "sync|flush|memory"}, {"tokens", "FILE"},
      {"port_file", "FILE"}, {"work_auto_archive", "true|false"}, {"key_file", "P"}, {"key_env", "NAME"},
      {"node_id", "ID"}, {"cluster", "FILE|nats://HOST:PORT,…"}, {"cluster_cert", "FILE"}, {"cluster_key", "FILE"},
      {"cluster_ca", "FILE"}, {"cluster_listen", "HOST:PORT"}, {"nats_ca", "FILE"}, {"nats_user", "NAME"},
      {"nats_password", "TEXT"}, {"nats_creds", "FILE"}};
  auto it = named.find(name);
  return it == named.end() ? "N" : it->second;
}

// Whether --cluster names NATS servers (a replicated cluster) rather than a file.
bool is_nats_list(const std::string& cluster) {
  return cluster.starts_with("nats://") || cluster.starts_with("tls://");
}

// A replicated cluster's options from the settings.
status replication_options(const serve_config& c, cluster_replication* out) {
  cluster_replication r;
  for (size_t at = 0; at <= c.cluster.size();) {
    size_t comma = c.cluster.find(',', at);
    if (comma == std::string::npos) comma = c.cluster.size();
    r.nats.push_back(trim(c.cluster.substr(at, comma - at)));
    at = comma + 1;
  }
  if (status s = split_listen(c.cluster_listen, &r.host, &r.port); !s)
    return status::invalid_input("cluster_listen: " + s.message()).with_field("cluster_listen");
  r.nats_ca = c.nats_ca;
  r.nats_user = c.nats_user;
  r.nats_password = c.nats_password;
  r.nats_creds = c.nats_creds;
  auto narrow = [](uint64_t v, uint64_t max, const char* name, auto* to) -> status {
    if (v > max) return status::invalid_input(std::string{name} + ": at most " + std::to_string(max)).with_field(name);
    *to = static_cast<std::remove_pointer_t<decltype(to)>>(v);
    return status::ok();
  };
  SKEIN_TRY(narrow(c.cluster_partitions, 4096, "cluster_partitions", &r.partitions));
  SKEIN_TRY(narrow(c.cluster_replicas, cluster_members_max, "cluster_replicas", &r.replicas));
  SKEIN_TRY(narrow(c.cluster_log_replicas, 5, "cluster_log_replicas", &r.log_replicas));
  r.lease_ttl_ms = c.cluster_lease_ttl_ms;
  r.member_ttl_ms = c.cluster_member_ttl_ms;
  *out = std::move(r);
  return status::ok();
}

// The members a cluster file lists (runtime/model/cluster.hpp).
status read_cluster_file(const std::string& path, std::vector<cluster_member>* out) {
  std::ifstream in{path};
  if (!in) return status::not_found("cluster file " + path + ": cannot open");
  // One byte past the limit is enough for parse_cluster to refuse a larger file.
  std::string text(cluster_file_bytes_max + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  return parse_cluster(text, out);
}

}  // namespace

int run_serve(const cli::given& a) {
  serve_config c;
  if (status s = configure(a, &c); !s) {
    std::fprintf(stderr, "skein serve: %s\n", s.message().c_str());
    return 64;
  }
  std::string host;
  uint16_t port = 0;
  runtime_options ro;
  if (status s = split_listen(c.listen, &host, &port); !s) return fail("skein serve", s, 64);
  if (!parse_durability(c.durability, &ro.mode))
    return fail("skein serve", status::invalid_input("durability: must be sync, flush or memory"), 64);
  server::token_store tokens;
  if (!c.tokens.empty()) {
    if (status s = server::token_store::load(c.tokens, &tokens); !s) return fail("skein serve", s, 1);
  } else if (!loopback(host)) {
    std::fprintf(stderr,
                 "skein serve: refusing to listen on %s without a tokens file (--tokens): with no auth, only "
                 "loopback addresses (127.0.0.0/8, ::1) are allowed\n",
                 host.c_str());
    return 1;
  }
  // SIGINT and SIGTERM (and, for a cluster node, SIGHUP) are taken by sigwait
  // below, on this thread only.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  ro.data_dir = c.data;
  if (!c.key_file.empty() && !c.key_env.empty())
    return fail("skein serve", status::invalid_input("key_file and key_env: give one of them, not both"), 64);
  if (status s = load_key_flags(c.key_file, c.key_env, &ro.encryption); !s) return fail("skein serve", s, 1);
  ro.active_threads_max = c.active_threads_max;
  ro.idle_passivate_ms = c.idle_passivate_ms;
  ro.thread_queue_max = c.thread_queue_max;
  ro.heartbeat_interval_ms = c.heartbeat_interval_ms;
  ro.heartbeat_stale_ms = static_cast<int64_t>(c.heartbeat_stale_ms);
  ro.start_stale_ms = static_cast<int64_t>(c.start_stale_ms);
  ro.work_sweep_interval_ms = c.work_sweep_interval_ms;
  ro.work_auto_archive = c.work_auto_archive == "true";
  if (c.demo) ro.tools.push_back(weather_tool());
  if (c.node_id.empty() != c.cluster.empty())
    return fail("skein serve", status::invalid_input("node_id and cluster: give both (a cluster node) or neither"), 64);
  if (c.node_id.empty() && !(c.cluster_cert.empty() && c.cluster_key.empty() && c.cluster_ca.empty()))
    return fail("skein serve",
                status::invalid_input("cluster_cert, cluster_key, cluster_ca: for a cluster node only (give node_id "
                                      "and cluster)"),
                64);
  embedded_namespace opened;
  if (!c.node_id.empty()) {
    // A cluster node: one database, the threads this node owns; no namespaces.
    ro.cluster.node_id = c.node_id;
    ro.cluster.request_timeout_ms = c.cluster_timeout_ms;
    ro.cluster.tls = {c.cluster_cert, c.cluster_key, c.cluster_ca};
    const bool replicated = is_nats_list(c.cluster);
    if (replicated) {
      if (status s = replication_options(c, &ro.cluster.replication); !s) return fail("skein serve", s, 64);
    } else if (status s = read_cluster_file(c.cluster, &ro.cluster.members); !s) {
      return fail("skein serve", s, s.code() == errc::invalid_input ? 64 : 1);
    }
    if (status s = runtime::open(ro, &opened.single); !s) return fail("skein serve", s, 1);
    opened.rt = std::shared_ptr<runtime>(opened.single.get(), [](runtime*) {});
    const char* link = ro.cluster.tls.enabled() ? "TLS, peers verified against the cluster CA"
                                                : "plain TCP, for tests on one machine: loopback only";
    if (replicated) {
      replication_status rs;
      opened.rt->replication(&rs).ignore();
      std::printf("skein serve: node %s of a replicated cluster (NATS %s): %u partitions, %zu replicas each; node "
                  "link on %s (%s)\n",
                  c.node_id.c_str(), c.cluster.c_str(), rs.partitions, rs.replicas, rs.link.c_str(), link);
    }
    for (const auto& m : ro.cluster.members)
      if (m.id == c.node_id)
        std::printf("skein serve: node %s of a cluster of %zu; node link on %s:%u (%s)\n", c.node_id.c_str(),
                    ro.cluster.members.size(), m.host.c_str(), m.port, link);
  } else {
    // On disk, a namespace set (runtime/namespaces/namespaces.hpp): one database per
    // namespace under the data directory. In memory there is one namespace.
    if (status s = open_embedded(ro, std::string(default_namespace), &opened); !s) return fail("skein serve", s, 1);
  }
  runtime* rt = opened.rt.get();
  if (!rt->repaired_at_open().empty())
    std::printf("skein serve: recovery closed %zu interrupted run(s)\n", rt->repaired_at_open().size());

  http::server_limits limits;
  limits.body_bytes_max = c.body_bytes_max;
  limits.import_body_bytes_max = c.import_body_bytes_max;
  limits.requests_in_flight_max = c.requests_in_flight_max;
  if (c.handler_threads_max == 0)
    return fail("skein serve", status::invalid_input("handler_threads_max: must be at least 1").with_field("handler_threads_max"), 64);
  limits.handler_threads_max = c.handler_threads_max;
  limits.body_bytes_buffered_max = c.body_bytes_buffered_max;
  limits.stream_buffer_bytes_max = c.stream_buffer_bytes_max;
  limits.stream_keepalive = std::chrono::milliseconds(c.stream_keepalive_ms);
  server::api_options ao;
  ao.limits.json_bytes_max = c.body_bytes_max;
  std::unique_ptr<http::server> srv;
  auto counters = [&srv] { return srv ? srv->counters() : http::server_counters{}; };
  std::unique_ptr<server::api> api = opened.set ? std::make_unique<server::api>(*opened.set, tokens, ao, counters)
                                                : std::make_unique<server::api>(*rt, tokens, ao, counters);
  if (status s = http::server::start(host, port, limits, api->service(), c.http_threads, &srv); !s)
    return fail("skein serve", s, 1);
  std::printf("skein serve: listening on http://%s:%u (data %s, durability %s, auth %s, %s)\n", host.c_str(),
              srv->port(), c.data.c_str(), c.durability.c_str(),
              tokens.enabled() ? "bearer tokens" : "none: loopback only",
              ro.encryption ? "encrypted at rest" : "not encrypted");
  std::fflush(stdout);
  if (!c.port_file.empty()) {
    std::ofstream pf{c.port_file + ".tmp"};
    pf << srv->port() << "\n";
    pf.close();
    std::rename((c.port_file + ".tmp").c_str(), c.port_file.c_str());
  }
  std::printf("skein serve: the thread viewer is at http://%s:%u/ui\n", host.c_str(), srv->port());
  std::fflush(stdout);
  if (c.demo && tokens.enabled() && tokens.admin_token().empty())
    std::fprintf(stderr, "skein serve --demo: skipped: the tokens file has no admin token to create the demo agent with\n");
  else if (c.demo)
    run_demo(srv->port(), tokens.admin_token());

  int sig = 0;
  for (sigwait(&signals, &sig); sig == SIGHUP; sigwait(&signals, &sig)) {
    // The cluster file again: a new member list becomes this node's target
    // (`skein cluster rebalance` moves the threads); a bad file changes nothing.
    if (c.cluster.empty() || is_nats_list(c.cluster)) {
      std::printf("skein serve: SIGHUP: no cluster file to reload (not a node of a static cluster)\n");
    } else {
      std::vector<cluster_member> members;
      status s = read_cluster_file(c.cluster, &members);
      if (s) s = rt->reload_cluster(members);
      if (s)
        std::printf("skein serve: SIGHUP: cluster file %s reloaded: %zu members%s\n", c.cluster.c_str(),
                    members.size(), "; run `skein cluster rebalance` if it changed");
      else  // on stdout with the other lines of the node's life: it goes on as it was
        std::printf("skein serve: SIGHUP: cluster file %s not reloaded, nothing changed: %s\n", c.cluster.c_str(),
                    s.to_string().c_str());
    }
    std::fflush(stdout);
  }
  std::printf("skein serve: %s: stopping\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
  std::fflush(stdout);
  srv->stop();
  status closed = opened.close();  // runs end as cancelled; what is queued is written
  if (!closed) return fail("skein serve", closed, 1);
  std::printf("skein serve: stopped cleanly\n");
  return 0;
}

namespace cli {

// A flag for every setting (--body-bytes-max N), --config and --demo.
const subcommand& serve_subcommand() {
  static const std::vector<std::string> text = [] {
    std::vector<std::string> t;
    for (const char* name : setting_names) {
      t.push_back("--" + flag_of(name));
      std::string var = "SKEIN_";
      for (const char* p = name; *p; ++p) var += static_cast<char>(std::toupper(static_cast<unsigned char>(*p)));
      t.push_back(std::string{name} + " in the config file, " + var + " in the environment");
    }
    return t;
  }();
  static const subcommand sub = [] {
    subcommand s{
        "serve",
        "the HTTP API and the /ui viewer on an embedded runtime (default 127.0.0.1:7411, ./skein-data, sync)",
        "Serves the HTTP API (docs/api.md) and the thread viewer at /ui on an embedded runtime\n"
        "until SIGINT or SIGTERM. A cluster node (--node-id, --cluster) reloads its cluster file on\n"
        "SIGHUP: a changed member list waits for `skein cluster rebalance` to move the threads.\n"
        "Node links are TLS with --cluster-cert, --cluster-key and --cluster-ca (PEM files), else\n"
        "plain TCP, which every member must then be on loopback for.\n"
        "Settings come from the defaults, then the config file (--config or SKEIN_CONFIG,\n"
        "`name = value` lines), then SKEIN_<NAME> in the environment, then flags; the later wins.\n"
        "A flag spells the name with dashes: --body-bytes-max 2097152.",
        {opt("--config", "FILE", "the config file (SKEIN_CONFIG)"),
         flag("--demo", "creates a scripted demo agent at start and holds one conversation")},
        run_serve,
        settings_text()};
    for (size_t i = 0; i < std::size(setting_names); ++i)
      s.args.push_back(opt(text[2 * i], metavar_of(setting_names[i]), text[2 * i + 1]));
    return s;
  }();
  return sub;
}

}  // namespace cli
}  // namespace skein::tools
