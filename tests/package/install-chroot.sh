#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# install.sh's part inside the overlay root (a chroot, started with an empty
# environment: a fresh shell): apt-get install, what a user runs, apt-get
# purge, and the package's paths all gone.
# Usage (only from install-overlay.sh): install-chroot.sh DEB VERSION
set -euo pipefail
deb=$1 version=$2
export DEBIAN_FRONTEND=noninteractive
fail() { echo "package install: $*" >&2; exit 1; }
plugindir=$(pkg-config --variable=pluginsdir gstreamer-1.0)
paths=$(dpkg-deb --fsys-tarfile "$deb" | tar -t | sed 's|^\./|/|; s|/$||' | grep -v '^$')

apt-get install -y -q "$deb" >/tmp/apt-install.log 2>&1 || { cat /tmp/apt-install.log >&2; fail "apt-get install $deb failed"; }
[ "$(dpkg-query -W -f='${Status}' rdmastream)" = "install ok installed" ] || fail "rdmastream is not installed after apt-get install"
echo "package install: installed $(dpkg-query -W -f='${Package} ${Version}' rdmastream)"

# Each as from a fresh login: no GST_PLUGIN_PATH, no PKG_CONFIG_PATH, nothing.
fresh() { env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"; }
for element in rdmasink rdmasrc; do
  out=$(fresh gst-inspect-1.0 "$element" 2>&1) || fail "gst-inspect-1.0 $element failed: $(head -n 5 <<<"$out")"
  # (/lib is /usr/lib on Debian 12: GStreamer may name either)
  file=$(sed -n 's/^ *Filename *//p' <<<"$out")
  [ "$(realpath "$file")" = "$(realpath "$plugindir/libgstrdma.so")" ] ||
    fail "gst-inspect-1.0 $element: the plugin is $file, not $plugindir/libgstrdma.so"
done
echo "package install: gst-inspect-1.0 rdmasink, rdmasrc: from $plugindir/libgstrdma.so"
for prog in rdmasend rdmarecv; do
  help=$(fresh "$prog" --help) || fail "$prog --help failed"
  grep -q "^Usage: $prog \[OPTIONS\]" <<<"$help" || fail "$prog --help has no usage line: $(head -n 3 <<<"$help")"
  [ "$(fresh "$prog" --version)" = "$prog $version" ] || fail "$prog --version says '$(fresh "$prog" --version)'"
  [ "$(fresh man -w "$prog")" = "/usr/share/man/man1/$prog.1.gz" ] || fail "man -w $prog: '$(fresh man -w "$prog" 2>&1)'"
  page=$(fresh env MANPAGER=cat MANWIDTH=80 man "$prog" 2>&1) || fail "man $prog failed: $page"
  grep -q "^ *$prog - " <<<"$page" || fail "man $prog shows no NAME line: $(head -n 5 <<<"$page")"
done
echo "package install: rdmasend, rdmarecv: --help, --version $version, man pages"
libs=$(fresh pkg-config --libs rdmastream 2>&1) || fail "pkg-config --libs rdmastream: $libs"
grep -q -- '-lrdmastream' <<<"$libs" || fail "pkg-config --libs rdmastream: $libs"
[ "$(fresh pkg-config --modversion rdmastream)" = "$version" ] || fail "pkg-config --modversion rdmastream is not $version"
# The headers and library as a user's program uses them, linked the way
# pkg-config says (the shared library, librdmastream.so.4).
mkdir -p /tmp/user && cd /tmp/user
cat >user.cpp <<'CPP'
#include <rdmastream/allow_list.hpp>
#include <rdmastream/receiver.hpp>
#include <cstdio>
int main(int argc, char**) {
    rdmastream::AllowList allow;
    allow.add("198.18.0.0/24");
    if (argc > 99) { // never: only links the front door (rdma_cm, verbs behind it)
        rdmastream::Door door = rdmastream::Door::listen({"", rdmastream::kDefaultPort}, allow);
        auto rx = rdmastream::Receiver::open(door, {});
    }
    std::printf("%s\n", allow.describe().c_str());
}
CPP
# shellcheck disable=SC2046 # pkg-config's words
fresh g++ -std=c++20 user.cpp -o user $(fresh pkg-config --cflags --libs rdmastream) >/tmp/cxx.log 2>&1 ||
  { cat /tmp/cxx.log >&2; fail "a program does not build against the installed headers and library"; }
[ "$(./user)" = "198.18.0.0/24" ] || fail "the program built against the library printed '$(./user)'"
echo "package install: pkg-config --libs rdmastream: $libs; a program builds and runs against it"
cd /

apt-get purge -y -q rdmastream >/tmp/apt-purge.log 2>&1 || { cat /tmp/apt-purge.log >&2; fail "apt-get purge rdmastream failed"; }
status=$(dpkg-query -W -f='${db:Status-Status}' rdmastream 2>/dev/null || echo not-installed)
[ "$status" = not-installed ] || fail "after apt-get purge, dpkg says rdmastream is '$status'"
left=()
while IFS= read -r path; do
  [ -n "$path" ] || continue
  if [ -d "$path" ] && [ ! -L "$path" ]; then
    # A folder may stay only if another package owns it (/usr/bin, ...).
    dpkg-query -S "$path" >/dev/null 2>&1 || left+=("$path/")
  elif [ -e "$path" ] || [ -L "$path" ]; then
    left+=("$path")
  fi
done <<<"$paths"
compgen -G '/var/lib/dpkg/info/rdmastream.*' >/dev/null && left+=(/var/lib/dpkg/info/rdmastream.*)
[ ${#left[@]} -eq 0 ] || fail "apt-get purge left: ${left[*]}"
if fresh gst-inspect-1.0 rdmasink >/dev/null 2>&1; then fail "gst-inspect-1.0 still finds rdmasink after the purge"; fi
echo "package install: apt-get purge: none of the package's $(wc -l <<<"$paths") paths left, rdmasink gone"
