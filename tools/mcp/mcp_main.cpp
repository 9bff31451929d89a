// skein mcp: an MCP server on stdin/stdout (server.hpp) for one agent, over an
// embedded runtime (--data) or a running skein serve (--server).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "runtime/namespaces/namespaces.hpp"
#include "runtime/runtime.hpp"
#include "tools/cli/args.hpp"
#include "tools/mcp/server.hpp"
#include "tools/tool_util.hpp"
#include "runtime/model/ids.hpp"

namespace skein::tools {

namespace {

struct mcp_config {
  std::string agent, data = "./skein-data", durability = "sync", server, token, key_file, key_env,
      ns{default_namespace};
};

int usage_error(const std::string& what) {
  std::fprintf(stderr, "skein mcp: %s\n", what.c_str());
  return 64;
}

// Creates `agent` when it is missing: the embedded mode's default agent.
status ensure_agent(runtime& rt, const std::string& agent) {
  agent_config a;
  status s = rt.get_agent(agent, &a);
  if (s.code() != errc::not_found) return s;
  a = agent_config{};
  a.id = agent;
  a.system_prompt = "You are a helpful assistant.";
  a.engine = "scripted";
  a.engine_config = R"({"default":{"reply":"noted"}})";
  agent_config out;
  return rt.create_agent(a, &out);
}

void serve_stdio(mcp::transport& t, const std::string& agent, std::FILE* out) {
  mcp::session session{t, agent};
  mcp::endpoint* self = nullptr;
  mcp::endpoint ep{[&](const mcp::rpc_request& r) {
    auto o = session.handle(r);
    // Batches belong to the 2025-03-26 revision alone.
    self->allow_batches(session.protocol_version() == "2025-03-26");
    return o;
  }};
  self = &ep;
  ep.serve(stdin, out);
}

}  // namespace

int run_mcp(const cli::given& a) {
  mcp_config c;
  c.agent = a.get("agent");
  c.token = a.get("token");
  c.data = a.get("data", c.data);
  c.durability = a.get("durability", c.durability);
  c.ns = a.get("namespace", c.ns);
  c.server = a.get("server");
  c.key_file = a.get("key-file");
  c.key_env = a.get("key-env");
  if (c.agent.empty()) return usage_error("--agent (or SKEIN_AGENT) is required");
  if (status s = validate_id(c.agent, "agent"); !s) return usage_error(s.message());
  // stdout carries protocol messages only: whatever else writes to fd 1 goes to stderr.
  int proto_fd = ::dup(STDOUT_FILENO);
  ::dup2(STDERR_FILENO, STDOUT_FILENO);
  std::FILE* out = ::fdopen(proto_fd, "w");
  if (out == nullptr) return std::perror("skein mcp: stdout"), 1;
  if (!c.server.empty()) {
    http::endpoint ep;
    if (status s = http::parse_server_url(c.server, &ep); !s) return usage_error(s.message());
    mcp::remote_transport t{ep, c.token};
    serve_stdio(t, c.agent, out);
    return 0;
  }
  runtime_options ro;
  ro.data_dir = c.data;
  if (!c.key_file.empty() && !c.key_env.empty()) return usage_error("--key-file and --key-env: give one, not both");
  if (status s = load_key_flags(c.key_file, c.key_env, &ro.encryption); !s)
    return std::fprintf(stderr, "skein mcp: %s\n", s.to_string().c_str()), 1;
  if (!parse_durability(c.durability, &ro.mode)) return usage_error("--durability: must be sync, flush or memory");
  embedded_namespace opened;
  if (status s = open_embedded(ro, c.ns, &opened); !s)
    return std::fprintf(stderr, "skein mcp: %s\n", s.to_string().c_str()), 1;
  if (status s = ensure_agent(*opened.rt, c.agent); !s) {
    std::fprintf(stderr, "skein mcp: agent %s: %s\n", c.agent.c_str(), s.to_string().c_str());
    opened.close().ignore();
    return 1;
  }
  {
    server::api api{*opened.rt, server::token_store{}, server::api_options{}};
    mcp::embedded_transport t{api};
    serve_stdio(t, c.agent, out);
  }
  return opened.close().is_ok() ? 0 : 1;
}

namespace cli {

const subcommand& mcp_subcommand() {
  static const subcommand sub{
      "mcp",
      "an MCP server on stdio for one agent: its work items, sessions, graph and threads as tools",
      "An MCP server (JSON-RPC 2.0, newline-delimited on stdin/stdout; logs on stderr)\n"
      "whose tools act for agent ID: create_thread, resolve_thread, list_threads,\n"
      "cleanup_threads, promote_suggestion, dismiss_suggestion, graph_traverse,\n"
      "session_start, session_close, send_entry, read_thread. The work-item tools take\n"
      "their seed's (gitmem's) parameters and answer its fields (skein's names stay as\n"
      "aliases). Each tool is one route of the HTTP API (docs/api.md), over an embedded\n"
      "runtime (--data) or a running skein serve (--server).",
      {opt("--agent", "ID", "the agent the tools act for").from_env("SKEIN_AGENT"),
       opt("--data", "DIR",
           "embed the runtime on DIR (default ./skein-data); the agent is created if missing, with the "
           "scripted engine and the hashing embedder"),
       opt("--durability", "sync|flush|memory", "(default sync)"),
       opt("--namespace", "NS", "the namespace of DIR to act in (default: default); with --server the token decides"),
       opt("--key-file", "P", "an encrypted DIR's master key: a file of 64 hex characters"),
       opt("--key-env", "NAME", "or the environment variable holding them"),
       opt("--server", "URL", "talk to a running skein serve instead"),
       opt("--token", "T", "its bearer token").from_env("SKEIN_TOKEN")},
      run_mcp,
      "Register it with an MCP client (.mcp.json, claude_desktop_config.json):\n"
      "  {\"mcpServers\":{\"skein\":{\"command\":\"skein\",\"args\":[\"mcp\",\"--agent\",\"me\",\"--data\","
      "\"/path/to/data\"]}}}"};
  return sub;
}

}  // namespace cli
}  // namespace skein::tools
