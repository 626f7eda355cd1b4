#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Checks the .deb scripts/package.sh wrote (the test package.build runs it),
# from its control fields and file list alone: name and version, every file
# under /usr and root's, the programs, the plugin in GStreamer's plugin
# folder, the library, every header and rdmastream.pc with prefix /usr, man
# pages for both programs, the docs, the licence (copyright in Debian's
# format naming LGPL-2.1+, LICENSE as in the source) and a Maintainer that is
# the project's contact, stripped ELF files with no build-tree RUNPATH, and
# Depends / Recommends that pull what the installed tools need.
# Usage: contents.sh PACKAGE_DIR VERSION SOURCE_DIR
set -euo pipefail
dir=$1 version=$2 src=$3
arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
deb=$dir/rdmastream_${version}_${arch}.deb
failures=0
fail() { echo "package contents: $*" >&2; failures=$((failures + 1)); }
[ -f "$deb" ] || { echo "package contents: no $deb (scripts/package.sh writes it)" >&2; exit 1; }
echo "package contents: $deb"

field() { dpkg-deb -f "$deb" "$1"; }
[ "$(field Package)" = rdmastream ] || fail "Package is '$(field Package)', not rdmastream"
[ "$(field Version)" = "$version" ] || fail "Version is '$(field Version)', not $version (project() VERSION)"
[ "$(field Architecture)" = "$arch" ] || fail "Architecture is '$(field Architecture)', not $arch"

# Depends: from dpkg-shlibdeps, one per library the ELF files link.
depends=$(field Depends)
for lib in 'libc6 ' 'libstdc\+\+6 ' 'libibverbs1 ' 'librdmacm1 ' 'libsodium23 ' 'libfmt9 ' \
           'libavcodec59 ' 'libavformat59 ' 'libswscale6 ' 'libgstreamer1.0-0 ' \
           'libgstreamer-plugins-base1.0-0 '; do
  grep -Eq "(^|, )$lib" <<<"$depends" || fail "Depends has no $(tr -d '\\ ' <<<"$lib"): $depends"
done
# Recommends: what `gst-inspect-1.0 rdmasink`, `man rdmasend` and
# `pkg-config --libs rdmastream` (and compiling against the headers) need.
recommends=$(field Recommends)
for pkg in gstreamer1.0-tools man-db pkgconf libibverbs-dev librdmacm-dev libfmt-dev libsodium-dev ibverbs-providers; do
  grep -Eq "(^|, )$pkg( |,|$)" <<<"$recommends" || fail "Recommends has no $pkg: $recommends"
done

listing=$(dpkg-deb -c "$deb")
paths=$(dpkg-deb --fsys-tarfile "$deb" | tar -t | sed 's|^\./|/|; s|/$||' | grep -v '^$' || true)
outside=$(grep -Ev '^/usr(/|$)' <<<"$paths" || true)
[ -z "$outside" ] || fail "files outside /usr: $outside"
not_root=$(awk '$2 != "root/root"' <<<"$listing")
[ -z "$not_root" ] || fail "files not owned by root/root: $not_root"

plugindir=$(pkg-config --variable=pluginsdir gstreamer-1.0)
libdir=/usr/lib/$multiarch
expected=(/usr/bin/rdmasend /usr/bin/rdmarecv "$plugindir/libgstrdma.so"
  "$libdir/librdmastream.so.4" "$libdir/librdmastream.so" "$libdir/pkgconfig/rdmastream.pc"
  /usr/share/man/man1/rdmasend.1.gz /usr/share/man/man1/rdmarecv.1.gz
  /usr/share/doc/rdmastream/README.md /usr/share/doc/rdmastream/copyright /usr/share/doc/rdmastream/LICENSE
  /usr/share/doc/rdmastream/docs/cli.md /usr/share/doc/rdmastream/docs/gstreamer.md)
for h in "$src"/transport/include/rdmastream/*.hpp; do
  expected+=("/usr/include/rdmastream/${h##*/}")
done
for f in "${expected[@]}"; do
  grep -Fxq "$f" <<<"$paths" || fail "no $f in the package"
done
grep -q "^-rwxr-xr-x .* \./usr/bin/rdmasend$" <<<"$listing" || fail "/usr/bin/rdmasend is not mode 755"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
dpkg-deb -x "$deb" "$work"
pc=$work$libdir/pkgconfig/rdmastream.pc
grep -qx 'prefix=/usr' "$pc" || fail "rdmastream.pc's prefix is not /usr: $(grep '^prefix=' "$pc")"
grep -qx "Version: $version" "$pc" || fail "rdmastream.pc's version is not $version"
# The licence: Debian's copyright file (machine-readable format) says
# LGPL-2.1+ for every file and points at the full text Debian ships; LICENSE
# is the source's own copy. Maintainer: the contact the copyright file names.
doc=$work/usr/share/doc/rdmastream
if [ -f "$doc/copyright" ]; then
  head -n 1 "$doc/copyright" | grep -qx 'Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' ||
    fail "copyright is not in Debian's machine-readable format: $(head -n 1 "$doc/copyright")"
  grep -A 2 -x 'Files: \*' "$doc/copyright" | grep -qx 'License: LGPL-2.1+' || fail "copyright's Files: * has no License: LGPL-2.1+"
  grep -Fq '"/usr/share/common-licenses/LGPL-2.1"' "$doc/copyright" ||
    fail "copyright does not point at /usr/share/common-licenses/LGPL-2.1"
  contact=$(sed -n 's/^Upstream-Contact: //p' "$doc/copyright")
  [ "$(field Maintainer)" = "$contact" ] || fail "Maintainer is '$(field Maintainer)', not copyright's Upstream-Contact '$contact'"
fi
case $(field Maintainer) in *@*.invalid\>|'') fail "Maintainer is '$(field Maintainer)': not an address anyone reads" ;; esac
[ ! -f "$doc/LICENSE" ] || cmp -s "$doc/LICENSE" "$src/LICENSE" || fail "/usr/share/doc/rdmastream/LICENSE is not the source's LICENSE"

for prog in rdmasend rdmarecv; do
  page=$work/usr/share/man/man1/$prog.1.gz
  [ -f "$page" ] || continue
  gzip -t "$page" || fail "$prog.1.gz is not gzip"
  # help2man's title line carries the program's --version
  zcat "$page" | grep -Eq "^\.TH ${prog^^} \"1\" .*\"$prog $version\"" ||
    fail "$prog.1's title does not name $prog $version: $(zcat "$page" | grep -m1 '^\.TH')"
  # an option entry of the OPTIONS section, as help2man writes it
  # (repeatable: a second one is path B, and --help marks it so with "...")
  zcat "$page" | grep -Fqx -- '\fB\-\-connect\fR ADDR[:PORT] ...' || fail "$prog.1 has no entry for --connect"
done
for elf in /usr/bin/rdmasend /usr/bin/rdmarecv "$plugindir/libgstrdma.so" "$libdir/librdmastream.so.4"; do
  [ -f "$work$elf" ] || continue
  if readelf -S "$work$elf" 2>/dev/null | grep -q '\.debug_info'; then fail "$elf is not stripped"; fi
  if readelf -d "$work$elf" 2>/dev/null | grep -Eq 'RPATH|RUNPATH'; then fail "$elf has an RPATH/RUNPATH"; fi
done
# The shared library says which ABI it is (transport/CMakeLists.txt's SOVERSION).
soname=$(readelf -d "$work$libdir/librdmastream.so.4" 2>/dev/null | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = librdmastream.so.4 ] || fail "librdmastream.so.4's SONAME is '$soname', not librdmastream.so.4"

if [ "$failures" -gt 0 ]; then
  echo "package contents: $failures problem(s)" >&2
  exit 1
fi
echo "package contents: $(wc -l <<<"$paths") paths under /usr, Depends and Recommends as expected"
