// The routes the CLI's command rows (tools/cli) and the MCP tools
// (tools/mcp/tools.cpp) call are routes of the HTTP API as its reference
// documents them (tools/API.md, or wherever under docs/ it moved), and a
// command's request is built from its row's route.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "tools/cli/command.hpp"
#include "tools/mcp/tools.hpp"

namespace {

namespace fs = std::filesystem;

struct doc_route {
  std::string method, path;
};

// Every `METHOD /path` in backticks of the Markdown files, a query dropped;
// a `/tail` after one in the same line (`POST /v1/schedules/{id}/pause` ·
// `/resume`) is the sibling route of the same method.
std::vector<doc_route> documented_routes() {
  std::vector<fs::path> files;
  const fs::path root{SKEIN_SOURCE_DIR};
  if (fs::exists(root / "tools" / "API.md")) files.push_back(root / "tools" / "API.md");
  if (fs::exists(root / "docs"))
    for (const auto& e : fs::recursive_directory_iterator(root / "docs"))
      if (e.path().extension() == ".md") files.push_back(e.path());
  const std::regex span{"`([^`]*)`"};
  const std::regex full{"^(GET|POST|PUT|PATCH|DELETE) (/[^ ?]*)(\\?.*)?$"};
  const std::regex tail{"^(/[A-Za-z0-9_{}./-]+)$"};
  std::vector<doc_route> out;
  for (const auto& file : files) {
    std::ifstream in{file};
    for (std::string line; std::getline(in, line);) {
      doc_route last;
      for (std::sregex_iterator it{line.begin(), line.end(), span}, end; it != end; ++it) {
        std::string text = (*it)[1];
        std::smatch m;
        if (std::regex_match(text, m, full)) {
          last = {m[1], m[2]};
          out.push_back(last);
        } else if (!last.method.empty() && std::regex_match(text, m, tail)) {
          out.push_back({last.method, last.path.substr(0, last.path.rfind('/')) + std::string{m[1]}});
        }
      }
    }
  }
  return out;
}

std::vector<std::string> segments(std::string_view path) {
  std::vector<std::string> out;
  std::stringstream in{std::string{path}};
  for (std::string s; std::getline(in, s, '/');) out.push_back(s);
  return out;
}

bool placeholder(const std::string& s) { return s.size() > 2 && s.front() == '{' && s.back() == '}'; }

// The documented route `method path` matches: a {name} stands for any one segment.
bool documented(const std::vector<doc_route>& docs, std::string_view method, std::string_view path) {
  auto want = segments(path);
  for (const auto& d : docs) {
    if (d.method != method) continue;
    auto have = segments(d.path);
    if (have.size() != want.size()) continue;
    bool same = true;
    for (size_t i = 0; i < have.size() && same; ++i)
      same = have[i] == want[i] || placeholder(have[i]) || placeholder(want[i]);
    if (same) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("the API reference documents routes, siblings too") {
  auto docs = documented_routes();
  REQUIRE(docs.size() > 40);
  CHECK(documented(docs, "POST", "/v1/threads/{id}/fork"));
  CHECK(documented(docs, "POST", "/v1/schedules/{id}/resume"));  // `.../pause` · `/resume`
  CHECK_FALSE(documented(docs, "POST", "/v1/threads/{id}/no-such-route"));
  CHECK_FALSE(documented(docs, "PUT", "/v1/threads/{id}"));
}

TEST_CASE("every CLI command's routes are routes of the HTTP API") {
  using namespace skein::tools::cli;
  auto docs = documented_routes();
  std::set<std::string> seen;
  size_t commands = 0;
  for (const noun& n : nouns()) {
    for (const command& cmd : n.commands()) {
      ++commands;
      INFO("skein " << cmd.noun << " " << cmd.verb);
      CHECK(cmd.noun == n.name);
      CHECK(seen.insert(std::string{cmd.noun} + " " + std::string{cmd.verb}).second);
      REQUIRE_FALSE(cmd.routes.empty());
      for (std::string_view text : cmd.routes) {
        INFO(text);
        route r = route::parse(text);
        CHECK(documented(docs, r.method, r.path));
      }
    }
  }
  CHECK(commands >= 38);  // as many as the CLI had before the rows
}

TEST_CASE("every MCP tool names its route, one of the HTTP API, its placeholders its parameters") {
  auto docs = documented_routes();
  for (const auto& t : skein::mcp::tool_specs()) {
    INFO(t.name << ": " << t.route);
    auto space = t.route.find(' ');
    REQUIRE(space != std::string::npos);
    std::string method = t.route.substr(0, space), path = t.route.substr(space + 1);
    CHECK(documented(docs, method, path));
    for (const auto& s : segments(path)) {
      if (!placeholder(s)) continue;
      std::string name = s.substr(1, s.size() - 2);
      bool known = name == "agent" || std::any_of(t.params.begin(), t.params.end(), [&](const auto& p) {
                     return p.name == name && p.required;
                   });
      CHECK(known);
    }
  }
}

TEST_CASE("an MCP tool's request is its route's, filled from its arguments") {
  skein::mcp::http_call call;
  REQUIRE(skein::mcp::tool_request("session_close", R"({"session_id":"s 1","close_type":"quick","summary":"done"})",
                                   "me", &call));
  CHECK(call.method == "POST");
  CHECK(call.target == "/v1/agents/me/sessions/s%201/close");
  CHECK(call.body == R"({"summary":"done"})");
  REQUIRE(skein::mcp::tool_request("read_thread", R"({"thread_id":"t1","limit":5})", "me", &call));
  CHECK(call.method == "GET");
  CHECK(call.target == "/v1/threads/t1/entries?limit=5");
  CHECK(call.body.empty());
  REQUIRE(skein::mcp::tool_request("graph_traverse", R"({"lens":"connected","node":"agent:me"})", "me", &call));
  CHECK(call.target == "/v1/graph/connected_to?node=agent:me");
}

TEST_CASE("a CLI command's path is its route's, filled from its arguments") {
  using namespace skein::tools::cli;
  const command* fork = nullptr;
  const command* remove = nullptr;
  for (const auto& cmd : thread_commands())
    if (cmd.verb == "fork") fork = &cmd;
  for (const auto& cmd : house_commands())
    if (cmd.verb == "remove") remove = &cmd;
  REQUIRE(fork != nullptr);
  REQUIRE(remove != nullptr);
  invocation in{*fork, {}};
  in.a.values["id"] = {"a/b c"};
  in.a.values["at"] = {"3"};
  CHECK(in.method() == "POST");
  CHECK(in.path() == "/v1/threads/a%2Fb%20c/fork");
  CHECK(in.a.number("at") == 3);
  invocation rm{*remove, {}};
  rm.a.values["thread"] = {"h1"};
  rm.a.values["agent"] = {"bot"};
  CHECK(rm.method() == "DELETE");
  CHECK(rm.path() == "/v1/threads/h1/members/bot");
  CHECK(rm.path(0, {{"agent", "other"}}) == "/v1/threads/h1/members/other");
}

TEST_CASE("every argument of a command has a key of its own and a help line") {
  using namespace skein::tools::cli;
  for (const noun& n : nouns())
    for (const command& cmd : n.commands()) {
      std::set<std::string_view> keys;
      for (const arg& a : cmd.args) {
        INFO("skein " << cmd.noun << " " << cmd.verb << " " << a.name);
        CHECK(keys.insert(a.key()).second);
        CHECK_FALSE(a.help.empty());
        CHECK((a.type != arg::kind::option || !a.metavar.empty()));
      }
    }
}
