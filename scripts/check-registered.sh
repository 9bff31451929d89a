#!/usr/bin/env bash
# Fails when a Catch2 test executable registered no tests with ctest. Test
# discovery runs each executable to list its tests; one that crashes at start
# (a sanitizer clashing with a load-time resolver, say) lists none, and ctest
# would then pass without running any of them.
# Usage: scripts/check-registered.sh BUILD_DIR [EXECUTABLE...]
# Without executables: every skein_test(...) of tests/CMakeLists.txt.
set -euo pipefail
build=$1
shift
cd "$(dirname "$0")/.."
if (($# == 0)); then
  mapfile -t names < <(sed -n 's/^skein_test(\([a-z_]*\).*/\1/p' tests/CMakeLists.txt)
else
  names=("$@")
fi
for name in "${names[@]}"; do
  if ! (cd "$build" && ctest -N -R "^$name:") | grep -q 'Total Tests: [1-9]'; then
    echo "check-registered: $name registered no tests in $build (did it crash while listing them?)" >&2
    exit 1
  fi
done
