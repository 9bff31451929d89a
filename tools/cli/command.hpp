// command: the skein client CLI as rows. A row (command) is one command: its
// noun and verb, the HTTP routes it calls ("POST /v1/threads/{id}/fork"), its
// arguments and the function that runs it. The parser, its --help and its
// usage errors are built from the rows by app.cpp (CLI11); the requests are
// built from the routes (client::call). Also here: the client a command runs
// with and the response helpers the nouns share. No CLI11 in this header
// (arguments: args.hpp).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/model/json_reader.hpp"
#include "tools/cli/args.hpp"
#include "tools/client/http_client.hpp"

namespace skein::tools::cli {

// The exit codes (every command's; a row's notes say which of them it adds).
enum exit_code : int {
  ok = 0,
  failed = 1,        // a server error, the network, or the command's own failure
  run_failed = 2,    // a run failed; thread diagnose: failed
  stalled = 3,       // thread diagnose: stalled
  not_found = 4,     // HTTP 404
  denied = 5,        // HTTP 401 or 403
  conflict = 6,      // HTTP 409
  unreadable = 7,    // the server answered but the CLI cannot decode the response
  budget = 8,        // HTTP 402: the agent's daily budget is spent
  quota = 9,         // HTTP 429 quota_exceeded: a quota of the database is reached
  usage = 64,        // a usage error (the parser's, or a value the command checks)
};

struct client;
struct invocation;

struct command {
  std::string_view noun;
  std::string_view verb;     // "" for a command of one word (`skein usage`)
  std::vector<std::string_view> routes;  // "METHOD /path/{arg}"; the first is the command's own
  std::string_view summary;  // one line
  std::vector<arg> args;
  int (*run)(client&, const invocation&);
  std::string_view notes = {};  // more for --help: what the exit codes mean for it, ...
};

// A command as the command line gave it.
struct invocation {
  const command& cmd;
  given a;

  // Route i's method.
  std::string_view method(size_t i = 0) const;
  // Route i's path, each {name} the percent-encoded value of `values[name]`,
  // else of the argument `name`.
  std::string path(size_t i = 0, const std::map<std::string, std::string, std::less<>>& values = {}) const;
};

// The nouns, in the order --help lists them; each its own file's table.
struct noun {
  std::string_view name;
  std::string_view summary;
  const std::vector<command>& (*commands)();
};
const std::vector<noun>& nouns();

const std::vector<command>& thread_commands();
const std::vector<command>& entries_commands();
const std::vector<command>& task_commands();
const std::vector<command>& house_commands();
const std::vector<command>& agent_commands();
const std::vector<command>& usage_commands();
const std::vector<command>& memory_commands();
const std::vector<command>& schedule_commands();
const std::vector<command>& cluster_commands();
const std::vector<command>& namespace_commands();

// Responses hold stored values (events, manifests) up to two levels down
// ({"events":[...]}) and many of them: deeper and larger than one stored value.
inline constexpr json_limits response_limits{size_t{256} << 20, json_limits{}.json_depth_max + 4};

// The server a command talks to, and what it does with answers. A response
// the CLI cannot decode is an error with its own exit code (unreadable),
// never an empty success.
struct client {
  http::client http;
  bool json = false;          // --json: machine-readable output
  http::header_list headers;  // Skein-Namespace when --namespace (SKEIN_NAMESPACE) names one
  std::string last_request;   // "GET /v1/threads/x": names the response in errors

  // Sends a request to route `route` of `in`'s command, its path filled (see
  // invocation::path), `query` ("?a=b&c=d" or "") appended. On a failure or an
  // HTTP error prints why and sets *code.
  bool call(const invocation& in, size_t route, const std::string& query, const std::string& body,
            http::response* r, int* code, const std::map<std::string, std::string, std::less<>>& values = {});
  bool call(const std::string& method, const std::string& target, const std::string& body, http::response* r,
            int* code);

  int code_for(int http_status, const std::string& body = "") const;
  // A success the CLI cannot read: says which response and why.
  int unreadable_response(const status& why) const;
  // Prints a JSON body as it came, once it parses.
  int print_json(const http::response& r) const;
};

// "&name=value" (percent-encoded) for each option of `keys` given a value (the
// query name: the key, its dashes as underscores); "" when none was.
std::string query_params(const given& a, std::initializer_list<std::string_view> keys);
std::string q(const std::string& s);  // percent-encoded

// Response readers: the object a body holds (`doc` owns what `out` reads), the
// items of its array `field` (minified), one string or number field.
status open_response(const std::string& body, json::document* doc, json::object_reader* out);
status json_items(const std::string& body, const char* field, std::vector<std::string>* out);
status string_field(const std::string& body, const char* field, bool required, std::string* out);
status uint_field(const std::string& body, const char* field, uint64_t* out);

// A manifest answer: its id (or the body with --json).
int print_manifest_id(client& c, const http::response& r);
// A manifest answer as a labelled block (or the body with --json).
int print_manifest(client& c, const http::response& r);
// A usage error found after parsing: the message on stderr, the usage exit code.
int misuse(const std::string& message);

}  // namespace skein::tools::cli
