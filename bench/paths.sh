#!/usr/bin/env bash
# The paths benchmark: every way rdmastream moves a frame, against the
# device's ceiling (ib_write_bw) and GStreamer's TCP path, at 64 KiB, 1080p
# I420 and 4K I420, with each side's CPU. Not a test: it asserts nothing.
#
# Usage: bench/paths.sh [--topology one|two] [--mtu BYTES] [--poll event|busy]
#                       [--mb MB] [--sizes "64k 1080p 4k"] [--mode auto|host|guest]
#                       [--out DIR]
#   --topology  the test bed's (default one: both ends in one guest; two:
#               two guests joined by a wire)
#   --mtu       the bed's netdev MTU (default: rdmabed's, 9000)
#   --poll      completion mode of the CLIs and elements (default event)
#   --mb        megabytes of frames in the longer run of each path (default
#               600 with one guest, 200 with two); the shorter run is a quarter
#   --out       folder for the results (default BUILD/bench-paths-TOPOLOGY)
# Writes DIR/paths.jsonl (one JSON object per size and path), DIR/paths.md
# (the table), DIR/paths.png (throughput against frame size) and DIR/raw/
# (every command's output). Progress is printed as the steps run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
topology=one mtu='' poll=event mb='' sizes="64k 1080p 4k" mode=auto out=''
while (($#)); do
  case $1 in
    --topology) topology=${2:?}; shift 2 ;;
    --mtu) mtu=${2:?}; shift 2 ;;
    --poll) poll=${2:?}; shift 2 ;;
    --mb) mb=${2:?}; shift 2 ;;
    --sizes) sizes=${2:?}; shift 2 ;;
    --mode) mode=${2:?}; shift 2 ;;
    --out) out=${2:?}; shift 2 ;;
    -h | --help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "paths: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ $topology =~ ^(one|two)$ ]] || { echo "paths: --topology must be one or two" >&2; exit 2; }
[[ $poll =~ ^(event|busy)$ ]] || { echo "paths: --poll must be event or busy" >&2; exit 2; }
[[ -z $mb || $mb =~ ^[1-9][0-9]*$ ]] || { echo "paths: --mb must be a number of megabytes" >&2; exit 2; }
if [[ -z $mb ]]; then
  mb=600
  [[ $topology == two ]] && mb=200
fi
# RDMASTREAM_BUILD_DIR may be absolute or relative to the project.
build=${RDMASTREAM_BUILD_DIR:-build}
[[ $build == /* ]] || build=$root/$build
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
# quarter of that; at least 20 and 5 frames (ib_write_bw's minimum).
specs=()
for name in $sizes; do
  case $name in
    64k) bytes=65536 pix=gray geom=256x256 clip_frames=60 ;;
    1080p) bytes=3110400 pix=yuv420p geom=1920x1080 clip_frames=20 ;;
    4k) bytes=12441600 pix=yuv420p geom=3840x2160 clip_frames=8 ;;
    *) echo "paths: unknown size '$name' (64k, 1080p, 4k)" >&2; exit 2 ;;
  esac
  n2=$((mb * 1000000 / bytes))
  ((n2 >= 20)) || n2=20
  n1=$((n2 / 4))
  ((n1 >= 5)) || n1=5
  specs+=("$name:$n1:$n2")
  # rdmasend's source: a short raw clip it loops (made here once, natively).
  clip=$build/bench-clips/$name.y4m
  if [[ ! -s $clip ]]; then
    mkdir -p "$build/bench-clips"
    echo "paths: making the clip $clip ($clip_frames frames of $geom $pix)"
    ffmpeg -nostdin -loglevel error -y -f lavfi -i "color=c=black:s=$geom:r=60" -frames:v "$clip_frames" \
      -pix_fmt "$pix" -f yuv4mpegpipe "$clip.tmp"
    mv "$clip.tmp" "$clip"
  fi
done
echo "paths: topology $topology, poll $poll, runs of ${specs[*]} (size:short:long frames), results in $out"

bed=(scripts/softroce/rdmabed --mode "$mode" --topology "$topology" --timeout 1500 --out "$out")
[[ -n $mtu ]] && bed+=(--mtu "$mtu")
node="$root/bench/paths-node.sh $build $build/bench-clips $poll ${specs[*]}"
started=$SECONDS
"${bed[@]}" --node0 "$node" --node1 "$node"
echo "paths: the bed ran for $((SECONDS - started)) s"

python3 bench/paths-report.py "$out"
gnuplot -e "datafile='$out/paths.dat'; outfile='$out/paths.png'; subtitle='$(python3 bench/paths-report.py --subtitle "$out")'" \
  bench/paths.gp
echo "paths: $out/paths.jsonl, $out/paths.md, $out/paths.png"
cat "$out/paths.md"
