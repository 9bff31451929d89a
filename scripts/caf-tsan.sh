#!/usr/bin/env bash
# Builds CAF 0.17.6 — Debian's own source package, the version libcaf-dev ships —
# with ThreadSanitizer, for `make test-tsan`. Debian's libcaf_core.so is not
# instrumented, so TSan cannot see the atomics of CAF's mailboxes and reports
# every message handed from one actor to another as a race. Built once into
# build-caf-tsan/ (about 12 minutes on 2 cores); later runs reuse it.
# Usage: scripts/caf-tsan.sh <output dir>; prints nothing when already built.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=$(realpath -m "${1:-build-caf-tsan}")
[[ -f "$OUT/inst/lib/libcaf_core.so" && -f "$OUT/inst/lib/libcaf_io.so" && -f "$OUT/inst/lib/libcaf_openssl.so" ]] && exit 0
mkdir -p "$OUT/apt/lists/partial" "$OUT/src"

# Debian's source index, through a private apt configuration: the machine's own
# sources stay as they are. The archive is the one the machine installs from.
uri=$(grep -hoE '^URIs: *http[^ ]*debian/?$' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -1 | sed 's/^URIs: *//')
[[ -n "$uri" ]] || uri=http://deb.debian.org/debian
cat >"$OUT/apt/src.sources" <<SOURCES
Types: deb-src
URIs: $uri
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
APT=(apt-get -q -o Dir::Etc::SourceParts="$OUT/apt" -o Dir::Etc::SourceList=/dev/null
     -o Dir::State::Lists="$OUT/apt/lists" -o APT::Sandbox::User=root)
echo "caf-tsan: fetching Debian's actor-framework 0.17.6 source"
"${APT[@]}" update >/dev/null
# Only the upstream tarball is needed; the .dsc says what it must hash to.
(cd "$OUT/src" && "${APT[@]}" source --download-only actor-framework >/dev/null 2>&1 || true)
dsc=$(ls "$OUT"/src/actor-framework_0.17.6-*.dsc 2>/dev/null | head -1)
tarball="$OUT/src/actor-framework_0.17.6.orig.tar.gz"
[[ -n "$dsc" && -f "$tarball" ]] || { echo "caf-tsan: could not download the source package" >&2; exit 1; }
want=$(awk '/^Checksums-Sha256:/{f=1;next} /^[^ ]/{f=0} f && $3 ~ /orig.tar.gz$/ {print $1}' "$dsc")
got=$(sha256sum "$tarball" | cut -d' ' -f1)
[[ -n "$want" && "$want" == "$got" ]] || { echo "caf-tsan: $tarball does not match its .dsc" >&2; exit 1; }
rm -rf "$OUT/src/actor-framework-0.17.6" && tar -xzf "$tarball" -C "$OUT/src"

# -include limits: upstream 0.17.6 misses that include for g++ 12 (Debian patches it).
echo "caf-tsan: building CAF core, io and openssl with -fsanitize=thread"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$OUT/src/actor-framework-0.17.6" -B "$OUT/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS="-fsanitize=thread -O1 -g -include limits" "${launcher[@]}" \
  -DCAF_NO_EXAMPLES=yes -DCAF_NO_UNIT_TESTS=yes -DCAF_NO_OPENCL=yes \
  -DCAF_NO_PYTHON=yes -DCAF_NO_TOOLS=yes -DCAF_NO_SUMMARY=yes -DCMAKE_INSTALL_PREFIX="$OUT/inst" >/dev/null
cmake --build "$OUT/build" -j "${JOBS:-2}" >/dev/null
cmake --install "$OUT/build" >/dev/null
echo "caf-tsan: done"
