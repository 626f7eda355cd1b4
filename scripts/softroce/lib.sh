# shellcheck shell=bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Helpers shared by rdmabed (host side) and guest-init.sh (guest side).

# rdmabed_gid_index DEV IPV4
# Prints the GID index of DEV port 1 whose GID is the IPv4-mapped address
# ::ffff:IPV4 with type "RoCE v2" (what ib_write_bw -x / ibv_query_gid need);
# fails if there is none. Pure bash reads: the table has up to 1024 entries
# and a fork per entry costs seconds under emulation.
rdmabed_gid_index() {
  local dev=$1 ip=$2 want f i g t
  local -a o
  IFS=. read -r -a o <<<"$ip"
  want=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' "${o[@]}")
  for f in /sys/class/infiniband/"$dev"/ports/1/gids/*; do
    i=${f##*/}
    g=
    read -r g <"$f" 2>/dev/null || true
    [[ $g == "$want" ]] || continue
    t=
    read -r t <"/sys/class/infiniband/$dev/ports/1/gid_attrs/types/$i" 2>/dev/null || true
    [[ $t == "RoCE v2" ]] || continue
    echo "$i"
    return 0
  done
  return 1
}

# rdmabed_active_mtu DEV
# Prints the active MTU of DEV port 1 in bytes as verbs report it (rxe: the
# netdev's MTU less the RoCE headers, rounded down to 256..4096; 9000 -> 4096,
# 1500 -> 1024); fails if ibv_devinfo says nothing.
rdmabed_active_mtu() {
  local key value _
  while read -r key value _; do
    [[ $key == active_mtu: ]] && { echo "$value"; return 0; }
  done < <(ibv_devinfo -d "$1" -i 1 2>/dev/null)
  return 1
}
