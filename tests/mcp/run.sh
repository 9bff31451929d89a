#!/usr/bin/env bash
# ctest's wrapper of the SDK conformance test (client_test.mjs): exits 77, which
# ctest counts as skipped, with a one-line hint when node or the test's npm
# packages are missing.
# Usage: tests/mcp/run.sh SKEIN_BINARY
set -u
skein=$1
here=$(cd "$(dirname "$0")" && pwd)
skip() {
  echo "skipped: $*"
  exit 77
}
command -v node >/dev/null || skip "no node: apt-get install nodejs npm, then run \`make mcp-test-deps\`"
node -e 'process.exit(+process.versions.node.split(".")[0] >= 18 ? 0 : 1)' ||
  skip "node $(node --version) is older than 18 (the MCP SDK needs 18)"
[[ -f $here/node_modules/@modelcontextprotocol/sdk/package.json ]] ||
  skip "no tests/mcp/node_modules: run \`make mcp-test-deps\`"
exec node "$here/client_test.mjs" "$skein"
