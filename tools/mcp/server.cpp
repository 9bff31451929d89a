#include "tools/mcp/server.hpp"

#include "runtime/model/json_reader.hpp"
#include "runtime/model/json_writer.hpp"
#include "skein/version.hpp"

namespace skein::mcp {

const std::vector<std::string> protocol_versions = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05",
                                                    "2024-10-07"};

namespace {

namespace dom = json::dom;

// The revision from which tools/call results carry structuredContent.
constexpr std::string_view structured_content_since = "2025-06-18";

std::string tool_result(std::string_view text, bool is_error, bool structured) {
  std::string out;
  json_writer w{&out};
  w.begin_object();
  w.key("content");
  w.begin_array();
  w.begin_object();
  w.field("type", "text");
  w.field("text", text);
  w.end_object();
  w.end_array();
  if (structured && !text.empty() && text.front() == '{') {
    w.key("structuredContent");
    w.raw(text);
  }
  w.field_bool("isError", is_error);
  w.end_object();
  return out;
}

status params_of(const rpc_request& req, json::document* doc, json::object_reader* out) {
  SKEIN_TRY(json::parse(req.params_json.empty() ? std::string_view{"{}"} : std::string_view{req.params_json},
                        json_limits{line_bytes_max, message_depth_max}, "params", doc));
  return json::object_reader::open(doc->root(), "params", out);
}

}  // namespace

rpc_outcome session::initialize(const rpc_request& req) {
  json::document doc;
  json::object_reader p;
  std::string asked;
  status s = params_of(req, &doc, &p);
  if (s) s = p.string("protocolVersion", &asked);
  if (!s) return rpc_outcome::fail(invalid_params, "invalid params: " + s.message());
  // The client's revision when spoken here, else the newest (the client decides).
  bool known = std::find(protocol_versions.begin(), protocol_versions.end(), asked) != protocol_versions.end();
  version_ = known ? asked : protocol_versions.front();
  std::string out;
  json_writer w{&out};
  w.begin_object();
  w.field("protocolVersion", version_);
  w.key("capabilities");
  w.raw(R"({"tools":{"listChanged":false}})");
  w.key("serverInfo");
  w.begin_object();
  w.field("name", "skein");
  w.field("version", library_version());
  w.end_object();
  w.field("instructions", "Work items of agent " + agent_ +
                              ": session_start at the beginning, session_close at the end; create_thread, "
                              "resolve_thread and list_threads between.");
  w.end_object();
  return {out, std::nullopt};
}

rpc_outcome session::call_tool(const rpc_request& req) {
  json::document doc;
  json::object_reader p;
  std::string name, args = "{}";
  status s = params_of(req, &doc, &p);
  if (s) s = p.string("name", &name);
  if (s && p.has("arguments")) s = p.raw("arguments", dom::element_type::OBJECT, &args);
  if (!s) return rpc_outcome::fail(invalid_params, "invalid params: " + s.message());
  bool structured = version_ >= structured_content_since;  // revisions are dates: they sort as strings
  http_call c;
  s = tool_request(name, args, agent_, &c, project_);
  if (s.code() == errc::not_found) return rpc_outcome::fail(invalid_params, "unknown tool: " + quote_input(name));
  // A bad argument answers in the shape of the API's errors (code, message,
  // field, limit), as a tool error the model can read and correct.
  if (!s) return {tool_result(server::error_response(s).body, true, structured), std::nullopt};
  http::response r;
  if (s = transport_.call(c, &r); !s)
    return {tool_result(server::error_response(status::io_error("skein unreachable: " + s.message())).body, true,
                        structured),
            std::nullopt};
  if (name == "session_start" && r.status < 300) {
    json::document answer;
    json::object_reader o;
    std::string project;
    if (json::parse(r.body, json_limits{}, "answer", &answer) && json::object_reader::open(answer.root(), "answer", &o) &&
        o.string("project", &project, false) && !project.empty())
      project_ = std::move(project);
  }
  return {tool_result(r.body, r.status >= 400, structured), std::nullopt};
}

rpc_outcome session::handle(const rpc_request& req) {
  if (req.method == "initialize") return initialize(req);
  if (req.method == "ping") return {"{}", std::nullopt};
  if (req.method.rfind("notifications/", 0) == 0) return {"{}", std::nullopt};  // none needs an action here
  if (version_.empty()) return rpc_outcome::fail(invalid_request, "not initialized: send initialize first");
  if (req.method == "tools/list") return {tools_list_json(), std::nullopt};
  if (req.method == "tools/call") return call_tool(req);
  return rpc_outcome::fail(method_not_found, "method not found: " + quote_input(req.method));
}

}  // namespace skein::mcp
