#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The README's by-hand install, into throw-away folders (DESTDIR): with
# --prefix /usr the plugin lands in GStreamer's own plugin folder; with
# --prefix /usr/local the install says exactly what to set, and with that
# set gst-inspect-1.0 finds the elements. rdmastream.pc names the prefix
# given at install time in both.
# Usage: by-hand.sh BUILD_DIR VERSION
set -euo pipefail
build=$1 version=$2
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
plugindir=$(pkg-config --variable=pluginsdir gstreamer-1.0)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "by-hand install: $*" >&2; exit 1; }

# --prefix /usr: where GStreamer looks, nothing to set, no note.
out=$(DESTDIR=$work/usr cmake --install "$build" --prefix /usr 2>&1) || { echo "$out" >&2; fail "cmake --install --prefix /usr failed"; }
[ -f "$work/usr$plugindir/libgstrdma.so" ] || fail "--prefix /usr: no plugin in $plugindir: $(grep libgstrdma <<<"$out")"
if grep -q GST_PLUGIN_PATH <<<"$out"; then fail "--prefix /usr: the install asks for GST_PLUGIN_PATH: $out"; fi
grep -qx 'prefix=/usr' "$work/usr/usr/lib/$multiarch/pkgconfig/rdmastream.pc" || fail "--prefix /usr: rdmastream.pc's prefix is not /usr"
grep -qx "Version: $version" "$work/usr/usr/lib/$multiarch/pkgconfig/rdmastream.pc" || fail "rdmastream.pc's version is not $version"
echo "by-hand install: --prefix /usr puts the plugin in $plugindir"

# --prefix /usr/local: the install names the variable and its value.
local_dir=/usr/local/lib/$multiarch/gstreamer-1.0
out=$(DESTDIR=$work/local cmake --install "$build" --prefix /usr/local 2>&1) || { echo "$out" >&2; fail "cmake --install --prefix /usr/local failed"; }
[ -f "$work/local$local_dir/libgstrdma.so" ] || fail "--prefix /usr/local: no plugin in $local_dir"
grep -q "export GST_PLUGIN_PATH=$local_dir\$" <<<"$out" || fail "--prefix /usr/local: the install does not say 'export GST_PLUGIN_PATH=$local_dir': $out"
grep -qx 'prefix=/usr/local' "$work/local/usr/local/lib/$multiarch/pkgconfig/rdmastream.pc" || fail "--prefix /usr/local: rdmastream.pc's prefix is not /usr/local"
# What the note says to set is enough (the folder under DESTDIR here), and
# without it GStreamer does not find the elements.
registry=$work/registry.bin
if env -u GST_PLUGIN_PATH -u GST_PLUGIN_PATH_1_0 GST_REGISTRY="$registry" gst-inspect-1.0 rdmasink >/dev/null 2>&1 &&
   [ ! -f "$plugindir/libgstrdma.so" ]; then
  fail "gst-inspect-1.0 finds rdmasink without GST_PLUGIN_PATH: then the note is wrong"
fi
info=$(GST_PLUGIN_PATH="$work/local$local_dir" GST_REGISTRY="$registry" gst-inspect-1.0 rdmasink 2>&1) ||
  fail "--prefix /usr/local: with GST_PLUGIN_PATH set as the install says, gst-inspect-1.0 rdmasink fails: $(head -n 3 <<<"$info")"
grep -q "Filename *$work/local$local_dir/libgstrdma.so" <<<"$info" || fail "gst-inspect-1.0 rdmasink: not the plugin just installed"
echo "by-hand install: --prefix /usr/local says 'export GST_PLUGIN_PATH=$local_dir', and with it gst-inspect-1.0 rdmasink works"
