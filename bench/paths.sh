#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The paths benchmark: every way rdmastream moves a frame, against the
# device's ceiling (ib_write_bw) and GStreamer's TCP path, at 64 KiB, 1080p
# I420 and 4K I420, with each side's CPU. Not a test: it asserts nothing.
#
# Usage: bench/paths.sh [--topology one|two] [--wires 1|2] [--mtu BYTES] [--poll event|busy]
#                       [--mb MB] [--rounds R] [--sizes "64k 1080p 4k"]
#                       [--paths "perftest bench cli gst tcp"]
#                       [--mode auto|host|guest] [--out DIR]
#   --topology  the test bed's (default one: both ends in one guest; two:
#               two guests joined by a wire)
#   --mtu       the bed's netdev MTU (default: rdmabed's, 9000)
#   --poll      completion mode of the CLIs and elements (default event)
#   --mb        megabytes of frames in the longer run of each path (default
#               150 with one guest, 100 with two); the shorter run is a quarter
#   --rounds    how often each path runs, interleaved with the others
#               (default 2); the report gives each figure's median (of 2: the mean)
#   --paths     which paths to run (default all; the ratios need perftest,
#               the CPU ratio tcp; cli2 is cli over two paths)
#   --wires     2 (with --topology two): cli2's second path on the bed's
#               second wire (rdmabed --wires 2); default 1 (both paths on one device)
#   --out       folder for the results (default BUILD/bench-paths-TOPOLOGY)
# Writes DIR/paths.jsonl (one JSON object per size and path), DIR/paths.md
# (the table), DIR/paths.png (throughput against frame size) and DIR/raw/
# (every command's output). Progress is printed as the steps run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
topology=one mtu='' poll=event mb='' rounds=2 sizes="64k 1080p 4k" paths="perftest bench cli cli2 gst tcp" wires=1 mode=auto out=''
while (($#)); do
  case $1 in
    --topology) topology=${2:?}; shift 2 ;;
    --mtu) mtu=${2:?}; shift 2 ;;
    --poll) poll=${2:?}; shift 2 ;;
    --mb) mb=${2:?}; shift 2 ;;
    --rounds) rounds=${2:?}; shift 2 ;;
    --sizes) sizes=${2:?}; shift 2 ;;
    --paths) paths=${2:?}; shift 2 ;;
    --wires) wires=${2:?}; shift 2 ;;
    --mode) mode=${2:?}; shift 2 ;;
    --out) out=${2:?}; shift 2 ;;
    -h | --help) awk 'NR > 1 && /^# SPDX-/ { next } NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "paths: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ $topology =~ ^(one|two)$ ]] || { echo "paths: --topology must be one or two" >&2; exit 2; }
[[ $poll =~ ^(event|busy)$ ]] || { echo "paths: --poll must be event or busy" >&2; exit 2; }
for p in $paths; do
  [[ $p =~ ^(perftest|bench|cli|cli2|gst|tcp)$ ]] || { echo "paths: unknown path '$p' (perftest bench cli cli2 gst tcp)" >&2; exit 2; }
done
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "paths: --rounds must be a positive number" >&2; exit 2; }
[[ -z $mb || $mb =~ ^[1-9][0-9]*$ ]] || { echo "paths: --mb must be a number of megabytes" >&2; exit 2; }
if [[ -z $mb ]]; then
  mb=150
  [[ $topology == two ]] && mb=100
fi
# RDMASTREAM_BUILD_DIR may be absolute or relative to the project.
source scripts/build-dir.sh
build=$(rdmastream_build_dir "$root")
out=${out:-$build/bench-paths-$topology}
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -rf "$out/raw" "$out/bed.json"
for tool in gnuplot ffmpeg python3; do
  command -v "$tool" >/dev/null || { echo "paths: $tool is missing: run scripts/setup.sh" >&2; exit 3; }
done

echo "paths: building into $build"
RDMASTREAM_BUILD_DIR=$build bash scripts/build.sh >/dev/null

# Frame counts: the longer run carries about MB megabytes, the shorter a
# quarter of that; at least 12 and 5 frames (ib_write_bw's minimum is 5).
specs=()
for name in $sizes; do
  case $name in
    64k) bytes=65536 ;;
    1080p) bytes=3110400 ;;
    4k) bytes=12441600 ;;
    *) echo "paths: unknown size '$name' (64k, 1080p, 4k)" >&2; exit 2 ;;
  esac
  n2=$((mb * 1000000 / bytes))
  ((n2 >= 12)) || n2=12
  n1=$((n2 / 4))
  ((n1 >= 5)) || n1=5
  specs+=("$name:$n1:$n2")
  bench/make-clip.sh "$name" "$build/bench-clips"
done
echo "paths: topology $topology, poll $poll, $rounds rounds of ${specs[*]} (size:short:long frames), results in $out"

bed=(scripts/softroce/rdmabed --mode "$mode" --topology "$topology" --timeout 1500 --out "$out")
[[ -n $mtu ]] && bed+=(--mtu "$mtu")
[[ $wires == 2 ]] && bed+=(--wires 2)
node="$root/bench/paths-node.sh $build $build/bench-clips $poll $rounds ${paths// /,} ${specs[*]}"
started=$SECONDS
# This machine may be shared: what else ran shows in its load around the run.
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
"${bed[@]}" --node0 "$node" --node1 "$node"
echo "paths: the bed ran for $((SECONDS - started)) s"
printf '{"host_cpus":%s,"loadavg_before":"%s","loadavg_after":"%s","bed_seconds":%s,"accel":"%s"}\n' \
  "$(nproc)" "$load_before" "$(cut -d' ' -f1-3 /proc/loadavg)" "$((SECONDS - started))" \
  "$(sed -n 2p "${RDMASTREAM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rdmastream}/softroce/accel" 2>/dev/null || echo '?')" \
  >"$out/host.json"

python3 bench/paths-report.py "$out"
gnuplot -e "datafile='$out/paths.dat'; outfile='$out/paths.png'; subtitle='$(python3 bench/paths-report.py --subtitle "$out")'" \
  bench/paths.gp
echo "paths: $out/paths.jsonl, $out/paths.md, $out/paths.png"
cat "$out/paths.md"
