#!/usr/bin/env bash
# ctest's wrapper of the SDK conformance test (client_test.mjs): exits 77, which
# ctest counts as skipped, with a one-line hint when node or the test's npm
# packages are missing.
# Usage: tests/mcp/run.sh SKEIN_BINARY
set -u
skein=$1
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../support/node_test.sh"
need_node mcp-test-deps "the MCP SDK"
need_package "$here" tests/mcp @modelcontextprotocol/sdk mcp-test-deps
exec node "$here/client_test.mjs" "$skein"
