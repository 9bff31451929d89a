#!/usr/bin/env bash
# ctest's wrapper of the browser test (viewer_test.mjs): exits 77, which ctest
# counts as skipped, with a one-line hint when node, the test's npm packages or
# chromium are missing.
# Usage: tests/ui/run.sh SKEIN_BINARY OUTPUT_DIR
set -u
skein=$1
out=$2
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../support/node_test.sh"
need_node ui-test-deps "the playwright-core that package.json pins"
need_package "$here" tests/ui playwright-core ui-test-deps
chromium=${SKEIN_CHROMIUM:-/usr/bin/chromium}
[[ -x $chromium ]] || skip "no chromium at $chromium: apt-get install chromium"
mkdir -p "$out"
SKEIN_CHROMIUM=$chromium exec node "$here/viewer_test.mjs" "$skein" "$out"
