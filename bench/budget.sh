#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The per-frame budget: system calls (by name, rxe's doorbell apart) and heap
# calls per frame at each end of the CLIs and of the GStreamer elements, with
# event and with busy polling. Steady state: in the longer of two runs, the
# counts between each process's N1-th rxe doorbell (after the stream's
# opening and first frames) and its last, over the doorbells in between;
# the difference between the two runs over the difference of their frame
# counts is kept as a check. Not a test: it asserts nothing.
#
# Usage: bench/budget.sh [--topology one|two] [--mtu BYTES] [--size 64k|1080p|4k]
#                        [--frames N1,N2] [--polls "event busy"]
#                        [--mode auto|host|guest] [--warm-up N] [--trace FROM[,COUNT]]
#                        [--out DIR]
#   --size    frame size (default 1080p: I420 1920x1080)
#   --polls   the poll modes to run (default both)
#   --frames  the two runs' lengths (default 30,120 with one guest, 15,60 with two)
#   --out     folder for the results (default BUILD/bench-budget-TOPOLOGY)
#   --warm-up the doorbell each process's steady state starts at (default N1;
#             1: from the first, the stream's opening in it)
#   --trace   where the heap calls come from: every run also writes the stacks
#             of COUNT (default 40) allocations from its FROM-th doorbell on
#             (bench/malloc_count/malloc_trace.hpp) to raw/*.stacks; name and
#             count them with bench/malloc_count/trace-stacks.py DIR/raw/*.stacks
# Writes DIR/budget.jsonl (one JSON object per program, end and poll mode),
# DIR/budget.md (the tables) and DIR/raw/ (every run's counts and output).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
topology=one mtu='' size=1080p frames='' polls="event busy" mode=auto out='' trace='' warm_up=''
while (($#)); do
  case $1 in
    --topology) topology=${2:?}; shift 2 ;;
    --mtu) mtu=${2:?}; shift 2 ;;
    --size) size=${2:?}; shift 2 ;;
    --frames) frames=${2:?}; shift 2 ;;
    --polls) polls=${2:?}; shift 2 ;;
    --mode) mode=${2:?}; shift 2 ;;
    --out) out=${2:?}; shift 2 ;;
    --trace) trace=${2:?}; shift 2 ;;
    --warm-up) warm_up=${2:?}; shift 2 ;;
    -h | --help) awk 'NR > 1 && /^# SPDX-/ { next } NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "budget: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ $topology =~ ^(one|two)$ ]] || { echo "budget: --topology must be one or two" >&2; exit 2; }
for p in $polls; do
  [[ $p =~ ^(event|busy)$ ]] || { echo "budget: --polls takes event and/or busy" >&2; exit 2; }
done
[[ -z $trace || $trace =~ ^[0-9]+(,[0-9]+)?$ ]] || { echo "budget: --trace takes FROM or FROM,COUNT" >&2; exit 2; }
[[ -z $warm_up || $warm_up =~ ^[1-9][0-9]*$ ]] || { echo "budget: --warm-up takes a doorbell number, 1 or more" >&2; exit 2; }
# The guests get the caller's RDMASTREAM_* variables (docs/softroce.md).
export RDMASTREAM_BUDGET_TRACE=$trace RDMASTREAM_BUDGET_WARM_UP=$warm_up
[[ $size =~ ^(64k|1080p|4k)$ ]] || { echo "budget: --size must be 64k, 1080p or 4k" >&2; exit 2; }
if [[ -z $frames ]]; then
  frames=30,120
  [[ $topology == two ]] && frames=15,60
fi
IFS=, read -r n1 n2 <<<"$frames"
[[ $n1 =~ ^[1-9][0-9]*$ && $n2 =~ ^[1-9][0-9]*$ ]] && ((n2 > n1)) \
  || { echo "budget: --frames must be N1,N2 with N2 > N1 > 0" >&2; exit 2; }
# RDMASTREAM_BUILD_DIR may be absolute or relative to the project.
source scripts/build-dir.sh
build=$(rdmastream_build_dir "$root")
out=${out:-$build/bench-budget-$topology}
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -rf "$out/raw" "$out/bed.json"
for tool in strace ffmpeg python3; do
  command -v "$tool" >/dev/null || { echo "budget: $tool is missing: run scripts/setup.sh" >&2; exit 3; }
done

echo "budget: building into $build"
RDMASTREAM_BUILD_DIR=$build bash scripts/build.sh >/dev/null
bench/make-clip.sh "$size" "$build/bench-clips"
echo "budget: topology $topology, $size frames, runs of $n1 and $n2 frames, results in $out"

bed=(scripts/softroce/rdmabed --mode "$mode" --topology "$topology" --timeout 1500 --out "$out")
[[ -n $mtu ]] && bed+=(--mtu "$mtu")
node="$root/bench/budget-node.sh $build $build/bench-clips $size $n1 $n2 $polls"
started=$SECONDS
# This machine may be shared: what else ran shows in its load around the run.
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
rc=0
"${bed[@]}" --node0 "$node" --node1 "$node" || rc=$?
echo "budget: the bed ran for $((SECONDS - started)) s"
printf '{"host_cpus":%s,"loadavg_before":"%s","loadavg_after":"%s","bed_seconds":%s,"accel":"%s"}\n' \
  "$(nproc)" "$load_before" "$(cut -d' ' -f1-3 /proc/loadavg)" "$((SECONDS - started))" \
  "$(sed -n 2p "${RDMASTREAM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rdmastream}/softroce/accel" 2>/dev/null || echo '?')" \
  >"$out/host.json"
((rc == 0)) || { echo "budget: the bed failed (exit $rc): no report" >&2; exit "$rc"; }
python3 bench/budget-report.py "$out"
echo "budget: $out/budget.jsonl, $out/budget.md"
cat "$out/budget.md"
