#!/usr/bin/env bash
# skein as an installed library: `cmake --install` into a temporary prefix, then
# a host outside the tree (examples/embed) built against it twice — through
# find_package(skein) and through pkg-config — and run. Also checks what the
# package promises: the public headers include no CAF, RocksDB, Beast or simdjson
# header; libskein exports skein's symbols only, each versioned SKEIN_<version>;
# `skein --version` prints the version.
#
# usage: install_test.sh BUILD_DIR SOURCE_DIR CXX "CXX_FLAGS" VERSION SKEIN_BINARY
set -euo pipefail
build=$1 src=$2 cxx=$3 flags=$4 version=$5 skein=$6

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "install test: $*" >&2; exit 1; }

prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" --component skein >"$work/install.log" ||
  { cat "$work/install.log"; fail "cmake --install failed"; }

# The public headers: present, and free of dependency headers, both by their
# text and by what a compiler actually opens for <skein/skein.hpp>.
[ -f "$prefix/include/skein/skein.hpp" ] || fail "include/skein/skein.hpp not installed"
[ -f "$prefix/include/skein/runtime/runtime.hpp" ] || fail "include/skein/runtime/runtime.hpp not installed"
if grep -rEn '#[[:space:]]*include[[:space:]]*[<"](caf|rocksdb|boost|simdjson)' "$prefix/include"; then
  fail "a public header includes a dependency's header (above)"
fi
echo '#include <skein/skein.hpp>' >"$work/probe.cpp"
$cxx -std=c++20 -fsyntax-only -H -I"$prefix/include/skein" -I"$prefix/include" "$work/probe.cpp" \
  2>"$work/opened.txt" || { cat "$work/opened.txt"; fail "<skein/skein.hpp> does not compile alone"; }
if grep -E '/(caf|rocksdb|boost|simdjson)[/.]' "$work/opened.txt"; then
  fail "<skein/skein.hpp> opens a dependency's header (above)"
fi
# The system's: libstdc++ and libc, and the compiler's own (g++'s, or clang's
# resource directory; clang names libstdc++'s through /usr/bin/../lib/gcc).
if grep -vE '^\.+ (/usr/include/c\+\+/|/usr/include/|/usr/lib/gcc/|/usr/bin/\.\./lib/gcc/|/usr/lib/llvm-[0-9]+/lib/clang/|'"$prefix"'/include/)' "$work/opened.txt" |
   grep -E '^\.+ '; then
  fail "<skein/skein.hpp> opens a header from outside the prefix and the system (above)"
fi

# The library: a real SONAME, and only skein's symbols exported, all versioned.
lib=$(find "$prefix" -name "libskein.so.$version")
[ -n "$lib" ] || fail "libskein.so.$version not installed"
soname=$(readelf -dW "$lib" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[ "$soname" = "libskein.so.${version%.*}" ] || fail "SONAME is '$soname', expected libskein.so.${version%.*}"
readelf --dyn-syms -W "$lib" | awk 'NR > 3 && $7 != "UND" && $8 != "" { print $8 }' >"$work/defined.txt"
[ -s "$work/defined.txt" ] || fail "libskein defines no dynamic symbol"
if grep -v "@@SKEIN_$version\$" "$work/defined.txt" | grep -vx "SKEIN_$version"; then
  fail "exported symbols without the version SKEIN_$version (above)"
fi
sed 's/@@.*//' "$work/defined.txt" | c++filt >"$work/demangled.txt"
grep -q '^skein::runtime::open(' "$work/demangled.txt" || fail "skein::runtime::open is not exported"
own='^(skein::|(typeinfo|typeinfo name|vtable|VTT|guard variable) for skein::|(non-)?virtual thunk to skein::)'
if grep -vE "$own" "$work/demangled.txt" | grep -vx "SKEIN_$version"; then
  fail "libskein exports symbols that are not skein's (above)"
fi

# The host through find_package(skein).
cmake -S "$src/examples/embed" -B "$work/embed" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_BUILD_TYPE=Release >"$work/embed.log" 2>&1 ||
  { cat "$work/embed.log"; fail "configuring examples/embed against the prefix failed"; }
cmake --build "$work/embed" >>"$work/embed.log" 2>&1 ||
  { cat "$work/embed.log"; fail "building examples/embed against the prefix failed"; }
out=$("$work/embed/embed-skein" "$work/data1")
echo "$out"
grep -q "^skein $version: thread .* run .* completed, [0-9]* events" <<<"$out" ||
  fail "embed-skein (find_package) did not complete its run"
grep -q "^assistant: The host says it is tea time.\$" <<<"$out" || fail "embed-skein gave the wrong answer"
# Its data outlives it: a second open of the same directory reads it back.
"$work/embed/embed-skein" "$work/data1" >/dev/null || fail "embed-skein failed on its own data dir"

# The host through pkg-config.
export PKG_CONFIG_PATH=$(dirname "$(find "$prefix" -name skein.pc)")
[ "$(pkg-config --modversion skein)" = "$version" ] || fail "pkg-config --modversion skein is not $version"
# shellcheck disable=SC2046,SC2086
$cxx $flags $(pkg-config --cflags skein) "$src/examples/embed/main.cpp" -o "$work/embed-pc" \
  $(pkg-config --libs skein) -Wl,-rpath,"$(pkg-config --variable=libdir skein)" 2>"$work/pc.log" ||
  { cat "$work/pc.log"; fail "building examples/embed with pkg-config failed"; }
"$work/embed-pc" "$work/data2" | grep -q "^assistant: The host says it is tea time.\$" ||
  fail "embed-skein (pkg-config) did not complete its run"

# The command line names the same version.
[ "$("$skein" --version)" = "skein $version" ] || fail "skein --version does not print 'skein $version'"
echo "install test: ok"
