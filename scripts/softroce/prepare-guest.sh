#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# prepare-guest.sh CACHE_DIR
#
# Fills CACHE_DIR with what a Soft-RoCE guest needs, and nothing else:
#   kernel/            Debian's stock kernel package, extracted (vmlinuz + modules,
#                      depmod'ed so `modprobe -d CACHE_DIR/kernel -S KVER` works)
#   vmlinux-KVER       the same kernel uncompressed, booted directly (PVH)
#   initramfs.cpio.gz  busybox + the virtio/9p/overlay modules + initramfs-init
#   guest.env          KVER / KERNEL / INITRD / MODDIR for rdmabed to source
#
# Idempotent and fast when cached: the kernel is fetched once (we never ask apt
# again once a kernel is there, so runs work offline), and the initramfs is
# rebuilt only when its inputs change (their hash is kept in initramfs.sha).
# Concurrent callers (ctest -j) are serialised with flock.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${1:?usage: prepare-guest.sh CACHE_DIR}
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)

# Progress: each step says where it is and the time so far (a first
# prepare downloads a kernel and builds an initramfs: a minute or more).
started=$SECONDS
log() { printf 'rdmabed prepare: [%3d s] %s\n' "$((SECONDS - started))" "$*" >&2; }
# The step lines: for `rdmabed prepare` (RDMABED_PREPARE_PROGRESS=1), not
# before every bed run, where only the slow steps (fetch, build) speak.
step() { [[ ${RDMABED_PREPARE_PROGRESS:-0} != 1 ]] || log "$@"; }
die() { log "error: $*"; exit 3; }

exec 9>"$cache/.lock"
flock 9

# --- host tools ---------------------------------------------------------------
step "1/4 host tools"
# Tools the bed runs on the host, and those the guest borrows from the host's
# root (the guest's / is this machine's / shared read-only). A fresh machine
# (CI on a new box) may lack them: install them when we are root, else say which.
declare -A pkg_of=(
  [qemu-system-x86_64]=qemu-system-x86 [busybox]=busybox-static
  [depmod]=kmod [modprobe]=kmod [ip]=iproute2 [rdma]=iproute2 [flock]=util-linux
  [ibv_devinfo]=ibverbs-utils [rping]=rdmacm-utils [ib_write_bw]=perftest
  [dpkg]=dpkg [apt-get]=apt
)
export PATH=$PATH:/usr/sbin:/sbin
missing=()
for tool in "${!pkg_of[@]}"; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("${pkg_of[$tool]}")
done
# The initramfs needs a *static* busybox: it runs before any library exists.
bb=$(command -v busybox || true)
if [[ -n $bb ]] && ldd "$bb" >/dev/null 2>&1; then missing+=(busybox-static); fi
if ((${#missing[@]})); then
  mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
  if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
    log "installing missing packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q --no-install-recommends "${missing[@]}" >&2 \
      || { apt-get update -q >&2 && apt-get install -y -q --no-install-recommends "${missing[@]}" >&2; } \
      || die "could not install: ${missing[*]}"
  else
    die "missing packages (install them as root): ${missing[*]}"
  fi
  bb=$(command -v busybox)
fi

# --- kernel -------------------------------------------------------------------
# Debian's generic kernel carries rdma_rxe, 9p, virtio_net and dummy as modules.
# `apt-get install` would run a slow initramfs-tools step we do not need, so we
# download the .deb and extract it. The version is pinned at first fetch.
step "2/4 guest kernel$([[ -s $cache/kernel.ok ]] && echo ": cached")"
if [[ ! -s $cache/kernel.ok ]]; then
  pkg=${RDMABED_KERNEL_PKG:-}
  resolve() { apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}'; }
  if [[ -z $pkg ]]; then
    pkg=$(resolve)
    if [[ -z $pkg ]]; then
      log "apt lists empty; running apt-get update"
      apt-get update -q >&2 || true
      pkg=$(resolve)
    fi
  fi
  [[ -n $pkg ]] || die "cannot resolve the kernel package behind linux-image-amd64"
  log "fetching $pkg"
  dl=$(mktemp -d "${TMPDIR:-/tmp}/rdmabed-dl.XXXXXX")
  trap 'rm -rf "$dl"' EXIT
  # The sandbox user _apt cannot write into a root-only mktemp dir; we are
  # only downloading a file, so skip the sandbox instead of loosening modes.
  (cd "$dl" && apt-get download -q -o APT::Sandbox::User="$(id -un)" "$pkg" >&2) \
    || { apt-get update -q >&2 && (cd "$dl" && apt-get download -q -o APT::Sandbox::User="$(id -un)" "$pkg" >&2); } \
    || die "apt-get download $pkg failed"
  rm -rf "$cache/kernel" "$cache/kernel.tmp"
  dpkg -x "$dl"/*.deb "$cache/kernel.tmp"
  kver=$(find "$cache/kernel.tmp/lib/modules" -mindepth 1 -maxdepth 1 -printf '%f\n' | head -n1)
  [[ -n $kver && -f $cache/kernel.tmp/boot/vmlinuz-$kver ]] || die "no kernel in $pkg"
  # Only the kernel and its modules are kept: docs etc. are not needed.
  rm -rf "$cache/kernel.tmp/usr"
  depmod -b "$cache/kernel.tmp" "$kver"
  mv "$cache/kernel.tmp" "$cache/kernel"
  printf '%s %s\n' "$kver" "$pkg" >"$cache/kernel.ok"
  rm -f "$cache/initramfs.sha"
fi
read -r kver _ <"$cache/kernel.ok"
moddir=$cache/kernel
kernel=$moddir/boot/vmlinuz-$kver

# Under TCG, decompressing the bzImage and the real-mode setup cost ~3 s per
# boot. With CONFIG_PVH qemu boots the uncompressed ELF directly: unpack once.
extract_vmlinux() { # bzImage -> ELF vmlinux; the payload sits at a magic
  local in=$1 out=$2 magic unpack off
  for fmt in xz zstd gzip; do
    case $fmt in
      xz) magic=$'\xfd7zXZ' unpack='xz -dc' ;;
      zstd) magic=$'\x28\xb5\x2f\xfd' unpack='zstd -dcq' ;;
      gzip) magic=$'\x1f\x8b\x08' unpack='gzip -dc' ;;
    esac
    command -v "${unpack%% *}" >/dev/null || continue
    for off in $(LC_ALL=C grep -abo "$magic" "$in" | cut -d: -f1 | head -n 5); do
      # trailing bytes after the payload make the unpacker complain: ignore
      tail -c +$((off + 1)) "$in" | $unpack >"$out.tmp" 2>/dev/null || true
      if [[ $(head -c 4 "$out.tmp" | od -An -tx1 | tr -d ' ') == 7f454c46 ]]; then
        mv "$out.tmp" "$out"
        return 0
      fi
    done
  done
  rm -f "$out.tmp"
  return 1
}
if grep -q '^CONFIG_PVH=y' "$moddir/boot/config-$kver" 2>/dev/null; then
  if [[ ! -s $cache/vmlinux-$kver ]]; then
    extract_vmlinux "$kernel" "$cache/vmlinux-$kver" || log "no PVH kernel (slower bzImage boot)"
  fi
  [[ -s $cache/vmlinux-$kver ]] && kernel=$cache/vmlinux-$kver
fi

# --- initramfs ----------------------------------------------------------------
# Just enough to mount the host's / over virtio-9p and switch_root into it:
# everything else (rdma_rxe, virtio_net, tools) comes from that shared root.
initmods=(virtio_pci 9pnet_virtio 9p overlay)
modlist() {
  # modprobe resolves the dependency order (virtio_ring before virtio, ...);
  # keep the first occurrence of each module.
  for m in "${initmods[@]}"; do
    modprobe -d "$moddir" -S "$kver" --show-depends "$m"
  done | awk '$1 == "insmod" && !seen[$2]++ {print $2}'
}
step "3/4 initramfs"
mapfile -t kos < <(modlist)
((${#kos[@]})) || die "cannot resolve initramfs modules"
# Contents only, not paths: worktrees of the project at other paths share
# this cache, and must not rebuild the initramfs for each other.
sha=$( { sha256sum <"$here/initramfs-init"; sha256sum <"$bb"; printf '%s\n' "$kver" "${kos[@]}"; } | sha256sum | cut -d' ' -f1)
if [[ ! -s $cache/initramfs.cpio.gz || $(cat "$cache/initramfs.sha" 2>/dev/null) != "$sha" ]]; then
  log "building initramfs"
  root=$(mktemp -d "${TMPDIR:-/tmp}/rdmabed-initramfs.XXXXXX")
  trap 'rm -rf "$root" "${dl:-}"' EXIT
  mkdir -p "$root"/{bin,dev,proc,sys,newroot,lower,upper,lib/modules}
  cp "$bb" "$root/bin/busybox"
  cp "$here/initramfs-init" "$root/init"
  chmod 755 "$root/init" "$root/bin/busybox"
  : >"$root/lib/modules/order"
  for ko in "${kos[@]}"; do
    base=$(basename "$ko")
    case $base in # busybox insmod wants plain .ko
      *.ko.xz) xz -dc "$ko" >"$root/lib/modules/${base%.xz}"; base=${base%.xz} ;;
      *.ko.zst) zstd -qdc "$ko" >"$root/lib/modules/${base%.zst}"; base=${base%.zst} ;;
      *.ko.gz) gzip -dc "$ko" >"$root/lib/modules/${base%.gz}"; base=${base%.gz} ;;
      *) cp "$ko" "$root/lib/modules/$base" ;;
    esac
    echo "$base" >>"$root/lib/modules/order"
  done
  # busybox cpio, so no cpio package is needed; -R 0:0 since we may not be root.
  (cd "$root" && find . | LC_ALL=C sort | busybox cpio -o -H newc -R 0:0 2>/dev/null) \
    | gzip -1 >"$cache/initramfs.cpio.gz.tmp.$$"
  mv "$cache/initramfs.cpio.gz.tmp.$$" "$cache/initramfs.cpio.gz"
  echo "$sha" >"$cache/initramfs.sha"
fi

cat >"$cache/guest.env.tmp" <<EOF
KVER=$kver
MODDIR=$moddir
KERNEL=$kernel
INITRD=$cache/initramfs.cpio.gz
EOF
mv "$cache/guest.env.tmp" "$cache/guest.env"
