#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The transport benchmark: throughput and per-frame latency at frame sizes
# from 64 KiB to 12 MiB (including 1080p and 4K I420), each against perftest
# on the same device in the same run, as ratios. Not a test: it asserts
# nothing, it measures. Under Soft-RoCE the absolute figures are the
# emulator's; the ratios are what to compare.
# Then every path (bench/paths.sh: the transport, the CLIs, the elements)
# beside ib_write_bw and GStreamer's TCP elements, one round, and the plot.
# Usage: bench/run.sh [--out FILE] [--mode auto|host|guest] [--topology one|two]
#                     [--mb MB] [--no-paths] [SIZE...]
# Writes JSON lines to FILE (default build/bench-results.jsonl), prints a
# table, and FILE with .png for .jsonl: throughput against frame size for
# each path beside ib_write_bw and TCP (gnuplot; the paths run's results
# are in BUILD/bench-paths-TOPOLOGY).
set -euo pipefail
cd "$(dirname "$0")/.."
# RDMASTREAM_BUILD_DIR may be absolute or relative to the project.
source scripts/build-dir.sh
build=$(rdmastream_build_dir "$PWD")
out=$build/bench-results.jsonl
mode=auto topology=one mb='' paths=1
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --mode) mode=$2; shift 2 ;;
    --topology) topology=$2; shift 2 ;;
    --mb) mb=$2; shift 2 ;;
    --no-paths) paths=0; shift ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; /^# SPDX-/d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "bench: unknown option '$1'" >&2; exit 2 ;;
    *) break ;;
  esac
done
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(65536 1048576 3110400 12441600)
command -v gnuplot >/dev/null || { echo "bench: gnuplot is missing: run scripts/setup.sh" >&2; exit 3; }
started=$SECONDS
step() { printf 'bench: [%4d s] %s\n' "$((SECONDS - started))" "$*"; }
step "building into $build"
RDMASTREAM_BUILD_DIR=$build bash scripts/build.sh >/dev/null
bench=$build/bench/rdmastream-bench
results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT
step "1/2: the transport against perftest at ${#sizes[@]} sizes (${sizes[*]} bytes), one guest"
scripts/softroce/rdmabed --mode "$mode" --topology one --timeout 1200 --out "$results" \
  --node0 "$PWD/bench/in-bed.sh $bench ${sizes[*]} > \$RDMABED_OUT/bench.jsonl"
mkdir -p "$(dirname "$out")"
cp "$results/bench.jsonl" "$out"
echo "bench: results in $out"
python3 - "$out" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
rows = [r for r in rows if "ib_write_bw_gbps" in r]  # the bench's own per-run lines sit beside the summaries
print(f"{'size':>10} {'ib_write_bw':>12} {'rdmastream':>11} {'ratio':>6} {'ib_write_lat':>13} {'rdmastream':>11} {'ratio':>6}")
for r in rows:
    print(f"{r['size']:>10} {r['ib_write_bw_gbps']:>10.3f}Gb {r['rdmastream_gbps']:>9.3f}Gb {r['throughput_ratio'] or 0:>6.2f}"
          f" {r['ib_write_lat_typical_us']:>11.1f}us {r['rdmastream_round_trip_us']:>9.1f}us {r['latency_ratio'] or 0:>6.2f}")
PY
((paths)) || exit 0

# Every path beside the ceiling and TCP, and the picture.
step "2/2: every path beside ib_write_bw and TCP (bench/paths.sh --topology $topology --rounds 1)"
paths_out=$build/bench-paths-$topology
paths_args=(--topology "$topology" --rounds 1 --mode "$mode" --out "$paths_out")
[ -n "$mb" ] && paths_args+=(--mb "$mb")
RDMASTREAM_BUILD_DIR=$build bench/paths.sh "${paths_args[@]}"
png=${out%.jsonl}.png
cp "$paths_out/paths.png" "$png"
step "done: $out, $png (throughput against frame size), $paths_out/paths.md"
