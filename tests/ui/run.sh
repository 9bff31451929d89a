#!/usr/bin/env bash
# ctest's wrapper of the browser test (viewer_test.mjs): exits 77, which ctest
# counts as skipped, with a one-line hint when node, the test's npm packages or
# chromium are missing.
# Usage: tests/ui/run.sh SKEIN_BINARY OUTPUT_DIR
set -u
skein=$1
out=$2
here=$(cd "$(dirname "$0")" && pwd)
skip() {
  echo "skipped: $*"
  exit 77
}
command -v node >/dev/null || skip "no node: apt-get install nodejs npm, then run \`make ui-test-deps\`"
node -e 'process.exit(+process.versions.node.split(".")[0] >= 18 ? 0 : 1)' ||
  skip "node $(node --version) is older than 18 (the playwright-core that package.json pins needs 18)"
[[ -f $here/node_modules/playwright-core/package.json ]] || skip "no tests/ui/node_modules: run \`make ui-test-deps\`"
chromium=${SKEIN_CHROMIUM:-/usr/bin/chromium}
[[ -x $chromium ]] || skip "no chromium at $chromium: apt-get install chromium"
mkdir -p "$out"
SKEIN_CHROMIUM=$chromium exec node "$here/viewer_test.mjs" "$skein" "$out"
