#!/usr/bin/env bash
# Builds CAF 0.17.6 — Debian's own source package, the version libcaf-dev ships —
# with ThreadSanitizer, for `make test-tsan`. Debian's libcaf_core.so is not
# instrumented, so TSan cannot see the atomics of CAF's mailboxes and reports
# every message handed from one actor to another as a race.
#
# Cached outside the clone (CI starts from a fresh one; about 10 minutes on 2
# cores to build): under <cache dir>/<key>/, where the key names the CAF version,
# the compiler (its --version line, with Debian's package revision) and a hash of
# them and the flags below. Another compiler, a compiler upgrade or other flags
# give another key, so a build made by something else is never linked. A build
# is used only once it finished (the stamp `key` is written last); runs sharing
# the cache wait for each other (flock).
#
# Usage: CXX=g++ scripts/caf-tsan.sh <cache dir>
# Prints the install prefix (include/, lib/) on stdout; progress goes to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
caf_version=0.17.6
cxx=${CXX:-g++}
flags="-fsanitize=thread -O1 -g -include limits"  # limits: upstream 0.17.6 misses it for g++ 12 (Debian patches it)
root=${1:?usage: scripts/caf-tsan.sh <cache dir>}
root=$(realpath -m "$root")
compiler=$("$cxx" --version | head -1)
key_text="actor-framework $caf_version
compiler $compiler ($("$cxx" -dumpmachine))
flags $flags"
version=$("$cxx" -dumpfullversion 2>/dev/null) || version=$("$cxx" -dumpversion)  # clang has only the latter
key="$(basename "$cxx")-$version-$(printf '%s' "$key_text" | sha256sum | cut -c1-12)"
prefix="$root/$key"
say() { echo "caf-tsan: $*" >&2; }

if ! mkdir -p "$root" 2>/dev/null || [[ ! -w "$root" ]]; then
  say "cannot write the cache $root: give another (make test-tsan CAF_TSAN_CACHE=\$HOME/.cache/skein/caf-tsan-$caf_version)"
  exit 1
fi
exec 9>"$root/.lock"
flock 9
if [[ -f "$prefix/key" ]] && [[ "$(cat "$prefix/key")" == "$key_text" ]]; then
  echo "$prefix"
  exit 0
fi
say "building CAF $caf_version with TSan into $prefix (not cached for $compiler)"
rm -rf "$prefix" "$prefix.work"
work="$prefix.work"
mkdir -p "$work/apt/lists/partial" "$work/src"

# Debian's source index, through a private apt configuration: the machine's own
# sources stay as they are. The archive is the one the machine installs from.
uri=$(grep -hoE '^URIs: *http[^ ]*debian/?$' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -1 | sed 's/^URIs: *//')
[[ -n "$uri" ]] || uri=http://deb.debian.org/debian
cat >"$work/apt/src.sources" <<SOURCES
Types: deb-src
URIs: $uri
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
APT=(apt-get -q -o Dir::Etc::SourceParts="$work/apt" -o Dir::Etc::SourceList=/dev/null
     -o Dir::State::Lists="$work/apt/lists" -o APT::Sandbox::User=root)
say "fetching Debian's actor-framework $caf_version source"
"${APT[@]}" update >/dev/null
# Only the upstream tarball is needed; the .dsc says what it must hash to.
(cd "$work/src" && "${APT[@]}" source --download-only actor-framework >/dev/null 2>&1 || true)
dsc=$(ls "$work"/src/actor-framework_"$caf_version"-*.dsc 2>/dev/null | head -1)
tarball="$work/src/actor-framework_$caf_version.orig.tar.gz"
[[ -n "$dsc" && -f "$tarball" ]] || { say "could not download the source package" ; exit 1; }
want=$(awk '/^Checksums-Sha256:/{f=1;next} /^[^ ]/{f=0} f && $3 ~ /orig.tar.gz$/ {print $1}' "$dsc")
got=$(sha256sum "$tarball" | cut -d' ' -f1)
[[ -n "$want" && "$want" == "$got" ]] || { say "$tarball does not match its .dsc"; exit 1; }
tar -xzf "$tarball" -C "$work/src"

say "building CAF core, io and openssl with -fsanitize=thread"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$work/src/actor-framework-$caf_version" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_CXX_FLAGS="$flags" "${launcher[@]}" \
  -DCAF_NO_EXAMPLES=yes -DCAF_NO_UNIT_TESTS=yes -DCAF_NO_OPENCL=yes \
  -DCAF_NO_PYTHON=yes -DCAF_NO_TOOLS=yes -DCAF_NO_SUMMARY=yes -DCMAKE_INSTALL_PREFIX="$prefix" >/dev/null
cmake --build "$work/build" -j "${JOBS:-2}" >/dev/null
cmake --install "$work/build" >/dev/null
for lib in core io openssl; do
  [[ -f "$prefix/lib/libcaf_$lib.so" ]] || { say "the build installed no libcaf_$lib.so"; exit 1; }
done
rm -rf "$work"
printf '%s' "$key_text" >"$prefix/key"
say "done"
echo "$prefix"
