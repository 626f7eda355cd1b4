#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The main job: live HD video with its sound over RDMA, decoded straight
# into registered memory. rdmasend decodes an H.264 + AAC clip of FFmpeg's
# testsrc2 pattern (a burnt-in timecode, a white flash at every whole
# second, and a quiet tone with a 1 kHz beep at the same instants; made
# once with ffmpeg and cached) with its video decoder writing into
# registered buffers (DR1: no copy), paces it at its frame rate and streams
# picture and sound as two flows of one stream with the live policy;
# rdmarecv writes every picture from its ring slot, without a copy, and the
# sound beside it into a video (or, --overlay, hands the slots to a
# GStreamer pipeline that burns frame number and latency in). Over
# Soft-RoCE in two QEMU guests when this machine has no RDMA device,
# directly over its device when it has one. The summary names the path
# each end took, its copies per picture, the rate received against the
# source's, what the stream would use of a 100 Gb/s link, how many frames
# the video holds, and the A/V offset measured in it (each flash against
# the nearest beep).
#
# Usage: scripts/demo.sh [options]
#   --source URL      anything FFmpeg opens (default: the cached H.264 clip of
#                     testsrc2 at --size/--fps; lavfi:GRAPH for a raw source)
#   --size WxH        the clip's resolution (default 1280x720; with the
#                     default rate, what two emulated guests carry live:
#                     0.23 Gb/s; --size 1920x1080 --fps 60 for a real NIC)
#   --fps F           the clip's rate, the target (default 20)
#   --duration S      seconds to send (default 10; the clip loops past its 10 s)
#   --topology one|two  one guest, or two joined by a wire (default two)
#   --mode auto|host|guest  host: this machine's RDMA device (default auto)
#   --out DIR         where the video, snapshots and stats go (default demo-out)
#   --overlay         through GStreamer: frame number and latency burnt in
#                     (costs the emulated receiver about half the frames)
#   --check           exit 1 unless both ends made 0 copies per picture, the
#                     video holds every picture received and its sound is
#                     within 1 ms of its pictures (the test's assertion)
#   --no-build        skip scripts/setup.sh and the build (the programs must be built)
#   -h, --help        this text
# Env: RDMASTREAM_BUILD_DIR (absolute or relative to the project; default build).
set -euo pipefail
cd "$(dirname "$0")/.."
source_url='' size=1280x720 fps=20 duration=10 topology=two mode=auto out=demo-out check=0 build=1 overlay=0
while [ $# -gt 0 ]; do
  case "$1" in
    --source) source_url=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --fps) fps=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --topology) topology=$2; shift 2 ;;
    --mode) mode=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --check) check=1; shift ;;
    --overlay) overlay=1; shift ;;
    --no-build) build=0; shift ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; /^# SPDX-/d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "demo: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ $size =~ ^([0-9]+)x([0-9]+)$ ]] || { echo "demo: --size wants WxH, e.g. 1280x720" >&2; exit 2; }
width=${BASH_REMATCH[1]} height=${BASH_REMATCH[2]}
[[ $fps =~ ^[0-9]+$ && $fps -gt 0 ]] || { echo "demo: --fps wants a whole number of frames per second" >&2; exit 2; }
[[ $duration =~ ^[0-9]+$ && $duration -gt 0 ]] || { echo "demo: --duration wants whole seconds" >&2; exit 2; }
[[ $topology =~ ^(one|two)$ ]] || { echo "demo: --topology is one or two" >&2; exit 2; }

started=$SECONDS
step() { printf 'demo: [%3d s] %s\n' "$((SECONDS - started))" "$*"; }
if ((build)); then
  bash scripts/setup.sh
  bash scripts/build.sh
fi
source scripts/build-dir.sh
bin=$(rdmastream_build_dir "$PWD")
for p in sender/rdmasend receiver/rdmarecv; do
  [ -x "$bin/$p" ] || { echo "demo: no $bin/$p: build first (scripts/build.sh) or drop --no-build" >&2; exit 2; }
done
for tool in ffmpeg ffprobe gst-inspect-1.0; do
  command -v "$tool" >/dev/null || { echo "demo: $tool is missing: run scripts/setup.sh" >&2; exit 2; }
done
mkdir -p "$out"
out=$(cd "$out" && pwd)
# The guests see this folder at the same path (the bed's --out).
case $out in *[\'\"\ ]*) echo "demo: --out must not contain quotes or spaces: $out" >&2; exit 2 ;; esac
rm -f "$out"/snapshot-*.png "$out"/demo.avi "$out"/demo.y4m "$out"/demo.wav "$out"/demo.mp4 "$out"/*.json

# The source: an encoded clip, so that rdmasend's decoder writes each
# picture straight into registered memory (H.264 has DR1; lavfi's raw
# frames have none and cost a copy each). ultrafast: no CABAC, no deblocking,
# one reference; CRF 30: fewer coefficients; so an emulated CPU decodes it
# in time (a third less decoding than x264's default CRF 23). MP4, because --loop
# seeks back to the start (a raw .h264 cannot).
# The sound: a quiet 440 Hz tone (-26 dBFS, under av-offset.sh's -20 dB
# threshold) and a 1 kHz beep of 50 ms at every whole second from 1 s,
# when the picture flashes white; AAC, as a camera's or a broadcast's.
if [ -z "$source_url" ]; then
  clip=$bin/demo-clips/testsrc2-av-${width}x${height}-${fps}.mp4
  if [ ! -s "$clip" ]; then
    step "making the clip once: 10 s of testsrc2 ${width}x${height} at $fps frames/s with timecode, flash and beep, H.264 + AAC -> $clip"
    mkdir -p "$(dirname "$clip")"
    ffmpeg -nostdin -loglevel error -y \
      -f lavfi -i "testsrc2=size=${width}x${height}:rate=$fps,drawbox=x=0:y=0:w=iw:h=ih:color=white:t=fill:enable='eq(mod(n\\,$fps)\\,0)*gte(n\\,$fps)',drawtext=timecode='00\\:00\\:00\\:00':rate=$fps:fontsize=$((height / 12)):fontcolor=white:box=1:boxcolor=black@0.6:boxborderw=8:x=(w-tw)/2:y=h-th-$((height / 24))" \
      -f lavfi -i "aevalsrc='0.05*sin(2*PI*440*t)+if(gte(t\\,1)*lt(mod(t\\,1)\\,0.05)\\,0.8*sin(2*PI*1000*t)\\,0)':s=48000" \
      -frames:v $((10 * fps)) -c:v libx264 -preset ultrafast -tune zerolatency -crf 30 -g $((2 * fps)) -pix_fmt yuv420p \
      -c:a aac -b:a 128k -shortest "$clip.tmp.mp4"
    mv "$clip.tmp.mp4" "$clip"
  fi
  source_url=$clip
  source_rate=$fps
else
  # The target is the source's own rate (rdmasend paces by its timestamps).
  probe=("$source_url")
  [[ $source_url == lavfi:* ]] && probe=(-f lavfi "${source_url#lavfi:}")
  source_rate=$(ffprobe -v error -select_streams v:0 -show_entries stream=avg_frame_rate -of csv=p=0 "${probe[@]}" 2>/dev/null \
    | awk -F/ 'NR == 1 && $1 > 0 { printf "%d", ($2 > 0 ? $1 / $2 : $1) + 0.5 }')
  [[ $source_rate =~ ^[1-9][0-9]*$ ]] || source_rate=$fps
fi
frames=$((duration * source_rate))

# A GStreamer registry scanned here once: a guest would otherwise rescan
# every plugin at boot, which under emulation takes longer than the demo.
export GST_REGISTRY_1_0=$bin/demo-gst-registry.bin
gst-inspect-1.0 textoverlay >/dev/null

# The receiving end: rdmarecv writes every picture as it lies in its ring
# slot (no copy: the y4m muxer reads the planes through an AVFrame over the
# slot; a .nut or .mkv would want packed rows, a copy per picture) to a
# .y4m file, and the sound beside it to a .wav (AAC decodes to planar
# samples: interleaved on the way); the host muxes them into an MP4 and
# takes the snapshots afterwards.
# Nothing more runs there: between two emulated guests the receiver's one
# vCPU also does rxe's work (an ICRC over every 4 KiB packet). --overlay
# takes the frames into GStreamer instead, where textoverlay burns each
# frame's number and one-way latency into its slot, in place, and MJPEG at
# half size records it: the pango text and the encoder cost that vCPU about
# half the frames. No queue either way: one would hold slots, and rdmarecv
# would copy frames out to keep the sender going.
if ((overlay)); then
  recorded=$out/demo.avi
  pipeline="textoverlay name=rdmastats halignment=left valignment=bottom font-desc=\"Sans 14\" shaded-background=true
    ! videoscale ! video/x-raw,width=$((width / 4 * 2)),height=$((height / 4 * 2)) ! jpegenc quality=80
    ! avimux name=mux ! filesink location=\"$recorded\"
    flow1. ! audioconvert ! audio/x-raw,format=S16LE,layout=interleaved ! mux."
  pipeline=${pipeline//$'\n'/ }
  output="--gst '$pipeline'"
  receiver_path="ring slots into GStreamer in place (textoverlay, MJPEG)"
else
  recorded=$out/demo.y4m
  output="-o $recorded -o $out/demo.wav"
  receiver_path="ring slots written to the video in place"
fi
device='${RDMABED_DEVICE:+-d $RDMABED_DEVICE}'

step "$source_url -> rdmasend (decodes into registered memory) -> RDMA ($topology) -> rdmarecv -> GStreamer; $frames frames at $source_rate frames/s, live policy"
# This machine may be shared: under emulation the rate follows its load.
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
set +e
scripts/softroce/rdmabed --mode "$mode" --topology "$topology" --timeout $((duration * 30 + 180)) --out "$out" \
  --node0 "$bin/receiver/rdmarecv --policy live --slots 6 $device $output --stats-json \$RDMABED_OUT/recv.json" \
  --node1 "$bin/sender/rdmasend '$source_url' --loop --connect \$RDMABED_SERVER_ADDR --connect-timeout 120 --realtime --policy live --frames $frames $device --stats-json \$RDMABED_OUT/send.json"
status=$?
set -e
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
step "the stream ended (bed exit $status)"

# --- the video: every frame the receiver recorded -------------------------------
video_frames=-1 av_offset='' source_offset=''
if [ -s "$recorded" ]; then
  # An MP4 plays everywhere; the guest wrote raw frames (or MJPEG) because
  # encoding H.264 there would take the emulated CPU from the stream.
  # passthrough: every recorded frame stays one frame (no frame is dropped
  # or repeated to fit a rate).
  step "encoding $recorded into $out/demo.mp4"
  sound=()
  [ -s "$out/demo.wav" ] && sound=(-i "$out/demo.wav" -c:a aac -b:a 128k)
  ffmpeg -nostdin -loglevel error -y -i "$recorded" "${sound[@]}" -fps_mode passthrough -c:v libx264 -preset veryfast \
    -pix_fmt yuv420p "$out/demo.mp4" && rm -f "$recorded" "$out/demo.wav"
  # The A/V offset in the video, and in the source: each flash against the
  # nearest beep (a picture the live policy dropped loses its pair, not the
  # order). Only the demo's own clip has them.
  if [ "$source_url" = "${clip:-}" ]; then
    av_offset=$(scripts/av-offset.sh --nearest "$out/demo.mp4" 2>/dev/null || true)
    source_offset=$(scripts/av-offset.sh --nearest "$source_url" 2>/dev/null || true)
  fi
  ffmpeg -nostdin -loglevel error -y -i "$out/demo.mp4" -vf fps=1/2 "$out/snapshot-%02d.png" || true
  video_frames=$(ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames -of csv=p=0 \
    "$out/demo.mp4" 2>/dev/null || echo -1)
fi

# --- what happened ----------------------------------------------------------------
field() { sed -n "s/^ *\"$2\": *\"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}$/\1/p" "$1" | head -n 1; }
if [ ! -s "$out/recv.json" ] || [ ! -s "$out/send.json" ]; then
  echo "demo: no stats from one of the programs (see the messages above)" >&2
  exit $((status ? status : 1))
fi
r=$out/recv.json s=$out/send.json
# The pictures' counts (flow 0) where the stream is a programme; the
# sound's frames are copied on purpose (a few kilobytes each: the
# decoder's samples into registered memory, and interleaved into the file).
flow_field() { # JSON KEY: flow 0's value, or the stream's when it has one flow
  python3 -c 'import json, sys
j = json.load(open(sys.argv[1])); f = j.get("flows")
print((f[0] if f else j)[sys.argv[2]])' "$1" "$2" 2>/dev/null || field "$1" "$2"
}
flow_sound() { # JSON KEY: flow 1's value, or nothing
  python3 -c 'import json, sys
f = json.load(open(sys.argv[1])).get("flows") or []
print(f[1][sys.argv[2]] if len(f) > 1 else "")' "$1" "$2" 2>/dev/null || true
}
got=$(flow_field "$r" frames) rcopies=$(flow_field "$r" copies) scopies=$(flow_field "$s" copies) sent=$(flow_field "$s" frames)
sound_got=$(flow_sound "$r" frames)
awk -v target="$source_rate" -v sent="$sent" -v sdrops="$(field "$s" drops)" -v got="$got" \
    -v fps_got="$(field "$r" stream_fps)" -v bytes="$(field "$r" bytes)" \
    -v lat="$(field "$r" latency_mean_us)" -v latmax="$(field "$r" latency_max_us)" \
    -v slat="$(field "$s" latency_mean_us)" -v copies="$rcopies" -v scopies="$scopies" \
    -v spath="$(field "$s" path)" -v rpath="$receiver_path" -v offered="$frames" -v video="$video_frames" -v size="${width}x${height}" \
    -v cores="$(nproc)" -v load0="$load_before" -v load1="$load_after" \
    -v default_source="$([ "$source_url" = "${clip:-}" ] && echo 1 || echo 0)" \
    -v sound="$sound_got" -v av="$av_offset" -v av_source="$source_offset" 'BEGIN {
    sc = sent ? scopies / sent : 0; rc = got ? copies / got : 0
    if (spath ~ /zero-copy/) how = "decoded straight into registered memory (DR1)"
    else if (spath ~ /no DR1/) how = "decoded, then one copy into registered memory (this decoder has no DR1)"
    else if (spath ~ /conversion/) how = "decoded, then converted into registered memory"
    else how = spath
    frame_bytes = got ? bytes / got : 0
    gbps = frame_bytes * 8 * target / 1e9
    printf "\ndemo summary\n"
    printf "  sender:   %s: %.2f copies/picture (%d of %d)\n", how, sc, scopies, sent
    printf "  receiver: %s: %.2f copies/picture (%d of %d)\n", rpath, rc, copies, got
    if (sound != "") printf "  sound:    %d audio frames received beside the pictures (AAC decoded by rdmasend; one copy each, a few kilobytes)\n", sound
    printf "  frames:   %d offered by the source, %d sent, %d dropped by the live policy, %d received\n", offered, sent, sdrops, got
    printf "  rate:     %.1f frames/s received against a %d frames/s source (%.0f %%)%s\n", fps_got, target, 100 * fps_got / target, \
      (fps_got >= 0.9 * target ? ": live" : ": below 90 % of the source, not live (see docs/benchmarks.md, the demo figure)")
    printf "  link:     %d-byte frames at %d frames/s are %.3f Gb/s: %.2f %% of a 100 Gb/s link", frame_bytes, target, gbps, gbps
    if (default_source && size != "1920x1080") printf " (1080p60: %.2f %%)", 1920 * 1080 * 1.5 * 8 * 60 / 1e9
    printf "\n"
    printf "  latency:  one way (sender post -> receiver) %.1f ms mean, %.1f ms max; sender post -> delivery %.1f ms mean\n", lat / 1000, latmax / 1000, slat / 1000
    printf "  host:     %d cores, load average %s before, %s after (emulated rates fall as it rises)\n", cores, load0, load1
    if (video >= 0) printf "  video:    demo.mp4 holds %d frames, %d received: %s\n", video, got, (video == got ? "every received frame" : "FRAMES MISSING")
    else printf "  video:    none was written (see the messages above)\n"
    if (av != "") {
      split(av, a, " "); split(av_source, b, " ")
      printf "  A/V:      the sound is %.3f ms from its pictures in demo.mp4 (median of %d flash/beep pairs, %.3f to %.3f ms); the source: %.3f ms\n", a[1], a[2], a[3], a[4], b[1]
    } else if (default_source) printf "  A/V:      no flash and beep found in what was written\n"
  }'
step "artefacts in $out:"
ls -1 "$out" | grep -E '\.(mp4|avi|png|json)$' | sed 's/^/  /' || true
if ((check)); then
  bad=()
  [[ $scopies == 0 ]] || bad+=("the sender copied $scopies frames")
  [[ $rcopies == 0 ]] || bad+=("the receiver copied $rcopies frames")
  [[ $got =~ ^[1-9][0-9]*$ ]] || bad+=("no frame arrived")
  [[ $video_frames == "$got" ]] || bad+=("the video holds $video_frames frames, $got were received")
  if [ "$source_url" = "${clip:-}" ]; then
    [[ -n $sound_got && $sound_got != 0 ]] || bad+=("no sound arrived")
    if [ -z "$av_offset" ]; then
      bad+=("no flash and beep in the written video")
    elif ! awk -v d="${av_offset%% *}" 'BEGIN { exit !(d >= -1 && d <= 1) }'; then
      bad+=("the sound is ${av_offset%% *} ms from its pictures (the source: ${source_offset%% *} ms): more than 1 ms")
    fi
  fi
  if ((${#bad[@]})); then
    printf 'demo: check FAILED: %s\n' "${bad[@]}" >&2
    exit 1
  fi
  echo "demo: check passed: 0 copies per picture on both ends, the video holds all $got received frames${av_offset:+, its sound within 1 ms of its pictures}"
fi
exit "$status"
