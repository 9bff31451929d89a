// The real `skein mcp` binary driven over its stdin: JSON lines in, answer lines
// out, in embedded mode (a temp data dir) and against an in-test skein serve.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "tests/support/server_fixture.hpp"
#include "tests/support/temp_dir.hpp"

extern char** environ;

using namespace skein;
using namespace skein::test;

namespace {

// Runs skein mcp with `args` on `input` (stdin closed after it) and returns its
// stdout lines; the process ends at the end of its input.
std::vector<std::string> run_mcp(const temp_dir& dir, std::vector<std::string> args, const std::string& input,
                                 int* exit_code) {
  std::string in_path = (dir.path() / "in.jsonl").string(), out_path = (dir.path() / "out.jsonl").string();
  std::ofstream{in_path} << input;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, in_path.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::string err_path = (dir.path() / "err.txt").string();
  posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  args.insert(args.begin(), {SKEIN_BINARY, "mcp"});
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  REQUIRE(posix_spawn(&pid, SKEIN_BINARY, &fa, nullptr, argv.data(), environ) == 0);
  posix_spawn_file_actions_destroy(&fa);
  int st = 0;
  REQUIRE(::waitpid(pid, &st, 0) == pid);
  *exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  std::ifstream out{out_path};
  std::vector<std::string> lines;
  for (std::string l; std::getline(out, l);) lines.push_back(l);
  return lines;
}

std::string call(int id, const std::string& tool, const std::string& args) {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":"tools/call","params":{"name":")" + tool +
         R"(","arguments":)" + args + "}}\n";
}

const std::string opening =
    R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})"
    "\n"
    R"({"jsonrpc":"2.0","method":"notifications/initialized"})"
    "\n";

bool ok(const std::string& line) { return line.find(R"("isError":false)") != std::string::npos; }
bool tool_error(const std::string& line) { return line.find(R"("isError":true)") != std::string::npos; }

// The "id" of the item in a create_thread answer's text.
std::string item_id(const std::string& line) {
  const std::string marker = R"(\"item\":{\"id\":\")";
  auto p = line.find(marker);
  if (p == std::string::npos) return "";
  p += marker.size();
  return line.substr(p, line.find('\\', p) - p);
}

}  // namespace

TEST_CASE("skein mcp, embedded: every tool with good and bad arguments, and the server answers after each error") {
  temp_dir dir;
  std::string data = (dir.path() / "data").string();
  std::string input = opening + R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})" "\n" +
                      call(2, "session_start", R"({"session_id":"s1"})") +
                      call(3, "create_thread", R"({"text":"fix the broken deploy","session_id":"s1"})") +
                      call(4, "create_thread", R"({"text":""})") +
                      call(5, "create_thread", R"({"text":"fix the broken deploy"})") +
                      call(6, "list_threads", R"({"limit":10})") + call(7, "list_threads", R"({"limit":"ten"})") +
                      call(8, "graph_traverse", R"({"lens":"stats"})") +
                      call(9, "graph_traverse", R"({"lens":"sideways"})") +
                      call(10, "cleanup_threads", "{}") + call(11, "resolve_thread", R"({"text":"deploy","note":"done"})") +
                      call(12, "resolve_thread", R"({"text":"no such item"})") +
                      call(13, "promote_suggestion", R"({"suggestion_id":"nope"})") +
                      call(14, "dismiss_suggestion", "{}") +
                      call(15, "session_close", R"({"session_id":"s1","summary":"ok","open_items":["write docs"]})") +
                      call(16, "session_close", R"({"session_id":"s1","open_items":[""]})") +
                      call(17, "send_entry", R"({"thread_id":"missing","text":"hi"})") +
                      call(18, "read_thread", R"({"thread_id":"missing"})") +
                      R"({"jsonrpc":"2.0","id":19,"method":"ping"})" "\n";
  int code = -1;
  auto lines = run_mcp(dir, {"--data", data, "--durability", "flush", "--agent", "a"}, input, &code);
  CHECK(code == 0);
  REQUIRE(lines.size() == 20);  // every request answered, the notification not
  for (size_t i = 0; i < lines.size(); ++i) CHECK(lines[i].find(R"("id":)" + std::to_string(i)) != std::string::npos);
  CHECK(lines[0].find(R"("protocolVersion":"2025-11-25")") != std::string::npos);
  CHECK(lines[1].find(R"("inputSchema")") != std::string::npos);
  CHECK(ok(lines[2]));
  CHECK(ok(lines[3]));
  std::string id = item_id(lines[3]);
  CHECK(!id.empty());
  CHECK(tool_error(lines[4]));
  CHECK(lines[4].find("arguments.text") != std::string::npos);
  CHECK(ok(lines[5]));
  CHECK(lines[5].find(R"(\"deduplicated\":true)") != std::string::npos);
  CHECK(item_id(lines[5]) == id);
  CHECK(ok(lines[6]));
  CHECK(lines[6].find(id) != std::string::npos);
  CHECK(tool_error(lines[7]));
  CHECK(lines[7].find("arguments.limit") != std::string::npos);
  CHECK(ok(lines[8]));
  CHECK(tool_error(lines[9]));
  CHECK(lines[9].find("arguments.lens") != std::string::npos);
  CHECK(ok(lines[10]));
  CHECK(ok(lines[11]));
  CHECK(lines[11].find(R"(\"status\":\"resolved\")") != std::string::npos);
  CHECK(tool_error(lines[12]));
  CHECK(tool_error(lines[13]));
  CHECK(lines[13].find("not_found") != std::string::npos);
  CHECK(tool_error(lines[14]));
  CHECK(lines[14].find("arguments.suggestion_id: required") != std::string::npos);
  CHECK(ok(lines[15]));
  CHECK(tool_error(lines[16]));
  CHECK(lines[16].find("arguments.open_items[0]") != std::string::npos);
  CHECK(tool_error(lines[17]));
  CHECK(tool_error(lines[18]));
  CHECK(lines.back() == R"({"jsonrpc":"2.0","id":19,"result":{}})");

  // A conversation on the item's thread, in a second process on the same data.
  input = opening + call(1, "send_entry", R"({"thread_id":")" + id + R"(","text":"hello","wait":true})") +
          call(2, "read_thread", R"({"thread_id":")" + id + R"(","from_seq":1,"limit":100})");
  lines = run_mcp(dir, {"--data", data, "--durability", "flush", "--agent", "a"}, input, &code);
  REQUIRE(lines.size() == 3);
  CHECK(ok(lines[1]));
  CHECK(ok(lines[2]));
  CHECK(lines[2].find("hello") != std::string::npos);

  // Topics of three sessions become suggestions; session_start carries them.
  std::string topics = R"(,"topics":["migrate billing to postgres","tune the flaky tests"]})";
  input = opening + call(1, "session_close", R"({"session_id":"s2")" + topics) +
          call(2, "session_close", R"({"session_id":"s3")" + topics) +
          call(3, "session_close", R"({"session_id":"s4")" + topics) + call(4, "session_start", "{}");
  lines = run_mcp(dir, {"--data", data, "--durability", "flush", "--agent", "a"}, input, &code);
  REQUIRE(lines.size() == 5);
  // The ids in one array of the answer: skein's `suggestions`, then the seed's `suggested_threads`.
  auto ids_in = [&](const std::string& key, const std::string& next) {
    std::vector<std::string> ids;
    const std::string marker = R"({\"id\":\")";
    size_t end = lines[4].find(R"(\")" + next + R"(\":)");
    for (size_t p = lines[4].find(R"(\")" + key + R"(\":[)"); (p = lines[4].find(marker, p)) < end; p += marker.size())
      ids.push_back(lines[4].substr(p + marker.size(), lines[4].find('\\', p + marker.size()) - p - marker.size()));
    return ids;
  };
  std::vector<std::string> suggestions = ids_in("suggestions", "suggested_threads");
  REQUIRE(suggestions.size() == 2);
  CHECK(ids_in("suggested_threads", "sweep") == suggestions);
  input = opening + call(1, "promote_suggestion", R"({"suggestion_id":")" + suggestions[0] + R"("})") +
          call(2, "dismiss_suggestion", R"({"suggestion_id":")" + suggestions[1] + R"("})");
  lines = run_mcp(dir, {"--data", data, "--durability", "flush", "--agent", "a"}, input, &code);
  REQUIRE(lines.size() == 3);
  CHECK(ok(lines[1]));
  CHECK(!item_id(lines[1]).empty());
  CHECK(ok(lines[2]));
  CHECK(lines[2].find(R"(\"status\":\"dismissed\")") != std::string::npos);
}

TEST_CASE("skein mcp --server: the same tools through skein serve with a scoped token") {
  const std::string admin = "admin-token-0123456789", alpha = "alpha-token-0123456789";
  server_fixture f{{}, {}, admin + " admin\n" + alpha + " alpha\n"};
  f.agent("alpha", R"({"default":{"reply":"ok"}})", admin);
  f.agent("beta", R"({"default":{"reply":"ok"}})", admin);
  std::string url = "http://127.0.0.1:" + std::to_string(f.srv->port());
  temp_dir dir;
  std::string input = opening + call(1, "create_thread", R"({"text":"write the release notes"})") +
                      call(2, "list_threads", "{}") +
                      call(3, "graph_traverse", R"({"lens":"produced_by","agent":"beta"})");
  int code = -1;
  auto lines = run_mcp(dir, {"--server", url, "--token", alpha, "--agent", "alpha"}, input, &code);
  CHECK(code == 0);
  REQUIRE(lines.size() == 4);
  CHECK(ok(lines[1]));
  CHECK(ok(lines[2]));
  CHECK(lines[2].find("write the release notes") != std::string::npos);
  CHECK(tool_error(lines[3]));  // another agent's graph: as a missing agent
  CHECK(lines[3].find("not_found") != std::string::npos);
  // A wrong token: every tool call is a tool error, never a dead server.
  lines = run_mcp(dir, {"--server", url, "--token", "wrong-token-0123456789", "--agent", "alpha"},
                  opening + call(1, "list_threads", "{}") + call(2, "list_threads", "{}"), &code);
  REQUIRE(lines.size() == 3);
  CHECK(tool_error(lines[1]));
  CHECK(lines[1].find("unauthorized") != std::string::npos);
  CHECK(tool_error(lines[2]));
}

TEST_CASE("skein mcp: --help on stdout, and no agent is a usage error before any protocol") {
  temp_dir dir;
  int code = -1;
  auto lines = run_mcp(dir, {"--help"}, "", &code);
  CHECK(code == 0);
  REQUIRE(!lines.empty());
  CHECK(lines[0].rfind("usage: skein mcp", 0) == 0);
  ::unsetenv("SKEIN_AGENT");
  lines = run_mcp(dir, {"--data", (dir.path() / "data").string()}, opening, &code);
  CHECK(code == 64);
  CHECK(lines.empty());  // the usage goes to stderr
  std::ifstream err{(dir.path() / "err.txt").string()};
  std::string first;
  std::getline(err, first);
  CHECK(first == "skein mcp: --agent (or SKEIN_AGENT) is required");
}
