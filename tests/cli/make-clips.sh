#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Makes the tiny test clips the CLI tests stream, and FFmpeg's own framemd5
# of each (the reference rdmarecv must match byte for byte). Runs on the
# host before any guest boots (a ctest fixture, which every ctest run sets
# up again: the clips made by an earlier run are kept while this script,
# the side-data tool and FFmpeg are the same, as DIR/.made records).
# Usage: make-clips.sh DIR SIDE_DATA_CLIP (tests/cli/side_data_clip.cpp)
set -eu
dir=$1 side_data_clip=$2
made="$(cat "$0" "$side_data_clip" | sha256sum) $(ffmpeg -version | head -n 1)"
if [ "$(cat "$dir/.made" 2>/dev/null)" = "$made" ]; then
  echo "make-clips: the clips in $dir are up to date"
  exit 0
fi
mkdir -p "$dir"
cd "$dir"
rm -f .made
ff() { ffmpeg -nostdin -v error -y "$@"; }
src() { echo "testsrc2=size=$1:rate=25"; }

ff -f lavfi -i "$(src 320x240)" -frames:v 12 -c:v libx264 -pix_fmt yuv420p h264.mp4
ff -f lavfi -i "$(src 1920x1080)" -frames:v 3 -c:v libx264 -preset ultrafast -pix_fmt yuv420p h264_1080p.mp4
ff -f lavfi -i "$(src 320x240)" -frames:v 10 -c:v libx265 -pix_fmt yuv420p10le -x265-params log-level=none hevc10.mkv
ff -f lavfi -i "$(src 320x240)" -frames:v 10 -c:v libvpx-vp9 -deadline realtime vp9.webm
ff -f lavfi -i "$(src 320x240)" -frames:v 10 -c:v mpeg2video mpeg2.mpg
ff -f lavfi -i "$(src 320x240)" -frames:v 10 -c:v prores_ks -profile:v 2 -pix_fmt yuv422p10le prores.mov
ff -f lavfi -i "$(src 321x241)" -frames:v 10 -c:v ffv1 -pix_fmt yuv420p odd.mkv
ff -f lavfi -i "$(src 320x240)" -frames:v 10 -c:v png -pix_fmt rgb24 rgb.nut
ff -f lavfi -i "$(src 320x240)" -f lavfi -i sine=frequency=440:sample_rate=48000 -frames:v 10 -t 0.4 \
   -c:v libx264 -pix_fmt yuv420p -c:a aac audio.mkv
# Audio alone: AAC (fltp, mp4 with its priming edit list), PCM s24le in
# .mov (s32 with 24 bits), f64 and u8 WAV (its layout unknown: guessed
# mono, as ffmpeg does). Opus, MP2 and AC-3 go in the programmes below.
sine() { echo "sine=frequency=$1:sample_rate=$2:duration=0.5"; }
ff -f lavfi -i "$(sine 440 44100)" -ac 2 -c:a aac aac_stereo.mp4
ff -f lavfi -i "$(sine 440 96000)" -ac 2 -c:a pcm_s24le s24.mov
ff -f lavfi -i "$(sine 440 22050)" -c:a pcm_f64le f64.wav
ff -f lavfi -i "$(sine 440 8000)" -c:a pcm_u8 u8.wav
# Programmes: a picture and its sound, the pairs issue 24 names (H.264 +
# AAC, HEVC + Opus, ProRes + PCM 24-bit, MPEG-2 + MP2 in MPEG-PS, H.264 +
# AC-3 5.1). rdmasend sends both by default, and rdmarecv's --framemd5 must
# equal `ffmpeg -map 0:v:0 -map 0:a:0 -f framemd5` of each.
prog() { # OUT VCODEC... -- ACODEC...
  out=$1; shift
  ff -f lavfi -i "$(src 320x240)" -f lavfi -i "${PROG_AUDIO:-$(sine 440 48000)}" -t 0.4 -map 0:v -map 1:a "$@" "$out"
}
prog prog_h264_aac.mp4 -c:v libx264 -pix_fmt yuv420p -c:a aac -ac 2
prog prog_hevc_opus.mkv -c:v libx265 -pix_fmt yuv420p -x265-params log-level=none -c:a libopus -ac 2
prog prog_prores_s24.mov -c:v prores_ks -profile:v 2 -pix_fmt yuv422p10le -c:a pcm_s24le -ac 2
prog prog_mpeg2_mp2.mpg -c:v mpeg2video -c:a mp2 -ac 2
PROG_AUDIO="aevalsrc=sin(440*2*PI*t)|sin(550*2*PI*t)|sin(660*2*PI*t)|0.1*sin(50*2*PI*t)|sin(770*2*PI*t)|sin(880*2*PI*t):c=5.1:s=48000:d=0.4" \
  prog prog_h264_ac3_51.mkv -c:v libx264 -pix_fmt yuv420p -c:a ac3
# (Opus's is made in the guest: interop.sh's node-programme.) And the
# sound as decoded, for rdmarecv -o's file: its audio must decode to it.
for clip in audio.mkv prog_h264_aac.mp4 prog_prores_s24.mov prog_mpeg2_mp2.mpg prog_h264_ac3_51.mkv; do
  ff -i "$clip" -map 0:v:0 -map 0:a:0 -f framemd5 "$clip.prog.ref.md5"
done
ff -i prog_h264_aac.mp4 -map 0:a:0 -c:a pcm_f32le -f md5 prog_h264_aac.mp4.f32.md5
ff -i prog_prores_s24.mov -map 0:a:0 -c:a pcm_s32le -f md5 prog_prores_s24.mov.s32.md5
# A/V alignment (av-sync.sh): black pictures with a white one at 1 s and
# 2 s, silence with a 50 ms 1 kHz beep starting at the same instants.
ff -f lavfi -i "color=c=black:s=320x240:r=25:d=3,drawbox=x=0:y=0:w=iw:h=ih:color=white:t=fill:enable='eq(n\,25)+eq(n\,50)'" \
   -f lavfi -i "aevalsrc='if(gte(t\,0.5)*lt(mod(t\,1)\,0.05)\,0.8*sin(2*PI*1000*t)\,0)':s=48000:d=3" \
   -c:v libx264 -pix_fmt yuv420p -c:a pcm_s16le avsync.mkv
# A resolution change mid-file: two H.264 elementary streams back to back.
ff -f lavfi -i "$(src 320x240)" -frames:v 6 -c:v libx264 -pix_fmt yuv420p -bsf:v h264_mp4toannexb part1.h264
ff -f lavfi -i "$(src 160x120)" -frames:v 6 -c:v libx264 -pix_fmt yuv420p -bsf:v h264_mp4toannexb part2.h264
cat part1.h264 part2.h264 > reschange.h264
# A truncated file: the second half of an MPEG-TS is gone mid-packet.
ff -f lavfi -i "$(src 320x240)" -frames:v 20 -c:v libx264 -pix_fmt yuv420p truncated_full.ts
head -c $(( $(stat -c %s truncated_full.ts) / 2 + 77 )) truncated_full.ts > truncated.ts
# Every frame with its own captions (A53, as SEI), and what they are.
"$side_data_clip" make captions.mkv 12
"$side_data_clip" dump captions.mkv > captions.mkv.side
# A codec this FFmpeg cannot decode: the Matroska codec id is renamed.
perl -pe 's/V_MPEG4\/ISO\/AVC/V_MPEG4\/ISO\/ZZZ/g' audio.mkv > unknown_codec.mkv

for clip in h264.mp4 h264_1080p.mp4 hevc10.mkv vp9.webm mpeg2.mpg prores.mov odd.mkv rgb.nut audio.mkv; do
  ff -i "$clip" -map 0:v:0 -f framemd5 "$clip.ref.md5"
done
# Audio as ffmpeg's framemd5 hashes it (pcm_s16le), and each clip's samples
# as decoded (the -o check: PCM of the decoder's own sample format).
for clip in aac_stereo.mp4 s24.mov f64.wav u8.wav; do
  ff -i "$clip" -map 0:a:0 -f framemd5 "$clip.a.ref.md5"
done
ff -i aac_stereo.mp4 -map 0:a:0 -c:a pcm_f32le -f md5 aac_stereo.mp4.f32.md5
ff -i s24.mov -map 0:a:0 -c:a pcm_s32le -f md5 s24.mov.s32.md5
# FFmpeg scales a mid-stream size change to the first size unless told not to.
ff -i reschange.h264 -map 0:v:0 -autoscale 0 -f framemd5 reschange.h264.ref.md5
ff -i h264.mp4 -map 0:v:0 -pix_fmt rgba -f framemd5 h264.mp4.rgba.ref.md5
echo "$made" > .made
