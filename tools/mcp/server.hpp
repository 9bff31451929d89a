// server: the MCP protocol of `skein mcp` over a JSON-RPC endpoint (jsonrpc.hpp):
// initialize (revision negotiation), ping, tools/list and tools/call. Each tool
// call is one HTTP request of the skein API (tools.hpp) sent through a
// `transport`: to a running `skein serve` (remote_transport) or to an api
// handler in this process (embedded_transport), so both modes answer alike.
// Not thread-safe: one session, one reader.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tools/client/http_client.hpp"
#include "tools/mcp/jsonrpc.hpp"
#include "tools/mcp/tools.hpp"
#include "tools/server/api.hpp"

namespace skein::mcp {

// The revisions this server speaks, newest first (those of the pinned SDK).
extern const std::vector<std::string> protocol_versions;

class transport {
 public:
  virtual ~transport() = default;
  // Any HTTP status is a success here; a transport failure is an error.
  virtual status call(const http_call& c, http::response* out) = 0;
};

// To a skein server over HTTP, with a bearer token.
class remote_transport : public transport {
 public:
  remote_transport(http::endpoint ep, std::string token) : client_(ep, std::move(token)) {}
  status call(const http_call& c, http::response* out) override;

 private:
  http::client client_;
};

// To an api handler in this process; `api` is borrowed and must outlive this.
class embedded_transport : public transport {
 public:
  explicit embedded_transport(server::api& api) : api_(api) {}
  status call(const http_call& c, http::response* out) override;

 private:
  server::api& api_;
};

class session {
 public:
  // `t` is borrowed; `agent` is the agent the tools act for.
  session(transport& t, std::string agent) : transport_(t), agent_(std::move(agent)) {}
  rpc_outcome handle(const rpc_request& req);
  // The negotiated revision; "" before initialize.
  const std::string& protocol_version() const { return version_; }

 private:
  rpc_outcome initialize(const rpc_request& req);
  rpc_outcome call_tool(const rpc_request& req);

  transport& transport_;
  std::string agent_;
  std::string version_;
  // The project of the last session_start (as the seed keeps its session's):
  // the project of the tools called without one. "": none started.
  std::string project_;
};

}  // namespace skein::mcp
