#!/usr/bin/env bash
# The main job: live HD video over RDMA. rdmasend decodes a 1080p60 source
# (FFmpeg's testsrc2 pattern with its running clock, or your file/URL) and
# streams it with the live policy; rdmarecv takes it into a GStreamer pipeline
# that burns the frame number and one-way latency into the picture and writes
# a video and PNG snapshots. Over Soft-RoCE in two QEMU guests when this
# machine has no RDMA device, directly over its device when it has one.
#
# Usage: scripts/demo.sh [options]
#   --source URL      anything FFmpeg opens (default: lavfi testsrc2 at --size/--fps)
#   --size WxH        resolution of the test source (default 1920x1080)
#   --fps F           rate of the test source, the target (default 60)
#   --duration S      seconds of source to send (default 10)
#   --topology one|two  one guest, or two joined by a wire (default two)
#   --mode auto|host|guest  host: this machine's RDMA device (default auto)
#   --out DIR         where the video, snapshots and stats go (default demo-out)
#   -h, --help        this text
set -euo pipefail
cd "$(dirname "$0")/.."
source_url='' size=1920x1080 fps=60 duration=10 topology=two mode=auto out=demo-out
while [ $# -gt 0 ]; do
  case "$1" in
    --source) source_url=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --fps) fps=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --topology) topology=$2; shift 2 ;;
    --mode) mode=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "demo: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ $size =~ ^[0-9]+x[0-9]+$ ]] || { echo "demo: --size wants WxH, e.g. 1280x720" >&2; exit 2; }
[[ $fps =~ ^[0-9]+$ && $fps -gt 0 ]] || { echo "demo: --fps wants a whole number of frames per second" >&2; exit 2; }
[[ $duration =~ ^[0-9]+$ && $duration -gt 0 ]] || { echo "demo: --duration wants whole seconds" >&2; exit 2; }

bash scripts/setup.sh
bash scripts/build.sh
bin=$PWD/${RDMASTREAM_BUILD_DIR:-build}
mkdir -p "$out"
out=$(cd "$out" && pwd)
# The guests see this folder at the same path (the bed's --out).
case $out in *[\'\"\ ]*) echo "demo: --out must not contain quotes or spaces: $out" >&2; exit 2 ;; esac
rm -f "$out"/snapshot-*.png "$out"/demo.avi "$out"/demo.mp4 "$out"/*.json

# testsrc2 draws a running clock; yuv420p is what a decoded camera or file
# usually is (and what the snapshots' overlay blends onto directly).
[ -n "$source_url" ] || source_url="lavfi:testsrc2=size=$size:rate=$fps,format=yuv420p"
frames=$((duration * fps))

# A GStreamer registry scanned here once: a guest would otherwise rescan
# every plugin at boot, which under emulation takes longer than the demo.
export GST_REGISTRY_1_0=$bin/demo-gst-registry.bin
gst-inspect-1.0 textoverlay >/dev/null

# The receiving pipeline: rdmarecv feeds it frames that live in the ring
# (no copy) and sets the text of the element named rdmastats per frame.
pipeline="textoverlay name=rdmastats halignment=left valignment=bottom font-desc=\"Sans 14\" shaded-background=true
  ! tee name=t
  t. ! queue ! videoscale ! video/x-raw,width=960,height=540 ! jpegenc quality=85 ! avimux
     ! filesink location=\"$out/demo.avi\"
  t. ! queue ! videorate drop-only=true ! video/x-raw,framerate=1/2 ! videoconvert ! pngenc
     ! multifilesink location=\"$out/snapshot-%02d.png\""
pipeline=${pipeline//$'\n'/ }
device='${RDMABED_DEVICE:+-d $RDMABED_DEVICE}'

echo "demo: $source_url -> rdmasend -> RDMA ($topology) -> rdmarecv -> GStreamer; $frames frames, live policy"
echo "demo: target $fps frames/s; under emulation expect far less (see the summary)"
set +e
scripts/softroce/rdmabed --mode "$mode" --topology "$topology" --timeout $((duration * 30 + 120)) --out "$out" \
  --node0 "$bin/receiver/rdmarecv --policy live --slots 4 $device --gst '$pipeline' --stats-json \$RDMABED_OUT/recv.json" \
  --node1 "$bin/sender/rdmasend '$source_url' --connect \$RDMABED_SERVER_ADDR --realtime --policy live --frames $frames $device --stats-json \$RDMABED_OUT/send.json"
status=$?
set -e

# --- what happened ----------------------------------------------------------
field() { sed -n "s/^ *\"$2\": *\"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}$/\1/p" "$1" | head -n 1; }
if [ -s "$out/recv.json" ] && [ -s "$out/send.json" ]; then
  r=$out/recv.json s=$out/send.json
  awk -v target="$fps" -v sent="$(field "$s" frames)" -v sdrops="$(field "$s" drops)" \
      -v got="$(field "$r" frames)" -v fps_got="$(field "$r" fps)" -v gbps="$(field "$r" gbps)" \
      -v lat="$(field "$r" latency_mean_us)" -v latmax="$(field "$r" latency_max_us)" \
      -v slat="$(field "$s" latency_mean_us)" -v copies="$(field "$r" copies)" -v scopies="$(field "$s" copies)" \
      -v gaps="$(field "$r" gaps)" -v offered="$frames" 'BEGIN {
    printf "\ndemo summary\n"
    printf "  frames: %d offered by the source, %d sent, %d dropped by the live policy, %d received\n", offered, sent, sdrops, got
    printf "  rate:   %.1f frames/s received against a %d frames/s source (%.0f %%), %.3f Gb/s\n", fps_got, target, 100 * fps_got / target, gbps
    printf "  latency: one way (sender post -> receiver) %.1f ms mean, %.1f ms max; sender post -> delivery %.1f ms mean\n", lat / 1000, latmax / 1000, slat / 1000
    printf "  copies: %.2f per frame on the sender (%d for %d frames decoded), %.2f per frame on the receiver\n", offered ? scopies / offered : 0, scopies, offered, got ? copies / got : 0
  }'
else
  echo "demo: no stats from one of the programs (see the messages above)" >&2
fi
if [ -s "$out/demo.avi" ] && command -v ffmpeg >/dev/null; then
  # An MP4 plays everywhere; the guest wrote MJPEG because encoding H.264
  # there would steal the emulated CPU from the stream.
  ffmpeg -loglevel error -y -i "$out/demo.avi" -c:v libx264 -preset veryfast -pix_fmt yuv420p "$out/demo.mp4" \
    && rm -f "$out/demo.avi"
fi
echo "demo: artefacts in $out:"
ls -1 "$out" | grep -E '\.(mp4|avi|png)$' | sed 's/^/  /' || true
exit "$status"
