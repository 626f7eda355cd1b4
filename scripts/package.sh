#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Builds the Debian package rdmastream_VERSION_ARCH.deb (VERSION: project()
# in CMakeLists.txt) from the build tree ${RDMASTREAM_BUILD_DIR:-build},
# with CPack's DEB generator: everything under /usr, the plugin in
# GStreamer's plugin folder, Depends from dpkg-shlibdeps. The tree is
# reused: brought up to date (an incremental build; a first one if there is
# no tree yet), never rebuilt from scratch.
# Usage: scripts/package.sh [--out DIR] [--no-build]
#   --out DIR    where the .deb goes (default: BUILD/package)
#   --no-build   package the tree as it is (tests/package: ctest runs on a built tree)
# Install it with: apt-get install ./BUILD/package/rdmastream_*.deb
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/build-dir.sh
source scripts/build-dir.sh
build=$(rdmastream_build_dir "$PWD")
out=
build_first=1
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=${2:?--out needs a folder}; shift 2 ;;
    --no-build) build_first=0; shift ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; /^# SPDX-/d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "package: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
out=${out:-$build/package}
die() { echo "package: $*" >&2; exit 2; }

for tool in cpack dpkg-deb dpkg-shlibdeps help2man; do
  command -v "$tool" >/dev/null || die "$tool is missing: run scripts/setup.sh (Debian packages cmake, dpkg-dev, help2man)"
done
if [ ! -f "$build/CMakeCache.txt" ]; then
  [ "$build_first" = 1 ] || die "no build tree in $build: build it first (scripts/build.sh)"
  RDMASTREAM_BUILD_DIR=$build bash scripts/build.sh
fi
cached() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"; }
for opt in RDMASTREAM_SANITIZE RDMASTREAM_FUZZ; do
  case $(cached $opt) in ON|TRUE|1) die "$build is a $opt build: package a normal one (scripts/build.sh)" ;; esac
done
for opt in RDMASTREAM_BUILD_CLI RDMASTREAM_BUILD_GST; do
  case $(cached $opt) in OFF|FALSE|0) die "$build has $opt=OFF: the package holds the programs and the plugin" ;; esac
done

# Trees configured before the multiarch default (CMakeLists.txt) install
# the library and plugin under lib/: point them at Debian's folders. Only
# install rules change; nothing is recompiled.
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
reconfigure=()
[ "$(cached CMAKE_INSTALL_LIBDIR)" = "lib/$multiarch" ] || reconfigure+=("-DCMAKE_INSTALL_LIBDIR=lib/$multiarch")
case $(cached HELP2MAN) in ''|*NOTFOUND) reconfigure+=(-UHELP2MAN) ;; esac
if [ ${#reconfigure[@]} -gt 0 ]; then
  echo "package: reconfiguring $build: ${reconfigure[*]}"
  cmake "${reconfigure[@]}" "$build" >/dev/null
  build_first=1
fi
if [ "$build_first" = 1 ]; then
  cmake --build "$build"
fi

version=$(cached CMAKE_PROJECT_VERSION)
arch=$(dpkg --print-architecture)
deb=rdmastream_${version}_${arch}.deb
mkdir -p "$out"
rm -f "$out"/rdmastream_*.deb
# CPack installs the tree into its staging folder (stripped), runs
# dpkg-shlibdeps over the ELF files and writes the .deb.
cpack --config "$build/CPackConfig.cmake" -B "$(realpath "$out")" >"$out/cpack.log" 2>&1 ||
  { cat "$out/cpack.log" >&2; die "cpack failed (its log: $out/cpack.log)"; }
[ -f "$out/$deb" ] || { cat "$out/cpack.log" >&2; die "cpack wrote no $out/$deb"; }
rm -rf "$out/_CPack_Packages"
echo "package: $out/$deb"
