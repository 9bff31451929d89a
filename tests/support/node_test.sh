# Sourced by the wrappers of the node-driven tests (tests/mcp/run.sh,
# tests/ui/run.sh): each check exits 77, which ctest counts as skipped, with a
# one-line hint when what the test needs is missing.

skip() {
  echo "skipped: $*"
  exit 77
}

# need_node MAKE_TARGET WHO: node on PATH, version 18 or later (WHO needs 18);
# MAKE_TARGET installs the test's npm packages.
need_node() {
  command -v node >/dev/null || skip "no node: apt-get install nodejs npm, then run \`make $1\`"
  node -e 'process.exit(+process.versions.node.split(".")[0] >= 18 ? 0 : 1)' ||
    skip "node $(node --version) is older than 18 ($2 needs 18)"
}

# need_package DIR LABEL PACKAGE MAKE_TARGET: DIR/node_modules holds PACKAGE
# (LABEL names DIR in the hint).
need_package() {
  [[ -f $1/node_modules/$3/package.json ]] || skip "no $2/node_modules: run \`make $4\`"
}
