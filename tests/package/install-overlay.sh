#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# install.sh's part inside the private mount namespace: builds the overlay
# root, runs install-chroot.sh in it, then looks through the overlay's
# writes for anything the purge left under /usr or /etc.
# Usage (only from install.sh): install-overlay.sh TOP DEB VERSION
set -euo pipefail
top=$1 deb=$2 version=$3
here=$(cd "$(dirname "$0")" && pwd)
# Everything below is mounted in this namespace only: none of it is seen
# outside, and all of it goes when the namespace does.
mount -t tmpfs -o size=4g,mode=700 rdmastream-install "$top"
mkdir "$top/upper" "$top/work" "$top/root"
mount -t overlay overlay -o "lowerdir=/,upperdir=$top/upper,workdir=$top/work" "$top/root"
root=$top/root
mount -t proc -o ro,nosuid,nodev,noexec proc "$root/proc"
# Only the device nodes programs open, not the host's /dev.
mount -t tmpfs -o mode=755 dev "$root/dev"
for node in null zero full random urandom tty; do
  touch "$root/dev/$node"
  mount --bind "/dev/$node" "$root/dev/$node"
done
mount -t tmpfs tmp "$root/tmp"
cp "$deb" "$here/install-chroot.sh" "$root/tmp/"
echo "package install: apt-get install ./${deb##*/} in an overlay root (writes to a tmpfs, this machine untouched)"
chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
  bash /tmp/install-chroot.sh "/tmp/${deb##*/}" "$version"

# What the whole run wrote under /usr and /etc that no installed package
# owns: a leftover of ours (the package's own paths install-chroot.sh
# checked already). Overlay whiteouts (deleted files) are character
# devices; caches that tools rewrite are no one's.
leftovers=()
while IFS= read -r -d '' path; do
  rel=/${path#"$top/upper/"}
  case $rel in /etc/ld.so.cache) continue ;; esac
  chroot "$root" dpkg-query -S "$rel" >/dev/null 2>&1 || leftovers+=("$rel")
done < <(find "$top/upper/usr" "$top/upper/etc" \( -type f -o -type l \) -print0 2>/dev/null)
if [ ${#leftovers[@]} -gt 0 ]; then
  echo "package install: after the purge, files no package owns: ${leftovers[*]}" >&2
  exit 1
fi
echo "package install: after the purge nothing unowned is left under /usr or /etc"
