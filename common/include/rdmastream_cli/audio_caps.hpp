// SPDX-License-Identifier: LGPL-2.1-or-later
// A raw audio stream's caps in FFmpeg's terms, GStreamer's names for them,
// and the caps string rdmasend announces (written without GStreamer).
// rdmarecv reads a sender's audio caps with GStreamer's parser into the
// same struct (receiver/raw_audio_caps.hpp).
//
// The samples are what FFmpeg's decoder gives, in the host's byte order
// (little-endian: the names say LE): U8, S16, S32 (FFmpeg's 24-bit audio
// is S32 with the low 8 bits zero: GStreamer's S32LE, not S24_32LE, whose
// 24 bits are the low ones), F32, F64; interleaved, or planar
// (layout=non-interleaved: each channel's samples back to back, channel 0
// first, the way GStreamer's GstAudioMeta without offsets reads them).
//
// Channel positions: GStreamer numbers them differently from FFmpeg (its
// bit 9 is LFE2, FFmpeg's 9 is SL) and orders a frame's channels by its
// own numbers. The caps' channel-mask is GStreamer's; a layout whose
// channels GStreamer would order differently, or that has positions
// GStreamer lacks, is announced unpositioned (mask 0).
#pragma once

extern "C" {
#include <libavutil/channel_layout.h>
#include <libavutil/samplefmt.h>
}

#include <cstdint>
#include <string>
#include <string_view>

namespace rdmastream::cli {

inline constexpr int kMaxAudioChannels = 64;     // GStreamer's channel mask has 64 bits
inline constexpr int kMaxAudioRate = 768000;     // the highest rate FFmpeg's decoders use (DSD aside)

struct RawAudioCaps {
    AVSampleFormat format = AV_SAMPLE_FMT_NONE; // planar or packed, as the samples lie
    int rate = 0;
    int channels = 0;
    // GStreamer's channel positions (bit i: GstAudioChannelPosition i, in
    // that order); 0: unpositioned (with one channel: mono).
    std::uint64_t channel_mask = 0;
};

// GStreamer's name of a sample format ("F32LE"), planar or not; nullptr
// for one GStreamer has no name for (S64).
const char* gst_audio_format_name(AVSampleFormat format) noexcept;
// FFmpeg's sample format for GStreamer's name and layout; NONE if unknown.
AVSampleFormat av_sample_format(std::string_view gst_name, bool planar) noexcept;

// Bytes of one sample of every channel (what GStreamer calls bpf).
int sample_frame_bytes(const RawAudioCaps& caps) noexcept;

// GStreamer's mask for FFmpeg's layout (0 when it cannot say it in
// GStreamer's order, see above).
std::uint64_t gst_channel_mask(const AVChannelLayout& layout) noexcept;
// FFmpeg's layout for GStreamer's mask: native when FFmpeg orders those
// positions as GStreamer does, custom otherwise; unspecified for mask 0
// (mono for one channel). `channels` must equal the mask's bits when it is
// not 0. The caller uninits it.
AVChannelLayout av_channel_layout(std::uint64_t gst_mask, int channels);

// "audio/x-raw,format=F32LE,layout=non-interleaved,rate=48000,channels=2,
// channel-mask=(bitmask)0x0000000000000003". Throws UserError for a format
// GStreamer has no name for, or more than 64 channels.
std::string to_caps_string(const RawAudioCaps& caps);

} // namespace rdmastream::cli
