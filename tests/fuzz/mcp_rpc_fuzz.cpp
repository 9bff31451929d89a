// Fuzz target: bytes as `skein mcp` reads them from its client — lines of
// JSON-RPC — through the endpoint and the MCP session, with a transport that
// answers every request and records it. Checks that every answer is one JSON-RPC
// 2.0 object (a result or an error, never both), that a request the tools build
// has a method the API knows and a target that parses back to /v1/..., and that
// nothing crashes or leaks whatever the lines hold.
#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/model/json_reader.hpp"
#include "tests/fuzz/fuzz_check.hpp"
#include "tools/mcp/jsonrpc.hpp"
#include "tools/mcp/server.hpp"
#include "tools/server/http.hpp"

namespace {

class recording_transport : public skein::mcp::transport {
 public:
  skein::status call(const skein::mcp::http_call& c, skein::http::response* out) override {
    SKEIN_FUZZ_CHECK(c.method == "GET" || c.method == "POST" || c.method == "DELETE", "a method the API knows");
    std::string path;
    std::map<std::string, std::string> query;
    SKEIN_FUZZ_CHECK(skein::http::parse_target(c.target, &path, &query), "a tool's target parses");
    SKEIN_FUZZ_CHECK(path.rfind("/v1/", 0) == 0, "a tool's target is under /v1/");
    out->status = 200;
    out->body = "{}";
    return skein::status::ok();
  }
};

void check_answer(std::string_view line) {
  skein::json::document doc;
  skein::json::object_reader o;
  SKEIN_FUZZ_CHECK(skein::json::parse(line, {}, "answer", &doc).is_ok(), "an answer is JSON");
  SKEIN_FUZZ_CHECK(skein::json::object_reader::open(doc.root(), "answer", &o).is_ok() ||
                       doc.root().type() == simdjson::dom::element_type::ARRAY,
                   "an answer is an object (or a batch's array)");
  if (doc.root().type() == simdjson::dom::element_type::ARRAY) return;
  std::string version;
  SKEIN_FUZZ_CHECK(o.string("jsonrpc", &version).is_ok() && version == "2.0", "an answer says jsonrpc 2.0");
  simdjson::dom::element ignored;
  bool result = doc.root()["result"].get(ignored) == simdjson::SUCCESS;
  bool error = doc.root()["error"].get(ignored) == simdjson::SUCCESS;
  SKEIN_FUZZ_CHECK(result != error, "an answer holds a result or an error, not both");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  recording_transport t;
  skein::mcp::session session{t, "fuzz"};
  skein::mcp::endpoint ep{[&](const skein::mcp::rpc_request& r) { return session.handle(r); }};
  ep.allow_batches(true);
  std::string_view in{reinterpret_cast<const char*>(data), size};
  while (!in.empty()) {
    size_t nl = in.find('\n');
    std::string_view line = in.substr(0, nl);
    in = nl == std::string_view::npos ? std::string_view{} : in.substr(nl + 1);
    std::string answer = ep.handle_line(line);
    if (!answer.empty()) check_answer(answer);
  }
  return 0;
}
