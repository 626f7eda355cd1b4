// SPDX-License-Identifier: LGPL-2.1-or-later
// Received audio frames into interleaved samples of a chosen format, with
// libswresample as ffmpeg's CLI converts them (its auto-inserted aresample
// filter: swr_alloc_set_opts2 with the same layout and rate on both sides,
// default options), so the samples are bit for bit what ffmpeg makes of
// the same decoded frames: --framemd5's pcm_s16le, -o's packed PCM.
//
// Per format: the converter, and an output buffer for the format's largest
// frame. Per frame: the channels' pointers on the stack and one
// swr_convert into that buffer; no allocation. Planar samples into the
// same format interleaved (-o's PCM) are only moved, byte for byte: no
// libswresample context for a plain interleave, exact by construction.
#pragma once

#include "rdmastream_cli/audio_caps.hpp"

extern "C" {
#include <libswresample/swresample.h>
}

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace rdmastream::cli {

// A frame's samples as FFmpeg addresses them: one pointer for interleaved
// audio, one per channel for planar (channel c at c * size / channels).
// `payload` holds a whole number of sample frames (StreamLayout::check_frame).
struct AudioPlanes {
    const std::uint8_t* data[kMaxAudioChannels] = {};
    int samples = 0;
};
AudioPlanes audio_planes(const RawAudioCaps& caps, std::span<const std::byte> payload) noexcept;

class AudioConverter {
public:
    // For frames of `in` of at most `max_frame_bytes` into interleaved
    // `out_format`. Throws std::runtime_error naming `who` if libswresample
    // refuses the conversion.
    void configure(const RawAudioCaps& in, AVSampleFormat out_format, std::size_t max_frame_bytes,
                   const std::string& who);
    // The frame's samples converted; valid until the next call.
    std::span<const std::uint8_t> convert(std::span<const std::byte> payload);

private:
    struct SwrDeleter {
        void operator()(SwrContext* s) const noexcept { swr_free(&s); }
    };
    std::unique_ptr<SwrContext, SwrDeleter> swr_;
    RawAudioCaps in_;
    AVSampleFormat out_format_ = AV_SAMPLE_FMT_NONE;
    bool interleave_only_ = false; // planar in, the same samples interleaved out: no libswresample
    std::vector<std::uint8_t> out_; // the largest frame, converted
    std::string who_;
};

} // namespace rdmastream::cli
