// SPDX-License-Identifier: LGPL-2.1-or-later
// Decoded audio as rdmasend sends it: one AVFrame is one transport frame,
// its samples exactly as decoded (interleaved: data[0]; planar: channel
// planes back to back, each nb_samples * bytes per sample), never
// re-chunked or converted.
//
// Timestamps: the transport carries nanoseconds, which cannot say a
// container's 1/1000 s timestamps are "sample 1024" (21 ms is sample 1008).
// So each frame is put on its own sample grid first, as ffmpeg's CLI does
// before its filters (fftools decode_audio: av_rescale_delta from the
// stream's time base to 1/rate, following on from the previous frame while
// the timestamps stay within their rounding and the packets follow each
// other within their durations), and sent as that sample
// position in nanoseconds: a receiver rounding back to 1/rate gets the
// sample number exactly (at any rate below 1 GHz).
#pragma once

#include "rdmastream_cli/audio_caps.hpp"

extern "C" {
#include <libavutil/frame.h>
#include <libavutil/rational.h>
}

#include <cstddef>
#include <cstdint>
#include <span>

namespace rdmastream::cli {

// The caps of `f`'s samples. An unspecified channel layout is read as
// FFmpeg's default for its channel count, as ffmpeg's CLI guesses it
// (guess_input_channel_layout). Throws UserError for a sample format
// GStreamer has no name for or more than 64 channels (to_caps_string).
RawAudioCaps audio_caps_of(const AVFrame& f);
bool same_caps(const RawAudioCaps& a, const RawAudioCaps& b) noexcept;

// The payload bytes of `f`: nb_samples * channels * bytes per sample.
std::size_t audio_payload_size(const AVFrame& f) noexcept;
// Copies `f`'s samples into `out` (at least audio_payload_size bytes).
void copy_audio(const AVFrame& f, std::span<std::byte> out) noexcept;
// Copies samples [first, first + count) of `f` into `out` (count samples of
// every channel), laid out as a frame of `count` samples would be: one
// packet of --audio-packet-ms.
void copy_audio_range(const AVFrame& f, int first, int count, std::span<std::byte> out) noexcept;

// Frame timestamps on the sample grid, in ns (see above).
class AudioTimestamps {
public:
    // `start_pts`: the input's start in `time_base`, which becomes 0.
    AudioTimestamps(AVRational time_base, std::int64_t start_pts) : time_base_(time_base), start_pts_(start_pts) {}
    // `f`'s start in ns, `offset_ns` added (--loop's laps); a frame without
    // a timestamp follows the previous one. `packet_break`: its packet came
    // later after the previous one than that one lasted (a gap, or container
    // rounding: 21 ms after a 20 ms packet), where fftools takes the frame's
    // own timestamp, rounded, instead of the continuation
    // (InputSource::packet_break).
    std::int64_t pts_ns(const AVFrame& f, std::int64_t offset_ns, bool packet_break);
    static std::int64_t duration_ns(const AVFrame& f) noexcept;
    // The input went back to its start (--loop): the next frame starts anew.
    void restart() noexcept;

private:
    AVRational time_base_;
    std::int64_t start_pts_;
    std::int64_t last_ = AV_NOPTS_VALUE; // av_rescale_delta's state (AV_NOPTS_VALUE: none), in samples
    int rate_ = 0;
};

} // namespace rdmastream::cli
