#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# samples.build: installs this build tree into BUILD/samples/prefix (as a
# user's `cmake --install` would), checks that the installed headers are the
# public API only (no rdma-core header named in any of them), and builds
# samples/cpp against that install through pkg-config alone, into
# BUILD/samples/build (under the build tree: the bed's guests see it).
# usage: build-samples.sh SOURCE BUILD
set -euo pipefail
src=$1 build=$2
root=$build/samples
rm -rf "$root"
mkdir -p "$root"
fail() { echo "samples.build: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$root/prefix" >"$root/install.log" 2>&1 ||
  fail "cmake --install failed: $(tail -5 "$root/install.log")"
pc=$(find "$root/prefix" -name rdmastream.pc | head -1)
[ -n "$pc" ] || fail "the install has no rdmastream.pc"
export PKG_CONFIG_PATH=${pc%/*}
inc=$(pkg-config --variable=includedir rdmastream)/rdmastream
[ -d "$inc" ] || fail "pkg-config's includedir has no rdmastream/: $inc"
if hits=$(grep -rln "infiniband\|rdma_cma\|rdma/" "$inc"); then
  fail "installed headers name rdma-core (the public API must not): $hits"
fi
echo "samples.build: public headers ($(ls "$inc" | wc -l)): $(cd "$inc" && echo *.hpp)"
cmake -S "$src/samples/cpp" -B "$root/build" -DCMAKE_BUILD_TYPE=Release >"$root/configure.log" 2>&1 ||
  fail "configuring samples/cpp failed: $(tail -5 "$root/configure.log")"
cmake --build "$root/build" -j2 >"$root/build.log" 2>&1 || fail "building samples/cpp failed: $(grep -m5 error "$root/build.log")"
for s in send_frames receive_frames; do
  libs=$(ldd "$root/build/$s") # whole, then matched: grep -q in a pipe could cut ldd short (SIGPIPE, pipefail)
  grep -q "librdmastream.so.[0-9]* => $root/prefix" <<<"$libs" ||
    fail "$s is not linked against the installed librdmastream: $(grep rdmastream <<<"$libs")"
done
echo "samples.build: ok"
