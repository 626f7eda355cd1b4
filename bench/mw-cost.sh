#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# What memory windows cost per frame: rdmastream-bench at one frame size
# (default 3110400 bytes, 1080p I420) with and without windows in the same
# guest boot, alternating, ROUNDS rounds of FRAMES frames each. Prints one
# JSON line per run (the sender's frames/s, the receiver's CPU per frame)
# and the medians with their ratio.
# Usage: bench/mw-cost.sh [ROUNDS [FRAMES [SIZE]]]   (run from the project)
set -euo pipefail
cd "$(dirname "$0")/.."
# RDMASTREAM_BUILD_DIR may be absolute or relative to the project.
source scripts/build-dir.sh
build=$(rdmastream_build_dir "$PWD")
rounds=${1:-5}
frames=${2:-100}
size=${3:-3110400}
cmake --build "$build" --target rdmastream-bench >/dev/null
results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT
scripts/softroce/rdmabed --topology one --timeout 3000 --out "$results" --node0 "$PWD/bench/mw-cost-node.sh \
  $build/bench/rdmastream-bench $rounds $frames $size > \$RDMABED_OUT/mw.jsonl"
cat "$results/mw.jsonl"
python3 - "$results/mw.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
def med(key, windows):
    return statistics.median(r[key] for r in rows if r["memory_windows"] == windows and key in r)
fps_on, fps_off = med("fps", True), med("fps", False)
cpu_on, cpu_off = med("cpu_us_per_frame", True), med("cpu_us_per_frame", False)
print(f"frames/s: windows {fps_on:.2f}, without {fps_off:.2f}, ratio {fps_on / fps_off:.3f}")
print(f"receiver CPU per frame: windows {cpu_on:.0f} us, without {cpu_off:.0f} us, "
      f"difference {cpu_on - cpu_off:+.0f} us ({(cpu_on - cpu_off) / cpu_off * 100:+.1f} %)")
PY
