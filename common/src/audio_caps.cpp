// SPDX-License-Identifier: LGPL-2.1-or-later
#include "rdmastream_cli/audio_caps.hpp"

#include "rdmastream/error.hpp"

extern "C" {
#include <libavutil/mem.h>
}

#include <fmt/format.h>

#include <array>
#include <bit>
#include <new>
#include <utility>

namespace rdmastream::cli {
namespace {

static_assert(std::endian::native == std::endian::little,
              "the caps name FFmpeg's native-endian samples as little-endian (S16LE, F32LE ...)");

struct FormatName {
    AVSampleFormat packed;
    const char* gst;
};
constexpr std::array<FormatName, 5> kFormats{{
    {AV_SAMPLE_FMT_U8, "U8"},
    {AV_SAMPLE_FMT_S16, "S16LE"},
    {AV_SAMPLE_FMT_S32, "S32LE"},
    {AV_SAMPLE_FMT_FLT, "F32LE"},
    {AV_SAMPLE_FMT_DBL, "F64LE"},
}};

// FFmpeg's channel (AVChannel) -> GStreamer's position (GstAudioChannelPosition),
// -1: none. GStreamer has no STEREO_LEFT/RIGHT (downmix tracks).
constexpr int gst_position(AVChannel c) noexcept {
    switch (c) {
    case AV_CHAN_FRONT_LEFT: return 0;
    case AV_CHAN_FRONT_RIGHT: return 1;
    case AV_CHAN_FRONT_CENTER: return 2;
    case AV_CHAN_LOW_FREQUENCY: return 3;
    case AV_CHAN_BACK_LEFT: return 4;  // REAR_LEFT
    case AV_CHAN_BACK_RIGHT: return 5; // REAR_RIGHT
    case AV_CHAN_FRONT_LEFT_OF_CENTER: return 6;
    case AV_CHAN_FRONT_RIGHT_OF_CENTER: return 7;
    case AV_CHAN_BACK_CENTER: return 8; // REAR_CENTER
    case AV_CHAN_LOW_FREQUENCY_2: return 9;
    case AV_CHAN_SIDE_LEFT: return 10;
    case AV_CHAN_SIDE_RIGHT: return 11;
    case AV_CHAN_TOP_FRONT_LEFT: return 12;
    case AV_CHAN_TOP_FRONT_RIGHT: return 13;
    case AV_CHAN_TOP_FRONT_CENTER: return 14;
    case AV_CHAN_TOP_CENTER: return 15;
    case AV_CHAN_TOP_BACK_LEFT: return 16;
    case AV_CHAN_TOP_BACK_RIGHT: return 17;
    case AV_CHAN_TOP_SIDE_LEFT: return 18;
    case AV_CHAN_TOP_SIDE_RIGHT: return 19;
    case AV_CHAN_TOP_BACK_CENTER: return 20;
    case AV_CHAN_BOTTOM_FRONT_CENTER: return 21;
    case AV_CHAN_BOTTOM_FRONT_LEFT: return 22;
    case AV_CHAN_BOTTOM_FRONT_RIGHT: return 23;
    case AV_CHAN_WIDE_LEFT: return 24;
    case AV_CHAN_WIDE_RIGHT: return 25;
    case AV_CHAN_SURROUND_DIRECT_LEFT: return 26;
    case AV_CHAN_SURROUND_DIRECT_RIGHT: return 27;
    default: return -1;
    }
}

// The reverse, by search: 28 entries, once per format.
AVChannel av_channel_at(int position) noexcept {
    for (int c = 0; c < 64; ++c) {
        if (gst_position(static_cast<AVChannel>(c)) == position) return static_cast<AVChannel>(c);
    }
    return AV_CHAN_NONE;
}

} // namespace

const char* gst_audio_format_name(AVSampleFormat format) noexcept {
    const AVSampleFormat packed = av_get_packed_sample_fmt(format);
    for (const FormatName& f : kFormats) {
        if (f.packed == packed) return f.gst;
    }
    return nullptr;
}

AVSampleFormat av_sample_format(std::string_view gst_name, bool planar) noexcept {
    for (const FormatName& f : kFormats) {
        if (gst_name == f.gst) return planar ? av_get_planar_sample_fmt(f.packed) : f.packed;
    }
    return AV_SAMPLE_FMT_NONE;
}

int sample_frame_bytes(const RawAudioCaps& caps) noexcept {
    return av_get_bytes_per_sample(caps.format) * caps.channels;
}

std::uint64_t gst_channel_mask(const AVChannelLayout& layout) noexcept {
    std::uint64_t mask = 0;
    int previous = -1;
    for (int i = 0; i < layout.nb_channels; ++i) {
        const int p = gst_position(av_channel_layout_channel_from_index(&layout, static_cast<unsigned>(i)));
        if (p <= previous) return 0; // no GStreamer position, or GStreamer would order the channels otherwise
        mask |= std::uint64_t{1} << p;
        previous = p;
    }
    return mask;
}

AVChannelLayout av_channel_layout(std::uint64_t gst_mask, int channels) {
    AVChannelLayout out{};
    if (gst_mask == 0) {
        if (channels == 1) {
            out = AV_CHANNEL_LAYOUT_MONO;
        } else {
            out.order = AV_CHANNEL_ORDER_UNSPEC;
            out.nb_channels = channels;
        }
        return out;
    }
    // GStreamer's order (by position) as FFmpeg channels: native if those
    // ascend, as FFmpeg's native order has them, else a custom map.
    std::uint64_t native = 0;
    bool ascending = true;
    int previous = -1;
    for (int p = 0; p < 64; ++p) {
        if (!(gst_mask >> p & 1)) continue;
        const int c = av_channel_at(p);
        ascending = ascending && c > previous && c >= 0;
        if (c >= 0) native |= std::uint64_t{1} << c;
        previous = c;
    }
    if (ascending && av_channel_layout_from_mask(&out, native) == 0) return out;
    // By hand: FFmpeg 5.1 has no av_channel_layout_custom_init.
    out.order = AV_CHANNEL_ORDER_CUSTOM;
    out.nb_channels = channels;
    out.u.map = static_cast<AVChannelCustom*>(av_calloc(static_cast<std::size_t>(channels), sizeof(AVChannelCustom)));
    if (out.u.map == nullptr) throw std::bad_alloc();
    int i = 0;
    for (int p = 0; p < 64 && i < channels; ++p) {
        if (gst_mask >> p & 1) out.u.map[i++].id = av_channel_at(p); // AV_CHAN_NONE: GStreamer-only position
    }
    return out;
}

std::string to_caps_string(const RawAudioCaps& c) {
    const char* name = gst_audio_format_name(c.format);
    if (name == nullptr) {
        const char* av = av_get_sample_fmt_name(c.format);
        throw UserError(fmt::format("sample format {} has no GStreamer name to announce (rdmasend sends U8, S16, "
                                    "S32, F32 and F64 audio)",
                                    av ? av : "none"));
    }
    if (c.channels < 1 || c.channels > kMaxAudioChannels) {
        throw UserError(fmt::format("audio of {} channels: rdmasend sends 1 to {}", c.channels, kMaxAudioChannels));
    }
    return fmt::format("audio/x-raw,format={},layout={},rate={},channels={},channel-mask=(bitmask)0x{:016x}", name,
                       av_sample_fmt_is_planar(c.format) ? "non-interleaved" : "interleaved", c.rate, c.channels,
                       c.channel_mask);
}

} // namespace rdmastream::cli
