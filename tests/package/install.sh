#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Installs the .deb as a user would (apt-get install ./rdmastream_*.deb),
# runs from a fresh shell with no environment what a user runs first
# (gst-inspect-1.0 rdmasink, rdmasend --help, man rdmasend, pkg-config
# --libs rdmastream, a program built against the headers and library),
# purges it and checks nothing of it is left: in a throw-away view of this
# machine's root, never on the machine itself. An overlay on / (its writes
# in a tmpfs) in a private mount namespace, entered with chroot: apt, dpkg
# and the package's files only ever touch that tmpfs, which vanishes with
# the namespace, so this machine's /usr and dpkg database stay as they are
# whatever happens. Needs root (mount namespaces); exits 77 (skipped)
# without. The real apt and dpkg run; dependencies missing here would be
# fetched into the overlay, like on a fresh machine.
# Usage: install.sh PACKAGE_DIR VERSION
set -euo pipefail
dir=$(realpath "$1") version=$2
here=$(cd "$(dirname "$0")" && pwd)
deb=$dir/rdmastream_${version}_$(dpkg --print-architecture).deb
[ -f "$deb" ] || { echo "package install: no $deb (scripts/package.sh writes it)" >&2; exit 1; }
if [ "$(id -u)" -ne 0 ]; then
  echo "package install: skipped: needs root for a private mount namespace (the overlay root)"
  exit 77
fi
if ! unshare --mount --propagation private true 2>/dev/null; then
  echo "package install: skipped: cannot make a mount namespace here (unshare --mount failed)"
  exit 77
fi
# The namespace ends with this process; the folder is only its mount point.
top=$(mktemp -d /tmp/rdmastream-install.XXXXXX)
trap 'rmdir "$top" 2>/dev/null || true' EXIT
unshare --mount --propagation private bash "$here/install-overlay.sh" "$top" "$deb" "$version"
