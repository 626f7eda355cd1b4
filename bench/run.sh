#!/usr/bin/env bash
# The transport benchmark: throughput and per-frame latency at frame sizes
# from 64 KiB to 12 MiB (including 1080p and 4K I420), each against perftest
# on the same device in the same run, as ratios. Not a test: it asserts
# nothing, it measures. Under Soft-RoCE the absolute figures are the
# emulator's; the ratios are what to compare.
# Usage: bench/run.sh [--out FILE] [--mode auto|host|guest] [SIZE...]
# Writes JSON lines to FILE (default build/bench-results.jsonl) and prints a table.
set -euo pipefail
cd "$(dirname "$0")/.."
# RDMASTREAM_BUILD_DIR may be absolute or relative to the project.
source scripts/build-dir.sh
build=$(rdmastream_build_dir "$PWD")
out=$build/bench-results.jsonl
mode=auto
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --mode) mode=$2; shift 2 ;;
    -h|--help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "bench: unknown option '$1'" >&2; exit 2 ;;
    *) break ;;
  esac
done
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(65536 1048576 3110400 12441600)
RDMASTREAM_BUILD_DIR=$build bash scripts/build.sh >/dev/null
bench=$build/bench/rdmastream-bench
results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT
scripts/softroce/rdmabed --mode "$mode" --topology one --timeout 1200 --out "$results" \
  --node0 "$PWD/bench/in-bed.sh $bench ${sizes[*]} > \$RDMABED_OUT/bench.jsonl"
mkdir -p "$(dirname "$out")"
cp "$results/bench.jsonl" "$out"
echo "bench: results in $out"
python3 - "$out" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print(f"{'size':>10} {'ib_write_bw':>12} {'rdmastream':>11} {'ratio':>6} {'ib_write_lat':>13} {'rdmastream':>11} {'ratio':>6}")
for r in rows:
    print(f"{r['size']:>10} {r['ib_write_bw_gbps']:>10.3f}Gb {r['rdmastream_gbps']:>9.3f}Gb {r['throughput_ratio'] or 0:>6.2f}"
          f" {r['ib_write_lat_typical_us']:>11.1f}us {r['rdmastream_round_trip_us']:>9.1f}us {r['latency_ratio'] or 0:>6.2f}")
PY
