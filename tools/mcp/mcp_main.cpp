// skein mcp: an MCP server on stdin/stdout (server.hpp) for one agent, over an
// embedded runtime (--data) or a running skein serve (--server).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "runtime/namespaces/namespaces.hpp"
#include "runtime/runtime.hpp"
#include "tools/mcp/server.hpp"
#include "tools/tool_util.hpp"
#include "runtime/model/ids.hpp"

namespace skein::tools {

namespace {

const char* mcp_usage =
    "usage: skein mcp --agent ID [--data DIR] [--namespace NS] [--durability sync|flush|memory]\n"
    "                 [--key-file P | --key-env NAME]\n"
    "       skein mcp --agent ID --server URL [--token T]\n"
    "\n"
    "An MCP server (JSON-RPC 2.0, newline-delimited on stdin/stdout; logs on stderr)\n"
    "whose tools act for agent ID (or SKEIN_AGENT): create_thread, resolve_thread,\n"
    "list_threads, cleanup_threads, promote_suggestion, dismiss_suggestion,\n"
    "graph_traverse, session_start, session_close, send_entry, read_thread.\n"
    "The work-item tools take their seed's (gitmem's) parameters and answer its\n"
    "fields (skein's names stay as aliases). Each tool is one route of the HTTP\n"
    "API (tools/API.md).\n"
    "\n"
    "  --data DIR        embed the runtime on DIR (default ./skein-data; sync durability);\n"
    "                    the agent is created if missing, with the scripted engine and\n"
    "                    the hashing embedder\n"
    "  --key-file P      an encrypted DIR's master key: a file of 64 hex characters, or\n"
    "  --key-env NAME    the name of the environment variable holding them\n"
    "  --namespace NS    the namespace of DIR to act in (default: default); with --server\n"
    "                    the token decides\n"
    "  --server URL      talk to a running skein serve instead; --token T or SKEIN_TOKEN\n"
    "                    is its bearer token\n"
    "\n"
    "Register it with an MCP client (.mcp.json, claude_desktop_config.json):\n"
    "  {\"mcpServers\":{\"skein\":{\"command\":\"skein\",\"args\":[\"mcp\",\"--agent\",\"me\",\"--data\",\"/path/to/data\"]}}}\n";

struct mcp_config {
  std::string agent, data = "./skein-data", durability = "sync", server, token, key_file, key_env,
      ns{default_namespace};
};

int usage_error(const std::string& what) {
  std::fprintf(stderr, "skein mcp: %s\n%s", what.c_str(), mcp_usage);
  return 64;
}

std::string env(const char* name) { return std::getenv(name) != nullptr ? std::getenv(name) : ""; }

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

int run_mcp(int argc, char** argv) {
  mcp_config c;
  c.agent = env("SKEIN_AGENT");
  c.token = env("SKEIN_TOKEN");
  for (int i = 0; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") return std::fputs(mcp_usage, stdout), 0;
    if (i + 1 >= argc) return usage_error("unexpected argument '" + flag + "'");
    std::string value = argv[++i];
    if (flag == "--agent") c.agent = value;
    else if (flag == "--data") c.data = value;
    else if (flag == "--durability") c.durability = value;
    else if (flag == "--namespace") c.ns = value;
    else if (flag == "--server") c.server = value;
    else if (flag == "--token") c.token = value;
    else if (flag == "--key-file") c.key_file = value;
    else if (flag == "--key-env") c.key_env = value;
    else return usage_error("unknown option '" + flag + "'");
  }
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

}  // namespace skein::tools
