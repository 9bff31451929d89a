// skein-test-engine: a program speaking the process engine protocol (docs/engines.md,
// "The process engine protocol"), for the process engine's tests. One mode from
// argv decides how it answers:
//
//   echo        each call: the last user text in three deltas, then a step
//               "echo: <text>" (title calls: "title: <text>", summaries "summary")
//   tool NAME   a call without a tool result after the last user message asks for
//               tool NAME with {"text":<last user text>}; with one it answers
//               "tool said: <the result's output>"
//   exit        as echo, but a call whose text holds "die" ends the program with
//               status 3, and one holding "kill" makes it SIGKILL itself
//   garbage     before each echo answer: a line that is not JSON, a JSON array, a
//               step for an unknown id, a line of an unknown type for the call's id
//   huge BYTES  as echo, but a call whose text holds "huge" gets a line of BYTES
//               bytes first
//   slow        as echo, but calls whose text holds "slow" are never answered
//   stderr      as echo, and each call writes a chatter line and a 10000-byte line
//               to stderr first
//   ooo N       holds calls until N are in, then answers them in reverse order
//
// In every mode a cancel line is reported on stderr as "fixture: cancel <id>",
// and end of input ends the program with status 0.
#include <csignal>
#include <cstdio>
#include <functional>
#include <iostream>
#include <string>
#include <unistd.h>
#include <vector>

#include "runtime/model/json_reader.hpp"
#include "runtime/model/json_writer.hpp"

using namespace skein;

namespace {

struct call {
  std::string id;
  std::string purpose;
  std::string user_text;    // the last user message
  std::string tool_output;  // the output of a tool result after it; "" if none
  bool has_tool_result = false;
  std::string first_tool;   // the first tool offered
};

void emit(const std::string& line) {
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

// A line for call `id` of `type` carrying `text`; `more` writes the fields that
// follow before the object closes.
std::string text_line(const std::string& id, const char* type, const std::string& text,
                      const std::function<void(json_writer&)>& more = {}) {
  std::string out;
  json_writer w{&out};
  w.begin_object();
  w.field("id", id);
  w.field("type", type);
  w.field("text", text);
  if (more) more(w);
  w.end_object();
  return out;
}

std::string delta(const std::string& id, const std::string& text) { return text_line(id, "delta", text); }

std::string step(const std::string& id, const std::string& text) {
  return text_line(id, "step", text, [&](json_writer& w) {
    w.key("usage");
    w.begin_object();
    w.field_uint("input_tokens", 7);
    w.field_uint("output_tokens", text.size());
    w.end_object();
    w.field_number("cost_usd", 0.25);
    w.field("session_id", "fixture-session");
  });
}

std::string tool_step(const call& c, const std::string& tool) {
  std::string out;
  json_writer w{&out};
  w.begin_object();
  w.field("id", c.id);
  w.field("type", "step");
  w.field("thinking", "a tool knows");
  w.key("tool_calls");
  w.begin_array();
  w.begin_object();
  w.field("id", "tc-" + c.id);
  w.field("name", tool);
  w.key("arguments");
  w.begin_object();
  w.field("text", c.user_text);
  w.end_object();
  w.end_object();
  w.end_array();
  w.end_object();
  return out;
}

// Reads a call line; false for anything else (a cancel is reported here).
bool read_call(const std::string& line, call* out) {
  json::document doc;
  json_limits limits;
  limits.json_bytes_max = 64 << 20;
  if (!json::parse(line, limits, "line", &doc)) return false;
  json::object_reader r;
  if (!json::object_reader::open(doc.root(), "line", &r)) return false;
  std::string type;
  if (!r.string("type", &type) || !r.string("id", &out->id)) return false;
  if (type == "cancel") {
    std::fprintf(stderr, "fixture: cancel %s\n", out->id.c_str());
    std::fflush(stderr);
    return false;
  }
  if (type != "call") return false;
  (void)r.string("purpose", &out->purpose, false);
  json::dom::element conv;
  json::dom::array arr;
  if (!r.element("conversation", &conv) || conv.get(arr) != simdjson::SUCCESS) return false;
  for (json::dom::element e : arr) {
    std::string_view etype, role, text;
    if (e["type"].get(etype) != simdjson::SUCCESS) continue;
    if (etype == "message" && e["payload"]["role"].get(role) == simdjson::SUCCESS && role == "user" &&
        e["payload"]["text"].get(text) == simdjson::SUCCESS) {
      out->user_text = std::string{text};
      out->has_tool_result = false;
      out->tool_output.clear();
    } else if (etype == "tool_result" && e["payload"]["output"].get(text) == simdjson::SUCCESS) {
      out->has_tool_result = true;
      out->tool_output = std::string{text};
    }
  }
  json::dom::element tools;
  json::dom::array tarr;
  std::string_view name;
  if (r.element("tools", &tools) && tools.get(tarr) == simdjson::SUCCESS && tarr.size() > 0 &&
      tarr.at(0)["name"].get(name) == simdjson::SUCCESS)
    out->first_tool = std::string{name};
  return true;
}

void echo(const call& c) {
  if (c.purpose == "title") return emit(step(c.id, "title: " + c.user_text));
  if (c.purpose == "summary") return emit(step(c.id, "summary"));
  const std::string& t = c.user_text;
  size_t third = t.size() / 3;
  // Three deltas on byte boundaries are fine for the ASCII the tests send.
  emit(delta(c.id, t.substr(0, third)));
  emit(delta(c.id, t.substr(third, third)));
  emit(delta(c.id, t.substr(2 * third)));
  emit(step(c.id, "echo: " + t));
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "echo";
  std::string arg = argc > 2 ? argv[2] : "";
  std::vector<call> held;
  std::string line;
  while (std::getline(std::cin, line)) {
    call c;
    if (!read_call(line, &c)) continue;
    if (mode == "tool") {
      std::string tool = arg.empty() ? c.first_tool : arg;
      if (c.purpose == "run" && !c.has_tool_result) emit(tool_step(c, tool));
      else if (c.purpose == "run") emit(step(c.id, "tool said: " + c.tool_output));
      else echo(c);
    } else if (mode == "exit") {
      if (c.user_text.find("die") != std::string::npos) std::_Exit(3);
      if (c.user_text.find("kill") != std::string::npos) ::kill(::getpid(), SIGKILL);
      echo(c);
    } else if (mode == "garbage") {
      emit("this is not json");
      emit("[1,2,3]");
      emit(R"({"id":"nope","type":"step","text":"x"})");
      emit(R"({"id":")" + c.id + R"(","type":"mystery"})");
      echo(c);
    } else if (mode == "huge") {
      if (c.user_text.find("huge") != std::string::npos) {
        size_t bytes = static_cast<size_t>(std::stoull(arg));
        std::string big = R"({"id":")" + c.id + R"(","type":"delta","text":")";
        big.append(bytes > big.size() + 2 ? bytes - big.size() - 2 : 0, 'x');
        big += "\"}";
        emit(big);
      }
      echo(c);
    } else if (mode == "slow") {
      if (c.user_text.find("slow") == std::string::npos) echo(c);
    } else if (mode == "stderr") {
      std::fprintf(stderr, "fixture chatter for %s\n", c.id.c_str());
      std::string long_line(10000, 'e');
      std::fprintf(stderr, "%s\n", long_line.c_str());
      std::fflush(stderr);
      echo(c);
    } else if (mode == "ooo") {
      held.push_back(c);
      if (held.size() >= static_cast<size_t>(std::stoul(arg))) {
        for (auto it = held.rbegin(); it != held.rend(); ++it) emit(step(it->id, "echo: " + it->user_text));
        held.clear();
      }
    } else {
      echo(c);
    }
  }
  return 0;
}
