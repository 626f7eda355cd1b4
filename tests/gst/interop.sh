#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# One leg of an interop test between the GStreamer elements and the CLIs,
# run on a test-bed node (the same protocol both ways).
#
#   interop.sh cli-to-gst recv CLIPDIR CLIP...   rdmasrc, one stream per clip: its
#       frames (ffmpeg framemd5 lines) must equal CLIP.ref.md5, FFmpeg's own decode
#   interop.sh cli-to-gst send CLIPDIR CLIP...   rdmasend CLIP, one after another
#   interop.sh cli-to-playbin recv CLIPDIR CLIP...   playbin uri=rdma://0.0.0.0:18515,
#       one stream per clip, frames checked as cli-to-gst's; then
#       gst-play-1.0 rdma://0.0.0.0:18515 plays one more stream (the first
#       clip again: send CLIP... CLIP1), every frame counted at its video sink
#   interop.sh cli-to-gst-programme recv CLIPDIR CLIP SAMPLES   a programme
#       (rdmasend's picture and sound) into rdmasrc, then into playbin: the
#       pictures out of "src" (or playbin's video sink) equal CLIP.prog.ref.md5's
#       stream 0, the sound out of "src_1" (playbin's audio sink), as F32LE
#       interleaved, equals the source's decoded samples (SAMPLES: ffmpeg -f md5);
#       then rdmarecv --framemd5 --gst "fakesink flow1. ! ...": the same
#       from its appsrc flow1, the sound sent in 1 ms packets
#       (rdmasend --audio-packet-ms 1: 400 frames or more)
#   interop.sh cli-to-gst-programme send CLIPDIR CLIP   rdmasend CLIP three times
#   interop.sh gst-to-cli-programme recv|send 'VIDEO' 'AUDIO'   rdmasink name=s
#       VIDEO ! queue ! s.sink AUDIO ! queue ! s.sink_1 into rdmarecv
#       --framemd5 -o prog.wav, then into rdmasrc (s.src, s.src_1): the
#       pictures equal VIDEO's, the sound AUDIO's, both times; then the
#       sound A-law encoded into rdmasrc: src_1 gives the encoder's bytes
#   interop.sh gst-to-cli recv 'SOURCE'          rdmarecv --framemd5: must equal
#       the frames of SOURCE ! fakesink without RDMA
#   interop.sh gst-to-cli-held recv 'SOURCE'     rdmarecv --gst into a queue
#       that holds every frame, then filesink: the file must equal SOURCE !
#       filesink's without RDMA, the frames past the copy threshold copied
#   interop.sh gst-to-cli send 'SOURCE'          SOURCE ! rdmasink
#
# Needs GST_RDMA_CHECK, RDMASEND, RDMARECV; $RDMABED_SERVER_ADDR and
# $RDMABED_OUT come from the test bed.
set -eu
direction=$1 side=$2
shift 2
out=${RDMABED_OUT:-/tmp}

# Compares the frame lines (not the headers: FFmpeg's names its version).
same_frames() { # NAME GOT WANT
    grep '^0,' "$2" >"$2.frames" || true
    grep '^0,' "$3" >"$2.want"
    if [ ! -s "$2.want" ] || ! diff -u "$2.want" "$2.frames" >"$2.diff"; then
        echo "FAILED: $1: the frames differ from the reference ($3):"
        head -20 "$2.diff"
        return 1
    fi
    echo "ok: $1: $(wc -l <"$2.want") frames identical to the reference"
}

case $direction-$side in
cli-to-gst-recv)
    clipdir=$1
    shift
    status=0
    for clip in "$@"; do
        "$GST_RDMA_CHECK" --framemd5 "$out/$clip.gst.md5" "rdmasrc ! fakesink name=digest" || status=1
        same_frames "$clip" "$out/$clip.gst.md5" "$clipdir/$clip.ref.md5" || status=1
    done
    exit $status
    ;;
cli-to-playbin-recv)
    clipdir=$1
    shift
    status=0
    for clip in "$@"; do
        "$GST_RDMA_CHECK" --framemd5 "$out/$clip.playbin.md5" \
            "playbin uri=rdma://0.0.0.0:18515 video-sink=\"fakesink name=digest\"" || status=1
        same_frames "playbin $clip" "$out/$clip.playbin.md5" "$clipdir/$clip.ref.md5" || status=1
    done
    # gst-play-1.0 as a user runs it, a fake video sink instead of a display;
    # -v prints the sink's last-message for every buffer it gets.
    command -v gst-play-1.0 >/dev/null || { echo "FAILED: no gst-play-1.0 (gstreamer1.0-plugins-base-apps: scripts/setup.sh)"; exit 1; }
    gst-play-1.0 -v --no-interactive --videosink "fakesink silent=false sync=false" rdma://0.0.0.0:18515 \
        >"$out/gst-play.log" 2>&1 || status=1
    want=$(grep -c '^0,' "$clipdir/$1.ref.md5")
    got=$(grep -c 'last-message = chain' "$out/gst-play.log" || true)
    if grep -q '^ERROR' "$out/gst-play.log" || [ "$got" != "$want" ]; then
        echo "FAILED: gst-play-1.0 rdma://0.0.0.0:18515: $got frames at its video sink, $1 has $want:"
        grep -v 'last-message' "$out/gst-play.log" | tail -20
        status=1
    else
        echo "ok: gst-play-1.0 rdma://0.0.0.0:18515: $got frames of $1 at its video sink"
    fi
    exit $status
    ;;
cli-to-gst-programme-recv)
    clipdir=$1 clip=$2 samples=$3
    status=0
    # Both essences to files: the sound interleaved as FFmpeg writes pcm_f32le
    # (audioconvert only reorders the planes: the samples stay bit for bit).
    to_f32="audioconvert ! audio/x-raw,format=F32LE,layout=interleaved ! filesink"
    for how in ${HOWS:-rdmasrc playbin rdmarecv}; do
        if [ $how = rdmarecv ]; then # --gst: the sound from the appsrc flow1
            "$RDMARECV" --framemd5 "$out/$how.md5" -q --idle-timeout 60 \
                --gst "fakesink flow1. ! $to_f32 location=$out/$how.f32" || status=1
        elif [ $how = rdmasrc ]; then
            # One streaming thread pushes every flow (as a demuxer does): a queue
            # on each branch, so that one sink prerolling does not hold the other.
            pipeline="rdmasrc name=s s.src ! queue ! fakesink name=digest s.src_1 ! queue ! $to_f32 location=$out/$how.f32"
        else
            pipeline="playbin uri=rdma://0.0.0.0:18515 video-sink=\"fakesink name=digest\" audio-sink=\"$to_f32 location=$out/$how.f32\""
        fi
        [ $how = rdmarecv ] || "$GST_RDMA_CHECK" --framemd5 "$out/$how.md5" "$pipeline" || status=1
        same_frames "$how $clip: pictures" "$out/$how.md5" "$clipdir/$clip.prog.ref.md5" || status=1
        got="MD5=$(md5sum <"$out/$how.f32" | cut -d' ' -f1)"
        if [ "$got" = "$(cat "$clipdir/$samples")" ]; then
            echo "ok: $how $clip: sound, $(wc -c <"$out/$how.f32") bytes of F32LE, equal to the source's decoded samples"
        else
            echo "FAILED: $how $clip: the sound ($got, $(wc -c <"$out/$how.f32") bytes) differs from the source's ($(cat "$clipdir/$samples"))"
            status=1
        fi
    done
    # The third stream's sound came in 1 ms packets: as many frames, the
    # samples the same (above).
    packets=$(grep -c '^1,' "$out/rdmarecv.md5" || true)
    if [ "$packets" -ge 400 ]; then
        echo "ok: rdmasend --audio-packet-ms 1: $packets audio frames (1 ms each), the samples bit for bit the source's"
    else
        echo "FAILED: rdmasend --audio-packet-ms 1: $packets audio frames, not the 400 or more of 1 ms packets"
        status=1
    fi
    exit $status
    ;;
cli-to-gst-programme-send)
    for i in 1 2; do # rdmasrc, playbin
        "$RDMASEND" "$1/$2" --connect "$RDMABED_SERVER_ADDR" --connect-timeout 20 -q
    done
    # rdmarecv --gst: the sound cut into 1 ms packets (48 samples)
    "$RDMASEND" "$1/$2" --connect "$RDMABED_SERVER_ADDR" --connect-timeout 20 -q --audio-packet-ms 1
    ;;
cli-to-gst-send)
    clipdir=$1
    shift
    for clip in "$@"; do
        # rdmasend gives up after --connect-timeout: the receiver of the
        # previous clip may still be closing.
        "$RDMASEND" "$clipdir/$clip" --connect "$RDMABED_SERVER_ADDR" --connect-timeout 20 -q
    done
    ;;
gst-to-cli-recv)
    "$RDMARECV" --framemd5 "$out/cli.md5" -q --idle-timeout 60
    "$GST_RDMA_CHECK" --framemd5 "$out/ref.md5" "$1 ! fakesink name=digest"
    same_frames rdmarecv "$out/cli.md5" "$out/ref.md5"
    ;;
gst-to-cli-programme-recv)
    # rdmasink's picture (sink) and sound (sink_1) into rdmarecv: the
    # pictures equal VIDEO ! fakesink's, the sound (written as WAV) equals
    # AUDIO ! filesink's samples bit for bit.
    video=$1 audio=$2
    "$RDMARECV" --framemd5 "$out/prog.md5" -o "$out/prog.wav" --idle-timeout 60 2>"$out/prog.recv.log"
    status=0
    # rdmasink told where its pts 0 is (the pipeline clock's instant on this host's clock).
    if grep -q "rdmarecv: the sender's pts 0 is " "$out/prog.recv.log"; then
        echo "ok: rdmasink programme: $(grep -o "the sender's pts 0 is .*" "$out/prog.recv.log")"
    else
        echo "FAILED: rdmasink programme: rdmarecv heard no clock anchor:"
        cat "$out/prog.recv.log"
        status=1
    fi
    "$GST_RDMA_CHECK" --framemd5 "$out/prog.ref.md5" "$video ! fakesink name=digest"
    same_frames "rdmasink programme: pictures" "$out/prog.md5" "$out/prog.ref.md5" || status=1
    "$GST_RDMA_CHECK" "$audio ! filesink location=$out/prog.ref.f32"
    ffmpeg -v error -i "$out/prog.wav" -f f32le -y "$out/prog.f32"
    audio_frames=$(grep -c '^1,' "$out/prog.md5" || true)
    if cmp -s "$out/prog.ref.f32" "$out/prog.f32"; then
        echo "ok: rdmasink programme: sound, $audio_frames frames, $(wc -c <"$out/prog.f32") bytes equal to the source's"
    else
        echo "FAILED: rdmasink programme: the sound ($audio_frames frames, $(wc -c <"$out/prog.f32") bytes) differs from the source's ($(wc -c <"$out/prog.ref.f32") bytes)"
        status=1
    fi
    # The same stream again, into rdmasrc: its pad src_1 exists only if
    # rdmasink announced the sound before the stream's first frame.
    "$GST_RDMA_CHECK" --framemd5 "$out/prog.src.md5" \
        "rdmasrc name=s s.src ! queue ! fakesink name=digest s.src_1 ! queue ! filesink location=$out/prog.src.f32" \
        >"$out/prog.src.log"
    if grep -q 'gst-rdma-check: s: GstRdmaSrcClock, clock=(string)' "$out/prog.src.log"; then
        echo "ok: rdmasink programme into rdmasrc: $(grep -o 'GstRdmaSrcClock.*' "$out/prog.src.log")"
    else
        echo "FAILED: rdmasink programme into rdmasrc: no GstRdmaSrcClock message"
        status=1
    fi
    same_frames "rdmasink programme into rdmasrc: pictures" "$out/prog.src.md5" "$out/prog.ref.md5" || status=1
    if cmp -s "$out/prog.ref.f32" "$out/prog.src.f32"; then
        echo "ok: rdmasink programme into rdmasrc: sound, $(wc -c <"$out/prog.src.f32") bytes equal to the source's"
    else
        echo "FAILED: rdmasink programme into rdmasrc: the sound out of src_1 ($(wc -c <"$out/prog.src.f32" 2>/dev/null || echo no) bytes) differs from the source's"
        status=1
    fi
    # Encoded sound (A-law) is carried as it is: rdmasrc's src_1 gives back
    # the encoder's bytes.
    "$GST_RDMA_CHECK" "$audio ! audioconvert ! alawenc ! filesink location=$out/prog.ref.alaw"
    "$GST_RDMA_CHECK" "rdmasrc name=s s.src ! queue ! fakesink s.src_1 ! queue ! filesink location=$out/prog.src.alaw"
    if [ -s "$out/prog.ref.alaw" ] && cmp -s "$out/prog.ref.alaw" "$out/prog.src.alaw"; then
        echo "ok: rdmasink programme, A-law sound: $(wc -c <"$out/prog.src.alaw") bytes out of src_1 as the encoder made them"
    else
        echo "FAILED: rdmasink programme, A-law sound: src_1 gave $(wc -c <"$out/prog.src.alaw" 2>/dev/null || echo no) bytes, the encoder $(wc -c <"$out/prog.ref.alaw") bytes, not the same"
        status=1
    fi
    exit $status
    ;;
gst-to-cli-programme-send)
    for i in 1 2; do # rdmarecv, then rdmasrc
        "$GST_RDMA_CHECK" "rdmasink name=s host=$RDMABED_SERVER_ADDR connect-timeout=60000 $1 ! queue ! s.sink $2 ! queue ! s.sink_1"
    done
    # rdmasrc again, the sound encoded
    "$GST_RDMA_CHECK" "rdmasink name=s host=$RDMABED_SERVER_ADDR connect-timeout=60000 $1 ! queue ! s.sink $2 ! audioconvert ! alawenc ! queue ! s.sink_1"
    ;;
gst-to-cli-held-recv)
    # 4 slots, --copy-threshold 2 (the default): frames 0 and 1 are lent,
    # the other 18 copied; without the copies the sender would stall at the 5th.
    "$RDMARECV" --slots 4 --gst "queue max-size-buffers=100 max-size-bytes=0 max-size-time=0 min-threshold-buffers=20 ! filesink location=$out/held.got" \
        --stats-json "$out/held.json" -q --idle-timeout 60
    "$GST_RDMA_CHECK" "$1 ! filesink location=$out/held.ref"
    if ! grep -q '"frames": 20,' "$out/held.json" || ! grep -q '"copies": 18,' "$out/held.json"; then
        echo "FAILED: rdmarecv --gst into a holding queue: stats are not 20 frames and 18 copies:"
        cat "$out/held.json"
        exit 1
    fi
    if ! cmp "$out/held.ref" "$out/held.got"; then
        echo "FAILED: rdmarecv --gst into a holding queue: the file differs from the pipeline without RDMA"
        exit 1
    fi
    echo "ok: rdmarecv --gst into a holding queue: 20 frames, 18 copied, $(wc -c <"$out/held.got") bytes identical"
    ;;
gst-to-cli-send)
    # As patient as the receiver (it listens for 60 s): a guest on a busy
    # host can take longer than rdmasink's default 10 s to start rdmarecv.
    "$GST_RDMA_CHECK" "$1 ! rdmasink host=$RDMABED_SERVER_ADDR connect-timeout=60000"
    ;;
*)
    echo "usage: interop.sh cli-to-gst|gst-to-cli recv|send ..." >&2
    exit 2
    ;;
esac
