#include "tools/mcp/jsonrpc.hpp"

#include "runtime/model/json_reader.hpp"
#include "runtime/model/json_writer.hpp"

namespace skein::mcp {
namespace {

namespace dom = json::dom;

std::string minified(dom::element el) { return simdjson::minify(el); }

// Why `el` is not a request or notification; "" when it is one.
std::string request_fault(dom::element el, rpc_request* out) {
  dom::object obj;
  if (el.get_object().get(obj) != simdjson::SUCCESS) return "a message must be a JSON object";
  std::string_view version;
  if (obj["jsonrpc"].get_string().get(version) != simdjson::SUCCESS || version != "2.0")
    return "jsonrpc: must be \"2.0\"";
  dom::element id;
  if (obj["id"].get(id) == simdjson::SUCCESS) {
    // MCP: an id is a string or an integer, never null.
    if (!id.is_string() && !id.is_int64() && !id.is_uint64()) return "id: must be a string or an integer";
    out->id_json = minified(id);
  }
  dom::element method;
  if (obj["method"].get(method) != simdjson::SUCCESS) {
    if (obj["result"].error() == simdjson::SUCCESS || obj["error"].error() == simdjson::SUCCESS) return "response";
    return "method: required";
  }
  std::string_view m;
  if (method.get_string().get(m) != simdjson::SUCCESS) return "method: must be a string";
  out->method = std::string{m};
  dom::element params;
  if (obj["params"].get(params) == simdjson::SUCCESS) {
    if (!params.is_object()) return "params: must be an object";
    out->params_json = minified(params);
  }
  return "";
}

// The id of a message that is no valid request, when one can be read from it.
std::string salvage_id(dom::element el) {
  dom::element id;
  if (el.is_object() && el["id"].get(id) == simdjson::SUCCESS && (id.is_string() || id.is_int64() || id.is_uint64()))
    return minified(id);
  return "";
}

std::string too_long_line() {
  return rpc_error_line("", {parse_error, "parse error: a message is longer than line_bytes_max (" +
                                              std::to_string(line_bytes_max) + " bytes)"});
}

}  // namespace

std::string rpc_result(std::string_view id_json, std::string_view result_json) {
  std::string out;
  json_writer w{&out};
  w.begin_object();
  w.field("jsonrpc", "2.0");
  w.key("id");
  w.raw(id_json);
  w.key("result");
  w.raw(result_json);
  w.end_object();
  return out;
}

std::string rpc_error_line(std::string_view id_json, const rpc_error& e) {
  std::string out;
  json_writer w{&out};
  w.begin_object();
  w.field("jsonrpc", "2.0");
  w.key("id");
  if (id_json.empty()) w.null();
  else w.raw(id_json);
  w.key("error");
  w.begin_object();
  w.field_int("code", e.code);
  w.field("message", e.message);
  w.end_object();
  w.end_object();
  return out;
}

std::string endpoint::handle_message(const void* element) {
  dom::element el = *static_cast<const dom::element*>(element);
  rpc_request req;
  std::string fault = request_fault(el, &req);
  if (fault == "response") return "";  // this server sends no requests: nothing awaits an answer
  if (!fault.empty()) return rpc_error_line(salvage_id(el), {invalid_request, "invalid request: " + fault});
  rpc_outcome out;
  try {
    out = methods_(req);
  } catch (const std::exception& e) {
    // The edge of the protocol: a handler's exception becomes an internal error.
    out = rpc_outcome::fail(internal_error, std::string{"internal error: "} + e.what());
  }
  if (req.notification()) return "";
  if (out.error) return rpc_error_line(req.id_json, *out.error);
  return rpc_result(req.id_json, out.result_json);
}

std::string endpoint::handle_line(std::string_view line) {
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
  if (line.find_first_not_of(" \t") == std::string_view::npos) return "";
  if (line.size() > line_bytes_max) return too_long_line();
  json::document doc;
  if (status s = json::parse(line, json_limits{line_bytes_max, message_depth_max}, "message", &doc); !s)
    return rpc_error_line("", {parse_error, "parse error: " + s.message()});
  dom::element root = doc.root();
  if (!root.is_array()) return handle_message(&root);
  if (!batches_) return rpc_error_line("", {invalid_request, "invalid request: batches are not supported"});
  dom::array items = root.get_array().value_unsafe();
  if (items.size() == 0) return rpc_error_line("", {invalid_request, "invalid request: an empty batch"});
  std::string out = "[";
  for (dom::element item : items) {
    std::string answer = handle_message(&item);
    if (answer.empty()) continue;
    if (out.size() > 1) out += ',';
    out += answer;
  }
  return out.size() == 1 ? "" : out + "]";
}

void endpoint::serve(std::FILE* in, std::FILE* out) {
  std::string line;
  bool too_long = false;
  char buf[64 << 10];
  auto answer = [&](const std::string& a) {
    if (a.empty()) return;
    std::fwrite(a.data(), 1, a.size(), out);
    std::fputc('\n', out);
    std::fflush(out);
  };
  while (std::fgets(buf, sizeof buf, in) != nullptr) {
    std::string_view chunk{buf};
    bool complete = !chunk.empty() && chunk.back() == '\n';
    if (complete) chunk.remove_suffix(1);
    if (!too_long) {
      line.append(chunk);
      // Past the bound: stop buffering, skip to the newline, answer once.
      if (line.size() > line_bytes_max) {
        too_long = true;
        line.clear();
        line.shrink_to_fit();
      }
    }
    if (!complete) continue;
    answer(too_long ? too_long_line() : handle_line(line));
    too_long = false;
    line.clear();
  }
  if (!line.empty() && !too_long) answer(handle_line(line));
}

}  // namespace skein::mcp
