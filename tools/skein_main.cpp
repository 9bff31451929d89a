// skein: the command-line entry point.
#include <cstdio>
#include <cstring>
#include <string>

#include "skein/version.hpp"

namespace skein::tools {
int run_demo(int argc, char** argv);
int run_serve(int argc, char** argv);
int run_cli(int argc, char** argv);
int run_mcp(int argc, char** argv);
int run_rekey(int argc, char** argv);

extern const char* cli_usage;
const char* cli_usage =
    "usage: skein <command> [options]\n"
    "\n"
    "  serve [--listen HOST:PORT] [--data DIR] [--durability sync|flush|memory] [--tokens FILE]\n"
    "        [--config FILE] [--demo] [--http-threads N] [--body-bytes-max N] [--port-file FILE] ...\n"
    "      the HTTP API (default 127.0.0.1:7411, ./skein-data, sync); every setting also as\n"
    "      SKEIN_<NAME> in the environment or `name = value` in the config file\n"
    "  demo [--data DIR] [--durability MODE]   one scripted conversation, embedded, no server\n"
    "  mcp --agent ID [--data DIR | --server URL]   an MCP server on stdio: the agent's work\n"
    "      items, sessions, suggestions, graph and threads as tools (skein mcp --help)\n"
    "  rekey --data DIR [--key-file P | --key-env NAME] [--new-key-file P | --new-key-env NAME]\n"
    "      rewrites DIR under a new master key, encrypts a plain one or decrypts one\n"
    "  serve, demo and mcp --data open an encrypted DIR with --key-file P or --key-env NAME\n"
    "\n"
    "  thread create <agent> [--title T] [--name N] [--tag X]... [--parent ID] [--task ID] [--policy P]\n"
    "        [--engine-config JSON] [--member AGENT[:always|:on_mention]]...\n"
    "      --task: the task's one thread (a second create prints the first); --member: a house;\n"
    "      --engine-config: merge-patched onto the agent's engine config for this thread\n"
    "  thread list [--agent A] [--status S] [--tag T] [--parent ID] [--limit N] [--archived]\n"
    "      --archived: only the threads retention archived (they leave the default listing)\n"
    "  thread show|delete|reconcile|diagnose <id>\n"
    "  thread prune\n"
    "  thread export <id> [--output FILE]\n"
    "  thread import <file> [--format auto|skein|opennova|lace|gitmem] [--agent A]\n"
    "  thread fork <id> --at N\n"
    "  schedule create <agent> (--cron EXPR [--zone Z] | --every MS [--anchor MS] | --at MS) --input TEXT\n"
    "        [--role R] [--thread ID] [--title-prefix P] [--tag X]... [--missed skip|run_once] [--id ID]\n"
    "  schedule list [--agent A] [--limit N] [--cursor C]\n"
    "  schedule show|pause|resume|delete <id>\n"
    "  schedule history <id> [--limit N] [--before SEQ]\n"
    "  schedule preview <id> [--n N]\n"
    "  entries create <thread|agent> \"<msg>\" [--wait] [--key IDEMPOTENCY-KEY] [--role R]\n"
    "      an agent id reuses that agent's direct-message thread, or creates it\n"
    "  entries list <id> [--from N] [--follow] [--group chat,model,signal]\n"
    "  entries read <id>        prints the run's text as it streams; exits when the run ends\n"
    "  task show <task id>      the task's dedicated thread\n"
    "  house add <thread> <agent> [--trigger always|on_mention] | house remove <thread> <agent>\n"
    "  agent create <id> [--prompt P] [--engine E] [--engine-config JSON] [--tool T]... [--policy P]\n"
    "  agent list | agent show <id>\n"
    "  usage [--agent A] [--thread T] [--since S] [--until U] [--group-by agent|thread|day]\n"
    "      token and cost totals; S and U: ms since the epoch or RFC 3339 UTC (2026-11-23,\n"
    "      2026-11-23T10:00:00Z), [S, U)\n"
    "  memory search <agent> <query> [-k N]   the agent's messages closest to the query\n"
    "  namespace create <name> [--threads-max N] [--events-per-day-max N] [--storage-bytes-max N]\n"
    "  namespace list | show <name> | quota <name> [--threads-max N]... | delete <name>\n"
    "      tenants: each its own database; the server's admin manages them\n"
    "  cluster show | rebalance\n"
    "      a cluster's members; after every node got a new cluster file (SIGHUP), move the\n"
    "      threads whose owner changes and commit the new members (admin)\n"
    "\n"
    "client options: --server URL (SKEIN_SERVER, default http://127.0.0.1:7411),\n"
    "                --token T (SKEIN_TOKEN), --json (machine-readable output),\n"
    "                --namespace NS (SKEIN_NAMESPACE: the server's admin acts in NS)\n"
    "skein --version prints the version of skein (the library's, MAJOR.MINOR.PATCH)\n"
    "every command answers --help (or -h) with its usage on stdout: skein serve --help,\n"
    "skein thread --help, skein entries list --help, ...\n"
    "\n"
    "exit codes: 0 success; 1 failure (server error, network); 2 a run failed, or diagnose:\n"
    "failed; 3 diagnose: stalled; 4 not found; 5 unauthorized or forbidden; 6 conflict;\n"
    "7 the server answered but the CLI cannot decode the response; 8 the agent's daily\n"
    "budget is spent (HTTP 402); 9 a quota of the database is reached (HTTP 429\n"
    "quota_exceeded); 64 usage error\n";

}  // namespace skein::tools

int main(int argc, char** argv) {
  using namespace skein::tools;
  if (argc < 2) {
    std::fputs(cli_usage, stderr);
    return 64;
  }
  std::string cmd = argv[1];
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    std::fputs(cli_usage, stdout);
    return 0;
  }
  if (cmd == "--version" || cmd == "version") {
    std::printf("skein %s\n", skein::library_version());
    return 0;
  }
  if (cmd == "demo") return run_demo(argc - 2, argv + 2);
  if (cmd == "serve") return run_serve(argc - 2, argv + 2);
  if (cmd == "mcp") return run_mcp(argc - 2, argv + 2);
  if (cmd == "rekey") return run_rekey(argc - 2, argv + 2);
  return run_cli(argc - 1, argv + 1);
}
