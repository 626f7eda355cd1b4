#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Runs inside the test bed (one node, both ends on one device): for each frame
# size, perftest's ib_write_bw / ib_write_lat and rdmastream-bench back to
# back on the same device, and prints one JSON object per size.
# Env from rdmabed: RDMABED_SERVER_ADDR, RDMABED_DEVICE. Args: BENCH_BINARY SIZE...
set -euo pipefail
bench=$1
shift
addr=$RDMABED_SERVER_ADDR
dev=${RDMABED_DEVICE:-}
devopt=()
[ -n "$dev" ] && devopt=(-d "$dev")
budget=$((150 * 1024 * 1024)) # bytes per throughput run: seconds each under emulation
port=20000

# perftest's client does not retry: run it again while its server is not
# listening yet ("Unable to perform rdma_client function"), for at most 30 s.
perftest_client() { # OUT CMD...
  local out=$1 deadline=$((SECONDS + 30))
  shift
  until "$@" >"$out" 2>&1; do
    if ((SECONDS >= deadline)) || ! grep -q "Unable to perform rdma_client function" "$out"; then
      echo "in-bed: $* failed:" >&2
      tail -n 5 "$out" >&2
      return 1
    fi
    sleep 0.2
  done
}

# One perftest measurement, server and client on a fresh port. perftest on
# rxe now and then dies in librdmacm (a segfault of ib_write_lat was seen
# once in a long run): try the pair three times before giving up on the run.
perftest_pair() { # OUT TOOL ARGS...
  local out=$1 tool=$2 attempt srv
  shift 2
  for attempt in 1 2 3; do
    port=$((port + 1))
    "$tool" -R "${devopt[@]}" -p "$port" -F "$@" >/tmp/perftest_srv.txt 2>&1 &
    srv=$!
    if perftest_client "$out" "$tool" -R "${devopt[@]}" -p "$port" -F "$@" "$addr"; then
      wait "$srv" || true
      return 0
    fi
    kill "$srv" 2>/dev/null || true
    wait "$srv" 2>/dev/null || true
    echo "in-bed: $tool failed (attempt $attempt of 3); server said:" >&2
    tail -n 3 /tmp/perftest_srv.txt >&2
  done
  return 1
}

t0=$SECONDS i=0
for size in "$@"; do
  i=$((i + 1))
  # progress on stderr (stdout is the results): a line per size with the time so far
  echo "in-bed: [$i/$#, $((SECONDS - t0)) s] $size bytes: ib_write_bw, ib_write_lat, rdmastream-bench (throughput, round trip)" >&2
  iters=$((budget / size)); [ "$iters" -lt 20 ] && iters=20
  lat_iters=200; [ "$size" -gt 4000000 ] && lat_iters=50

  perftest_pair /tmp/bw.txt ib_write_bw -s "$size" -n "$iters" --report_gbits
  ref_gbps=$(awk -v s="$size" '$1 == s { print $4 }' /tmp/bw.txt | tail -n 1)

  perftest_pair /tmp/lat.txt ib_write_lat -s "$size" -n "$lat_iters"
  # columns: #bytes #iterations t_min t_max t_typical t_avg ...
  ref_lat_us=$(awk -v s="$size" '$1 == s { print $5 }' /tmp/lat.txt | tail -n 1)

  port=$((port + 1))
  "$bench" --role receiver --addr "$addr" --port "$port" --size "$size" --slots 8 &
  rcv=$!
  ours=$("$bench" --role sender --addr "$addr" --port "$port" --size "$size" --frames "$iters")
  wait "$rcv"

  port=$((port + 1))
  "$bench" --role receiver --addr "$addr" --port "$port" --size "$size" --slots 8 &
  rcv=$!
  ours_pp=$("$bench" --role sender --addr "$addr" --port "$port" --size "$size" --frames "$lat_iters" --pingpong)
  wait "$rcv"

  python3 - "$size" "${ref_gbps:-0}" "${ref_lat_us:-0}" "$ours" "$ours_pp" <<'PY'
import json, sys
size, ref_gbps, ref_lat, ours, pp = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), json.loads(sys.argv[4]), json.loads(sys.argv[5])
# ib_write_lat reports half a ping-pong of two writes of `size`: the time of
# one write one way. Our round trip is one write of `size` plus a credit of
# no payload back: the same work, so the full round trip is what compares.
rtt = pp["rtt_us_median"]
print(json.dumps({
    "size": size,
    "ib_write_bw_gbps": ref_gbps,
    "rdmastream_gbps": round(ours["gbps"], 4),
    "throughput_ratio": round(ours["gbps"] / ref_gbps, 3) if ref_gbps else None,
    "rdmastream_fps": round(ours["fps"], 1),
    "ib_write_lat_typical_us": ref_lat,
    "rdmastream_round_trip_us": round(rtt, 2),
    "latency_ratio": round(rtt / ref_lat, 3) if ref_lat else None,
}))
PY
done
echo "in-bed: all $# sizes done in $((SECONDS - t0)) s" >&2
