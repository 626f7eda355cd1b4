#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# One node's half of bench/paths.sh, run by the test bed on both nodes with
# the same arguments: node 0 runs every receiving side (listens), node 1
# every sending side, step by step in the same order; each step has its own
# port, so a sender can only ever reach its own step's receiver.
#
#   paths-node.sh BUILD-DIR CLIP-DIR POLL ROUNDS PATH,... SIZE:N1:N2...
#
# For each SIZE (64k, 1080p, 4k), ROUNDS rounds; in each round every PATH
# runs twice, with N1 and with N2 frames (perftest: iterations), so that
# start-up cancels out of the per-frame CPU figures. Rounds interleave the
# paths in time: a swing in what else the machine runs hits all of them,
# and the report takes each figure's median over the rounds.
#   perftest  ib_write_bw -R -s BYTES (the ceiling)
#   bench     rdmastream-bench (the transport alone, bench/frame_bench.cpp)
#   cli       rdmasend CLIP.y4m --loop -> rdmarecv --null
#   cli2      the same over two paths (every frame over both): on two
#             guests with rdmabed --wires 2, each path its own wire and rxe
#             device; else both paths on the one device, two ports
#   gst       videotestsrc ! rdmasink -> rdmasrc ! fakesink
#   tcp       videotestsrc ! tcpclientsink -> tcpserversrc ! fakesink
# Raw outputs go to $RDMABED_OUT/raw/SIZE.PATH.N.rROUND.nodeK.{log,time,json,rate};
# bench/paths-report.py turns them into figures.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BENCH_NAME=paths
# shellcheck source=node-lib.sh
source "$here/node-lib.sh"

(($# >= 6)) || fail "usage: paths-node.sh BUILD-DIR CLIP-DIR POLL ROUNDS PATH,... SIZE:N1:N2..."
build=$1 clips=$2 poll=$3 rounds=$4
IFS=, read -r -a paths <<<"$5"
shift 5
node=${RDMABED_NODE:?run by scripts/softroce/rdmabed}
addr=${RDMABED_SERVER_ADDR:?}
addr_b=${RDMABED_SERVER_ADDR_B:-$addr} # cli2: path B on the second wire (rdmabed --wires 2), else the same
dev=${RDMABED_DEVICE:-}
raw=${RDMABED_OUT:?}/raw
mkdir -p "$raw"
devopt=()
[[ -n $dev ]] && devopt=(-d "$dev")

gst_setup "$build/gst-plugin" "$build/bench"
if ((node == 0)); then
  # What the run was on, for the report.
  printf '{"topology":"%s","mode":"%s","mtu":"%s","active_mtu":"%s","device":"%s","poll":"%s","kernel":"%s","cpus":%s}\n' \
    "${RDMABED_TOPOLOGY:-}" "${RDMABED_MODE:-}" "${RDMABED_MTU:-}" "${RDMABED_ACTIVE_MTU:-}" "$dev" "$poll" \
    "$(uname -r)" "$(nproc)" >"$RDMABED_OUT/bed.json"
fi

# The sender's clips, out of the 9p share into this guest's RAM, so that
# reading them costs what reading a cached file costs.
if ((node == 1)); then
  for spec in "$@"; do
    name=${spec%%:*}
    cp "$clips/$name.y4m" "/tmp/bench-$name.y4m" || fail "cannot copy the clip $clips/$name.y4m"
  done
fi

total=$((${#@} * rounds * ${#paths[@]} * 2)) k=0 port=20000
for spec in "$@"; do
  IFS=: read -r name n1 n2 <<<"$spec"
  read -r bytes format width height _ <<<"$(size_caps "$name")"
  caps="video/x-raw,format=$format,width=$width,height=$height,framerate=60/1"
  for ((r = 1; r <= rounds; r++)); do
    for path in "${paths[@]}"; do
      for n in "$n1" "$n2"; do
        k=$((k + 1)) port=$((port + 1))
        p=$raw/$name.$path.$n.r$r.node$node
        ((node == 1)) && say "[$k/$total] $name round $r: $path, $n frames"
        case $path.$node in
          perftest.0)
            run_or_fail "$p" "ib_write_bw server" \
              ib_write_bw -R "${devopt[@]}" -p "$port" -s "$bytes" -n "$n" -F --report_gbits
            ;;
          perftest.1)
            # -R: rdma_cm sets the QP up, as rdmastream does. No retry of its own.
            retry_connect "$p" "ib_write_bw client" "Unable to perform rdma_client function|Couldn't|REJECTED|rdma_connect" \
              ib_write_bw -R "${devopt[@]}" -p "$port" -s "$bytes" -n "$n" -F --report_gbits "$addr"
            ;;
          bench.0)
            run_or_fail "$p" "rdmastream-bench receiver" \
              "$build/bench/rdmastream-bench" --role receiver --addr "$addr" --port "$port" --size "$bytes" --slots 8
            ;;
          bench.1)
            run_or_fail "$p" "rdmastream-bench sender" \
              "$build/bench/rdmastream-bench" --role sender --addr "$addr" --port "$port" --size "$bytes" --frames "$n"
            ;;
          cli.0)
            run_or_fail "$p" "rdmarecv" "$build/receiver/rdmarecv" --listen "$addr:$port" --null -q \
              --poll "$poll" --connect-timeout 90 --stats-json "$p.json"
            ;;
          cli.1)
            run_or_fail "$p" "rdmasend" "$build/sender/rdmasend" "/tmp/bench-$name.y4m" --loop --frames "$n" \
              --connect "$addr:$port" -q --poll "$poll" --connect-timeout 90 --stats-json "$p.json"
            ;;
          cli2.0)
            run_or_fail "$p" "rdmarecv (two paths)" "$build/receiver/rdmarecv" --listen "$addr:$port" \
              --listen "$addr_b:$((port + 500))" --null -q --poll "$poll" --connect-timeout 90 --stats-json "$p.json"
            ;;
          cli2.1)
            run_or_fail "$p" "rdmasend (two paths)" "$build/sender/rdmasend" "/tmp/bench-$name.y4m" --loop --frames "$n" \
              --connect "$addr:$port" --connect "$addr_b:$((port + 500))" -q --poll "$poll" --connect-timeout 90 \
              --stats-json "$p.json"
            ;;
          gst.0)
            BENCHRATE_OUT=$p.rate GST_TRACERS=benchrate run_or_fail "$p" "rdmasrc pipeline" \
              gst-launch-1.0 -q rdmasrc host="$addr" port="$port" poll-mode="$poll" ! fakesink
            ;;
          gst.1)
            run_or_fail "$p" "rdmasink pipeline" gst-launch-1.0 -q videotestsrc pattern=black num-buffers="$n" \
              ! "$caps" ! rdmasink host="$addr" port="$port" poll-mode="$poll" connect-timeout=90000
            ;;
          tcp.0)
            # blocksize: read up to a frame at a time (the default, 4096 bytes,
            # would make TCP's receiver pay a syscall and a buffer per 4 KiB).
            BENCHRATE_OUT=$p.rate GST_TRACERS=benchrate run_or_fail "$p" "tcpserversrc pipeline" \
              gst-launch-1.0 -q tcpserversrc host="$addr" port="$port" blocksize="$bytes" ! fakesink
            ;;
          tcp.1)
            # sync=false: as fast as it goes, like rdmasink (whose default it is).
            retry_connect "$p" "tcpclientsink pipeline" "Connection refused" \
              gst-launch-1.0 -q videotestsrc pattern=black num-buffers="$n" ! "$caps" \
              ! tcpclientsink host="$addr" port="$port" sync=false
            ;;
        esac
        if ((node == 1)); then
          read -r u s w <"$p.time"
          say "[$k/$total] done: ${w} s wall, sender CPU ${u} s user ${s} s sys"
        fi
      done
    done
  done
done
say "node $node: all $total steps done"
