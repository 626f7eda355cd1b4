#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Inside the bed (bench/mw-cost.sh): ROUNDS x (with windows, without), each
# FRAMES frames of SIZE bytes; one JSON line per run, sender and receiver
# figures merged. Args: BENCH ROUNDS FRAMES SIZE.
set -euo pipefail
bench=$1 rounds=$2 frames=$3 size=$4
addr=$RDMABED_SERVER_ADDR
port=21000
for ((r = 0; r < rounds; ++r)); do
  for mode in windows none; do
    port=$((port + 1))
    flag=(--no-memory-windows); [ "$mode" = windows ] && flag=(--memory-windows)
    "$bench" --role receiver --addr "$addr" --port "$port" --size "$size" --slots 8 "${flag[@]}" >/tmp/mw-rx.json &
    rcv=$!
    tx=$("$bench" --role sender --addr "$addr" --port "$port" --size "$size" --frames "$frames")
    wait "$rcv"
    python3 -c 'import json,sys; a=json.loads(sys.argv[1]); a.update(json.load(open(sys.argv[2]))); a["round"]=int(sys.argv[3]); print(json.dumps(a))' \
      "$tx" /tmp/mw-rx.json "$r"
  done
done
